"""Which tracks of a rally-tracks checkout (or workloads of an opensearch-benchmark-workloads checkout) bench loads,
with their default challenge (test procedure), and why not.

Each track folder (any folder below DIR holding a ``track.json`` or an OSB ``workload.json``; folders starting with
``.`` or ``_``
and folders without one are skipped) is loaded the way ``bench race --track-path=FOLDER`` loads it
before it starts anything (``bench.race.race.load_race_track``: extensions, rendering, validation, the
load-time checks of every construct, the default challenge), with test mode off. Nothing is indexed
and no cluster is started; corpora are only fetched when a race runs, so a checkout without its data
files is enough. Each track is loaded in its own process: a track's ``track.py`` must not leak into
the next one.

Prints a markdown table (track, default challenge, loads, reason), a summary count and the failure
reasons grouped by construct. Needs a checkout of https://github.com/elastic/rally-tracks:

    python benchmarks/rally_tracks_compat.py [DIR]        # DIR defaults to ../shared/tracks-real/rally-tracks
    python benchmarks/rally_tracks_compat.py DIR --json   # one JSON object per track instead
    python benchmarks/rally_tracks_compat.py DIR --offline   # never fetch a track's dependencies (no network)
    python benchmarks/rally_tracks_compat.py ~/opensearch-benchmark-workloads   # OSB's workloads, the same way
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# The real tree in the shared folder beside the checkout ($BENCH_SHARED names another), as the tests find it.
DEFAULT_DIR = Path(os.environ.get("BENCH_SHARED") or ROOT.parent / "shared") / "tracks-real" / "rally-tracks"
TRACK_FILE = "track.json"
SPEC_FILES = (TRACK_FILE, "workload.json")
TIMEOUT_S = 300


def track_dirs(base: Path) -> list[Path]:
    """Every folder below ``base`` with a track.json (or workload.json), skipping hidden, private and test
    folders."""
    out: list[Path] = []
    for f in sorted(p for name in SPEC_FILES for p in base.rglob(name)):
        rel = f.parent.relative_to(base)
        if any(p.startswith((".", "_")) for p in rel.parts) or rel.parts[:1] in (("it",), ("docs",)):
            continue
        if f.parent not in out:
            out.append(f.parent)
    return sorted(out)


def _default_challenge_guess(track_dir: Path) -> str:
    """The default challenge's name when bench cannot load the track: render track.json with bench's
    Rally environment and read the challenge marked default (or the only one); '?' if even that fails."""
    from bench.track import rally_helpers

    try:
        env = rally_helpers.make_environment(track_dir, {})
        spec = next(f for f in SPEC_FILES if (track_dir / f).is_file())
        source = rally_helpers.assemble(track_dir, (track_dir / spec).read_text(encoding="utf-8"))
        raw = json.loads(env.from_string(source).render())
    except Exception:  # noqa: BLE001 -- best effort only: the table already says why the load failed
        return "?"
    specs = (raw.get("challenges") or raw.get("test_procedures")
             or ([raw["challenge"]] if "challenge" in raw else [raw["test_procedure"]] if "test_procedure" in raw
                 else []))
    if not specs and "schedule" in raw:
        return "default"
    named = [s for s in specs if isinstance(s, dict)]
    if len(named) == 1:
        return str(named[0].get("name", "?"))
    return next((str(s.get("name", "?")) for s in named if s.get("default") is True), "?")


def check_one(track_dir: Path, offline: bool = False) -> dict[str, Any]:
    """Load one track as a race would (default challenge, test mode off; ``offline``: a track dependency that is
    not installed is refused rather than fetched, as ``bench race --offline`` does); never raises."""
    from bench.race.options import RaceOptions
    from bench.race.race import load_race_track
    from bench.util.errors import BenchError

    try:
        _, challenge, _ = load_race_track(RaceOptions(track_path=track_dir, test_mode=False, offline=offline))
        return {"loads": True, "challenge": challenge.name, "reason": ""}
    except BenchError as e:
        reason = " ".join(str(e).split())
    except Exception as e:  # noqa: BLE001 -- a traceback where one line is due is itself a finding
        reason = f"bench crashed (a bug, not a clean refusal): {type(e).__name__}: {' '.join(str(e).split())}"
    return {"loads": False, "challenge": _default_challenge_guess(track_dir), "reason": reason}


def run_isolated(track_dir: Path, offline: bool = False) -> dict[str, Any]:
    """check_one in a fresh interpreter (track.py modules and registrations stay in that process)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--one", str(track_dir), *(["--offline"] if offline else [])]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"loads": False, "challenge": "?", "reason": f"loading took longer than {TIMEOUT_S} s"}
    last = p.stdout.strip().splitlines()[-1:] if p.stdout.strip() else []
    try:
        return json.loads(last[0])
    except (IndexError, json.JSONDecodeError):
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return {"loads": False, "challenge": "?", "reason": f"the load process died (exit {p.returncode}): {tail}"}


