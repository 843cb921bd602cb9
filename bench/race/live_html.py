"""``bench race --live-html PATH``: the live view as a page in a browser, and kept with the trial.

Every frame of the live view (``bench.driver.progress.LiveFrame``, once a second) becomes points of a
``LiveRecord``; the page (``bench.results.live_page``) is rewritten whole, atomically (a temporary file renamed
over PATH), once a second (less often once drawing it takes over 5 % of the time: hours of points), and reloads
itself while the race runs. When the schedule ends, however it
ends, the final page (no reload) is written to PATH and the record kept in the trial's folder
(``live/live.json`` and ``live/live.html``), so ``bench show TRIAL --live-html PATH`` draws it again."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from bench.driver.progress import LiveFrame
from bench.results.live_page import render_live_page, task_point
from bench.results.live_record import ExtraPoint, LiveRecord
from bench.util.errors import ConfigError

WRITE_EVERY = 1.0
# A rewrite may take at most this share of the race process's time: a long race's page takes longer to draw, and
# then it is rewritten less often (every 1 s while it draws in under 50 ms).
MOST_SHARE = 0.05
KEPT_DIR = "live"
KEPT_DATA = "live.json"
KEPT_PAGE = "live.html"


def checked_path(value: str | None) -> Path | None:
    """--live-html's PATH: a file in a folder that exists (one line otherwise, before anything starts)."""
    if value is None:
        return None
    path = Path(value).expanduser()
    if path.is_dir():
        raise ConfigError(f"--live-html {value}: is a folder; name the page's file, e.g. {path / 'live.html'}")
    if not path.parent.is_dir():
        raise ConfigError(f"--live-html {value}: folder {path.parent} does not exist; create it or name another")
    return path


def write_atomically(path: Path, text: str) -> None:
    """A reader (the reloading browser) sees the old page or the new one, never half of one."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class LivePage:
    """A frame consumer of the live view that keeps its record and writes the page."""

    def __init__(self, path: Path, title: str) -> None:
        self.path = path
        now = time.time()
        self.record = LiveRecord(title=title, started=now, updated=now)
        self._next = 0.0
        self._seen: dict[tuple[str, str], float] = {}
        self._ended: set[str] = set()
        self.write()  # the page exists from the start (the address printed can be opened at once)

    def __call__(self, frame: LiveFrame) -> None:
        r = self.record
        t = frame.at - r.started
        r.updated = frame.at
        for v in frame.tasks:
            if v.task in self._ended:
                continue  # a finished task's line stays as it ended
            if v.done:
                self._ended.add(v.task)
            docs = "docs" in v.units and v.units["docs"] > 0
            rate = v.rates.get("docs") if docs else v.requests_per_s  # None: no settled second yet
            r.tasks.setdefault(v.task, []).append(task_point(
                t, rate, "docs/s" if docs else "requests/s", v.latency_ms, v.requests, v.errors, v.errors_per_s))
        for row in frame.extras:
            if self._seen.get((row.group, row.key)) == row.at:
                continue  # the same reading as before: one point per reading
            self._seen[(row.group, row.key)] = row.at
            r.extras.setdefault(row.group, {}).setdefault(row.key, []).append(
                ExtraPoint(t=row.at - r.started, values=dict(row.values), note=row.note))
        if time.monotonic() >= self._next:
            self.write()

    def write(self) -> None:
        began = time.monotonic()
        write_atomically(self.path, render_live_page(self.record))
        took = time.monotonic() - began
        self._next = began + max(WRITE_EVERY, took / MOST_SHARE)

    def finish(self, trial_dir: Path) -> Path:
        """The final page at PATH and the record kept in the trial's folder; returns the kept page."""
        self.record.running = False
        self.write()
        kept = trial_dir / KEPT_DIR
        kept.mkdir(parents=True, exist_ok=True)
        write_atomically(kept / KEPT_DATA, self.record.model_dump_json())
        write_atomically(kept / KEPT_PAGE, render_live_page(self.record))
        return kept / KEPT_PAGE


def show_kept(trial_dir: Path, trial_id: str, out: Path) -> None:
    """``bench show TRIAL --live-html PATH``: the kept record drawn again at PATH."""
    data = trial_dir / KEPT_DIR / KEPT_DATA
    if not data.is_file():
        raise ConfigError(f"trial {trial_id} kept no live page (it ran without --live-html): nothing to show")
    record = LiveRecord.model_validate_json(data.read_text(encoding="utf-8"))
    write_atomically(out, render_live_page(record.model_copy(update={"running": False})))
