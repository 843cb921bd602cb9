"""The load-time checks of a track's operations: is the type runnable, are its parameters there and sane.

The driver's registry (``bench.driver.runners.registry``) says which types exist -- the core's and those extensions
register, with their mandatory parameters and checks -- so a track that asks for anything else fails when
it is loaded, not minutes into a race.
"""

from __future__ import annotations

from typing import Any

from bench.driver.runners.registry import operation_types, runner_spec
from bench.track.plugins import active_plugins
from bench.util.errors import TrackError


def supported_operation_types() -> frozenset[str]:
    return operation_types()


BULK = "bulk"

_PROTO = ("OpenSearch Benchmark sends it over gRPC/protobuf (the transport-grpc module), which bench has no client "
          "for; use its REST form ({rest})")
_ML = "it is an ML Commons plugin operation, and bench does not run ML Commons operations yet"
# OpenSearch Benchmark's operation types bench refuses, and why: each is a one-line error when the workload loads.
NOT_BUILT = {
    "proto-bulk": _PROTO.format(rest="bulk"),
    "proto-search": _PROTO.format(rest="search"),
    "proto-vector-search": _PROTO.format(rest="vector-search"),
    "proto-bulk-vector-data-set": _PROTO.format(rest="bulk-vector-data-set"),
    "produce-stream-message": "it writes to Kafka (OpenSearch's pull-based ingestion); bench has no Kafka client",
    **{t: _ML for t in ("register-ml-model", "deploy-ml-model", "delete-ml-model", "create-ml-connector",
                         "delete-ml-connector", "register-remote-ml-model")},
}


def check_operation(name: str, op_type: str, params: dict[str, Any], *, track_file: str) -> None:
    """Raise TrackError when the type is unknown or a mandatory parameter is missing or mistyped."""
    plugins = active_plugins()
    if plugins is not None and plugins.runs(op_type):
        return  # the track's own runner (track.py) runs this type: its parameters are its business
    spec = runner_spec(op_type)
    if spec is None and op_type in NOT_BUILT:
        raise TrackError(f"{track_file}: operation '{name}' has operation-type '{op_type}', which bench does not run: "
                         f"{NOT_BUILT[op_type]}")
    if spec is None:
        raise TrackError(
            f"{track_file}: operation '{name}' has unsupported operation-type '{op_type}': "
            f"use one of {', '.join(sorted(operation_types()))}"
        )
    if "param-source" in params:
        return  # the runner gets what the track's parameter source returns, not these parameters
    for key in spec.required:
        if key == "bulk-size" and ("bulk-size-mb" in params or "template" in params):
            continue  # a bulk sized in MB, or by a template's repetitions
        if key not in params:
            raise TrackError(f"{track_file}: operation '{name}' ({op_type}) needs the parameter '{key}'")
    if op_type == BULK:
        size = params.get("bulk-size", 1)
        mb = params.get("bulk-size-mb")
        if mb is not None and (not isinstance(mb, (int, float)) or isinstance(mb, bool) or mb <= 0):
            raise TrackError(f"{track_file}: operation '{name}' has bulk-size-mb {mb!r}: use a positive number")
        if "conflicts" in params and params["conflicts"] not in ("sequential", "random"):
            raise TrackError(f"{track_file}: operation '{name}' has conflicts {params['conflicts']!r}: "
                             f"use 'sequential' or 'random'")
        if "on-conflict" in params and params["on-conflict"] not in ("index", "update"):
            raise TrackError(f"{track_file}: operation '{name}' has on-conflict {params['on-conflict']!r}: "
                             f"use 'index' or 'update'")
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise TrackError(
                f"{track_file}: operation '{name}' has bulk-size {size!r}: use a positive integer"
            )
        _check_ingest_doc_count(name, params, size, track_file)
        if params.get("retries_on_429"):
            raise TrackError(f"{track_file}: operation '{name}' has retries_on_429 {params['retries_on_429']!r}: "
                             f"bench's bulk does not resend the documents a bulk answered with 429 (its throughput "
                             f"would count them twice or not at all); remove it")
        corpora = params.get("corpora")
        if corpora is not None and not (
            isinstance(corpora, str)
            or (isinstance(corpora, list) and all(isinstance(c, str) for c in corpora))
        ):
            raise TrackError(
                f"{track_file}: operation '{name}' has corpora {corpora!r}: use a name or a list of names"
            )
    if spec.check is not None:
        spec.check(name, op_type, params, track_file=track_file)
    if op_type == "sleep":
        d = params["duration"]
        if not isinstance(d, (int, float)) or isinstance(d, bool) or d < 0:
            raise TrackError(f"{track_file}: operation '{name}' has duration {d!r}: use seconds >= 0")
    if op_type == "cluster-health":
        wanted = (params.get("request-params") or {}).get("wait_for_status") \
            if isinstance(params.get("request-params"), dict) else None
        if wanted is not None and str(wanted).lower() not in ("green", "yellow", "red"):
            # Elasticsearch and OpenSearch answer any other value with HTTP 400, which retry-until-success would
            # retry until it gives up.
            raise TrackError(f"{track_file}: operation '{name}' has request-params wait_for_status {wanted!r}: use "
                             f"green, yellow or red")
    if op_type == "raw-request" and not str(params["path"]).startswith("/"):
        raise TrackError(
            f"{track_file}: operation '{name}' has path {params['path']!r}: it must start with '/'"
        )


def _check_ingest_doc_count(name: str, params: dict[str, Any], bulk_size: Any, track_file: str) -> None:
    """Rally's checks of ``ingest-doc-count`` (esrally/track/params.py), those that need no corpus or clients."""
    if "ingest-doc-count" not in params:
        return
    count = params["ingest-doc-count"]
    where = f"{track_file}: operation '{name}'"
    if "ingest-percentage" in params:
        raise TrackError(f"{where} has both ingest-doc-count and ingest-percentage: they are mutually exclusive, "
                         f"keep one")
    if isinstance(count, bool) or not isinstance(count, int) or count <= 0:
        raise TrackError(f"{where} has ingest-doc-count {count!r}: use a positive integer (documents)")
    if "bulk-size-mb" in params:
        raise TrackError(f"{where} has ingest-doc-count with bulk-size-mb: a document count needs bulks of "
                         f"bulk-size documents")
    if isinstance(bulk_size, int) and count % bulk_size:
        raise TrackError(f"{where} has ingest-doc-count {count}: it must be a multiple of bulk-size ({bulk_size})")
