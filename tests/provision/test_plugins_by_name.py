"""Plugins by name without a node: the flags' syntax (and Rally's name:config refused), the URL each plugin comes
from (official locations, bench.ini keys), the verified and cached download from a local HTTP server, the one-line
errors (404, checksum mismatch, no checksum), the plugin tool's answers read out, and the per-cluster facts."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.cli import main
from bench.cloud.topology import parse_topology, refuse_cloud_plugins, with_overrides
from bench.http.cluster_plugins import plugin_facts
from bench.provision.overrides import check_plugin_engines, named_plugins
from bench.provision.plugin_download import OFFICIAL_URLS, PluginSource, obtain_plugin, plugin_source, source_url_of
from bench.provision.plugin_install import install_failure, tool_reason
from bench.provision.plugin_names import PluginRef, parse_plugin_names
from bench.trials.sqlite import TrialStore
from bench.util.errors import ConfigError, ProvisionError
from bench.util.home import distributions_dir
from tests.cli.test_cli_errors import one_line_error
from tests.support.http_serving import files_handler, serving

ZIP = b"PK\x03\x04 not really a plugin, bytes to download and verify " * 100
RALLY_CONFIG_LINE = "bench installs plugins by name and version only"


# -- the flags ------------------------------------------------------------------------------------------------


def test_names_and_versions_parse() -> None:
    refs = parse_plugin_names("analysis-icu, mapper-size:8.19.21,opensearch-job-scheduler:2.19.4.0", "--x")
    assert refs == [PluginRef(name="analysis-icu"), PluginRef(name="mapper-size", version="8.19.21"),
                    PluginRef(name="opensearch-job-scheduler", version="2.19.4.0")]
    assert parse_plugin_names(["a", "b:9.0.0-rc1"], "--x")[1].version == "9.0.0-rc1"


@pytest.mark.parametrize("value, needles", [
    ("analysis-icu:my-config", [RALLY_CONFIG_LINE, "'my-config' is not a version", "name:config"]),
    ("x-pack-security:security+trial", [RALLY_CONFIG_LINE]),
    ("a:8.19.21:extra", [RALLY_CONFIG_LINE]),
    ("analysis-icu,,mapper-size", ["empty plugin name"]),
    ("../plugins/x.zip", ["not a plugin name", "--plugin=PATH"]),
    ("analysis-icu,analysis-icu:8.19.21", ["analysis-icu is named more than once"]),
], ids=["rally-config", "rally-configs", "two-colons", "empty", "a-path", "twice"])
def test_bad_plugin_lists_are_one_line(value: str, needles: list[str]) -> None:
    with pytest.raises(ConfigError) as e:
        parse_plugin_names(value, "--elasticsearch-plugins")
    assert "\n" not in str(e.value) and str(e.value).startswith("--elasticsearch-plugins: ")
    for n in needles:
        assert n in str(e.value)


@pytest.mark.parametrize("args, needles", [
    (["--elasticsearch-plugins=analysis-icu:my-config"], ["--elasticsearch-plugins", RALLY_CONFIG_LINE]),
    (["--opensearch-plugins=analysis-icu"], ["--opensearch-plugins", "starts no opensearch cluster",
                                             "--elasticsearch-plugins"]),
    (["--elasticsearch-plugins=analysis-icu", "--distribution=opensearch:2.19.1"],
     ["--elasticsearch-plugins", "starts no elasticsearch cluster"]),
    (["--elasticsearch-plugins=analysis-icu", "--target-hosts=127.0.0.1:1"],
     ["--elasticsearch-plugins", "not --target-hosts"]),
    (["--plugin-params=s3_client_name:default"], ["--plugin-params", "car mixin"]),
], ids=["rally-config", "wrong-engine", "wrong-engine-distribution", "target-hosts", "plugin-params"])
def test_the_race_refuses_bad_plugin_flags_before_a_trial(args: list[str], needles: list[str],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["race", "--quiet", "--track=nginx", "--test-mode", *args])
    _, err = capsys.readouterr()
    assert rc == 2
    one_line_error(err, *needles)
    with TrialStore() as store:
        assert store.list_trials() == []


def test_engine_flags_go_to_clusters_of_their_engine() -> None:
    named = named_plugins(["analysis-icu"], ["opensearch-job-scheduler:2.19.4.0"])
    assert set(named) == {"elasticsearch", "opensearch"}
    check_plugin_engines(named, {"elasticsearch", "opensearch"})
    with pytest.raises(ConfigError, match="--opensearch-plugins names opensearch plugins"):
        check_plugin_engines(named, {"elasticsearch"})


def test_topology_plugins_hold_paths_and_names() -> None:
    raw = {"name": "t", "clusters": [
        {"name": "leader", "plugins": ["/opt/p/custom.zip", "analysis-icu", "mapper-size:8.19.21"]},
        {"name": "follower", "engine": "opensearch", "version": "2.19.1", "plugins": ["./folder-plugin"]}]}
    topo = parse_topology(raw, "t.yml")
    leader, follower = topo.cluster_specs()
    assert leader.plugins == [Path("/opt/p/custom.zip")]
    assert leader.plugin_names == [PluginRef(name="analysis-icu"), PluginRef(name="mapper-size", version="8.19.21")]
    assert follower.plugin_names == [] and follower.plugins == [Path("./folder-plugin")]
    # the flag names plugins for the clusters of its engine; its version replaces the topology's entry
    over = with_overrides(topo, None, {}, {"elasticsearch": [PluginRef(name="analysis-icu", version="8.19.20")]})
    assert over.cluster_specs()[0].plugin_names == [PluginRef(name="mapper-size", version="8.19.21"),
                                                    PluginRef(name="analysis-icu", version="8.19.20")]
    assert over.cluster_specs()[1].plugin_names == []
    with pytest.raises(ConfigError, match="starts no opensearch cluster"):
        with_overrides(parse_topology({"name": "t", "clusters": [{"name": "a"}]}), None, {},
                       {"opensearch": [PluginRef(name="x")]})
    with pytest.raises(ConfigError) as e:
        parse_topology({"name": "t", "clusters": [{"name": "leader", "plugins": ["analysis-icu:cfg"]}]}, "t.yml")
    assert str(e.value).startswith("topology t.yml: clusters[leader].plugins: ") and RALLY_CONFIG_LINE in str(e.value)


# -- where a plugin comes from --------------------------------------------------------------------------------


def test_official_locations_and_the_clusters_version() -> None:
    es = plugin_source("elasticsearch", PluginRef(name="analysis-icu"), "8.19.21", settings={})
    assert es.url == "https://artifacts.elastic.co/downloads/elasticsearch-plugins/analysis-icu/analysis-icu-8.19.21.zip"
    assert es.official and es.version == "8.19.21"
    os_ = plugin_source("opensearch", PluginRef(name="analysis-icu", version="2.19.0"), "2.19.1", settings={})
    assert os_.url == "https://artifacts.opensearch.org/releases/plugins/analysis-icu/2.19.0/analysis-icu-2.19.0.zip"
    assert set(OFFICIAL_URLS) == {"elasticsearch", "opensearch"}


def test_bench_ini_keys_override_the_official_location() -> None:
    ini = {"plugin.analysis-icu.release.url": "https://mirror/icu/icu-{{VERSION}}.zip",
           "plugin.release.url": "https://mirror/{name}/{version}/{name}-{version}.zip"}
    icu = plugin_source("elasticsearch", PluginRef(name="analysis-icu"), "8.19.21", settings=ini)
    assert icu.url == "https://mirror/icu/icu-8.19.21.zip" and not icu.official
    assert "plugin.analysis-icu.release.url" in icu.origin
    other = plugin_source("elasticsearch", PluginRef(name="mapper-size"), "8.19.21", settings=ini)
    assert other.url == "https://mirror/mapper-size/8.19.21/mapper-size-8.19.21.zip"
    # Rally's repository name picks the keys; a repository without a URL is one line naming the keys to set
    snap = {"repository": "snapshot", "plugin.snapshot.url": "https://snap/{name}-{version}.zip"}
    assert plugin_source("opensearch", PluginRef(name="a"), "3.0.0", settings=snap).url == "https://snap/a-3.0.0.zip"
    with pytest.raises(ConfigError, match="plugin.a.nightly.url or plugin.nightly.url"):
        plugin_source("opensearch", PluginRef(name="a"), "3.0.0", settings={"repository": "nightly"})
    with pytest.raises(ConfigError, match="placeholder"):
        plugin_source("opensearch", PluginRef(name="a"), "3.0.0", settings={"plugin.release.url": "https://m/{nme}.zip"})
    with pytest.raises(ConfigError, match="not an http"):
        plugin_source("opensearch", PluginRef(name="a"), "3.0.0", settings={"plugin.release.url": "https://m/{name}"})


# -- downloading ------------------------------------------------------------------------------------------------


class Files:
    """What the local server serves (path -> bytes) and what it was asked for."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.requests: list[str] = []
        self.lock = threading.Lock()


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Files]]:
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))  # made-up plugins stay out of the shared cache
    files = Files()

    with serving(files_handler(files.files, files.requests, files.lock)) as srv:
        yield f"http://127.0.0.1:{srv.server_address[1]}", files


