"""Distribution download, verification, caching and unpacking.

A local HTTP server on 127.0.0.1 serves small fake archives with published checksums; the checksum
logic is the same as for Maven Central, which the last test checks for real.
"""

from __future__ import annotations

import hashlib
import http.server
import io
import os
import tarfile
import threading
import zipfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.provision.distribution import checksum_algorithm, distribution_url, obtain_distribution
from bench.provision.repositories import resolve_repository
from bench.util.errors import ConfigError, ProvisionError
from bench.util.home import bench_home


def _zip_bytes(top: str = "elasticsearch-1.0", binary: str = "bin/elasticsearch") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        info = zipfile.ZipInfo(f"{top}/{binary}")
        info.external_attr = 0o755 << 16
        zf.writestr(info, "#!/bin/sh\necho hi\n")
        zf.writestr(f"{top}/config/elasticsearch.yml", "# empty\n")
        zf.writestr(f"{top}/lib/x.jar", os.urandom(200_000))  # big enough to notice truncation
    return buf.getvalue()


def _tgz_bytes(top: str = "elasticsearch-1.0") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        data = b"#!/bin/sh\necho hi\n"
        ti = tarfile.TarInfo(f"{top}/bin/elasticsearch")
        ti.size, ti.mode = len(data), 0o755
        tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


