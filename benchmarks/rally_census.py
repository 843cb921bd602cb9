"""The run census: every track of a rally-tracks checkout (or workload of an opensearch-benchmark-workloads
checkout), its default challenge (test procedure) in test mode on generated corpora, against one local cluster, and
what became of it.

Each track folder (as ``rally_tracks_compat.py`` finds them) runs as a user would run it::

    bench race --track-path=FOLDER --test-mode --generate-corpora --target-hosts=127.0.0.1:PORT --on-error=continue

and each OSB workload folder (one with a ``workload.json``) as an OSB user would, with ``--workload-path=FOLDER``.

in a process group of its own, killed after ``--timeout`` seconds (a hang is an outcome, not a wait). Between
tracks the cluster is emptied (indices, data streams, templates, ingest and search pipelines, points in time), so one track's leftovers cannot fail
the next. Each run is then read back from the trial store and sorted into one outcome:

- ``completes cleanly``: the race ended and no request failed;
- ``completes, causes named``: requests failed, and every failure says what the cluster lacks (bench's own error
  text, ``bench.driver.missing_feature``) or follows from such a failure (an index that could not be created);
- ``completes, causes unnamed``: some failure says no cause (these are listed: bench's to explain);
- ``fails: cluster lacks …``: the race stopped on a failure that names a missing feature;
- ``fails: file missing from the checkout``: the track reads a file its folder does not hold;
- ``fails in bench``: the race stopped otherwise, or bench crashed;
- ``does not load``: bench refused the track before the race (``rally_tracks_compat.py`` says why);
- ``hangs``: still running at the timeout.

The cluster: ``--distribution ENGINE:VERSION`` (default ``opensearch:3.6.0``: Maven's integ-test build, which carries
OpenSearch's modules — painless, mapper-extras, ingest-common, parent-join, percolator, analysis-common, …), started
by bench for the census and stopped after it, with ``--plugin ZIP`` installed into it (the k-NN plugin for OSB's
vector workloads), or ``--target-hosts`` for a running one::

    python benchmarks/rally_census.py [DIR] [--distribution opensearch:3.6.0] [--timeout 300] [--only TRACK ...]
    python benchmarks/rally_census.py ../shared/tracks-real/osb-workloads --plugin opensearch-knn-3.6.0.0.zip
    python benchmarks/rally_census.py --reclassify census.json   # the table of a stored census, read again
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from rally_tracks_compat import DEFAULT_DIR, track_dirs  # noqa: E402 - the real tree beside the checkout

TIMEOUT_S = 300.0
LACKS = "the cluster lacks "  # bench.driver.missing_feature.LACKS
SEPARATOR = " — "
# Failures that follow from an earlier one (the index, template, data stream or pipeline it should have created):
# bench's own "waiting for it cannot succeed"; a composable template whose component templates failed; documents
# into an index created without the mapping settings (field limit) its failed template or create-index held.
_CONSEQUENCES = re.compile(r"index_not_found_exception|no such index|no matching index template|"
                           r"data_stream_not_found|data stream .* not found|pipeline with id \[.*\] does not exist|"
                           r"resource_not_found_exception|all shards failed|no_shard_available|"
                           r"does not exist, so waiting for it cannot succeed|"
                           r"specifies component templates \[.*\] that do not exist|"
                           r"Limit of total fields \[\d+\] has been exceeded", re.I)
_LOAD_ERRORS = re.compile(r"(track|workload)\.(json|py)|the (track|workload) needs|dependencies|refers to|"
                          r"unknown (challenge|test procedure)|refused at load")

OUTCOMES = ("completes cleanly", "completes, causes named", "completes, causes unnamed", "fails: cluster lacks",
            "fails: file missing from the checkout", "fails: download unreachable here", "fails in bench",
            "does not load", "hangs")
_UNREACHABLE = re.compile(r"ClientConnectorDNSError|Name or service not known|Temporary failure in name resolution|"
                          r"Cannot connect to host ([\w.-]+)|"
                          r"because a download could not be reached \((?P<why>[^)]*)\)")
_NOT_ELASTICSEARCH = "the server is not Elasticsearch"
NOT_ELASTICSEARCH = "Elasticsearch itself: the track's runners use elasticsearch-py, which refuses other engines"
# A track's assertions check its published data's answers (hit counts): synthetic documents answer otherwise.
_ASSERTION = re.compile(r"^Expected \[.+\] in \[.+\] to be ")
ASSERTION = "the track's assertions on its published data's answers (synthetic documents answer otherwise)"
# A file the track reads that its checkout does not hold (tracks-real's export lacks a few large query files).
_MISSING_FILE = re.compile(r"No such file or directory: '([^']+)'")


@dataclass
class Run:
    """What one track's race left: how it ended and the failed requests read back from its trial."""

    track: str
    seconds: float = 0.0
    timed_out: bool = False
    exit_code: int | None = None
    last_line: str = ""  # bench's last stderr line (its one-line error when it stopped)
    crashed: bool = False  # a traceback: bench failed, not the cluster
    trial: str | None = None
    challenge: str = ""
    status: str | None = None
    error: str | None = None
    requests: int = 0
    failed: int = 0
    # (task, message, count) of each kind of failure
    failures: list[tuple[str, str, int]] = field(default_factory=list)