def _source(base: str, name: str = "demo", version: str = "1.2.3", official: bool = True) -> PluginSource:
    return PluginSource(name=name, version=version, url=f"{base}/{name}/{version}/{name}-{version}.zip",
                        origin="test", official=official)


def test_download_is_verified_cached_and_checked_again(server: tuple[str, Files]) -> None:
    base, srv = server
    src = _source(base)
    srv.files["/demo/1.2.3/demo-1.2.3.zip"] = ZIP
    srv.files["/demo/1.2.3/demo-1.2.3.zip.sha512"] = f"{hashlib.sha512(ZIP).hexdigest()}  demo-1.2.3.zip\n".encode()
    path = obtain_plugin(src)
    assert path.read_bytes() == ZIP and path.name == "demo-1.2.3.zip"
    assert source_url_of(path) == src.url
    assert srv.requests.count("/demo/1.2.3/demo-1.2.3.zip") == 1
    assert obtain_plugin(src) == path  # cached: only the checksum is fetched again
    assert srv.requests.count("/demo/1.2.3/demo-1.2.3.zip") == 1
    assert not list(path.parent.glob("*.part"))
    path.write_bytes(b"damaged in the cache")  # a cached zip that no longer matches is downloaded again
    assert obtain_plugin(src).read_bytes() == ZIP
    assert srv.requests.count("/demo/1.2.3/demo-1.2.3.zip") == 2


