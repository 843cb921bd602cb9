"""The test tiers themselves (tests/support/tiers.py, tests/support/tier_guard.py): markers follow from the fixtures a test
requests, and a test that starts an engine node, a Ray node or a namespace without its marker fails in one
line, also when the start happens in a process the test runs. Checked on tiny test files run by a pytest of
their own, with this project's conftest; nothing is started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.support import tier_guard
from tests.support.checkout import ROOT

MARKERS_CONFTEST = '''
import json
import os

from tests.conftest import *  # noqa: F403 - this project's hooks and fixtures, as in tests/


def pytest_collection_finish(session):
    markers = {item.name: sorted(m.name for m in item.iter_markers()
                                 if m.name in ("unit", "cluster", "ray", "netns")) for item in session.items}
    with open(os.environ["MARKERS_OUT"], "w") as f:
        json.dump(markers, f)
'''

MARKED = '''
import pytest


@pytest.fixture(scope="module")
def store_cluster(local_engines):  # a fixture of a fixture: the closure counts
    return local_engines


def test_plain():
    pass


def test_engines(local_engines):
    pass


def test_session_cluster(es_target):
    pass


def test_derived(store_cluster):
    pass


@pytest.mark.usefixtures("local_engines")
def test_starts_its_own_race():
    pass


def test_ray(ray_nodes):
    pass


def test_netns(netns_hosts):
    pass


@pytest.mark.cluster
def test_explicit():
    pass
'''

GUARDED = '''
import subprocess
import sys

import pytest

from bench.provision.local import LocalProvisioner
from bench.provision.model import ClusterSpec


def test_calls_the_provisioner(tmp_path):
    LocalProvisioner("t", tmp_path).start(ClusterSpec(nodes=1))


def test_swallows_what_the_provisioner_raised(tmp_path):
    try:
        LocalProvisioner("t", tmp_path).start(ClusterSpec(nodes=1))
    except BaseException:
        pass


def test_races_in_a_subprocess_without_target_hosts(tmp_path):
    track = tmp_path / "track"
    track.mkdir()
    (track / "track.json").write_text('{"version": 2, "schedule": [{"operation": "refresh"}]}')
    # The result is not looked at: the refusal in the child alone must fail the test.
    subprocess.run([sys.executable, "-m", "bench", "race", f"--track-path={track}"], capture_output=True)


def test_starts_a_ray_node():
    subprocess.run(["ray", "start", "--head"])


def test_calls_ray_init():
    import ray  # the stand-in beside this file

    ray.init()


def test_makes_a_namespace():
    subprocess.run(["ip", "netns", "add", "bench-never"])


def test_runs_other_processes():
    assert subprocess.run([sys.executable, "-c", "pass"]).returncode == 0


def test_may_call_the_provisioner_with_the_fixture(local_engines, tmp_path):
    missing = tmp_path / "no-such-elasticsearch.zip"  # past the guard, the provisioner's own error
    with pytest.raises(Exception, match="does not exist"):
        LocalProvisioner("t", tmp_path).start(ClusterSpec(nodes=1, distribution_path=missing))
'''


def _pytest(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """A pytest of its own in ``folder``, with this project's conftest and markers (and none of this test's
    guard)."""
    (folder / "conftest.py").write_text(MARKERS_CONFTEST)
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    (folder / "pytest.ini").write_text("[pytest]\nmarkers =\n" + "".join(f"    {m}\n" for m in ini["markers"]))
    full = {k: v for k, v in os.environ.items() if k not in (tier_guard.ENV, "PYTHONPATH")}
    full.update({"PYTHONPATH": str(ROOT), "COLUMNS": "300", **env})
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--strict-markers", *args],
                          cwd=folder, env=full, capture_output=True, text=True, timeout=120)


def test_markers_follow_from_the_fixtures_a_test_requests(tmp_path: Path) -> None:
    (tmp_path / "test_marked.py").write_text(MARKED)
    out = tmp_path / "markers.json"
    done = _pytest(tmp_path, "--collect-only", "-q", MARKERS_OUT=str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(out.read_text()) == {
        "test_plain": ["unit"],
        "test_engines": ["cluster"],
        "test_session_cluster": ["cluster"],  # es_target -> es_cluster -> local_engines
        "test_derived": ["cluster"],
        "test_starts_its_own_race": ["cluster"],
        "test_ray": ["ray"],
        "test_netns": ["netns"],
        "test_explicit": ["cluster"],
    }


def test_an_unmarked_test_that_starts_an_engine_ray_or_namespace_fails_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "test_guarded.py").write_text(GUARDED)
    (tmp_path / "ray").mkdir()  # a stand-in for Ray (imported first: the test's folder leads sys.path)
    (tmp_path / "ray" / "__init__.py").write_text(f"def init():\n    open({str(tmp_path / 'ray-started')!r}, 'w')\n")
    done = _pytest(tmp_path, "-q", "--junitxml=report.xml", MARKERS_OUT=str(tmp_path / "m.json"))
    assert done.returncode == 1, done.stdout + done.stderr
    engine = ("the test starts an engine node (LocalProvisioner.start) without the 'cluster' marker: request the "
              "local_engines fixture (docs/extending/developing.md)")
    expected = {
        "test_calls_the_provisioner": engine,
        "test_swallows_what_the_provisioner_raised": engine,
        "test_races_in_a_subprocess_without_target_hosts": engine,
        "test_starts_a_ray_node": "the test starts a Ray node (ray start) without the 'ray' marker: request the "
                                  "ray_nodes fixture (docs/extending/developing.md)",
        "test_calls_ray_init": "the test starts a Ray node or driver (ray.init) without the 'ray' marker: request "
                               "the ray_nodes fixture (docs/extending/developing.md)",
        "test_makes_a_namespace": "the test starts a network namespace (ip netns add) without the 'netns' marker: "
                                  "request the netns_hosts fixture (docs/extending/developing.md)",
        "test_runs_other_processes": None,
        "test_may_call_the_provisioner_with_the_fixture": None,
    }
    got = {}
    for case in ET.parse(tmp_path / "report.xml").getroot().iter("testcase"):
        failure = case.find("failure")
        got[case.get("name")] = None if failure is None else (failure.text or "").strip()
    assert got == expected, done.stdout
    assert not (tmp_path / "ray-started").exists()
    for name, line in expected.items():  # the short summary says it too, after the test's name
        if line:
            assert f"FAILED test_guarded.py::{name} - {line}" in done.stdout, done.stdout


@pytest.mark.parametrize("argv, found", [
    ([sys.executable, "-m", "bench.provision.guard"], "cluster"),
    (["/opt/es/elasticsearch-8.19.21/bin/elasticsearch", "-p", "pid"], "cluster"),
    (["/opt/os/bin/opensearch"], "cluster"),
    (["/venv/bin/ray", "start", "--head", "--port=6379"], "ray"),
    (["/venv/lib/python3.11/site-packages/ray/core/src/ray/raylet/raylet", "--node_ip_address=127.0.0.1"], "ray"),
    (["gcs_server", "--gcs_server_port=6379"], "ray"),
    (["ip", "netns", "add", "lab"], "netns"),
    ("ip netns add lab", "netns"),
    (["ip", "netns", "exec", "lab", "ip", "addr"], None),
    (["ray", "status"], None),
    ([sys.executable, "-m", "bench", "race", "--target-hosts=127.0.0.1:9200"], None),
    (["/usr/share/elasticsearch/elasticsearch"], None),  # not an engine's bin/
    ([], None),
])
def test_what_a_process_would_start(argv: list[str] | str, found: str | None) -> None:
    got = tier_guard.what_it_starts(argv)
    assert (got[0] if got else None) == found