def lacked(message: str) -> str | None:
    """The missing feature a failure message (or a race's error) names ("the field type scaled_float: needs ..."),
    or None."""
    at = message.find(LACKS)
    return None if at < 0 else message[at + len(LACKS):].split(SEPARATOR, 1)[0]


def classify(run: Run) -> tuple[str, list[str]]:
    """(outcome, causes): one of OUTCOMES, and the named causes / the unexplained messages behind it."""
    if run.timed_out:
        before = [lacked(m) or f"{task}: {m}" for task, m, _ in run.failures]
        return "hangs", [f"still running after {run.seconds:.0f} s", *(f"failed before: {b}" for b in before)]
    if run.crashed:
        return "fails in bench", [f"bench crashed: {run.last_line}"]
    if run.trial is None:
        if (what := lacked(run.last_line)) is not None:
            return "fails: cluster lacks", [what]
        if _NOT_ELASTICSEARCH in run.last_line:
            return "fails: cluster lacks", [NOT_ELASTICSEARCH]
        if m := _UNREACHABLE.search(run.last_line):
            return "fails: download unreachable here", [f"a download this machine cannot reach ({m.group('why') or m.group(0)})"]
        if _LOAD_ERRORS.search(run.last_line):
            return "does not load", [run.last_line]
        return "fails in bench", [run.last_line or f"exit code {run.exit_code}"]
    if run.status != "complete":
        why = run.error or run.last_line or f"status {run.status}"
        if (what := lacked(why)) is not None:
            return "fails: cluster lacks", [what]
        if _NOT_ELASTICSEARCH in why:
            return "fails: cluster lacks", [NOT_ELASTICSEARCH]
        if m := _UNREACHABLE.search(why):
            return "fails: download unreachable here", [f"a download this machine cannot reach ({m.group('why') or m.group(0)})"]
        if (m := _MISSING_FILE.search(why)) and f"/{run.track}/" in m.group(1) and not Path(m.group(1)).exists():
            return "fails: file missing from the checkout", [f"{m.group(1)} is not in the checkout"]
        return "fails in bench", [why]
    if not run.failures:
        return "completes cleanly", []
    named = sorted({w for _, m, _ in run.failures if (w := lacked(m)) is not None}
                   | {ASSERTION for _, m, _ in run.failures if _ASSERTION.search(m)})
    unnamed = [f"{task}: {m}" for task, m, _ in run.failures
               if lacked(m) is None and not _ASSERTION.search(m) and not (named and _CONSEQUENCES.search(m))]
    if unnamed:
        return "completes, causes unnamed", unnamed + named
    return "completes, causes named", named


# ---------------------------------------------------------------- the cluster


