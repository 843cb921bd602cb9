"""Benches running at once share one download cache, for real: processes (not threads) provisioning the real
Elasticsearch zip, or one corpus file, from an empty cache at the same moment; two real races started together
from an empty cache; and benches killed mid-download or mid-unpack, or interrupted while they wait, leaving nothing
that breaks the next run.

A local HTTP server stands in for the repository (Maven Central's layout under ``/es/<version>/``) and serves a copy
of the real zip slowly, so that the downloads really overlap; it counts every request. Each child process logs to a
file of its own: the log says which one waited for the other, so a test whose downloads did not overlap fails
instead of passing for the wrong reason.
"""

from __future__ import annotations

import bz2
import contextlib
import hashlib
import logging
import multiprocessing
import os
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from bench.provision.distribution import distribution_url, download_archive
from bench.trials.sqlite import TrialStore
from tests.driver.test_step_corpora import DOCS, two_corpus_track
from tests.faults.test_faults import RaceProcess, race, start_race  # noqa: F401 - race is a fixture
from tests.support.esnode import default_cache
from tests.support.http_serving import serving
from tests.track.test_corpus import docs_bytes

VERSION = "8.19.21"
ZIP = f"/es/{VERSION}/elasticsearch-{VERSION}.zip"
TEMPLATE = "/es/{version}/elasticsearch-{version}.zip"
WAITED_FOR_DOWNLOAD = "waiting for another bench's download of"
MB = 1 << 20
CHUNK = 1 << 16

# The real Maven zip (downloaded once into the cache) and races that start nodes: the cluster tier.
pytestmark = [pytest.mark.timeout(600), pytest.mark.cluster]


@pytest.fixture(scope="module")
def real_zip() -> Path:
    """The real Maven zip, from the session's download cache (downloaded there once if that cache is cold)."""
    saved = os.environ.get("BENCH_CACHE")
    os.environ["BENCH_CACHE"] = default_cache()
    try:
        return download_archive(distribution_url("elasticsearch", VERSION))
    finally:
        if saved is None:
            del os.environ["BENCH_CACHE"]
        else:
            os.environ["BENCH_CACHE"] = saved


class Repository:
    """Files served from 127.0.0.1 at ``rate`` bytes/s per download (changeable while serving); ``hits`` counts
    the GETs of each path."""

    def __init__(self, files: dict[str, Path | bytes], rate: float) -> None:
        self.files = files
        self.rate = rate
        self.hits: Counter[str] = Counter()
        self.base = ""

    @contextlib.contextmanager
    def serving(self) -> Iterator[Repository]:
        repo = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                repo.hits[self.path] += 1
                src = repo.files.get(self.path)
                if src is None:
                    self.send_error(404)
                    return
                size = src.stat().st_size if isinstance(src, Path) else len(src)
                self.send_response(200)
                self.send_header("Content-Length", str(size))
                self.end_headers()
                try:
                    with open(src, "rb") if isinstance(src, Path) else contextlib.nullcontext(None) as f:
                        sent = 0
                        while sent < size:
                            chunk = f.read(CHUNK) if f else src[sent:sent + CHUNK]
                            time.sleep(len(chunk) / repo.rate)  # before writing: a one-chunk file is slow too
                            self.wfile.write(chunk)
                            sent += len(chunk)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the downloading process was killed

            def log_message(self, *args: object) -> None:
                pass

        with serving(Handler) as server:
            self.base = f"http://127.0.0.1:{server.server_address[1]}"
            yield self

    @property
    def template(self) -> str:
        return self.base + TEMPLATE


def es_repository(real_zip: Path, seconds: float) -> Repository:
    """The real zip and its .sha1, the zip taking ``seconds`` to download."""
    digest = hashlib.sha1(real_zip.read_bytes()).hexdigest()
    return Repository({ZIP: real_zip, f"{ZIP}.sha1": f"{digest}  {real_zip.name}\n".encode()},
                      rate=real_zip.stat().st_size / seconds)


# -- what the child processes run (spawned: a fresh interpreter each, as a second bench is) -----------------------


def _child(log_file: str, cache: str, job: Callable[[], Path]) -> None:
    """Run ``job`` with its log in ``log_file``, its result (or error) in ``.out`` and its activity line (the spinner
    a terminal shows) in ``.activity``."""
    from rich.console import Console

    from bench.util.activity import step

    logging.basicConfig(filename=log_file, level=logging.INFO, format="%(name)s %(message)s")
    os.environ["BENCH_CACHE"] = cache
    out = Path(log_file).with_suffix(".out")
    with open(Path(log_file).with_suffix(".activity"), "w") as screen:
        try:
            with step("starting", console=Console(file=screen, force_terminal=True, width=200)):
                out.write_text(str(job()))
        except BaseException as e:
            out.write_text(f"error: {type(e).__name__}: {e}")
            raise


