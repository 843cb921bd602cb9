"""The AWS path end to end against moto's server mode (a real local EC2 API over HTTP on 127.0.0.1):
plan, up (instances, security group, tags), a failure injected half-way, down, ls, the stale sweep."""

from __future__ import annotations

import base64
import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from bench.cli import main
from bench.cloud import lifecycle
from bench.cloud.plan import TAG_CREATED, TAG_MANAGED, TAG_TRIAL, make_plan
from bench.cloud.providers.aws import AwsProvider
from bench.cloud.topology import load_topology, parse_topology
from bench.util.errors import ConfigError, ProvisionError, RaceInterrupted

moto_server = pytest.importorskip("moto.server")
REGION = "us-east-1"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture(scope="module")
def moto_image(moto_endpoint: str) -> str:
    ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=moto_endpoint, aws_access_key_id="testing",
                       aws_secret_access_key="testing")
    return ec2.describe_images(Owners=["amazon"], Filters=[{"Name": "name", "Values": ["*"]}],
                               MaxResults=5)["Images"][0]["ImageId"]


@pytest.fixture
def aws(moto_endpoint: str, moto_image: str, monkeypatch: pytest.MonkeyPatch) -> tuple[AwsProvider, str]:
    # moto accepts any credentials; these are the standard chain's environment variables.
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
                 "AWS_DEFAULT_REGION": REGION, "BENCH_AWS_ENDPOINT_URL": moto_endpoint}.items():
        monkeypatch.setenv(k, v)
    return AwsProvider(REGION, moto_endpoint), moto_image


def _topology(image: str, tmp_path: Path, **changes: object) -> Path:
    text = (ROOT / "topologies" / "ccr-aws.yml").read_text()
    raw = __import__("yaml").safe_load(text)
    raw.update({"image": image, "ssh": {**raw.get("ssh", {}), "allow_from": "203.0.113.7/32"}, **changes})
    path = tmp_path / "topo.yml"
    path.write_text(__import__("yaml").safe_dump(raw))
    return path


def _everything(provider: AwsProvider) -> list:
    return provider.list_resources()