# ---------------------------------------------------------------- grouping reasons by construct

# (pattern, group label) in order; the first match wins. A group names the construct bench refused.
_GROUPS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"unsupported operation-type '([^']+)'"), "operation-type '{0}' not supported"),
    (re.compile(r"operation[- ]type '([^']+)'[^;]*not (?:supported|executable|runnable)"),
     "operation-type '{0}' not supported"),
    (re.compile(r"\((\S+)\) needs the parameter '([^']+)'"), "{0}: parameter '{1}' missing"),
    (re.compile(r"param-source '([^']+)'"), "param-source '{0}'"),
    (re.compile(r"No module named 'esrally"), "track.py imports a part of Rally's package (esrally) bench lacks"),
    (re.compile(r"No module named '([^'.]+)"), "track.py needs Python module '{0}'"),
    (re.compile(r"the track needs (\S+), not installed"), "track dependency '{0}' not installed"),
    (re.compile(r"installing the track's dependencies (.+?) (?:failed|timed out)"),
     "installing track dependency {0} failed"),
    (re.compile(r"(?i)track\.py"), "track.py"),
    (re.compile(r"undefined template variable: '([^']+)'"), "undefined template variable '{0}'"),
    (re.compile(r"undefined template variable\(s\) (\S+)"), "undefined template variable '{0}'"),
    (re.compile(r"the track leaves (\S+) undefined"), "undefined template variable '{0}'"),
    (re.compile(r"Jinja2 syntax error: (.*)"), "Jinja2 syntax error: {0}"),
    (re.compile(r"included template '([^']+)' not found"), "included template not found"),
    (re.compile(r"refers to '[^']+' but .* does not exist"), "referenced file missing"),
    (re.compile(r"invalid JSON"), "invalid JSON after rendering"),
    (re.compile(r"cannot render the template: (\w+)"), "template render error ({0})"),
    (re.compile(r"(\w[\w-]*): Input should be (.*?)(?: \(got|$)"), "'{0}' should be {1}"),
    (re.compile(r"(\w[\w-]*): Extra inputs are not permitted"), "key '{0}' not accepted"),
    (re.compile(r"bench crashed.*?: (\w+)"), "bench crashed ({0})"),
]


def reason_group(reason: str) -> str:
    for pattern, label in _GROUPS:
        m = pattern.search(reason)
        if m:
            return label.format(*m.groups())
    # Unclassified: the reason without paths and quoted names, so alike reasons still group together.
    text = re.sub(r"(/[^\s:]+)+:?", "", reason)
    return re.sub(r"'[^']*'", "'…'", text).strip()[:120] or "unknown"


def registered_by_track_py(track_dir: str, op_type: str) -> bool:
    """Whether the track's own Python code registers a runner for this operation type (Rally's track.py API)."""
    pattern = re.compile(r"register_runner\(\s*['\"]" + re.escape(op_type) + r"['\"]")
    return any(pattern.search(f.read_text(errors="replace")) for f in Path(track_dir).rglob("*.py") if f.is_file())


