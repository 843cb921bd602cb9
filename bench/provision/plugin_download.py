"""A plugin named for download -> its verified zip in bench's download cache.

The URL: ``plugin.<name>.<repository>.url`` (Rally's key) or ``plugin.<repository>.url`` (bench's, every plugin) in
``$BENCH_HOME/bench.ini`` ``[distributions]``, else the engine's official location (the one its own plugin tool
installs official plugins from). ``<repository>`` is that section's ``repository`` key (default ``release``, as
Rally's). Templates hold ``{name}``/``{version}`` (Rally's ``{{VERSION}}`` works too).

Verification as the engines' plugin tools do it: the official locations publish ``<zip>.sha512`` (the digest, or
the digest, two spaces and the file name) and it is required there; elsewhere ``.sha512`` is tried first, then
``.sha1`` (what Maven repositories publish). Nothing unverified is installed. The zip is downloaded next to its
final name and renamed only once it matched, so two races sharing the cache never see half a file; a cached zip is
verified again on every use (against the stored digest when the network is down).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from bench.provision.plugin_names import PluginRef
from bench.util.download import fetch
from bench.util.errors import ConfigError, ProvisionError
from bench.util.file_lock import exclusive, lock_file_for, part_path, remove_stale_parts, write_atomically
from bench.util.home import distributions_dir
from bench.util.ini import ini_path, ini_section

log = logging.getLogger(__name__)

# The engines' plugin tools build these for official plugins: Elasticsearch's InstallPluginAction.getElasticUrl,
# OpenSearch's InstallPluginCommand.getOpenSearchUrl (both try a platform-specific name first, which only plugins
# with native code have).
OFFICIAL_URLS = {
    "elasticsearch": "https://artifacts.elastic.co/downloads/elasticsearch-plugins/{name}/{name}-{version}.zip",
    "opensearch": "https://artifacts.opensearch.org/releases/plugins/{name}/{version}/{name}-{version}.zip",
}
DEFAULT_REPOSITORY = "release"
_TIMEOUT = 60.0
_DIGEST_LENGTH = {"sha512": 128, "sha1": 40}


class PluginSource(BaseModel):
    """Where one plugin of one cluster comes from."""

    model_config = ConfigDict(frozen=True)

    name: str
    version: str
    url: str
    origin: str  # "the official location" or the bench.ini key that gave the URL
    official: bool
    # "<algorithm>:<hex>" bench knows for this very file, for a repository that publishes none beside it (Maven
    # Central serves opensearch-security 2.19.1.0 without .sha1); it replaces the published checksum
    pinned: str | None = None

    def label(self) -> str:
        return f"plugin {self.name} {self.version}"


def render_url(template: str, name: str, version: str, origin: str) -> str:
    url = (template.replace("{{VERSION}}", version).replace("{{NAME}}", name)
           .replace("{version}", version).replace("{name}", name))
    if re.search(r"[{}]", url):
        raise ConfigError(f"{origin}: {template!r} has a placeholder bench does not know; use {{name}} and "
                          f"{{version}} (or Rally's {{{{VERSION}}}})")
    scheme = urllib.parse.urlparse(url).scheme
    if scheme not in ("http", "https", "file") or not urllib.parse.urlparse(url).path.endswith(".zip"):
        raise ConfigError(f"{origin}: {url!r} is not an http(s):// or file:// URL of a .zip; point it at the "
                          f"plugin's zip")
    return url


def plugin_source(engine: str, ref: PluginRef, cluster_version: str,
                  settings: dict[str, str] | None = None) -> PluginSource:
    """The URL of ``ref`` for a cluster of ``engine`` ``cluster_version`` (settings: bench.ini [distributions])."""
    ini = ini_section("distributions") if settings is None else settings
    version = ref.version or cluster_version
    repository = ini.get("repository", DEFAULT_REPOSITORY).strip() or DEFAULT_REPOSITORY
    # configparser lower-cases keys
    for key in (f"plugin.{ref.name}.{repository}.url".lower(), f"plugin.{repository}.url".lower()):
        if ini.get(key):
            origin = f"{ini_path()} [distributions] {key}"
            return PluginSource(name=ref.name, version=version, url=render_url(ini[key], ref.name, version, origin),
                                origin=origin, official=False)
    if repository != DEFAULT_REPOSITORY:
        raise ConfigError(f"{ini_path()} [distributions]: repository {repository!r} has no URL for plugin {ref.name}; "
                          f"set plugin.{ref.name}.{repository}.url or plugin.{repository}.url (a template with "
                          f"{{name}} and {{version}})")
    url = render_url(OFFICIAL_URLS[engine], ref.name, version, "the official plugin location")
    return PluginSource(name=ref.name, version=version, url=url, origin="the official location", official=True)


def obtain_plugin(source: PluginSource) -> Path:
    """The verified zip of ``source`` in the download cache, downloaded when missing or no longer matching; under
    the zip's lock (bench.util.file_lock), so benches provisioning at once download it once."""
    file_name = Path(urllib.parse.urlparse(source.url).path).name
    folder = cache_folder(source)
    folder.mkdir(parents=True, exist_ok=True)
    archive = folder / file_name
    with exclusive(lock_file_for(archive), waiting=f"waiting for another bench's download of {file_name}"):
        remove_stale_parts(archive)
        return _obtain_locked(source, folder, file_name, archive)


