"""GCP through google-cloud-compute (REST transport): one instance per node and load driver, labelled
with the trial id and creation time, and two firewall rules per trial (cluster ports only between
instances carrying the trial's network tag; SSH from the orchestrator's address). Firewall rules have no
labels, so they carry the same keys as JSON in their description. Credentials: application default
credentials. Every mutation waits on its zone/global operation."""

from __future__ import annotations

import json
import logging
import re
import time
from typing import Any

from google.api_core import exceptions as gexc
from google.api_core.client_options import ClientOptions
from google.auth.exceptions import DefaultCredentialsError
from google.cloud import compute_v1

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


def label_value(v: str) -> str:
    """GCE label values: lowercase letters, digits, '_' and '-', at most 63 characters."""
    return re.sub(r"[^a-z0-9_-]", "-", v.lower())[:63]


class GcpProvider:
    name = "gcp"

    def __init__(self, project: str, zone: str, endpoint: str | None = None):
        self.project, self.zone = project, zone
        kw: dict[str, Any] = {"transport": "rest"}
        if endpoint:
            from google.auth.credentials import AnonymousCredentials

            kw.update(client_options=ClientOptions(api_endpoint=endpoint), credentials=AnonymousCredentials())
        try:
            self.instances = compute_v1.InstancesClient(**kw)
            self.firewalls = compute_v1.FirewallsClient(**kw)
            self.zone_ops = compute_v1.ZoneOperationsClient(**kw)
            self.global_ops = compute_v1.GlobalOperationsClient(**kw)
        except DefaultCredentialsError:
            raise ProvisionError("GCP: no application default credentials (run 'gcloud auth application-default "
                                 "login' or set GOOGLE_APPLICATION_CREDENTIALS)") from None

    def _call(self, what: str, fn: Any, *a: Any, **kw: Any) -> Any:
        try:
            return fn(*a, **kw)
        except (gexc.GoogleAPICallError, gexc.RetryError) as e:
            raise ProvisionError(f"GCP: {what} failed: {redact_text(str(e))}") from None
        except DefaultCredentialsError:
            raise ProvisionError("GCP: no application default credentials (run 'gcloud auth application-default "
                                 "login' or set GOOGLE_APPLICATION_CREDENTIALS)") from None

    def _wait(self, what: str, op: compute_v1.Operation, zonal: bool, timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        while op.status != compute_v1.Operation.Status.DONE:
            if time.monotonic() > deadline:
                raise ProvisionError(f"GCP: {what}: operation {op.name} not done after {timeout:.0f} s")
            if zonal:
                op = self._call(what, self.zone_ops.wait, project=self.project, zone=self.zone, operation=op.name)
            else:
                op = self._call(what, self.global_ops.wait, project=self.project, operation=op.name)
        if op.error and op.error.errors:
            raise ProvisionError(f"GCP: {what} failed: {op.error.errors[0].code} {op.error.errors[0].message}")

    # -- network -----------------------------------------------------------------------------------------

    def network(self, topo: Topology) -> NetworkInfo:
        if not topo.network.cidr:
            raise ConfigError(f"topology {topo.name}: provider gcp needs network.cidr (the subnetwork's range)")
        used = {nic.network_i_p for i in self._list_instances(None) for nic in i.network_interfaces if nic.network_i_p}
        return NetworkInfo(cidr=topo.network.cidr, subnet=topo.network.subnet, vpc=topo.network.name, used_ips=used)

    def create_rules(self, topo: Topology, trial_id: str, net: NetworkInfo, ports: list[tuple[int, int]],
                     ssh_cidr: str, tags: dict[str, str]) -> list[Resource]:
        prefix = resource_prefix(trial_id)
        desc = json.dumps({TAG_MANAGED: "true", TAG_TRIAL: trial_id, TAG_CREATED: tags[TAG_CREATED]})
        rules = [
            compute_v1.Firewall(name=f"{prefix}-cluster", network=f"global/networks/{net.vpc}", description=desc,
                                direction="INGRESS", source_tags=[prefix], target_tags=[prefix],
                                allowed=[compute_v1.Allowed(I_p_protocol="tcp", ports=[f"{a}-{b}" for a, b in ports])]),
            compute_v1.Firewall(name=f"{prefix}-ssh", network=f"global/networks/{net.vpc}", description=desc,
                                direction="INGRESS", source_ranges=[ssh_cidr], target_tags=[prefix],
                                allowed=[compute_v1.Allowed(I_p_protocol="tcp", ports=[str(topo.ssh.port)])]),
        ]
        out: list[Resource] = []
        for fw in rules:
            op = self._call(f"create firewall {fw.name}", self.firewalls.insert_unary, project=self.project,
                            firewall_resource=fw)
            out.append(Resource(provider="gcp", kind="firewall", id=fw.name, name=fw.name, trial_id=trial_id,
                                created=float(tags[TAG_CREATED]), location="global", tags=tags))
            self._wait(f"create firewall {fw.name}", op, zonal=False)
        return out

    # -- instances ---------------------------------------------------------------------------------------

    def create_instance(self, topo: Topology, planned: PlannedInstance, net: NetworkInfo, rules: list[Resource],
                        private_ip: str, user_data: str, tags: dict[str, str]) -> Resource:
        if not topo.image:
            raise ConfigError(f"topology {topo.name}: provider gcp needs 'image' "
                              f"(e.g. projects/debian-cloud/global/images/family/debian-12)")
        labels = {k: label_value(v) for k, v in {**tags, TAG_ROLE: planned.role, TAG_CLUSTER: planned.group}.items()}
        metadata = [compute_v1.Items(key="startup-script", value=user_data)]
        if topo.ssh.public_key:
            from pathlib import Path

            key = Path(topo.ssh.public_key).expanduser()
            if not key.is_file():
                raise ConfigError(f"topology {topo.name}: ssh.public_key {key} does not exist")
            metadata.append(compute_v1.Items(key="ssh-keys", value=f"{topo.ssh.user}:{key.read_text().strip()}"))
        nic = compute_v1.NetworkInterface(network=f"global/networks/{net.vpc}", network_i_p=private_ip,
                                          access_configs=[compute_v1.AccessConfig(name="External NAT",
                                                                                  type_="ONE_TO_ONE_NAT")])
        if net.subnet:
            nic.subnetwork = f"regions/{self.zone.rsplit('-', 1)[0]}/subnetworks/{net.subnet}"
        inst = compute_v1.Instance(
            name=planned.name, machine_type=f"zones/{self.zone}/machineTypes/{planned.instance_type}",
            labels=labels, tags=compute_v1.Tags(items=[resource_prefix(tags[TAG_TRIAL])]),
            metadata=compute_v1.Metadata(items=metadata), network_interfaces=[nic],
            disks=[compute_v1.AttachedDisk(boot=True, auto_delete=True, initialize_params=compute_v1.
                                           AttachedDiskInitializeParams(
                                               source_image=topo.image, disk_size_gb=planned.disk_gb,
                                               disk_type=f"zones/{self.zone}/diskTypes/{planned.disk_type}"))])
        op = self._call(f"create instance {planned.name}", self.instances.insert_unary, project=self.project,
                        zone=self.zone, instance_resource=inst)
        # Known from here on (labelled), even if waiting fails: teardown finds it by its labels anyway.
        res = Resource(provider="gcp", kind="instance", id=planned.name, name=planned.name,
                       trial_id=tags[TAG_TRIAL], created=float(tags[TAG_CREATED]), state="PROVISIONING",
                       location=self.zone, private_ip=private_ip, role=planned.role, cluster=planned.group,
                       tags=labels)
        self._wait(f"create instance {planned.name}", op, zonal=True)
        return res

    def _resource(self, i: compute_v1.Instance) -> Resource:
        labels = dict(i.labels)
        nic = i.network_interfaces[0] if i.network_interfaces else None
        nat = nic.access_configs[0].nat_i_p if nic and nic.access_configs else None
        created = labels.get(TAG_CREATED)
        return Resource(provider="gcp", kind="instance", id=i.name, name=i.name, trial_id=labels.get(TAG_TRIAL),
                        created=float(created) if created else None, state=i.status, location=self.zone,
                        private_ip=nic.network_i_p if nic else None, public_ip=nat or None,
                        role=labels.get(TAG_ROLE), cluster=labels.get(TAG_CLUSTER), tags=labels)

    def _list_instances(self, flt: str | None) -> list[compute_v1.Instance]:
        req = compute_v1.ListInstancesRequest(project=self.project, zone=self.zone)
        if flt:
            req.filter = flt
        return list(self._call("list instances", self.instances.list, request=req))

    def wait_running(self, instances: list[Resource], timeout: float = 600) -> list[Resource]:
        names = [r.id for r in instances if r.kind == "instance"]
        deadline = time.monotonic() + timeout
        while True:
            found = [self._resource(self._call(f"get instance {n}", self.instances.get, project=self.project,
                                               zone=self.zone, instance=n)) for n in names]
            bad = [r for r in found if r.state in ("STOPPING", "STOPPED", "TERMINATED", "SUSPENDED")]
            if bad:
                raise ProvisionError(f"GCP: instance {bad[0].id} is {bad[0].state} instead of RUNNING")
            if all(r.state == "RUNNING" for r in found):
                return found
            if time.monotonic() > deadline:
                raise ProvisionError(f"GCP: instances not running after {timeout:.0f} s: "
                                     f"{[r.id for r in found if r.state != 'RUNNING']}")
            time.sleep(2)

    # -- find and delete ---------------------------------------------------------------------------------

    def list_resources(self, trial_id: str | None = None) -> list[Resource]:
        flt = f'labels.{TAG_MANAGED} = "true"' + (f' AND labels.{TAG_TRIAL} = "{trial_id}"' if trial_id else "")
        out = [self._resource(i) for i in self._list_instances(flt)]
        for fw in self._call("list firewalls", self.firewalls.list, project=self.project):
            try:
                meta = json.loads(fw.description or "")
            except ValueError:
                continue
            if not isinstance(meta, dict) or meta.get(TAG_MANAGED) != "true":
                continue
            if trial_id and meta.get(TAG_TRIAL) != trial_id:
                continue
            created = meta.get(TAG_CREATED)
            out.append(Resource(provider="gcp", kind="firewall", id=fw.name, name=fw.name,
                                trial_id=meta.get(TAG_TRIAL), created=float(created) if created else None,
                                location="global", tags=meta))
        return out

    def delete(self, resources: list[Resource], timeout: float = 600) -> None:
        ops = []
        for r in resources:
            if r.kind != "instance":
                continue
            try:
                ops.append((r, self.instances.delete_unary(project=self.project, zone=self.zone, instance=r.id)))
            except gexc.NotFound:
                continue
            except gexc.GoogleAPICallError as e:
                raise ProvisionError(f"GCP: delete instance {r.id} failed: {redact_text(str(e))}") from None
        for r, op in ops:
            self._wait(f"delete instance {r.id}", op, zonal=True, timeout=timeout)
        for r in resources:
            if r.kind != "firewall":
                continue
            try:
                op = self.firewalls.delete_unary(project=self.project, firewall=r.id)
            except gexc.NotFound:
                continue
            except gexc.GoogleAPICallError as e:
                raise ProvisionError(f"GCP: delete firewall {r.id} failed: {redact_text(str(e))}") from None
            self._wait(f"delete firewall {r.id}", op, zonal=False, timeout=timeout)
