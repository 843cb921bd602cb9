"""Every ``bench race`` option reaches a cloud topology's race or is refused in one line before any machine
exists: none is dropped on the way to the driver host (bench/cloud/race_options.py). The live path (the driver
host's race over SSH, with --client-options) is tests/cloud/test_cloud_netns.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.cli import main
from bench.cloud import lifecycle
from bench.cloud.plan import make_plan
from bench.cloud.providers.base import Resource
from bench.cloud.race import race_args
from bench.cloud.race_options import HERE, MOOT, REFUSED, SENT, driver_ini
from bench.cloud.topology import parse_topology
from bench.race.options import RaceOptions
from bench.trials.sqlite import TrialStore
from bench.util.errors import ConfigError

TOPOLOGY = """name: opts
provider: aws
region: us-east-1
clusters: [{name: leader, instance_type: t3.small}]
drivers: [{name: driver, instance_type: t3.small}]
"""


def _deployment() -> lifecycle.Deployment:
    topo = parse_topology({"name": "opts", "provider": "aws", "region": "us-east-1", "image": "ami-1",
                           "clusters": [{"name": "leader", "instance_type": "c5d.large"}],
                           "drivers": [{"name": "driver", "instance_type": "m5d.large"}]})
    plan = make_plan(topo, "ab" * 16)
    resources = [Resource(provider="aws", kind="instance", id=i.name, name=i.name, role=i.role, cluster=i.group,
                          private_ip=f"10.0.0.{n + 10}") for n, i in enumerate(plan.instances)]
    return lifecycle.Deployment(trial_id="ab" * 16, topology=topo, plan=plan, resources=resources)


def test_every_race_option_is_sent_applied_here_moot_or_refused_exactly_once() -> None:
    groups = [SENT, HERE, MOOT, frozenset(REFUSED)]
    fields = set(RaceOptions.model_fields)
    assert set().union(*groups) == fields, fields.symmetric_difference(set().union(*groups))
    assert sum(len(g) for g in groups) == len(fields), "an option is in two groups"


# A value other than the default for each option the driver host's race is given.
GIVEN: dict[str, Any] = {
    "track": "geonames", "track_path": Path("/t"), "track_repository": "fork", "track_revision": "abc123",
    "repository_kind": "workloads", "include_tasks": ["index"], "exclude_tasks": ["tag:slow"],
    "track_params": {"bulk_size": 10}, "ignore_unused_track_params": True, "challenge": "append", "client_options":
    {"timeout": 60}, "test_mode": True, "offline": True, "generate_corpora": 7, "on_error": "abort",
    "user_tags": {"study": "x"}, "worker_processes": 3, "thresholds": ["q:p(95)<500,abort-on-fail"],
    "driver_cpus": "1",
}


@pytest.mark.parametrize("field", sorted(SENT))
def test_each_sent_option_changes_the_driver_hosts_command_line(field: str) -> None:
    base = {"track": "nginx"}
    plain = race_args(RaceOptions(**base), _deployment(), "/x")
    given = race_args(RaceOptions(**{**base, field: GIVEN[field]}), _deployment(), "/x")
    assert given != plain


def test_the_driver_host_gets_the_workload_its_repository_revision_and_corpora_flags() -> None:
    opts = RaceOptions(track="big5", repository_kind="workloads", track_repository="fork", track_revision="v2",
                       offline=True, generate_corpora=7, client_options={"timeout": 60})
    args = race_args(opts, _deployment(), "/x")
    assert args[args.index("--workload") + 1] == "big5"
    assert args[args.index("--workload-repository") + 1] == "fork"
    assert args[args.index("--workload-revision") + 1] == "v2"
    assert "--offline" in args and "--generate-corpora=7" in args
    assert args[args.index("--client-options") + 1] == "/x/client-options.json"


def test_the_driver_hosts_ini_names_the_repository_url_this_machine_has(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("BENCH_HOME", str(home))
    (home / "bench.ini").write_text("[tracks]\nfork.url = https://git.example.org/tracks.git\n"
                                    f"here.url = {tmp_path / 'repo'}\n[workloads]\nosb.url = git@example.org:w.git\n")
    assert driver_ini(RaceOptions(track="geonames", track_repository="fork")) == \
        "[tracks]\nfork.url = https://git.example.org/tracks.git\n"
    assert driver_ini(RaceOptions(track="big5", track_repository="osb", repository_kind="workloads")) == \
        "[workloads]\nosb.url = git@example.org:w.git\n"
    assert driver_ini(RaceOptions(track="geonames")) == "[tracks]\ndefault.url = https://github.com/elastic/rally-tracks\n"
    assert driver_ini(RaceOptions(track="nginx")) is None  # built in: the driver host has it
    assert driver_ini(RaceOptions(track_path=tmp_path)) is None  # copied to the driver host
    with pytest.raises(ConfigError) as e:
        driver_ini(RaceOptions(track="geonames", track_repository="here"))
    assert str(e.value) == (f"--track-repository=here: its URL {tmp_path / 'repo'} is on this machine, which a cloud "
                            "driver host cannot clone: set [tracks] here.url to a git URL the driver host reaches, or "
                            "give the track with --track-path")


@pytest.mark.parametrize("option", ["--corpus-dir=/data/corpora", "--keep-cluster", "--distribution-path=/es",
                                    "--track-repository=nowhere"])
def test_a_cloud_race_refuses_in_one_line_what_its_driver_host_cannot_take(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str) -> None:
    topo = tmp_path / "topo.yml"
    topo.write_text(TOPOLOGY)
    rc = main(["--quiet", "race", "--topology", str(topo), "--track", "nginx", "--test-mode", option, "--yes"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc != 0 and len(err) == 1 and "Traceback" not in err[0], err
    assert err[0].startswith(f"error: {option.split('=')[0]}"), err
    with TrialStore() as store:
        assert store.list_trials() == []


def test_race_id_is_the_trial_id_with_or_without_dashes() -> None:
    assert RaceOptions(race_id="0B5C2B2E-1D2A-4F6C-9C4B-2C4D6E8F0A1B").trial_id() == \
        "0b5c2b2e1d2a4f6c9c4b2c4d6e8f0a1b"
    assert len(RaceOptions().trial_id()) == 32 and RaceOptions().trial_id() != RaceOptions().trial_id()
