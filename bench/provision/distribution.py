"""Obtain an unpacked engine distribution: download (verified, cached), unpack, or use a local one.

Downloads go to a part file of their own and are renamed only after the checksum matched, so a partial or
corrupt archive is never used. A cached archive is verified again on every use; if it no longer
matches it is deleted and downloaded again. Unpacked installs are keyed by the archive's checksum.
Benches running at once share the cache: one lock per archive and one per unpacked install
(``bench.util.file_lock``), so the second waits for the first and uses its verified result.
"""

from __future__ import annotations

import glob
import hashlib
import logging
import os
import shutil
import stat
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path
from typing import NamedTuple

from bench.provision.model import ENGINES, Checksum, DistributionFacts, EngineLayout
from bench.provision.repositories import Repository, fallback_repository, resolve_repository
from bench.util.activity import notice
from bench.util.download import NOT_FOUND, fetch
from bench.util.errors import ProvisionError
from bench.util.file_lock import exclusive, lock_file_for, part_path, remove_stale_parts, write_atomically
from bench.util.home import distributions_dir
from bench.util.ini import ini_path

log = logging.getLogger(__name__)

_CHUNK = 1 << 20
_TIMEOUT = 60.0
_UNPACKED_MARKER = ".bench-unpacked"


class DistributionUnreachable(ProvisionError):
    """The repository's host cannot be reached at all (no DNS answer, refused, timed out): not an HTTP error."""


class ArchiveNotFound(ProvisionError):
    """The repository answered that the archive itself is not there (HTTP 404/410): most often a version that was
    never released, or that this mirror does not have. Not a missing checksum beside an archive that is there.
    Bad input as a wrong option is: running again will not help."""

    exit_code = 2


def distribution_url(engine: str, version: str, repository: str | None = None, *, os: str | None = None,
                     machine: str | None = None) -> str:
    """The archive URL of ``engine`` ``version`` in ``repository`` (a name or a template; default: as chosen by
    ``bench.provision.repositories``) for this machine, or for ``os``/``machine`` (e.g. a cloud host)."""
    return resolve_repository(engine, version, repository, os=os, machine=machine).url


def checksum_algorithm(url: str, checksum: Checksum = "auto") -> str | None:
    """sha1 for Maven-style zips, sha512 for official tarballs, unless configured explicitly."""
    if checksum == "none":
        return None
    if checksum != "auto":
        return checksum
    return "sha512" if url.endswith((".tar.gz", ".tgz")) or "artifacts.elastic.co" in url else "sha1"


class Obtained(NamedTuple):
    home: Path  # the unpacked install (contains bin/)
    facts: DistributionFacts


def obtain_distribution(engine: str, version: str, repository: str | None = None,
                        distribution_path: Path | None = None, checksum: Checksum = "auto") -> Path:
    """The unpacked install dir (contains ``bin/``) of the requested distribution, from the cache if possible."""
    return obtain(engine, version, repository, distribution_path=distribution_path, checksum=checksum).home


def obtain(engine: str, version: str, repository: str | None = None, car_repository: str | None = None, *,
           distribution_path: Path | None = None, checksum: Checksum = "auto") -> Obtained:
    """The unpacked install and what it is. A default (not user-chosen) repository whose host cannot be reached
    falls back to Maven Central's integ-test build, saying so in one line and in the facts."""
    layout = _layout(engine)
    if distribution_path is not None:
        path = Path(distribution_path).expanduser()
        home, digest = _local_distribution(path, layout.binary)
        return Obtained(home, _facts(home, engine, version, "local", "custom", None, path.name,
                                     f"sha512:{digest}" if digest else None, source=str(path)))
    repo = resolve_repository(engine, version, repository, car_repository, checksum)
    fallback = None
    try:
        archive = _download_release(engine, version, repo)
    except DistributionUnreachable as e:
        if repo.explicit:
            raise ProvisionError(f"{e}; the {repo.name} repository was chosen explicitly, so bench does not fall "
                                 "back to another build") from None
        host, reason = repo.host, _reason(e)
        fallback = f"{host} unreachable ({reason})"
        chosen, repo = repo, fallback_repository(engine, version, checksum)
        notice(f"cannot reach {host}: {reason}; running {engine} "
               f"{version} from Maven Central's integ-test build instead: a minimal build without most modules and "
               f"without a bundled JDK (pass --distribution-repository=release to refuse this fallback)")
        # a mirror of the official archives is the remedy, not one of the fallback's
        archive = _download_release(engine, version, repo, mirror_of=chosen)
    verified = _stored_checksum(archive, repo.checksum)
    # The digest download_archive just verified keys the unpacked install: no second pass over the archive.
    key = verified.partition(":")[2] if verified else _file_digest(archive, "sha1")
    home = unpack(archive, key, layout.binary)
    return Obtained(home, _facts(home, engine, version, repo.name, repo.flavour, repo.url, archive.name, verified,
                                 fallback=fallback))