class _Server:
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.hits: Counter[str] = Counter()
        self.truncate: set[str] = set()  # paths answered with fewer bytes than Content-Length
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.hits[self.path] += 1
                body = server.files.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[: len(body) // 2] if self.path in server.truncate else body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def publish(self, path: str, body: bytes, algo: str = "sha1", digest: str | None = None) -> str:
        self.files[path] = body
        self.files[f"{path}.{algo}"] = f"{digest or hashlib.new(algo, body).hexdigest()}  {Path(path).name}\n".encode()
        return self.base + path


@pytest.fixture
def server() -> Iterator[_Server]:
    s = _Server()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BENCH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "distributions"


def _leftovers(cache: Path) -> list[str]:
    return [p.name for p in cache.rglob("*") if p.name.endswith(".part") or p.suffix == ".zip"]


def test_download_verifies_caches_and_unpacks(server: _Server, cache: Path) -> None:
    server.publish("/es/1.0/elasticsearch-1.0.zip", _zip_bytes())
    template = server.base + "/es/{version}/elasticsearch-{version}.zip"
    home = obtain_distribution("elasticsearch", "1.0", repository=template)
    assert home.name == "elasticsearch-1.0" and cache in home.parents
    assert os.access(home / "bin" / "elasticsearch", os.X_OK)  # modes survive unzip
    assert server.hits["/es/1.0/elasticsearch-1.0.zip"] == 1

    again = obtain_distribution("elasticsearch", "1.0", repository=template)
    assert again == home
    assert server.hits["/es/1.0/elasticsearch-1.0.zip"] == 1  # cached: not downloaded again


def test_checksum_mismatch_is_an_error_and_nothing_is_kept(server: _Server, cache: Path) -> None:
    url = server.publish("/es/elasticsearch-2.0.zip", _zip_bytes(), digest="0" * 40)
    with pytest.raises(ProvisionError) as e:
        obtain_distribution("elasticsearch", "2.0", repository=server.base + "/es/elasticsearch-{version}.zip")
    msg = str(e.value)
    actual = hashlib.sha1(server.files["/es/elasticsearch-2.0.zip"]).hexdigest()
    assert url in msg and "0" * 40 in msg and actual in msg and "\n" not in msg
    assert _leftovers(cache) == []


def test_truncated_cached_archive_is_downloaded_again(server: _Server, cache: Path) -> None:
    path = "/es/elasticsearch-3.0.zip"
    server.publish(path, _zip_bytes())
    template = server.base + "/es/elasticsearch-{version}.zip"
    obtain_distribution("elasticsearch", "3.0", repository=template)
    [archive] = [p for p in cache.rglob("elasticsearch-3.0.zip")]
    archive.write_bytes(archive.read_bytes()[:1000])  # e.g. a disk-full copy

    home = obtain_distribution("elasticsearch", "3.0", repository=template)
    assert server.hits[path] == 2
    assert hashlib.sha1(archive.read_bytes()).hexdigest() == hashlib.sha1(server.files[path]).hexdigest()
    assert (home / "bin" / "elasticsearch").is_file()


def test_partial_download_is_never_used(server: _Server, cache: Path) -> None:
    path = "/es/elasticsearch-4.0.zip"
    server.publish(path, _zip_bytes())
    server.truncate.add(path)
    template = server.base + "/es/elasticsearch-{version}.zip"
    with pytest.raises(ProvisionError, match="elasticsearch-4.0.zip"):
        obtain_distribution("elasticsearch", "4.0", repository=template)
    assert _leftovers(cache) == []
    server.truncate.clear()
    assert (obtain_distribution("elasticsearch", "4.0", repository=template) / "bin" / "elasticsearch").is_file()


def test_missing_version_is_a_clear_error(server: _Server) -> None:
    with pytest.raises(ProvisionError, match=r"elasticsearch 9\.9\.9 was not found at .*/elasticsearch-9\.9\.9\.zip "
                                             r"\(HTTP 404\): check the version"):
        obtain_distribution("elasticsearch", "9.9.9", repository=server.base + "/es/elasticsearch-{version}.zip")


def test_sha512_tarball(server: _Server) -> None:
    server.publish("/dl/elasticsearch-5.0-linux-x86_64.tar.gz", _tgz_bytes(), algo="sha512")
    template = server.base + "/dl/elasticsearch-{version}-linux-x86_64.tar.gz"
    assert checksum_algorithm(distribution_url("elasticsearch", "5.0", template)) == "sha512"
    home = obtain_distribution("elasticsearch", "5.0", repository=template)
    assert os.access(home / "bin" / "elasticsearch", os.X_OK)
    # An explicitly configured algorithm the mirror does not publish is an error, not a silent skip.
    with pytest.raises(ProvisionError, match=r"\.sha1: HTTP 404"):
        obtain_distribution("elasticsearch", "5.0", repository=template, checksum="sha1")


def test_local_distribution_path(tmp_path: Path) -> None:
    z = tmp_path / "es.zip"
    z.write_bytes(_zip_bytes())
    home = obtain_distribution("elasticsearch", "ignored", distribution_path=z)
    assert (home / "bin" / "elasticsearch").is_file()
    t = tmp_path / "es.tar.gz"
    t.write_bytes(_tgz_bytes("elasticsearch-local"))
    assert obtain_distribution("elasticsearch", "x", distribution_path=t).name == "elasticsearch-local"
    # An unpacked install is used in place.
    assert obtain_distribution("elasticsearch", "x", distribution_path=home) == home
    with pytest.raises(ProvisionError, match="does not exist"):
        obtain_distribution("elasticsearch", "x", distribution_path=tmp_path / "nope.zip")
    with pytest.raises(ProvisionError, match="bin/opensearch"):
        obtain_distribution("opensearch", "x", distribution_path=home)
    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"not a zip")
    with pytest.raises(ProvisionError, match="cannot unpack"):
        obtain_distribution("elasticsearch", "x", distribution_path=junk)


def test_maven_integ_test_urls() -> None:
    assert distribution_url("elasticsearch", "8.19.21", "maven-integ-test") == (
        "https://repo1.maven.org/maven2/org/elasticsearch/distribution/integ-test-zip/elasticsearch/8.19.21/"
        "elasticsearch-8.19.21.zip")
    assert distribution_url("opensearch", "2.19.1", "maven-integ-test") == (
        "https://repo1.maven.org/maven2/org/opensearch/distribution/integ-test-zip/opensearch/2.19.1/"
        "opensearch-2.19.1.zip")
    assert distribution_url("elasticsearch", "1.2", "https://mirror.local/es-{version}.zip") == \
        "https://mirror.local/es-1.2.zip"
    with pytest.raises(ProvisionError, match="unknown engine"):
        distribution_url("solr", "9")