def test_a_missing_plugin_is_one_line_naming_it_and_its_url(server: tuple[str, Files]) -> None:
    base, _ = server
    src = _source(base, "no-such-plugin", "8.19.21")
    with pytest.raises(ProvisionError) as e:
        obtain_plugin(src)
    msg = str(e.value)
    assert "\n" not in msg and "plugin no-such-plugin 8.19.21" in msg and src.url in msg and "HTTP 404" in msg
    assert "name:version" in msg and "plugin.no-such-plugin.release.url" in msg


def test_checksum_mismatch_is_one_line_and_leaves_nothing(server: tuple[str, Files]) -> None:
    base, srv = server
    src = _source(base)
    srv.files["/demo/1.2.3/demo-1.2.3.zip"] = ZIP
    srv.files["/demo/1.2.3/demo-1.2.3.zip.sha512"] = hashlib.sha512(b"another file").hexdigest().encode()
    with pytest.raises(ProvisionError) as e:
        obtain_plugin(src)
    msg = str(e.value)
    assert "\n" not in msg and "plugin demo 1.2.3: checksum mismatch" in msg and src.url in msg
    left = [p for p in (distributions_dir() / "plugins").rglob("*demo-1.2.3.zip*") if not p.name.endswith(".lock")]
    assert left == [], left  # neither the zip nor a partial download stays (the lock file does, by design)


def test_checksum_files_as_the_engines_tools_read_them(server: tuple[str, Files]) -> None:
    base, srv = server
    srv.files["/demo/1.2.3/demo-1.2.3.zip"] = ZIP
    # sha512sum's output for another file name: refused (the engines' tools check the name too)
    srv.files["/demo/1.2.3/demo-1.2.3.zip.sha512"] = f"{hashlib.sha512(ZIP).hexdigest()}  other.zip".encode()
    with pytest.raises(ProvisionError, match="is for other.zip, not demo-1.2.3.zip"):
        obtain_plugin(_source(base))
    # an official location must publish .sha512; elsewhere .sha1 (Maven's) is taken when .sha512 is missing
    del srv.files["/demo/1.2.3/demo-1.2.3.zip.sha512"]
    srv.files["/demo/1.2.3/demo-1.2.3.zip.sha1"] = hashlib.sha1(ZIP).hexdigest().encode()
    with pytest.raises(ProvisionError) as e:
        obtain_plugin(_source(base))
    assert "no checksum is published" in str(e.value) and ".sha512 (HTTP 404)" in str(e.value)
    assert obtain_plugin(_source(base, official=False)).read_bytes() == ZIP


# -- the plugin tool's answers, the facts ----------------------------------------------------------------------

OPENSEARCH_TOOL = """-> Installing file:///x/opensearch-job-scheduler-2.19.4.0.zip
-> Failed installing file:///x/opensearch-job-scheduler-2.19.4.0.zip
warning: no-jdk distributions that do not bundle a JDK are deprecated and will be removed in a future release
Exception in thread "main" java.lang.IllegalArgumentException: Plugin [opensearch-job-scheduler] was built for \
OpenSearch version 2.19.4 but version 2.19.1 is running
\tat org.opensearch.plugins.PluginsService.verifyCompatibility(PluginsService.java:397)
"""
ELASTICSEARCH_TOOL = """-> Failed installing file:///x/p.zip
java.lang.IllegalArgumentException: property [elasticsearch.version] is missing for plugin [opensearch-job-scheduler]
\tat org.elasticsearch.plugins.PluginDescriptor.readNonEmptyString(PluginDescriptor.java:325)
"""


