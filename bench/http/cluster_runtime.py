"""Each node's heap and processors as the cluster itself reports them (``GET _nodes/jvm,os``): part of the facts a
trial keeps per cluster (``check_cluster``), for clusters bench started and existing ones alike.

The heap is the JVM's maximum (what ``-Xmx`` gave, whatever set it: a car, ``jvm.options``, the engine's own
sizing); the processors are those the engine sizes its thread pools by (``os.allocated_processors``), which a CPU
set pinning the node bounds.
"""

from __future__ import annotations

from typing import Any

PATH = "/_nodes/_all/jvm,os"
FILTER = "nodes.*.name,nodes.*.jvm.mem.heap_max_in_bytes,nodes.*.os.allocated_processors"


def _one_or_per_node(values: dict[str, int]) -> int | dict[str, int] | None:
    """One value when every node has it, else node name -> value (never an average that no node had)."""
    if not values:
        return None
    distinct = set(values.values())
    return next(iter(distinct)) if len(distinct) == 1 else dict(sorted(values.items()))


def runtime_facts(body: Any) -> dict[str, Any]:
    """``{"heap_max_bytes": ..., "processors": ...}`` (each one value or per node) from a ``_nodes/jvm,os``
    answer; a key is left out when no node reports it."""
    nodes = body.get("nodes") if isinstance(body, dict) else None
    if not isinstance(nodes, dict):
        return {}
    heap: dict[str, int] = {}
    procs: dict[str, int] = {}
    for node_id, n in nodes.items():
        if not isinstance(n, dict):
            continue
        name = str(n.get("name") or node_id)
        h = ((n.get("jvm") or {}).get("mem") or {}).get("heap_max_in_bytes")
        if isinstance(h, int):
            heap[name] = h
        p = (n.get("os") or {}).get("allocated_processors")
        if isinstance(p, int):
            procs[name] = p
    out: dict[str, Any] = {}
    for key, values in (("heap_max_bytes", heap), ("processors", procs)):
        v = _one_or_per_node(values)
        if v is not None:
            out[key] = v
    return out
