"""What several commands' parsers and handlers share: the metrics store and load-driver flags, the track
repository flags, ``k:v`` parameters, and the secrets a command line carries."""

from __future__ import annotations

import argparse
from typing import Any

from bench.race.flags import load_driver_of
from bench.util import redact
from bench.util.errors import ConfigError

# The trial formats a machine reads: stdout carries the document only.
MACHINE_FORMATS = ("json", "csv")


def store_flags(p: argparse.ArgumentParser, default: Any) -> None:
    """The metrics store options, accepted before the subcommand and after it."""
    p.add_argument("--metrics-store", default=default, metavar="URL",
                   help="a shared Elasticsearch/OpenSearch metrics store, http(s)://[user@]host:port (Rally's layout; "
                        "also BENCH_METRICS_STORE or [reporting] in $BENCH_HOME/bench.ini)")
    p.add_argument("--metrics-store-options", default=default, metavar="K:V,...",
                   help="k:v,... or a JSON file: --client-options' keys, plus index_prefix (default rally), "
                        "environment (default local), downsample_factor (default 1)")


def track_repository_flags(p: argparse.ArgumentParser) -> None:
    """--track-repository/--track-revision and OSB's --workload* (bench info, list, render-track)."""
    from bench.race.flags import option

    for name in ("track_repository", "track_revision", "repository_kind"):
        for f in option(name).flags:
            p.add_argument(*f.names, dest=f.attr, help=f.help, **f.kwargs)


def load_driver_flags(p: argparse.ArgumentParser) -> None:
    from bench.race.flags import option

    for name in ("load_driver", "load_driver_hosts"):
        for f in option(name).flags:
            p.add_argument(*f.names, dest=f.attr, help=f.help, **f.kwargs)


def load_driver(a: argparse.Namespace) -> tuple[str | None, list[str]]:
    """--load-driver / --ray-address / --load-driver-hosts as (backend:address or None, driver hosts); Ray's
    absence is one line before anything starts."""
    backend, hosts = load_driver_of(a)
    ensure_backend(a, backend)
    return backend, hosts


def ensure_backend(a: argparse.Namespace, backend: str | None) -> None:
    """A Ray load driver (``backend`` from ``load_driver_of``) needs Ray: one line naming the flag that asked for it
    and the pip install, before anything starts."""
    if backend and backend.startswith("ray:"):
        ensure_ray(f"--ray-address={a.ray_address}" if a.ray_address else f"--load-driver={a.load_driver}"
                   if a.load_driver else f"--load-driver-hosts={a.load_driver_hosts} (drives through Ray)")


def params(spec: str | None, what: str) -> dict[str, Any]:
    from bench.track.track_params import parse_params

    return parse_params(spec, what=what)


def client_options(spec: str | None) -> dict[str, Any]:
    """--client-options parsed, its password and API key registered as secrets before anything can log them."""
    parsed = params(spec, "--client-options")
    mark_client_secrets(parsed)
    return parsed


def mark_client_secrets(options: dict[str, Any]) -> None:
    for key in ("basic_auth_password", "api_key"):
        if options.get(key):
            redact.register_secret(str(options[key]))


def validation_line(err: dict[str, Any], flags: dict[str, str] | None = None) -> ConfigError:
    """A pydantic error of an options model as one line naming the flag."""
    name = str(err["loc"][0])
    return ConfigError(f"{(flags or {}).get(name, '--' + name.replace('_', '-'))}: {err['msg']}")


def ensure_redline() -> None:
    """A --redline (or an experiment's redline key) that no hook drives would run the task as declared and report no
    redline at all, and a stored redline would not be shown: load the extension even where its entry point is not
    installed (a source checkout on PYTHONPATH, an install older than the extension). Idempotent by name."""
    from bench import extensions
    from bench.redline.redline_extension import setup as redline_setup

    extensions.load()
    extensions.register("redline", redline_setup)


def ensure_ray(flag: str) -> None:
    """--load-driver=ray:... where the Ray extension's entry point is not installed (a source checkout on
    PYTHONPATH, an install older than the extension): register it in-process, idempotent by name. Without
    Ray itself (the ``ray`` extra): one line naming the pip install, before anything starts."""
    from bench import extensions
    from bench.ray.ray_extension import setup as ray_setup
    from bench.ray.require import require_ray

    require_ray(flag)
    extensions.load()
    extensions.register("ray", ray_setup)
