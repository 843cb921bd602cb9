"""Plugins by name into real nodes: a real plugin zip from Maven Central (OpenSearch's job-scheduler, downloaded
once into the bench cache and verified against Maven's checksum), served with its ``.sha512`` by a local HTTP server
that bench.ini's ``plugin.release.url`` points at (standing in for artifacts.opensearch.org, which these machines
cannot reach). ``bench race --opensearch-plugins=NAME:VERSION`` installs it with the engine's own tool, ``GET
_cat/plugins`` shows it and the trial records it; a plugin built for another version is one line from the tool."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.cli import main
from bench.provision.local import ROOT_NODES_BASE
from bench.provision.plugin_download import PluginSource, cache_folder, obtain_plugin
from bench.trials.sqlite import TrialStore
from tests.cli.test_cli_errors import one_line_error
from tests.faults.test_faults import jvms_of
from tests.support.checkout import ROOT
from tests.support.esnode import default_cache
from tests.support.http_serving import files_handler, serving

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(600)]

NAME, VERSION = "opensearch-job-scheduler", "2.19.4.0"  # built for OpenSearch 2.19.4; extends no other plugin
MAVEN = f"https://repo1.maven.org/maven2/org/opensearch/plugin/{NAME}/{VERSION}/{NAME}-{VERSION}.zip"


def maven_plugin_zip() -> tuple[Path, str]:
    """The real zip (cached in the bench cache like a distribution) and its published sha512."""
    os.environ.setdefault("BENCH_CACHE", default_cache())
    zip_path = obtain_plugin(PluginSource(name=NAME, version=VERSION, url=MAVEN, origin="Maven Central",
                                          official=False))
    digest = zip_path.with_name(zip_path.name + ".sha512")
    assert digest.is_file(), "Maven Central publishes a .sha512 beside the zip"
    return zip_path, digest.read_text().strip()


@pytest.fixture
def plugin_server(bench_home: Path) -> Iterator[str]:
    """A local 'official location' in the layout {name}/{version}/{name}-{version}.zip, named in bench.ini."""
    zip_path, digest = maven_plugin_zip()
    files = {f"/{NAME}/{VERSION}/{zip_path.name}": zip_path.read_bytes(),
             # sha512sum's format, as artifacts.opensearch.org publishes it
             f"/{NAME}/{VERSION}/{zip_path.name}.sha512": f"{digest}  {zip_path.name}\n".encode()}

    with serving(files_handler(files)) as srv:
        base = f"http://127.0.0.1:{srv.server_address[1]}"
        bench_home.mkdir(parents=True, exist_ok=True)
        (bench_home / "bench.ini").write_text(
            f"[distributions]\nplugin.release.url = {base}/{{name}}/{{version}}/{{name}}-{{version}}.zip\n")
        yield base
    # the local server's port is new each time: its cache entry is this test's own
    served = PluginSource(name=NAME, version=VERSION, url=f"{base}/{NAME}/{VERSION}/{zip_path.name}", origin="test",
                          official=False)
    shutil.rmtree(cache_folder(served), ignore_errors=True)


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench", *args], env=dict(os.environ), cwd=ROOT,
                          capture_output=True, text=True, timeout=500)


def _get(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()


def test_race_installs_a_plugin_by_name_and_records_it(plugin_server: str, bench_home: Path) -> None:
    raced = bench("race", "--quiet", "--track=nginx", "--test-mode", "--distribution=opensearch:2.19.4",
                  "--car=defaults,512mheap", f"--opensearch-plugins={NAME}:{VERSION}", "--keep-cluster")
    m = re.search(r"Trial ([0-9a-f]{32})", raced.stdout)
    assert m, raced.stdout[-2000:] + raced.stderr[-2000:]
    trial_id = m.group(1)
    nodes = ROOT_NODES_BASE / trial_id if os.geteuid() == 0 else bench_home / "trials" / trial_id / "nodes"
    try:
        assert raced.returncode == 0, raced.stderr[-2000:]
        with TrialStore() as store:
            [facts] = store.get_trial(trial_id).clusters
        assert facts["engine"] == "opensearch" and facts["version"] == "2.19.4"
        assert facts["plugins"] == {NAME: VERSION}
        assert "transport-netty4" in facts["modules"]
        cat = _get(facts["hosts"][0] + "/_cat/plugins?h=component,version")
        assert cat.split() == [NAME, VERSION], cat
    finally:
        stopped = bench("stop", trial_id)
        for p in jvms_of(trial_id):
            p.kill()
        shutil.rmtree(nodes, ignore_errors=True)
    assert stopped.returncode == 0, stopped.stderr


def test_a_plugin_built_for_another_version_is_one_line(plugin_server: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # the cached OpenSearch 2.19.1: its own plugin tool refuses the plugin built for 2.19.4, before any node starts
    rc = main(["race", "--quiet", "--track=nginx", "--test-mode", "--distribution=opensearch:2.19.1",
               "--car=defaults,512mheap", f"--opensearch-plugins={NAME}:{VERSION}"])
    _, err = capsys.readouterr()
    assert rc != 0
    one_line_error(err, f"plugin {NAME} {VERSION} from {plugin_server}/{NAME}/{VERSION}/{NAME}-{VERSION}.zip",
                   "cannot be installed into opensearch 2.19.1",
                   "was built for OpenSearch version 2.19.4 but version 2.19.1 is running",
                   f"--opensearch-plugins={NAME}:VERSION")
