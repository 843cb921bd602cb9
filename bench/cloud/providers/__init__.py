"""Cloud providers: ``get_provider(topology)`` returns the one the topology names."""

from __future__ import annotations

import os

from bench.cloud.providers.base import CloudProvider, Resource
from bench.cloud.topology import Topology
from bench.util.errors import ConfigError
from bench.util.extras import require

__all__ = ["CloudProvider", "Resource", "get_provider"]


def get_provider(topo: Topology, endpoint: str | None = None) -> CloudProvider:
    """The provider client for topo. endpoint (or $BENCH_AWS_ENDPOINT_URL / $BENCH_GCP_ENDPOINT) points the
    client at another API endpoint, e.g. a local emulator in tests."""
    if topo.provider == "aws":
        require("boto3", "cloud", f"topology {topo.name}: provider aws")
        from bench.cloud.providers.aws import AwsProvider

        return AwsProvider(topo.region or "", endpoint or os.environ.get("BENCH_AWS_ENDPOINT_URL"))
    if topo.provider == "gcp":
        require("google.cloud.compute_v1", "cloud", f"topology {topo.name}: provider gcp")
        from bench.cloud.providers.gcp import GcpProvider

        return GcpProvider(topo.project or "", topo.zone or "", endpoint or os.environ.get("BENCH_GCP_ENDPOINT"))
    raise ConfigError(f"topology {topo.name}: provider {topo.provider} creates no machines; use "
                      f"'bench race --topology=FILE' to run it")
