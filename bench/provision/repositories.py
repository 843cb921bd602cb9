"""Where a distribution archive comes from: named repositories, as Rally and OpenSearch Benchmark have them.

``release`` (the default) is what users run: the engine's official archive for this machine's OS and
architecture, with its JDK bundled, verified against the ``.sha512`` published beside it. The templates are
Rally's and OSB's own (rally-teams ``cars/v1/vanilla/config.ini``: ``jdk.bundled.release_url``;
opensearch-benchmark ``osbenchmark/resources/cluster_configs/main/cluster_configs/v1/vanilla/config.ini``:
``jdk.bundled.release_url``), with their ``{{VERSION}}``/``{{OSNAME}}``/``{{ARCH}}`` placeholders and their
architecture names (Elasticsearch ``x86_64``/``aarch64``, OpenSearch ``x64``/``arm64``).

``maven-integ-test`` is Maven Central's integ-test zip: a minimal build (Elasticsearch: the modules ``apm``,
``transport-netty4``, ``x-pack-core``, ``x-pack-security``; OpenSearch 2.x: ``transport-netty4``), no bundled
JDK, verified against its ``.sha1``. It is what a machine that reaches only package registries can get.

The repository is chosen, first match wins, by ``--distribution-repository`` (a name or a URL template), the car
config's ``distribution_repository``, ``$BENCH_DISTRIBUTION_REPOSITORY``, ``[distributions] repository`` in
``bench.ini``, else ``release``. ``bench.ini`` may set any repository's template as Rally's ``rally.ini`` does
(``release.url = ...``; bench also reads ``<engine>.<name>.url`` since it serves two engines), and so define new
names.
"""

from __future__ import annotations

import os
import platform
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from bench.provision.model import Algorithm, Checksum
from bench.util.errors import ConfigError, ProvisionError
from bench.util.ini import ini_path, ini_section

DEFAULT_REPOSITORY = "release"
REPOSITORY_ENV = "BENCH_DISTRIBUTION_REPOSITORY"

Flavour = Literal["official", "minimal", "custom"]

# (template, checksum algorithm, flavour, bundles a JDK)
_BUILT_IN: dict[str, dict[str, tuple[str, Algorithm, Flavour, bool]]] = {
    "elasticsearch": {
        "release": ("https://artifacts.elastic.co/downloads/elasticsearch/"
                    "elasticsearch-{{VERSION}}-{{OSNAME}}-{{ARCH}}.tar.gz", "sha512", "official", True),
        "maven-integ-test": ("https://repo1.maven.org/maven2/org/elasticsearch/distribution/integ-test-zip/"
                             "elasticsearch/{{VERSION}}/elasticsearch-{{VERSION}}.zip", "sha1", "minimal", False),
    },
    "opensearch": {
        "release": ("https://artifacts.opensearch.org/releases/bundle/opensearch/{{VERSION}}/"
                    "opensearch-{{VERSION}}-{{OSNAME}}-{{ARCH}}.tar.gz", "sha512", "official", True),
        "maven-integ-test": ("https://repo1.maven.org/maven2/org/opensearch/distribution/integ-test-zip/"
                             "opensearch/{{VERSION}}/opensearch-{{VERSION}}.zip", "sha1", "minimal", False),
    },
}
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")


class Repository(BaseModel):
    """One resolved repository: where the archive of one engine version is and how it is checked."""

    model_config = ConfigDict(frozen=True)

    name: str  # release, maven-integ-test, a bench.ini name, or "url" for a template given directly
    url: str
    checksum: Algorithm | None  # sha512, sha1, or None when nothing is published (checksum: none)
    flavour: Flavour
    bundled_jdk: bool | None  # None: unknown until unpacked
    explicit: bool  # chosen by the user (option, car, environment, bench.ini), not the default

    @property
    def host(self) -> str:
        return re.sub(r"^[a-z]+://([^/:]+).*$", r"\1", self.url)


def os_name() -> str:
    return platform.system().lower()