def test_plan_prints_study_machines_without_touching_aws(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cloud", "plan", str(ROOT / "topologies" / "ccr-aws.yml"), "--hours", "3"]) == 0
    out = capsys.readouterr().out
    assert out.count("c5d.4xlarge") == 7 and "6 x c5d.4xlarge, 2 x m5d.4xlarge" in out
    assert "8 instances" in out and "24 instance-hours" in out
    assert "9200-9400, 6379-6999 from members" in out and "SSH" in out
    # The two driver hosts form a Ray cluster headed by the first; the race runs there.
    head = next(line for line in out.splitlines() if line.startswith("Load drivers: a Ray cluster of 2 hosts"))
    assert "-driver-0 (port 6379" in head and "nodes bench-" in head and "-driver-1;" in head


def test_up_tags_everything_and_down_removes_it(aws: tuple[AwsProvider, str], tmp_path: Path) -> None:
    provider, image = aws
    topo = load_topology(_topology(image, tmp_path))
    trial = "a1" * 16
    dep = lifecycle.up(topo, provider, trial, yes=True, max_instances=8)
    try:
        nodes, drivers = dep.instances("node"), dep.instances("driver")
        assert len(nodes) == 6 and len(drivers) == 2
        ec2 = provider.ec2
        described = [i for r in ec2.describe_instances(InstanceIds=[n.id for n in nodes + drivers])["Reservations"]
                     for i in r["Instances"]]
        types = sorted(i["InstanceType"] for i in described)
        assert types == ["c5d.4xlarge"] * 6 + ["m5d.4xlarge"] * 2
        for inst in described:
            tags = {t["Key"]: t["Value"] for t in inst["Tags"]}
            assert tags[TAG_TRIAL] == trial and tags[TAG_MANAGED] == "true"
            assert abs(float(tags[TAG_CREATED]) - time.time()) < 600
            assert tags["team"] == "search"  # the topology's own tags
        # Every node knows its cluster's private addresses; the follower knows the leader's.
        leader_ips = sorted(n.private_ip for n in dep.instances("node", "leader"))
        follower = dep.instances("node", "follower")[0]
        data = ec2.describe_instance_attribute(InstanceId=follower.id, Attribute="userData")["UserData"]["Value"]
        script = base64.b64decode(data).decode()
        assert "cluster.remote.leader.seeds" in script
        assert all(f"{ip}:9300" in script for ip in leader_ips)
        assert dep.passwords["leader"] not in "".join(r.model_dump_json() for r in dep.resources)
        # The security group: cluster ports from its own members only, SSH from the orchestrator only.
        sg_id = next(r.id for r in dep.resources if r.kind == "security-group")
        perms = ec2.describe_security_groups(GroupIds=[sg_id])["SecurityGroups"][0]["IpPermissions"]
        cluster = next(p for p in perms if p["FromPort"] == 9200)
        assert cluster["ToPort"] == 9400 and cluster["UserIdGroupPairs"][0]["GroupId"] == sg_id
        assert not cluster.get("IpRanges")
        ray = next(p for p in perms if p["FromPort"] == 6379)  # the driver hosts' Ray cluster, members only
        assert ray["ToPort"] == 6999 and ray["UserIdGroupPairs"][0]["GroupId"] == sg_id and not ray.get("IpRanges")
        ssh = next(p for p in perms if p["FromPort"] == 22)
        assert [r["CidrIp"] for r in ssh["IpRanges"]] == ["203.0.113.7/32"]
        assert {r.trial_id for r in provider.list_resources(trial)} == {trial}
    finally:
        lifecycle.teardown(provider, trial, dep.resources, backoff=0.1)
    assert provider.list_resources(trial) == []


class _FailsAfterFirstInstance(AwsProvider):
    """The real AWS provider with one injected fault: the second instance cannot be created."""

    calls = 0

    def create_instance(self, *a, **kw):  # type: ignore[no-untyped-def]
        type(self).calls += 1
        if type(self).calls == 2:
            raise ProvisionError("injected: InsufficientInstanceCapacity")
        return super().create_instance(*a, **kw)


def test_failure_after_first_instance_leaves_nothing(aws: tuple[AwsProvider, str], tmp_path: Path) -> None:
    _, image = aws
    provider = _FailsAfterFirstInstance(REGION, aws[0].ec2.meta.endpoint_url)
    topo = load_topology(_topology(image, tmp_path))
    trial = "b2" * 16
    with pytest.raises(ProvisionError, match="injected"):
        lifecycle.up(topo, provider, trial, yes=True)
    assert _FailsAfterFirstInstance.calls == 2
    assert provider.list_resources(trial) == []
    # The first instance really existed and is now terminated; the security group is gone.
    gone = [i for r in provider.ec2.describe_instances(Filters=[{"Name": f"tag:{TAG_TRIAL}", "Values": [trial]}])
            ["Reservations"] for i in r["Instances"]]
    assert len(gone) == 1 and gone[0]["State"]["Name"] == "terminated"
    assert provider.ec2.describe_security_groups(Filters=[{"Name": f"tag:{TAG_TRIAL}", "Values": [trial]}]
                                                 )["SecurityGroups"] == []


def test_guard_and_confirmation_stand_before_creation(aws: tuple[AwsProvider, str], tmp_path: Path) -> None:
    provider, image = aws
    topo = load_topology(_topology(image, tmp_path))
    with pytest.raises(ConfigError, match="--max-instances=4"):
        lifecycle.up(topo, provider, "c3" * 16, yes=True, max_instances=4)
    with pytest.raises(ConfigError, match="cancelled"):
        lifecycle.up(topo, provider, "c3" * 16, ask=lambda prompt: "n")
    assert provider.list_resources("c3" * 16) == []


def test_cli_up_ls_down_and_stale_sweep(aws: tuple[AwsProvider, str], tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    provider, image = aws
    small = {"clusters": [{"name": "solo", "nodes": 1, "instance_type": {"aws": "t3.small"}}], "drivers": []}
    path = _topology(image, tmp_path, **small)
    assert main(["cloud", "up", str(path), "--yes"]) == 0
    out = capsys.readouterr().out
    trial = out.split("trial ")[-1].split()[0].strip(":.")
    assert len(provider.list_resources(trial)) == 2
    assert main(["cloud", "ls", "--topology", str(path)]) == 0
    out = capsys.readouterr().out
    assert trial[:8] in out and "instance" in out and "security-group" in out
    # Not stale yet: --older-than 6h shows nothing of it, --all-stale leaves it alone.
    assert main(["cloud", "ls", "--topology", str(path), "--older-than", "6h"]) == 0
    assert trial[:8] not in capsys.readouterr().out
    assert main(["cloud", "down", "--topology", str(path), "--all-stale", "--yes"]) == 0
    assert len(provider.list_resources(trial)) == 2
    # Made old (as after a crashed orchestrator): the sweep removes it.
    old = str(int(time.time() - 7 * 3600))
    provider.ec2.create_tags(Resources=[r.id for r in provider.list_resources(trial)],
                             Tags=[{"Key": TAG_CREATED, "Value": old}])
    assert main(["cloud", "down", "--topology", str(path), "--all-stale", "--yes"]) == 0
    assert provider.list_resources(trial) == []


def test_cli_down_of_one_trial(aws: tuple[AwsProvider, str], tmp_path: Path) -> None:
    provider, image = aws
    path = _topology(image, tmp_path, clusters=[{"name": "solo", "instance_type": "t3.small"}], drivers=[])
    dep = lifecycle.up(load_topology(path), provider, "d4" * 16, yes=True)
    assert len(dep.resources) == 2
    assert main(["cloud", "down", "--topology", str(path), "--trial", "d4" * 16, "--yes"]) == 0
    assert provider.list_resources("d4" * 16) == []


def test_topology_errors_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"clusters\[follower\]\.remote_clusters"):
        parse_topology({"name": "x", "clusters": [{"name": "follower", "remote_clusters": ["nope"]}]}, "t.yml")
    with pytest.raises(ConfigError, match=r"t.yml: clusters\[leader\].instance_type has no entry for provider aws"):
        parse_topology({"name": "x", "provider": "aws", "region": "r", "clusters": [{"name": "leader"}]}, "t.yml")
    bad = tmp_path / "bad.yml"
    bad.write_text("name: x\nclusters: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_topology(bad)
    plan = make_plan(parse_topology({"name": "x", "clusters": [{"name": "a", "nodes": 2}]}), "e5" * 16)
    assert plan.instances == []  # local: nothing is created


class _SigtermDuringSecondInstance(AwsProvider):
    """SIGTERM arrives (as from a CI job's timeout) while the second instance is being created."""

    calls = 0

    def create_instance(self, *a, **kw):  # type: ignore[no-untyped-def]
        type(self).calls += 1
        if type(self).calls == 2:
            os.kill(os.getpid(), signal.SIGTERM)
        return super().create_instance(*a, **kw)


def test_sigterm_during_up_tears_everything_down(aws: tuple[AwsProvider, str], tmp_path: Path) -> None:
    _, image = aws
    provider = _SigtermDuringSecondInstance(REGION, aws[0].ec2.meta.endpoint_url)
    trial = "e6" * 16
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(RaceInterrupted, match="interrupted; everything created was deleted"):
        lifecycle.up(load_topology(_topology(image, tmp_path)), provider, trial, yes=True)
    assert signal.getsignal(signal.SIGTERM) == before
    assert provider.list_resources(trial) == []


class _CannotDelete(AwsProvider):
    def delete(self, resources, timeout=600):  # type: ignore[no-untyped-def]
        raise ProvisionError("injected: UnauthorizedOperation on TerminateInstances")


def test_failed_teardown_is_retried_then_names_what_is_left(aws: tuple[AwsProvider, str], tmp_path: Path) -> None:
    provider, image = aws
    path = _topology(image, tmp_path, clusters=[{"name": "solo", "instance_type": "t3.small"}], drivers=[])
    trial = "f7" * 16
    dep = lifecycle.up(load_topology(path), provider, trial, yes=True)
    broken = _CannotDelete(REGION, provider.ec2.meta.endpoint_url)
    try:
        with pytest.raises(lifecycle.TeardownError) as e:
            lifecycle.teardown(broken, trial, dep.resources, attempts=2, backoff=0.01)
        msg = str(e.value)
        assert "after 2 attempts" in msg and "UnauthorizedOperation" in msg and "\n" not in msg
        assert all(r.id in msg for r in dep.resources)  # every resource left, by id
        assert f"bench cloud down --trial={trial}" in msg
    finally:
        lifecycle.teardown(provider, trial, dep.resources, backoff=0.1)
    assert provider.list_resources(trial) == []