def _download_release(engine: str, version: str, repo: Repository, mirror_of: Repository | None = None) -> Path:
    """download_archive, where an archive that is not there says which version and what to do instead (a mirror of
    ``mirror_of``'s archives, by default ``repo``'s)."""
    try:
        return download_archive(repo.url, repo.checksum or "none")
    except ArchiveNotFound as e:
        raise ArchiveNotFound(f"{engine} {version} was not found at {repo.url} ({_http_status(e)}): "
                              f"{_not_found_advice(engine, repo, mirror_of or repo)}") from None


def _http_status(e: BaseException) -> str:
    return next((w for w in ("HTTP 410", "HTTP 404") if w in str(e)), "HTTP 404")


def _not_found_advice(engine: str, repo: Repository, mirror_of: Repository) -> str:
    """What to do when a repository does not have a version: check it, use a local archive, or another mirror."""
    check = "check the version"
    if repo.name == "maven-integ-test" or "repo1.maven.org" in repo.url:
        # Maven lays a version out as a folder of its own, and the folder above lists every version it has.
        check += f" (the versions there are listed at {repo.url.rsplit('/', 2)[0]}/)"
    if mirror_of.name == "url":
        mirror = "pass a mirror that has it as --distribution-repository=URL-TEMPLATE"
    else:
        # the keys bench.provision.repositories reads: Rally's NAME.url is Elasticsearch's
        key = f"{mirror_of.name}.url" if engine == "elasticsearch" else f"{engine}.{mirror_of.name}.url"
        mirror = (f"set a mirror that has it as '{key} = <URL template>' in [distributions] of {ini_path()} "
                  "(or --distribution-repository=URL-TEMPLATE)")
    return f"{check}; for an archive or install on this machine pass --distribution-path=PATH; {mirror}"


def _reason(e: BaseException) -> str:
    return str(e).rsplit(": ", 1)[-1].split(";")[0]


def _stored_checksum(archive: Path, algo: str | None) -> str | None:
    if not algo:
        return None
    try:
        return f"{algo}:{archive.with_name(f'{archive.name}.{algo}').read_text().split()[0]}"
    except (OSError, IndexError):
        return f"{algo}:{_file_digest(archive, algo)}"


def _facts(home: Path, engine: str, version: str, repository: str, flavour: str, url: str | None, archive: str,
           checksum: str | None, *, fallback: str | None = None, source: str | None = None) -> DistributionFacts:
    def names(folder: str) -> list[str]:
        d = home / folder
        return sorted(p.name for p in d.iterdir() if p.is_dir()) if d.is_dir() else []

    return DistributionFacts(engine=engine, version=version, repository=repository, flavour=flavour, url=url,
                             source=source, archive=archive, checksum=checksum, modules=names("modules"),
                             plugins=names("plugins"), bundled_jdk=(home / "jdk" / "bin" / "java").is_file(),
                             fallback=fallback)


def download_archive(url: str, checksum: Checksum = "auto") -> Path:
    """The verified archive for url in the distributions cache, downloaded if missing or corrupt."""
    name = Path(urllib.parse.urlparse(url).path).name
    if not name.endswith((".zip", ".tar.gz", ".tgz")):
        raise ProvisionError(f"distribution URL {url} does not end in .zip, .tar.gz or .tgz; "
                             "fix the repository template (--distribution-repository)")
    # One folder per URL, so two mirrors serving different files under one name never collide.
    folder = distributions_dir() / f"{name}-{hashlib.sha1(url.encode()).hexdigest()[:10]}"
    folder.mkdir(parents=True, exist_ok=True)
    return download_verified(url, folder / name, checksum_algorithm(url, checksum))