def failure_kind(reason: str, track_dir: str) -> str:
    """A coarse kind, for the summary line that says where the work is."""
    m = re.search(r"unsupported operation-type '([^']+)'", reason)
    if m:
        if registered_by_track_py(track_dir, m.group(1)):
            return "operation type the track registers in its track.py"
        return "built-in Rally operation type missing"
    if "track.py" in reason or "the track needs" in reason or "the track's dependencies" in reason:
        return "the track's Python code (track.py imports, dependencies)"
    if "undefined template variable" in reason or "undefined, rendered as empty" in reason:
        return "template variable undefined (Rally renders it as empty/false or injects it)"
    return "other track-format differences"


def short_reason(reason: str, track_dir: str) -> str:
    """The reason as a table cell: paths relative to the track folder, without the list of alternatives."""
    reason = reason.replace(track_dir.rstrip("/") + "/", "")
    return re.sub(r": use one of [^;]*", "", reason)


def markdown(rows: list[dict[str, Any]]) -> str:
    def cell(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")

    lines = ["| track | default challenge | loads | reason |", "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['track']} | {cell(r['challenge'])} | {'yes' if r['loads'] else 'no'} | "
                     f"{cell(short_reason(r['reason'], r['path']))} |")
    n_ok = sum(1 for r in rows if r["loads"])
    lines += ["", f"**{n_ok} of {len(rows)} tracks load with their default challenge.**", ""]
    groups: dict[str, list[str]] = defaultdict(list)
    kinds: dict[str, int] = defaultdict(int)
    for r in rows:
        if not r["loads"]:
            label = reason_group(r["reason"])
            if label.startswith("operation-type") and failure_kind(r["reason"], r["path"]).startswith("operation type the"):
                label += " (the track's track.py registers it)"
            groups[label].append(r["track"])
            kinds[failure_kind(r["reason"], r["path"])] += 1
    if kinds:
        lines += ["Failures by kind:", ""]
        lines += [f"- {k}: {n}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))]
        lines.append("")
    if groups:
        lines += ["Failure reasons by construct:", ""]
        for label, tracks in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            lines.append(f"- {label}: {len(tracks)} track{'s' if len(tracks) != 1 else ''} ({', '.join(tracks)})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", nargs="?", default=str(DEFAULT_DIR), help="a folder of rally-tracks checkouts")
    ap.add_argument("--json", action="store_true", help="print one JSON object per track")
    ap.add_argument("--offline", action="store_true",
                    help="never fetch a track's dependencies (refuse a track whose dependencies are not installed)")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: check one track folder, print JSON
    a = ap.parse_args(argv)
    if a.one:
        print(json.dumps(check_one(Path(a.one), a.offline)))
        return 0
    base = Path(a.dir).expanduser().resolve()
    if not base.is_dir():
        print(f"{base}: not a folder; pass a checkout of elastic/rally-tracks", file=sys.stderr)
        return 2
    dirs = track_dirs(base)
    if not dirs:
        print(f"{base}: no track.json below it; pass a checkout of elastic/rally-tracks", file=sys.stderr)
        return 2
    rows = []
    # One interpreter per track (its track.py stays there). Offline, they run side by side, one per core (each is
    # mostly bench's own import: on 2 cores the 39 real tracks take half the time); online, one at a time, since two
    # tracks installing their dependencies into one libs folder at once would break each other.
    with ThreadPoolExecutor(max_workers=(os.cpu_count() or 1) if a.offline else 1) as pool:
        checked = pool.map(lambda d: run_isolated(d, a.offline), dirs)
        for d, result in zip(dirs, checked, strict=True):
            row = {"track": str(d.relative_to(base)), "path": str(d), **result}
            rows.append(row)
            if a.json:
                print(json.dumps(row), flush=True)
            else:
                print(f"checked {row['track']}: {'loads' if row['loads'] else 'fails'}", file=sys.stderr, flush=True)
    if not a.json:
        print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
