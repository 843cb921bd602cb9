"""Archives in the official release layout, served from 127.0.0.1, standing in for the download sites.

The official sites (artifacts.elastic.co, artifacts.opensearch.org) cannot be reached from these machines. What
bench does with their archives -- download, verify against the ``.sha512`` beside, unpack, run the bundled JDK --
is tested on archives built the way the official ones are laid out: the real engine from Maven Central's
integ-test zip, plus a real JDK from this machine as ``jdk/``, in a ``.tar.gz`` named as the release is
(``elasticsearch-<v>-linux-x86_64.tar.gz``, ``opensearch-<v>-linux-x64.tar.gz``) with ``<name>.sha512`` holding
``<hex>  <name>`` as the sites publish it. Nothing of the engine is hand-written.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import tarfile
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

from bench.provision.distribution import download_archive, unpack
from bench.provision.java import jdk_version
from bench.provision.model import ENGINES
from bench.provision.repositories import arch_name, os_name, resolve_repository
from tests.support.esnode import default_cache
from tests.support.http_serving import serving

# The JDK put into the archives: Java 17 runs Elasticsearch 8.19 and OpenSearch 2.19 (ENVIRONMENT.md).
TEST_JDK = Path(os.environ.get("BENCH_TEST_BUNDLED_JDK", "/usr/lib/jvm/java-17-openjdk-amd64"))
RELEASE_TEMPLATES = {"elasticsearch": "elasticsearch-{{VERSION}}-{{OSNAME}}-{{ARCH}}.tar.gz",
                     "opensearch": "opensearch-{{VERSION}}-{{OSNAME}}-{{ARCH}}.tar.gz"}


def release_name(engine: str, version: str) -> str:
    return f"{engine}-{version}-{os_name()}-{arch_name(engine)}.tar.gz"


def official_archive(engine: str, version: str, folder: Path, extra_plugins: dict[str, Path] | None = None) -> Path:
    """``folder/<release name>`` (built once per cache and reused), with its ``.sha512`` beside it.
    extra_plugins: plugin name -> plugin zip, unpacked into ``plugins/<name>`` as a bundle ships them."""
    folder.mkdir(parents=True, exist_ok=True)
    name = release_name(engine, version)
    archive = folder / name
    if archive.is_file() and (folder / f"{name}.sha512").is_file():
        return archive
    cache = Path(default_cache())
    os.environ.setdefault("BENCH_CACHE", str(cache))
    maven = resolve_repository(engine, version, "maven-integ-test")
    install = unpack(download_archive(maven.url, "sha1"), hashlib.sha1(maven.url.encode()).hexdigest(),
                     ENGINES[engine].binary)
    part = archive.with_name(f".{name}.{os.getpid()}.part")
    top = f"{engine}-{version}"
    with tarfile.open(part, "w:gz", compresslevel=1) as tar:
        tar.add(install, arcname=top)
        _add_jdk(tar, TEST_JDK, f"{top}/jdk")
        for plugin, zip_path in (extra_plugins or {}).items():
            staging = folder / f".plugin-{plugin}"
            shutil.rmtree(staging, ignore_errors=True)
            shutil.unpack_archive(zip_path, staging, "zip")
            tar.add(staging, arcname=f"{top}/plugins/{plugin}")
            shutil.rmtree(staging)
    with open(part, "rb") as f:
        digest = hashlib.file_digest(f, "sha512").hexdigest()
    (folder / f"{name}.sha512").write_text(f"{digest}  {name}\n")
    os.replace(part, archive)
    return archive


def _add_jdk(tar: tarfile.TarFile, jdk: Path, arcname: str) -> None:
    """The JDK with its symlinks followed (Debian links conf and cacerts into /etc; an archive's JDK is
    self-contained, as the official ones are) and dangling ones (Debian's src.zip) left out."""
    for root, _dirs, files in os.walk(jdk, followlinks=True):
        rel = Path(root).relative_to(jdk)
        tar.add(Path(root).resolve(), arcname=f"{arcname}/{rel}".removesuffix("/."), recursive=False)
        for f in files:
            path = Path(root) / f
            if path.exists():
                tar.add(path.resolve(), arcname=f"{arcname}/{rel / f}")


def bundled_jdk_version() -> str | None:
    return jdk_version(TEST_JDK)


@contextlib.contextmanager
def release_site(folder: Path) -> Iterator[str]:
    """An HTTP server for ``folder`` on 127.0.0.1; yields its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    with serving(handler) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}"


def release_ini(base: str) -> str:
    """bench.ini lines pointing the release repository of both engines at ``base`` (Rally's release.url key)."""
    return "[distributions]\n" + "".join(f"{engine}.release.url = {base}/{template}\n"
                                         for engine, template in RELEASE_TEMPLATES.items())


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass
