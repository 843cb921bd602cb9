"""Provisioning: distributions, car configs, and local Elasticsearch/OpenSearch nodes."""

from bench.provision.car import CarConfig, list_cars, load_car
from bench.provision.distribution import obtain_distribution
from bench.provision.local import LocalProvisioner
from bench.provision.model import ClusterInfo, ClusterSpec, NodeInfo

__all__ = ["CarConfig", "ClusterInfo", "ClusterSpec", "LocalProvisioner", "NodeInfo", "list_cars", "load_car",
           "obtain_distribution"]
