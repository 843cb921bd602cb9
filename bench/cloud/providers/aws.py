"""AWS through boto3: one security group per trial (cluster ports only between its members, SSH from the
orchestrator's address), one EC2 instance per node and load driver, every resource tagged with the
trial id and creation time. Credentials come from boto3's standard chain (env, profiles, instance role)."""

from __future__ import annotations

import logging
import time
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from bench.cloud.plan import (
    TAG_CLUSTER,
    TAG_CREATED,
    TAG_MANAGED,
    TAG_ROLE,
    TAG_TRIAL,
    PlannedInstance,
    resource_prefix,
)
from bench.cloud.providers.base import NetworkInfo, Resource
from bench.cloud.topology import Topology
from bench.util.errors import ConfigError, ProvisionError
from bench.util.redact import redact_text

log = logging.getLogger(__name__)
USER_DATA_LIMIT = 16384  # bytes of EC2 user-data (before base64)
_LIVE = ["pending", "running", "stopping", "stopped", "shutting-down"]


def _err(what: str, e: Exception) -> ProvisionError:
    if isinstance(e, NoCredentialsError):
        return ProvisionError(f"AWS: {what}: no credentials found (set AWS_PROFILE or AWS_ACCESS_KEY_ID/"
                              f"AWS_SECRET_ACCESS_KEY, or run on an instance with a role)")
    return ProvisionError(f"AWS: {what} failed: {redact_text(str(e))}")


def _tags(d: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in d.items()]