def provision(log_file: str, cache: str, template: str | None, archive: str | None = None) -> None:
    """obtain_distribution, as a cluster's provisioning does it: from ``template``, or from the local ``archive``."""
    from bench.provision.distribution import obtain_distribution

    _child(log_file, cache, lambda: obtain_distribution(
        "elasticsearch", VERSION, repository=template, distribution_path=Path(archive) if archive else None))


def prepare_corpus(log_file: str, cache: str, track_dir: str) -> None:
    """The document set of corpus ``files`` of ``two_corpus_track``, as a race's corpus preparation makes it."""
    from bench.track.corpus import CorpusRecipe, prepare_document_set
    from bench.track.loader import load_track

    def job() -> Path:
        track = load_track(Path(track_dir), {})
        return prepare_document_set("files", track.corpus("files").documents[0], CorpusRecipe(track.root))

    _child(log_file, cache, job)


class Child:
    """One spawned process running ``target(log_file, *args)``; its log and its result (``.out``) in ``folder``."""

    _ctx = multiprocessing.get_context("spawn")

    def __init__(self, folder: Path, name: str, target: Callable[..., None], *args: str | None) -> None:
        self.log_file = folder / f"{name}.log"
        self.proc = self._ctx.Process(target=target, args=(str(self.log_file), *args), name=name)
        self.proc.start()

    @property
    def log(self) -> str:
        return self.log_file.read_text() if self.log_file.exists() else ""

    @property
    def activity(self) -> str:
        screen = self.log_file.with_suffix(".activity")
        return screen.read_text(errors="replace") if screen.exists() else ""

    @property
    def result(self) -> str:
        out = self.log_file.with_suffix(".out")
        return out.read_text() if out.exists() else ""

    def wait(self, timeout: float) -> int:
        self.proc.join(timeout)
        if self.proc.exitcode is None:
            self.proc.kill()
            self.proc.join(10)
            pytest.fail(f"{self.proc.name} did not end within {timeout:.0f} s; its log: {self.log[-2000:]}")
        return self.proc.exitcode

    def wait_for(self, what: str, check: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            assert self.proc.is_alive(), f"{self.proc.name} ended before {what}: {self.result} {self.log[-2000:]}"
            assert time.monotonic() < deadline, f"no {what} within {timeout:.0f} s: {self.log[-2000:]}"
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(10)


@pytest.fixture
def children() -> Iterator[list[Child]]:
    started: list[Child] = []
    yield started
    for c in started:
        c.stop()


def downloading(cache: Path) -> dict[str, int]:
    """The part files in the cache now, with the bytes each holds."""
    sizes = {}
    for p in cache.rglob("*.part"):
        with contextlib.suppress(FileNotFoundError):  # renamed or removed meanwhile
            sizes[p.name] = p.stat().st_size
    return sizes


def leftovers(cache: Path) -> list[str]:
    """Part files and unpack folders in the cache: what a download or unpack in progress (or killed) writes."""
    return sorted(str(p.relative_to(cache)) for p in cache.rglob("*")
                  if p.name.endswith(".part") or p.name.startswith(".unpack-"))


# -- two processes, one download ----------------------------------------------------------------------------------


def test_two_processes_provision_from_an_empty_cache_with_one_download(tmp_path: Path, real_zip: Path,
                                                                       children: list[Child]) -> None:
    cache = tmp_path / "cold-cache"
    with es_repository(real_zip, seconds=6).serving() as repo:
        children += [Child(tmp_path, f"bench-{i}", provision, str(cache), repo.template) for i in (1, 2)]
        codes = [c.wait(300) for c in children]
    assert codes == [0, 0], [c.result for c in children]
    homes = {c.result for c in children}
    assert len(homes) == 1 and (Path(homes.pop()) / "bin" / "elasticsearch").is_file()
    assert repo.hits[ZIP] == 1
    # The downloads overlapped: one bench found the other downloading and waited, then used its verified archive.
    waited = [c for c in children if WAITED_FOR_DOWNLOAD in c.log]
    assert len(waited) == 1, [c.log for c in children]
    assert "using cached distribution" in waited[0].log
    assert f"{WAITED_FOR_DOWNLOAD} elasticsearch-{VERSION}.zip" in waited[0].activity  # what a terminal shows
    assert leftovers(cache) == []


def test_two_processes_prepare_one_corpus_file_with_one_download(tmp_path: Path, children: list[Child]) -> None:
    packed = bz2.compress(docs_bytes(DOCS))
    cache = tmp_path / "cold-cache"
    with Repository({"/documents.json.bz2": packed}, rate=len(packed) / 4).serving() as repo:
        track = two_corpus_track(tmp_path / "track", repo.base)
        children += [Child(tmp_path, f"bench-{i}", prepare_corpus, str(cache), str(track)) for i in (1, 2)]
        codes = [c.wait(120) for c in children]
    assert codes == [0, 0], [c.result for c in children]
    paths = {c.result for c in children}
    assert paths == {str(cache / "data" / "files" / "documents.json")}
    assert Path(paths.pop()).read_bytes() == docs_bytes(DOCS)
    assert repo.hits["/documents.json.bz2"] == 1
    assert sum("waiting for another bench" in c.log for c in children) == 1, [c.log for c in children]
    assert leftovers(cache) == []


def test_two_races_start_together_from_an_empty_cache(tmp_path: Path, real_zip: Path,
                                                      race: list[RaceProcess]) -> None:  # noqa: F811
    cache = tmp_path / "cold-cache"
    # Both start at once and reach the download within a second or two of each other: 8 s of download is time
    # enough for the second to find the first downloading, which the logs must show (not an overlap assumed).
    with es_repository(real_zip, seconds=8).serving() as repo:
        runs = [start_race(race, tmp_path / f"home-{i}", "--track=nginx", "--test-mode", "--car=defaults,512mheap",
                           f"--distribution-repository={repo.template}", env={"BENCH_CACHE": str(cache)})
                for i in (1, 2)]
        codes = [r.wait_exit(480) for r in runs]
    assert codes == [0, 0], [r.stderr[-3000:] for r in runs]
    for r in runs:
        with TrialStore(r.home / "bench.db") as store:
            [trial] = store.list_trials()
        assert trial.status == "complete" and trial.clusters[0]["version"] == VERSION
    assert repo.hits[ZIP] == 1
    logs = [(r.home / "logs" / "bench.log").read_text() for r in runs]
    assert sum(WAITED_FOR_DOWNLOAD in log for log in logs) == 1
    assert leftovers(cache) == []


# -- killed and interrupted benches ------------------------------------------------------------------------------


def test_interrupted_and_killed_downloads_leave_nothing_that_breaks_the_next_run(tmp_path: Path, real_zip: Path,
                                                                                children: list[Child]) -> None:
    cache = tmp_path / "cold-cache"
    with es_repository(real_zip, seconds=120).serving() as repo:
        first = Child(tmp_path, "downloading", provision, str(cache), repo.template)
        children.append(first)
        first.wait_for("a part file", lambda: any(n > MB for n in downloading(cache).values()), 60)
        # Ctrl-C while waiting for another bench's download: the wait ends at once.
        waiting = Child(tmp_path, "waiting", provision, str(cache), repo.template)
        children.append(waiting)
        waiting.wait_for("the wait", lambda: WAITED_FOR_DOWNLOAD in waiting.log, 60)
        os.kill(waiting.proc.pid, signal.SIGINT)
        assert waiting.wait(15) != 0 and "KeyboardInterrupt" in waiting.result
        # kill -9 mid-download: its part file stays, its lock goes with it.
        os.kill(first.proc.pid, signal.SIGKILL)
        first.wait(15)
        [stale] = downloading(cache)
        # Ctrl-C mid-download: the part file goes.
        interrupted = Child(tmp_path, "interrupted", provision, str(cache), repo.template)
        children.append(interrupted)
        interrupted.wait_for("its own download", lambda: any(n > 0 for name, n in downloading(cache).items()
                                                             if name != stale), 60)
        os.kill(interrupted.proc.pid, signal.SIGINT)
        assert interrupted.wait(15) != 0 and "KeyboardInterrupt" in interrupted.result
        assert WAITED_FOR_DOWNLOAD not in interrupted.log  # the killed bench's lock did not hold it up
        assert leftovers(cache) == []  # the stale part file was removed too
        # And the next run just works.
        repo.rate = 200 * MB
        last = Child(tmp_path, "next", provision, str(cache), repo.template)
        children.append(last)
        assert last.wait(120) == 0, last.result
    assert (Path(last.result) / "bin" / "elasticsearch").is_file()
    assert repo.hits[ZIP] == 3  # the killed, the interrupted and the last one; the waiting one never downloaded
    assert leftovers(cache) == []


def test_a_bench_killed_mid_unpack_leaves_nothing_that_breaks_the_next_run(tmp_path: Path, real_zip: Path,
                                                                          children: list[Child]) -> None:
    cache = tmp_path / "cold-cache"
    unpacked = cache / "distributions" / "unpacked"
    first = Child(tmp_path, "unpacking", provision, str(cache), None, str(real_zip))
    children.append(first)

    def unpacking() -> bool:
        return any(p.name.startswith(".unpack-") and any(p.rglob("*.jar")) for p in unpacked.glob(".*"))

    first.wait_for("an unpack in progress", unpacking, 60)
    os.kill(first.proc.pid, signal.SIGKILL)
    first.wait(15)
    assert leftovers(cache)
    last = Child(tmp_path, "next", provision, str(cache), None, str(real_zip))
    children.append(last)
    assert last.wait(120) == 0, last.result
    assert (Path(last.result) / "bin" / "elasticsearch").is_file()
    assert leftovers(cache) == []