def download_verified(url: str, target: Path, algo: str | None) -> Path:
    """``target``, downloaded from ``url`` if missing or damaged, checked against the published ``<url>.<algo>``
    (the stored copy when offline). Everything from the check to the rename is under the target's lock: a second
    bench waits, then finds the file and verifies it as any cached one."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(lock_file_for(target), waiting=f"waiting for another bench's download of {target.name}"):
        remove_stale_parts(target)
        return _download_locked(url, target, algo)


def _download_locked(url: str, archive: Path, algo: str | None) -> Path:
    expected = _expected_checksum(url, algo, archive) if algo else None
    if archive.exists():
        if algo is None or expected is None or _file_digest(archive, algo) == expected:
            log.info("using cached distribution %s", archive)
            return archive
        # Damaged in the cache (a disk error, a copy that was cut short): never unpacked, fetched again.
        damaged = f"the cached distribution {archive} does not match its {algo} checksum (it is damaged)"
        archive.unlink()
        try:
            _fetch_verified(url, archive, algo, expected)
        except ProvisionError as e:
            raise type(e)(f"{damaged} and was deleted; downloading it again failed: {e}") from None
        notice(f"{damaged}; it was downloaded again and verified")
        return archive
    return _fetch_verified(url, archive, algo, expected)


def _fetch_verified(url: str, archive: Path, algo: str | None, expected: str | None) -> Path:
    """Download url to archive through a part file, renamed only once it matched ``expected``."""
    part = part_path(archive)
    try:
        _fetch(url, part)
        if algo and expected:
            actual = _file_digest(part, algo)
            if actual != expected:
                raise ProvisionError(f"checksum mismatch for {url}: expected {algo} {expected}, got {actual}; "
                                     "the download is corrupt or the mirror serves a different file")
            # what _expected_checksum falls back to offline; written whole, as another bench may read it
            write_atomically(archive.with_name(f"{archive.name}.{algo}"), (expected + "\n").encode())
        os.replace(part, archive)
    finally:
        part.unlink(missing_ok=True)  # gone already unless something failed
    return archive


def unpack(archive: Path, digest: str, binary: str) -> Path:
    """Unpack archive once into the cache (keyed by digest); returns the install dir."""
    target = distributions_dir() / "unpacked" / digest
    with exclusive(lock_file_for(target), waiting=f"waiting for another bench unpacking {archive.name}"):
        if (target / _UNPACKED_MARKER).exists():
            return _install_root(target, binary, archive)
        # Holding the lock, any unpack folder of this digest is a killed process's (its name says which digest).
        prefix = f".unpack-{digest}-"
        for stale in target.parent.glob(glob.escape(prefix) + "*"):
            shutil.rmtree(stale, ignore_errors=True)
        shutil.rmtree(target, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=target.parent))
        try:
            _extract(archive, tmp)
            (tmp / _UNPACKED_MARKER).write_text(str(archive) + "\n")
            os.replace(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return _install_root(target, binary, archive)


def _local_distribution(path: Path, binary: str) -> tuple[Path, str | None]:
    """The install of a local folder or archive, and the archive's sha512 (its one pass also keys the unpack)."""
    if not path.exists():
        raise ProvisionError(f"distribution_path {path} does not exist; point it at a .zip/.tar.gz archive "
                             "or an unpacked install")
    if path.is_dir():
        return _install_root(path, binary, path), None
    if not path.name.endswith((".zip", ".tar.gz", ".tgz")):
        raise ProvisionError(f"distribution_path {path} is neither a folder nor a .zip/.tar.gz archive")
    digest = _file_digest(path, "sha512")
    return unpack(path, digest, binary), digest


def _install_root(folder: Path, binary: str, source: Path) -> Path:
    """folder itself or its single top-level subfolder, whichever contains the engine's binary."""
    if (folder / binary).is_file():
        return folder
    subdirs = [p for p in folder.iterdir() if p.is_dir()]
    if len(subdirs) == 1 and (subdirs[0] / binary).is_file():
        return subdirs[0]
    raise ProvisionError(f"{source} does not contain {binary}; is it a distribution of the right engine?")