def arch_name(engine: str, machine: str | None = None) -> str:
    """The CPU architecture as each engine names its archives (Rally's and OSB's TemplateRenderer)."""
    m = (machine or platform.machine()).lower()
    if engine == "opensearch":
        return {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64"}.get(m, m)
    return {"arm64": "aarch64", "amd64": "x86_64"}.get(m, m)


def render(template: str, engine: str, version: str, *, os: str | None = None, machine: str | None = None) -> str:
    """Rally's ``{{VERSION}}``/``{{OSNAME}}``/``{{ARCH}}`` and bench's ``{version}``/``{os}``/``{arch}``."""
    values = {"VERSION": version, "OSNAME": os or os_name(), "ARCH": arch_name(engine, machine)}
    out = template
    for rally, ours in (("VERSION", "version"), ("OSNAME", "os"), ("ARCH", "arch")):
        out = out.replace("{{" + rally + "}}", values[rally]).replace("{" + ours + "}", values[rally])
    return out


def _checksum_for(url: str) -> Algorithm:
    return "sha1" if "repo1.maven.org" in url or url.endswith(".zip") else "sha512"


def chosen_repository(option: str | None, car_repository: str | None = None) -> tuple[str, bool]:
    """The repository name or template to use, and whether the user chose it (so no fallback applies)."""
    for value in (option, car_repository, os.environ.get(REPOSITORY_ENV),
                  ini_section("distributions").get("repository")):
        if value and value.strip():
            return value.strip(), True
    return DEFAULT_REPOSITORY, False


def resolve_repository(engine: str, version: str, option: str | None = None, car_repository: str | None = None,
                       checksum: Checksum = "auto", *, os: str | None = None, machine: str | None = None) -> Repository:
    """The repository for ``engine`` ``version``; a name nobody defines is one line listing the known ones."""
    if engine not in _BUILT_IN:
        raise ProvisionError(f"unknown engine {engine!r}; use one of {', '.join(_BUILT_IN)}")
    name, explicit = chosen_repository(option, car_repository)
    ini = ini_section("distributions")
    algo: Algorithm | None
    flavour: Flavour
    bundled: bool | None
    if "://" in name or name.startswith("/"):
        template = name if "://" in name else f"file://{name}"
        algo, flavour, bundled, label = _checksum_for(template), "custom", None, "url"
    else:
        if not _NAME.match(name):
            raise ConfigError(f"distribution repository {name!r} is neither a name nor a URL template")
        built_in = _BUILT_IN[engine].get(name)
        override = ini.get(f"{engine}.{name}.url") or (ini.get(f"{name}.url") if engine == "elasticsearch" else None)
        if built_in is None and override is None:
            known = sorted({*_BUILT_IN[engine], *_ini_names(ini, engine)})
            raise ConfigError(f"unknown distribution repository {name!r} for {engine}: use one of "
                              f"{', '.join(known)}, a URL template with {{{{VERSION}}}}, or define {engine}.{name}.url "
                              f"in {ini_path()} [distributions]")
        if built_in is not None:
            template, algo, flavour, bundled = built_in
            if override:  # a mirror of the same archives (Rally's release.url): same flavour, its own checksum
                template, algo = override, _checksum_for(override)
        else:
            assert override is not None
            template, algo, flavour, bundled = override, _checksum_for(override), "custom", None
        label = name
    if checksum == "none":
        algo = None
    elif checksum != "auto":
        algo = checksum
    url = render(template, engine, version, os=os, machine=machine)
    if not url.endswith((".zip", ".tar.gz", ".tgz")):
        raise ConfigError(f"distribution repository {label}: {url} does not end in .zip, .tar.gz or .tgz; "
                          "fix the template")
    return Repository(name=label, url=url, checksum=algo, flavour=flavour, bundled_jdk=bundled, explicit=explicit)


def _ini_names(ini: dict[str, str], engine: str) -> set[str]:
    """Repository names bench.ini defines for ``engine`` (``<engine>.<name>.url``; Rally's ``<name>.url``: ES)."""
    names = set()
    for key in ini:
        if not key.endswith(".url") or key.startswith("plugin."):
            continue
        head, _, rest = key.removesuffix(".url").partition(".")
        if head in _BUILT_IN:
            if head == engine and rest:
                names.add(rest)
        elif engine == "elasticsearch":
            names.add(key.removesuffix(".url"))
    return names


def fallback_repository(engine: str, version: str, checksum: Checksum = "auto") -> Repository:
    """The repository a default race falls back to when the official site cannot be reached."""
    repo = resolve_repository(engine, version, "maven-integ-test", checksum=checksum)
    return repo.model_copy(update={"explicit": False})