def _tagdict(tags: list[dict[str, str]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in tags or []}


class AwsProvider:
    name = "aws"

    def __init__(self, region: str, endpoint_url: str | None = None):
        self.region = region
        self.ec2: Any = boto3.client("ec2", region_name=region, endpoint_url=endpoint_url)

    def _call(self, what: str, fn: Any, **kw: Any) -> Any:
        try:
            return fn(**kw)
        except (ClientError, BotoCoreError) as e:
            raise _err(what, e) from None

    # -- network -----------------------------------------------------------------------------------------

    def network(self, topo: Topology) -> NetworkInfo:
        if topo.network.subnet:
            filters = [{"Name": "subnet-id", "Values": [topo.network.subnet]}]
        else:
            filters = [{"Name": "default-for-az", "Values": ["true"]}]
            if topo.zone:
                filters.append({"Name": "availability-zone", "Values": [topo.zone]})
            if topo.network.vpc:
                filters.append({"Name": "vpc-id", "Values": [topo.network.vpc]})
        subnets = self._call("describe subnets", self.ec2.describe_subnets, Filters=filters)["Subnets"]
        if not subnets:
            raise ConfigError(f"topology {topo.name}: no subnet found ({'subnet ' + topo.network.subnet if topo.network.subnet else 'no default subnet in ' + (topo.zone or topo.region or '')}); set network.subnet")
        s = subnets[0]
        enis = self._call("describe network interfaces", self.ec2.describe_network_interfaces,
                          Filters=[{"Name": "subnet-id", "Values": [s["SubnetId"]]}])["NetworkInterfaces"]
        used = {a["PrivateIpAddress"] for e in enis for a in e.get("PrivateIpAddresses", [])}
        return NetworkInfo(cidr=s["CidrBlock"], subnet=s["SubnetId"], vpc=s["VpcId"], used_ips=used)

    def create_rules(self, topo: Topology, trial_id: str, net: NetworkInfo, ports: list[tuple[int, int]],
                     ssh_cidr: str, tags: dict[str, str]) -> list[Resource]:
        name = f"{resource_prefix(trial_id)}-sg"
        sg = self._call("create security group", self.ec2.create_security_group, GroupName=name,
                        Description=f"bench trial {trial_id}: cluster ports between members, SSH from {ssh_cidr}",
                        VpcId=net.vpc, TagSpecifications=[{"ResourceType": "security-group",
                                                           "Tags": _tags({**tags, "Name": name})}])
        res = Resource(provider="aws", kind="security-group", id=sg["GroupId"], name=name, trial_id=trial_id,
                       created=float(tags[TAG_CREATED]), location=self.region, tags=tags)
        # Tagged before the rules are added: a failure below leaves a group that ls/down can find.
        self._call("authorize security group ingress", self.ec2.authorize_security_group_ingress,
                   GroupId=sg["GroupId"], IpPermissions=[
                       *({"IpProtocol": "tcp", "FromPort": lo, "ToPort": hi,
                          "UserIdGroupPairs": [{"GroupId": sg["GroupId"], "Description": "cluster members and drivers"}]}
                         for lo, hi in ports),
                       {"IpProtocol": "tcp", "FromPort": topo.ssh.port, "ToPort": topo.ssh.port,
                        "IpRanges": [{"CidrIp": ssh_cidr, "Description": "SSH from the orchestrator"}]}])
        return [res]

    # -- instances ---------------------------------------------------------------------------------------

    def resolve_image(self, image: str) -> str:
        """An AMI id, or 'resolve:ssm:/param/name' (e.g. Debian's public parameters) resolved to one."""
        if not image.startswith("resolve:ssm:"):
            return image
        ssm = boto3.client("ssm", region_name=self.region, endpoint_url=self.ec2.meta.endpoint_url)
        try:
            return str(ssm.get_parameter(Name=image.removeprefix("resolve:ssm:"))["Parameter"]["Value"])
        except (ClientError, BotoCoreError) as e:
            raise _err(f"resolving image {image}", e) from None

    def _root_device(self, image: str) -> str:
        images = self._call("describe image", self.ec2.describe_images, ImageIds=[image])["Images"]
        if not images:
            raise ConfigError(f"AMI {image} not found in {self.region}; fix 'image' in the topology")
        return images[0].get("RootDeviceName") or "/dev/xvda"

    def create_instance(self, topo: Topology, planned: PlannedInstance, net: NetworkInfo, rules: list[Resource],
                        private_ip: str, user_data: str, tags: dict[str, str]) -> Resource:
        if not topo.image:
            raise ConfigError(f"topology {topo.name}: provider aws needs 'image' (an AMI id, e.g. Debian 12)")
        if len(user_data.encode()) > USER_DATA_LIMIT:
            raise ConfigError(f"the startup script of {planned.name} has {len(user_data.encode())} bytes, more than "
                              f"EC2's user-data limit of {USER_DATA_LIMIT}: fewer nodes per topology (with security, "
                              f"the node certificate names every node's address) or a shorter car")
        image = self.resolve_image(topo.image)
        all_tags = {**tags, "Name": planned.name, TAG_ROLE: planned.role, TAG_CLUSTER: planned.group}
        kw: dict[str, Any] = {
            "ImageId": image, "InstanceType": planned.instance_type, "MinCount": 1, "MaxCount": 1, "UserData": user_data,
            # A node whose OS shuts down is gone for good: nothing keeps costing money in a stopped state.
            "InstanceInitiatedShutdownBehavior": "terminate",
            "MetadataOptions": {"HttpTokens": "required", "InstanceMetadataTags": "enabled"},
            "NetworkInterfaces": [{"DeviceIndex": 0, "SubnetId": net.subnet, "PrivateIpAddress": private_ip,
                                "Groups": [r.id for r in rules if r.kind == "security-group"],
                                "AssociatePublicIpAddress": True, "DeleteOnTermination": True}],
            "BlockDeviceMappings": [{"DeviceName": self._root_device(image),
                                  "Ebs": {"VolumeSize": planned.disk_gb, "VolumeType": planned.disk_type,
                                          "DeleteOnTermination": True}}],
            "TagSpecifications": [{"ResourceType": "instance", "Tags": _tags(all_tags)},
                               {"ResourceType": "volume", "Tags": _tags(all_tags)}]}
        if topo.ssh.key_name:
            kw["KeyName"] = topo.ssh.key_name
        if topo.zone:
            kw["Placement"] = {"AvailabilityZone": topo.zone}
        inst = self._call(f"run instance {planned.name}", self.ec2.run_instances, **kw)["Instances"][0]
        return self._resource(inst)

    def _resource(self, inst: dict[str, Any]) -> Resource:
        tags = _tagdict(inst.get("Tags"))
        created = tags.get(TAG_CREATED)
        return Resource(provider="aws", kind="instance", id=inst["InstanceId"], name=tags.get("Name", ""),
                        trial_id=tags.get(TAG_TRIAL), created=float(created) if created else None,
                        state=inst.get("State", {}).get("Name", ""),
                        location=inst.get("Placement", {}).get("AvailabilityZone", self.region),
                        private_ip=inst.get("PrivateIpAddress"), public_ip=inst.get("PublicIpAddress"),
                        role=tags.get(TAG_ROLE), cluster=tags.get(TAG_CLUSTER), tags=tags)

    def _instances(self, filters: list[dict[str, Any]]) -> list[Resource]:
        out: list[Resource] = []
        paginator = self.ec2.get_paginator("describe_instances")
        try:
            for page in paginator.paginate(Filters=filters):
                for r in page["Reservations"]:
                    out += [self._resource(i) for i in r["Instances"]]
        except (ClientError, BotoCoreError) as e:
            raise _err("describe instances", e) from None
        return out

    def wait_running(self, instances: list[Resource], timeout: float = 600) -> list[Resource]:
        ids = [r.id for r in instances if r.kind == "instance"]
        deadline = time.monotonic() + timeout
        while True:
            found = self._instances([{"Name": "instance-id", "Values": ids}])
            bad = [r for r in found if r.state in ("shutting-down", "terminated", "stopping", "stopped")]
            if bad:
                raise ProvisionError(f"AWS: instance {bad[0].id} ({bad[0].name}) is {bad[0].state} instead of running")
            if len(found) == len(ids) and all(r.state == "running" for r in found):
                return found
            if time.monotonic() > deadline:
                raise ProvisionError(f"AWS: instances not running after {timeout:.0f} s: "
                                     f"{[r.id for r in found if r.state != 'running']}")
            time.sleep(2)

    # -- find and delete ---------------------------------------------------------------------------------

    def list_resources(self, trial_id: str | None = None) -> list[Resource]:
        filters = [{"Name": f"tag:{TAG_MANAGED}", "Values": ["true"]}]
        if trial_id:
            filters.append({"Name": f"tag:{TAG_TRIAL}", "Values": [trial_id]})
        out = self._instances([*filters, {"Name": "instance-state-name", "Values": _LIVE}])
        groups = self._call("describe security groups", self.ec2.describe_security_groups, Filters=filters)
        for g in groups["SecurityGroups"]:
            tags = _tagdict(g.get("Tags"))
            created = tags.get(TAG_CREATED)
            out.append(Resource(provider="aws", kind="security-group", id=g["GroupId"], name=g.get("GroupName", ""),
                                trial_id=tags.get(TAG_TRIAL), created=float(created) if created else None,
                                location=self.region, tags=tags))
        return out

    def delete(self, resources: list[Resource], timeout: float = 600) -> None:
        """Terminate instances, wait until they are gone, then delete their security groups (which cannot be
        deleted while an instance still uses them)."""
        ids = [r.id for r in resources if r.kind == "instance"]
        if ids:
            try:
                self.ec2.terminate_instances(InstanceIds=ids)
            except ClientError as e:
                if e.response.get("Error", {}).get("Code") != "InvalidInstanceID.NotFound":
                    raise _err("terminate instances", e) from None
            deadline = time.monotonic() + timeout
            while True:
                left = [r for r in self._instances([{"Name": "instance-id", "Values": ids}])
                        if r.state != "terminated"]
                if not left:
                    break
                if time.monotonic() > deadline:
                    raise ProvisionError(f"AWS: instances still not terminated after {timeout:.0f} s: "
                                         f"{[r.id for r in left]}")
                time.sleep(2)
        for r in resources:
            if r.kind != "security-group":
                continue
            deadline = time.monotonic() + 120
            while True:
                try:
                    self.ec2.delete_security_group(GroupId=r.id)
                    break
                except ClientError as e:
                    code = e.response.get("Error", {}).get("Code")
                    if code == "InvalidGroup.NotFound":
                        break
                    # ENIs of terminated instances are released a little after termination.
                    if code != "DependencyViolation" or time.monotonic() > deadline:
                        raise _err(f"delete security group {r.id}", e) from None
                    time.sleep(3)