def _extract(archive: Path, dest: Path) -> None:
    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    out = Path(zf.extract(info, dest))
                    # zipfile drops Unix modes; restore them so bin/ scripts stay executable.
                    mode = (info.external_attr >> 16) & 0o777
                    if mode and not info.is_dir():
                        out.chmod(mode)
                    elif not info.is_dir() and "/bin/" in f"/{info.filename}":
                        out.chmod(0o755)
        else:
            with tarfile.open(archive, "r:*") as tf:
                tf.extractall(dest, filter="tar")
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as e:
        raise ProvisionError(f"cannot unpack {archive}: {e}; delete it and try again") from e
    # Everything readable by the unprivileged node user, who gets a copy of this tree.
    for root, dirs, files in os.walk(dest):
        for d in dirs:
            p = os.path.join(root, d)
            os.chmod(p, os.stat(p).st_mode | 0o755)
        for f in files:
            p = os.path.join(root, f)
            os.chmod(p, os.stat(p).st_mode | stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)


def _expected_checksum(url: str, algo: str, archive: Path) -> str:
    """The published checksum (first token of ``<url>.<algo>``); the stored copy when offline."""
    stored = archive.with_name(f"{archive.name}.{algo}")
    try:
        with urllib.request.urlopen(f"{url}.{algo}", timeout=_TIMEOUT) as resp:
            text = resp.read(4096).decode("ascii", "replace")
    except urllib.error.HTTPError as e:
        # A checksum that is not there is most often an archive that is not there either: a version that does not
        # exist wants other advice than a mirror that serves archives without checksums.
        e.close()
        archive_status = _archive_status(url) if e.code in NOT_FOUND else None
        if archive_status in NOT_FOUND:
            raise ArchiveNotFound(f"{url} is not there (HTTP {archive_status}), nor is its checksum {url}.{algo}"
                                  ) from None
        there = ", although the archive is there" if archive_status == 200 else ""
        raise ProvisionError(f"cannot fetch checksum {url}.{algo}: HTTP {e.code}{there}; the mirror must publish it "
                             "(or set checksum: none in the car config to skip verification)") from None
    except (urllib.error.URLError, OSError) as e:
        if archive.exists() and stored.exists():
            log.warning("cannot fetch %s.%s (%s); verifying the cached archive against the stored checksum",
                        url, algo, e)
            return stored.read_text().strip()
        raise DistributionUnreachable(f"cannot fetch checksum {url}.{algo}: {getattr(e, 'reason', e)}; check the "
                                      "network or the repository") from None
    token = text.split()[0].lower() if text.split() else ""
    expected_len = {"sha1": 40, "sha512": 128}[algo]
    if len(token) != expected_len or any(c not in "0123456789abcdef" for c in token):
        raise ProvisionError(f"checksum file {url}.{algo} does not hold a {algo} digest (got {text[:60]!r})")
    return token


def _archive_status(url: str) -> int | None:
    """The HTTP status the server answers for the archive at url (200 when it is there), None when it cannot be
    told. HEAD first; a server that does not take HEAD is asked with GET, closed after the headers."""
    for method in ("HEAD", "GET"):
        try:
            with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=_TIMEOUT) as resp:
                return int(resp.status)
        except urllib.error.HTTPError as e:
            e.close()  # an HTTPError holds the answer's connection
            if method == "HEAD" and e.code in (405, 501):
                continue
            return e.code
        except (urllib.error.URLError, OSError):
            return None
    return None


def _fetch(url: str, dest: Path) -> None:
    fetch(url, dest, error=ProvisionError, unreachable=DistributionUnreachable, not_found=ArchiveNotFound,
          hint="; check the version, the repository and the network")


def _file_digest(path: Path, algo: str) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, algo).hexdigest()


def _layout(engine: str) -> EngineLayout:
    try:
        return ENGINES[engine]
    except KeyError:
        raise ProvisionError(f"unknown engine {engine!r}; use one of {', '.join(ENGINES)}") from None