def test_the_plugin_tools_reason_is_read_out() -> None:
    assert tool_reason(OPENSEARCH_TOOL) == ("Plugin [opensearch-job-scheduler] was built for OpenSearch version 2.19.4 "
                                            "but version 2.19.1 is running")
    assert tool_reason(ELASTICSEARCH_TOOL).startswith("property [elasticsearch.version] is missing")
    assert tool_reason("ERROR: plugin directory [/x] already exists\n") == "plugin directory [/x] already exists"
    src = PluginSource(name="opensearch-job-scheduler", version="2.19.4.0", url="http://h/j.zip", origin="t",
                       official=False)
    line = install_failure(src, "opensearch", "2.19.1", "default-0", 1, OPENSEARCH_TOOL)
    assert "\n" not in line and line.startswith("plugin opensearch-job-scheduler 2.19.4.0 from http://h/j.zip")
    assert "--opensearch-plugins=opensearch-job-scheduler:VERSION" in line
    knn = install_failure(src, "opensearch", "2.19.1", "n", 1,
                          "java.lang.IllegalArgumentException: Missing plugin [lang-painless], dependency of [x]")
    assert "Missing plugin [lang-painless]" in knn and "plugins it needs before it" in knn


def test_plugin_facts_are_compact() -> None:
    body = {"nodes": {
        "a": {"plugins": [{"name": "analysis-icu", "version": "8.19.21"}, {"name": "x", "version": "1"}],
              "modules": [{"name": "x-pack-core"}, {"name": "apm"}]},
        "b": {"plugins": [{"name": "analysis-icu", "version": "8.19.21"}, {"name": "x", "version": "2"}],
              "modules": [{"name": "apm"}, {"name": "x-pack-core"}]},
        "c": {"plugins": [{"name": "analysis-icu", "version": "8.19.21"}], "modules": []}}}
    assert plugin_facts(body) == {"plugins": {"analysis-icu": "8.19.21", "x": "1 (1 of 3 nodes), 2 (1 of 3 nodes)"},
                                  "modules": ["apm", "x-pack-core"]}
    assert plugin_facts({"nodes": {"a": {"plugins": [], "modules": []}}}) == {"plugins": {}, "modules": []}
    assert plugin_facts({"nodes": {"a": {"name": "n"}}}) == {}  # a server that does not list them claims nothing
    assert plugin_facts("not json") == {}


def test_experiments_take_the_flags_and_check_them_at_load(tmp_path: Path) -> None:
    from bench.race.experiment import load_experiment, plan, race_options

    good = tmp_path / "good.yml"
    good.write_text("name: x\nrace: {track: nginx, elasticsearch-plugins: 'analysis-icu,mapper-size:8.19.21'}\n"
                    "variants:\n  a: {}\n  b: {opensearch-plugins: [analysis-icu], distribution: 'opensearch:2.19.1'}\n")
    exp = load_experiment(good, {"elasticsearch_plugins": "analysis-icu"})  # bench experiment's flag overrides
    a, b = (race_options(exp, r, run_id="r") for r in plan(exp, "r")[:2])
    assert a.elasticsearch_plugins == ["analysis-icu"] and b.opensearch_plugins == ["analysis-icu"]
    bad = tmp_path / "bad.yml"
    bad.write_text("name: x\nrace: {track: nginx}\nvariants: {a: {elasticsearch-plugins: 'analysis-icu:cfg'}}\n")
    with pytest.raises(ConfigError) as e:
        load_experiment(bad)
    assert str(e.value).startswith(f"experiment file {bad}: variants.a: --elasticsearch-plugins")
    assert RALLY_CONFIG_LINE in str(e.value) and "\n" not in str(e.value)


def test_cloud_topologies_refuse_plugins_their_nodes_would_not_install() -> None:
    cloud = {"name": "t", "provider": "aws", "region": "eu-west-1",
             "clusters": [{"name": "leader", "instance_type": "c5.large", "plugins": ["analysis-icu"]}]}
    with pytest.raises(ConfigError) as e:
        parse_topology(cloud, "t.yml")
    assert "clusters[leader].plugins: nodes in aws do not install plugins" in str(e.value)
    del cloud["clusters"][0]["plugins"]
    topo = parse_topology(cloud, "t.yml")
    with pytest.raises(ConfigError, match="nodes in aws do not install plugins"):
        refuse_cloud_plugins(with_overrides(topo, None, {}, {"elasticsearch": [PluginRef(name="analysis-icu")]}))