def _obtain_locked(source: PluginSource, folder: Path, file_name: str, archive: Path) -> Path:
    if archive.exists():
        expected = _expected_digest(source, file_name, archive)
        if expected is not None and _digest(archive, expected[0]) == expected[1]:
            log.info("using cached %s: %s", source.label(), archive)
            return archive
        log.warning("cached %s no longer matches its checksum; downloading it again", archive)
        archive.unlink()
    part = part_path(archive)
    try:
        fetch(source.url, part, error=ProvisionError, what=f"{source.label()} from ",
              hint=_hint(source, "check the plugin's name and version (name:version)"))
        expected = _expected_digest(source, file_name, None)
        assert expected is not None  # without a cached archive a missing checksum raises
        algo, digest = expected
        actual = _digest(part, algo)
        if actual != digest:
            raise ProvisionError(f"{source.label()}: checksum mismatch for {source.url}: {source.url}.{algo} says "
                                 f"{digest[:16]}..., the download is {actual[:16]}...; the download is corrupt or the "
                                 f"server's checksum is for another file: try again, or fix the mirror")
        write_atomically(folder / f"{file_name}.{algo}", (digest + "\n").encode())
        write_atomically(folder / f"{file_name}.url", (source.url + "\n").encode())
        os.replace(part, archive)
    finally:
        part.unlink(missing_ok=True)
    return archive


def source_url_of(archive: Path) -> str | None:
    """The URL a cached plugin zip was downloaded from (for messages about it)."""
    stored = archive.with_name(archive.name + ".url")
    return stored.read_text().strip() if stored.is_file() else None


def _hint(source: PluginSource, what: str) -> str:
    if not source.official:
        return f"; {what}, or fix {source.origin}"
    key = f"plugin.{source.name}.{DEFAULT_REPOSITORY}.url"
    return f"; {what}, or set {key} in {ini_path()} [distributions] to where the plugin is"


def cache_folder(source: PluginSource) -> Path:
    """Where ``source``'s zip is cached: one folder per URL, so two mirrors serving different files under one name
    never share an entry."""
    key = hashlib.sha1(source.url.encode()).hexdigest()[:10]
    return distributions_dir() / "plugins" / f"{source.name}-{source.version}-{key}"


def _expected_digest(source: PluginSource, file_name: str, cached: Path | None) -> tuple[str, str] | None:
    """(algorithm, digest) published beside the zip. Offline with a cached zip: the digest stored with it (None
    when there is none, so the zip is downloaded again). A pinned digest wins: nothing is asked of the server."""
    if source.pinned:
        algo, _, digest = source.pinned.partition(":")
        return algo, digest
    algos = ["sha512"] if source.official else ["sha512", "sha1"]
    tried: list[str] = []
    for algo in algos:
        url = f"{source.url}.{algo}"
        try:
            with urllib.request.urlopen(url, timeout=_TIMEOUT) as resp:
                text = resp.read(4096).decode("ascii", "replace")
        except urllib.error.HTTPError as e:
            if e.code == 404:
                tried.append(f"{url} (HTTP 404)")
                continue
            raise ProvisionError(f"{source.label()}: cannot fetch its checksum {url}: HTTP {e.code} {e.reason}; "
                                 f"try again, or check the server") from None
        except (urllib.error.URLError, OSError) as e:
            if cached is not None:
                for a in algos:
                    stored = cached.with_name(f"{cached.name}.{a}")
                    if stored.is_file():
                        log.warning("cannot fetch %s (%s); checking the cached zip against the stored checksum", url, e)
                        return a, stored.read_text().strip()
                return None
            raise ProvisionError(f"{source.label()}: cannot fetch its checksum {url}: "
                                 f"{getattr(e, 'reason', e)}; check the network") from None
        return algo, _parse_checksum(text, algo, url, file_name, source)
    raise ProvisionError(f"{source.label()}: no checksum is published beside {source.url} ({', '.join(tried)}); "
                         f"bench installs only verified plugins: publish {source.url}.sha512 (sha512sum's output) "
                         f"beside the zip")


def _parse_checksum(text: str, algo: str, url: str, file_name: str, source: PluginSource) -> str:
    """``<digest>`` or ``<digest>  <file name>`` (sha512sum's output; ``*name`` in binary mode), one line."""
    fields = text.strip().split()
    digest = fields[0].lower() if fields else ""
    if len(digest) != _DIGEST_LENGTH[algo] or any(c not in "0123456789abcdef" for c in digest) or len(fields) > 2:
        raise ProvisionError(f"{source.label()}: checksum file {url} does not hold a {algo} digest "
                             f"(got {text[:60]!r}); fix the file on the server")
    if len(fields) == 2 and fields[1].lstrip("*") != file_name:
        raise ProvisionError(f"{source.label()}: checksum file {url} is for {fields[1].lstrip('*')}, not {file_name}; "
                             f"fix the file on the server")
    return digest


def _digest(path: Path, algo: str) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, algo).hexdigest()


