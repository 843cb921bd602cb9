"""Choosing telemetry: --telemetry, --telemetry-params, --telemetry-profile, 'bench list telemetry', and the
one-line errors for bad input."""

from __future__ import annotations

import pytest

from bench.cli import main
from bench.telemetry.config import DEVICES, available_profiles, load_profile, resolve_telemetry
from bench.telemetry.node_stats import request_for
from bench.util.errors import ConfigError


def test_defaults_are_rallys_and_params_override():
    cfg = resolve_telemetry("node-stats,host", {"node-stats-sample-interval": 5}, None)
    assert cfg.devices == ["node-stats", "host"]
    assert cfg.params["node-stats-sample-interval"] == 5.0
    assert cfg.params["host-sample-interval"] == 1.0
    assert cfg.params["node-stats-include-indices"] is False
    assert cfg.device_params("host") == {"host-sample-interval": 1.0}


def test_ccr_profile_intervals_and_explicit_params_win():
    assert {"ccr", "default"} <= set(available_profiles())
    cfg = resolve_telemetry(None, None, "ccr")
    assert cfg.devices == ["ccr-stats", "node-stats", "host"]
    assert (cfg.params["ccr-stats-sample-interval"], cfg.params["node-stats-sample-interval"],
            cfg.params["host-sample-interval"]) == (5.0, 10.0, 1.0)
    assert "refresh" in cfg.params["node-stats-include-indices-metrics"]
    cfg = resolve_telemetry("segment-stats", {"ccr-stats-sample-interval": 2}, "ccr")
    assert cfg.devices[-1] == "segment-stats" and cfg.params["ccr-stats-sample-interval"] == 2.0
    for name in available_profiles():
        assert all(d in DEVICES for d in load_profile(name).devices)


@pytest.mark.parametrize("devices, params, profile, message", [
    ("node-stats,gcc", None, None, "unknown telemetry device 'gcc'"),
    ("node-stats", {"node-stats-interval": 1}, None, "unknown telemetry parameter 'node-stats-interval'"),
    ("node-stats", {"node-stats-sample-interval": "soon"}, None, "must be a number of seconds"),
    ("node-stats", {"node-stats-sample-interval": 0}, None, "between 0.05 and 3600"),
    ("node-stats", {"node-stats-include-indices": "yes"}, None, "must be true or false"),
    ("node-stats", {"node-stats-include-indices-metrics": "docs,completion"}, None, "'completion' makes"),
    (None, None, "no-such-profile", "unknown profile 'no-such-profile'"),
])
def test_bad_choices_are_one_line_errors(devices, params, profile, message):
    with pytest.raises(ConfigError, match=message) as e:
        resolve_telemetry(devices, params, profile)
    assert "\n" not in str(e.value)


def test_profile_file_errors(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("devices: [node-stats]\nparams: {node-stats-sample-interval: 1}\nsurprise: 1\n")
    with pytest.raises(ConfigError, match=r"bad.yml: field 'surprise'"):
        resolve_telemetry(None, None, str(bad))
    ok = tmp_path / "mine.yml"
    ok.write_text("devices: [host]\nparams: {host-sample-interval: 0.5}\n")
    assert resolve_telemetry(None, None, str(ok)).params["host-sample-interval"] == 0.5


def test_node_stats_request_selects_and_filters():
    params = resolve_telemetry("node-stats", None, None).device_params("node-stats")
    path, query = request_for(params, (8, 19, 21))
    assert path.startswith("/_nodes/stats/indices,thread_pool,breaker,jvm,os,process,fs,transport,http,"
                           "indexing_pressure/")
    index_metrics = path.rsplit("/", 1)[1].split(",")
    assert {"docs", "indexing", "refresh", "flush", "merge", "segments", "translog", "store"} <= set(index_metrics)
    assert "completion" not in index_metrics and "level" not in query
    assert "nodes.*.thread_pool.write" in query["filter_path"]
    # before 7.2.0 docs stats made shards refresh: left out
    old_path, _ = request_for(params, (7, 1, 1))
    assert "docs" not in old_path.rsplit("/", 1)[1].split(",")
    path, query = request_for({**params, "node-stats-include-indices": True, "node-stats-include-gc": False,
                               "node-stats-include-mem": False}, (8, 19, 21))
    assert query["level"] == "indices" and "jvm" not in path.split("/")[3]


def test_list_telemetry(capsys):
    assert main(["list", "telemetry"]) == 0
    out = capsys.readouterr().out
    for name in DEVICES:
        assert name in out
    assert "node-stats-sample-interval" in out and "ccr-stats-indices" in out and "ccr" in out


def test_race_with_unknown_device_fails_before_anything_starts(capsys, tmp_path):
    rc = main(["--quiet", "race", "--track=nginx", "--test-mode", "--target-hosts=127.0.0.1:1",
               "--telemetry=node-stats,nope"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.count("\n") == 0 and "unknown telemetry device 'nope'" in err


def test_race_with_unknown_cluster_in_params_fails(capsys, tmp_path):
    from bench.http.client import ClusterTarget
    from bench.telemetry import TelemetryContext, create_devices

    cfg = resolve_telemetry("node-stats", {"node-stats-clusters": "follower"}, None)
    ctx = TelemetryContext(targets={"default": ClusterTarget(hosts=["127.0.0.1:1"])})
    with pytest.raises(ConfigError, match="node-stats-clusters names unknown cluster"):
        create_devices(cfg, ctx)


def test_rally_jvm_devices_take_rallys_parameters_and_write_rallys_options() -> None:
    from bench.provision.model import NODE_LOGS
    from bench.telemetry.jvm import jvm_options

    config = resolve_telemetry("jfr,gc,jit,heapdump", {"recording-template": "profile", "jfr-duration": "5m",
                                                      "gc-log-config": "gc*=debug"}, None)
    assert config.jvm_devices() == ["jfr", "gc", "jit", "heapdump"]
    assert config.device_params("jfr") == {"recording-template": "profile", "jfr-delay": None, "jfr-duration": "5m"}
    options = jvm_options(config)
    assert (f"-XX:StartFlightRecording=maxsize=0,maxage=0s,disk=true,dumponexit=true,filename={NODE_LOGS}/profile.jfr,"
            "duration=5m,settings=profile") in options
    assert f"-Xlog:gc*=debug:file={NODE_LOGS}/gc.log:utctime,uptimemillis,level,tags:filecount=0" in options
    assert f"-XX:LogFile={NODE_LOGS}/jit.log" in options and f"-Dbench.node.logs={NODE_LOGS}" in options
    assert options.count("-XX:+UnlockDiagnosticVMOptions") == 1
    with pytest.raises(ConfigError, match="profile-interval must be between 1 and 1000 ms"):
        resolve_telemetry("profile", {"profile-interval": 0}, None)
    with pytest.raises(ConfigError, match="profile-sampler must be jfr or async-profiler, got 'perf'"):
        resolve_telemetry("profile", {"profile-sampler": "perf"}, None)
    assert resolve_telemetry("profile", {}, None).params["profile-sampler"] == "jfr"