def _http(url: str, method: str = "GET", body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, None
    except (urllib.error.URLError, OSError, ValueError):
        return 0, None


def empty_cluster(base: str) -> None:
    """Delete what a track may have left: data streams, indices, templates, ingest and search pipelines, points in
    time (each call may be refused by a cluster without the feature: nothing to delete then)."""
    for path in ("_search/point_in_time/_all", "_data_stream/*?expand_wildcards=all", "*,-.*?expand_wildcards=all",
                 "_index_template/*", "_component_template/*", "_template/*", "_ingest/pipeline/*",
                 "_search/pipeline/*"):
        _http(f"{base}/{path}", "DELETE")


def start_cluster(distribution: str, work: Path, plugins: list[Path] | None = None) -> tuple[Any, str, str]:
    """A one-node cluster started by bench's provisioner, with ``plugins`` (zips) installed: (provisioner,
    host:port, description)."""
    from bench.provision.local import LocalProvisioner
    from bench.provision.model import ClusterSpec

    engine, _, version = distribution.partition(":")
    major = int(version.split(".")[0])
    jdk = "25" if engine == "opensearch" and major >= 3 else None  # OpenSearch 3 needs Java 21+
    # an id of its own: two censuses at once must not share (and wipe) each other's node folders
    prov = LocalProvisioner(f"census-{os.getpid()}", work / "trial")
    spec = ClusterSpec(engine=engine, version=version, repository="maven-integ-test", runtime_jdk=jdk,
                       car=["defaults"], plugins=list(plugins or []))  # type: ignore[arg-type]
    info = prov.start(spec, timeout=300)
    node = info.nodes[0]
    host = f"{node.host}:{node.http_port}"
    _http(f"http://{host}/_cluster/settings", "PUT", {"persistent": {"action.destructive_requires_name": False}})
    _, installed = _http(f"http://{host}/_nodes/plugins")
    nodes = ((installed or {}).get("nodes") or {}).values()
    modules = sorted({m["name"] for n in nodes for m in n.get("modules", [])})
    added = sorted({f"{p['name']} {p.get('version', '')}".strip() for n in nodes for p in n.get("plugins", [])})
    with_plugins = f"; plugins: {', '.join(added)}" if added else ""
    return prov, host, (f"{engine} {version} (Maven integ-test build, {len(modules)} modules: {', '.join(modules)}"
                        f"{with_plugins})")


# ---------------------------------------------------------------- one track


def path_flag(track_dir: Path) -> str:
    """How a user names this folder to ``bench race``: ``--workload-path`` for an OSB workload (a ``workload.json``
    and no ``track.json``), else ``--track-path``."""
    osb = (track_dir / "workload.json").is_file() and not (track_dir / "track.json").is_file()
    return "--workload-path" if osb else "--track-path"


def run_track(track_dir: Path, name: str, host: str, timeout: float, seed: int, env: dict[str, str]) -> Run:
    cmd = [sys.executable, "-m", "bench", "--quiet", "race", f"{path_flag(track_dir)}={track_dir}", "--test-mode",
           f"--generate-corpora={seed}", f"--target-hosts={host}", "--on-error=continue"]
    run = Run(track=name)
    t0 = time.monotonic()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=ROOT, env=env, start_new_session=True)
        try:
            run.exit_code = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            run.timed_out = True
            os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        run.seconds = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    lines = [ln for ln in stderr.splitlines() if ln.strip() and not ln.startswith("bench: warning:")]
    run.last_line = lines[-1].strip() if lines else ""
    run.last_line = re.sub(r"^(bench: )?(error: )?", "", run.last_line)
    run.crashed = "Traceback (most recent call last)" in stderr
    if m := re.search(r"Trial ([0-9a-f]{32})", stdout):
        run.trial = m.group(1)
        _read_trial(run)
    return run


def _read_trial(run: Run) -> None:
    from bench.trials.open import open_store
    from bench.trials.summary import stored_summary

    with open_store() as store:
        info = store.get_trial(run.trial or "")
        summary = stored_summary(store, info.id)
    run.challenge, run.status, run.error = info.challenge, info.status, info.error
    for t in summary.tasks if summary is not None else []:
        run.requests += t.requests + t.warmup_requests
        run.failed += t.failed_requests + t.warmup_failed_requests
        run.failures += [(t.task, e.message, e.count) for e in t.error_messages]


# ---------------------------------------------------------------- the table


def _cell(text: str) -> str:
    # a table cell in markdown: [x] would be read as a link reference
    return " ".join(text.split()).replace("|", "\\|").replace("[", "\\[").replace("]", "\\]")


