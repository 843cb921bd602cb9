"""Optional parts of bench and the ``pip install`` that brings each (``pyproject.toml``'s extras).

A feature that needs an optional package imports it through :func:`require`, so a machine without the extra gets
one line naming the install instead of a traceback, and the core install (a race, a markdown report) imports none
of them."""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

from bench.util.errors import ConfigError

# extra -> the distributions it adds (pyproject.toml's [project.optional-dependencies] must agree: a test checks).
EXTRAS: dict[str, tuple[str, ...]] = {
    "cloud": ("boto3", "google-cloud-compute", "paramiko", "wheel"),
    "plots": ("plotly", "kaleido"),
    "history": ("ruptures",),
    "vector": ("h5py",),
    "ray": ("ray",),
}


def missing_line(what: str, package: str, extra: str) -> str:
    """The one line for a feature whose optional package is not importable here."""
    return (f"{what} needs {package}, which is not installed for {sys.executable}: "
            f"pip install 'bench[{extra}]'")


def require(module: str, extra: str, what: str) -> ModuleType:
    """``module`` imported, or one :class:`ConfigError` line naming ``pip install 'bench[extra]'``.

    ``what`` says which feature asked (``"HTML reports"``, ``"--topology with provider aws"``)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        # Only the optional package itself missing is the extra's absence; a broken install of it is a bug to show.
        top = module.split(".")[0]
        if e.name is not None and e.name.split(".")[0] not in (top, *_ALIASES.get(top, ())):
            raise
        raise ConfigError(missing_line(what, top, extra)) from None


# Import names whose own imports fail under another top-level name when the package is missing.
_ALIASES: dict[str, tuple[str, ...]] = {"google": ("google",), "botocore": ("boto3",), "boto3": ("botocore",)}