def test_release_urls_are_rallys_and_osbs_for_each_os_and_arch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default is the official archive, named per OS and architecture the way each engine names it."""
    monkeypatch.delenv("BENCH_DISTRIBUTION_REPOSITORY", raising=False)
    es = resolve_repository("elasticsearch", "8.19.21", os="linux", machine="x86_64")
    assert es.url == "https://artifacts.elastic.co/downloads/elasticsearch/elasticsearch-8.19.21-linux-x86_64.tar.gz"
    assert (es.name, es.checksum, es.flavour, es.bundled_jdk, es.explicit) == ("release", "sha512", "official", True,
                                                                              False)
    assert distribution_url("elasticsearch", "8.19.21", os="darwin", machine="arm64").endswith(
        "elasticsearch-8.19.21-darwin-aarch64.tar.gz")
    assert distribution_url("opensearch", "2.19.1", os="linux", machine="x86_64") == (
        "https://artifacts.opensearch.org/releases/bundle/opensearch/2.19.1/opensearch-2.19.1-linux-x64.tar.gz")
    assert distribution_url("opensearch", "2.19.1", os="linux", machine="aarch64").endswith("-linux-arm64.tar.gz")
    # Rally's placeholders and bench's spell the same thing
    assert distribution_url("elasticsearch", "9.1.0", "http://m/{{VERSION}}/es-{version}-{{OSNAME}}-{arch}.tar.gz",
                            os="linux", machine="x86_64") == "http://m/9.1.0/es-9.1.0-linux-x86_64.tar.gz"
    assert distribution_url("opensearch", "2.19.1", "http://m/os-{version}-{os}-{{ARCH}}.tar.gz",
                            os="linux", machine="x86_64") == "http://m/os-2.19.1-linux-x64.tar.gz"


def test_repository_choice_order_and_bench_ini(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BENCH_DISTRIBUTION_REPOSITORY", raising=False)
    home = bench_home()
    (home / "bench.ini").write_text(
        "[distributions]\nrepository = mirror\nmirror.url = http://mirror.local/es-{{VERSION}}.tar.gz\n"
        "opensearch.mirror.url = http://mirror.local/os-{{VERSION}}-{{ARCH}}.tar.gz\n"
        "release.url = http://copy.local/elasticsearch-{{VERSION}}-{{OSNAME}}-{{ARCH}}.tar.gz\n")
    repo = resolve_repository("elasticsearch", "8.19.21")
    assert (repo.name, repo.url, repo.flavour, repo.explicit) == ("mirror", "http://mirror.local/es-8.19.21.tar.gz",
                                                                  "custom", True)
    assert resolve_repository("opensearch", "2.19.1", machine="x86_64").url == "http://mirror.local/os-2.19.1-x64.tar.gz"
    # Rally's release.url: the same archives elsewhere, so still the official flavour with its bundled JDK
    release = resolve_repository("elasticsearch", "8.19.21", "release", os="linux", machine="x86_64")
    assert (release.url, release.flavour, release.bundled_jdk) == (
        "http://copy.local/elasticsearch-8.19.21-linux-x86_64.tar.gz", "official", True)
    monkeypatch.setenv("BENCH_DISTRIBUTION_REPOSITORY", "maven-integ-test")
    assert resolve_repository("elasticsearch", "8.19.21").name == "maven-integ-test"  # the environment beats bench.ini
    assert resolve_repository("elasticsearch", "8.19.21", "release").name == "release"  # the option beats both
    with pytest.raises(ConfigError, match=r"unknown distribution repository 'nightly' for elasticsearch: use one "
                                          r"of maven-integ-test, mirror, release"):
        resolve_repository("elasticsearch", "8.19.21", "nightly")


def test_maven_central_publishes_the_checksum_we_verify(tmp_path: Path) -> None:
    """The real default source publishes the .sha1 a download is verified against (network: Maven Central)."""
    from bench.provision.distribution import _expected_checksum

    digest = _expected_checksum(distribution_url("elasticsearch", "8.19.21"), "sha1", tmp_path / "none.zip")
    assert len(digest) == 40 and int(digest, 16) > 0