def markdown(rows: list[dict[str, Any]], cluster: str, osb: bool = False) -> str:
    """The census table; ``osb``: in OSB's words (workload, test procedure)."""
    head = "| workload | test procedure |" if osb else "| track | challenge |"
    lines = [f"Cluster: {cluster}", "", f"{head} outcome | requests (failed) | s | causes |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        causes = "; ".join(dict.fromkeys(r["causes"]))
        lines.append(f"| {r['track']} | {r['challenge'] or '-'} | {r['outcome']} | {r['requests']} ({r['failed']}) | "
                     f"{r['seconds']:.0f} | {_cell(causes)[:600]} |")
    counts = Counter(r["outcome"] for r in rows)
    ran = sum(counts[o] for o in OUTCOMES[:3])
    lines += ["", f"**{ran} of {len(rows)} run to the end** ({counts['completes cleanly']} without a failed request); "
              + ", ".join(f"{counts[o]} {o}" for o in OUTCOMES if counts[o]) + "."]
    lacking = Counter(c for r in rows for c in r["causes"] if r["outcome"] in ("completes, causes named",
                                                                             "fails: cluster lacks"))
    if lacking:
        lines += ["", f"What the cluster lacked ({'workloads' if osb else 'tracks'}):", ""]
        lines += [f"- {c}: {n}" for c, n in lacking.most_common()]
    return "\n".join(lines)


def reclassify(path: Path) -> str:
    """The table of a census stored with --json, each failure message read again by ``explain`` (idempotent), so a
    cause bench has learnt to name since is named; the runs themselves are not repeated."""
    from bench.driver.missing_feature import explain

    data = json.loads(path.read_text())
    rows = []
    for r in data["rows"]:
        run = Run(**{k: r[k] for k in Run.__dataclass_fields__ if k in r})
        run.failures = [(t, explain(m), n) for t, m, n in run.failures]
        run.error = explain(run.error) if run.error else run.error
        run.last_line = re.sub(r"^(bench: )?(error: )?", "", run.last_line)
        outcome, causes = classify(run)
        rows.append({**asdict(run), "outcome": outcome, "causes": causes})
    return markdown(rows, data["cluster"], bool(data.get("osb")))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", nargs="?", default=str(DEFAULT_DIR), help="a rally-tracks checkout (or an "
                                                                     "opensearch-benchmark-workloads one)")
    ap.add_argument("--distribution", default="opensearch:3.6.0", help="ENGINE:VERSION of the cluster bench starts")
    ap.add_argument("--plugin", action="append", default=[], metavar="ZIP",
                    help="install this plugin zip into the cluster bench starts (repeatable)")
    ap.add_argument("--target-hosts", help="use this running cluster (host:port) instead of starting one")
    ap.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds a track may run before it counts as "
                                                                     "hanging")
    ap.add_argument("--seed", type=int, default=1, help="--generate-corpora's seed")
    ap.add_argument("--only", nargs="*", help="only these tracks (folder names relative to DIR)")
    ap.add_argument("--home", help="BENCH_HOME of the census (default: a fresh temporary folder)")
    ap.add_argument("--json", help="also write the rows to this file")
    ap.add_argument("--reclassify", metavar="JSON", help="no runs: sort the runs a --json file holds again, their "
                                                         "failure messages read with this bench's wording")
    a = ap.parse_args(argv)
    if a.reclassify:
        print(reclassify(Path(a.reclassify)))
        return 0
    base = Path(a.dir).expanduser().resolve()
    dirs = [d for d in track_dirs(base) if not a.only or str(d.relative_to(base)) in a.only]
    if not dirs:
        print(f"{base}: no track.json or workload.json below it (or none of --only); pass a checkout of "
              "elastic/rally-tracks or opensearch-project/opensearch-benchmark-workloads",
              file=sys.stderr)
        return 2
    home = Path(a.home) if a.home else Path(tempfile.mkdtemp(prefix="bench-census-"))
    os.environ["BENCH_HOME"] = str(home)
    env = {**os.environ, "BENCH_HOME": str(home), "PYTHONPATH": str(ROOT)}
    prov = None
    if a.target_hosts:
        host, cluster = a.target_hosts, f"the running cluster at {a.target_hosts}"
    else:
        prov, host, cluster = start_cluster(a.distribution, home, [Path(p).expanduser().resolve() for p in a.plugin])
    osb = all(path_flag(d) == "--workload-path" for d in dirs)
    print(f"census: {len(dirs)} {'workloads' if osb else 'tracks'} against {cluster}; BENCH_HOME={home}", file=sys.stderr, flush=True)
    rows = []
    try:
        for d in dirs:
            name = str(d.relative_to(base))
            empty_cluster(f"http://{host}")
            run = run_track(d, name, host, a.timeout, a.seed, env)
            outcome, causes = classify(run)
            rows.append({**asdict(run), "outcome": outcome, "causes": causes})
            print(f"census: {name}: {outcome} ({run.seconds:.0f} s) {'; '.join(causes)[:300]}", file=sys.stderr,
                  flush=True)
            if a.json:
                Path(a.json).write_text(json.dumps({"cluster": cluster, "osb": osb, "rows": rows}, indent=1))
    finally:
        if prov is not None:
            prov.stop_all()
    print(markdown(rows, cluster, osb))
    return 0


if __name__ == "__main__":
    sys.exit(main())
