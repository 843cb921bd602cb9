"""Before a shard-aware bulk task starts, read where its index's primaries are (one table per task and step)."""

from __future__ import annotations

import secrets

from bench.driver.bulk.shard_routing import shard_table
from bench.driver.param_sources import SHARD_TABLE, shard_aware_problem
from bench.driver.param_types import param_bool
from bench.http.client import ClusterTarget, RawHttp
from bench.track.model import DocumentsSpec, Task
from bench.util.errors import RaceError


def _index_of(task: Task, documents: list[DocumentsSpec], indices: list[str]) -> str:
    targets = {d.target_index or (indices[0] if len(indices) == 1 else None) for d in documents}
    target = next(iter(targets)) if len(targets) == 1 else None
    if target is None:
        raise RaceError(f"task '{task.name}': shard-aware bulk needs its documents to go to exactly one index, "
                        f"they go to {sorted(str(t) for t in targets) or 'none'}")
    return target


async def with_shard_tables(tasks: list[Task], targets: list[ClusterTarget], default_cluster: str,
                            documents: dict[str, list[DocumentsSpec]], indices: list[str]) -> list[Task]:
    """The step's tasks, each shard-aware bulk carrying the routing table of its index (read now, from the cluster
    it indexes into) and a fresh id prefix."""
    out = []
    for task in tasks:
        p = task.operation.params
        if task.operation.operation_type != "bulk" or not param_bool(p, "shard-aware", False):
            out.append(task)
            continue
        problem = shard_aware_problem(task)
        if problem:
            raise RaceError(problem)
        index = _index_of(task, documents.get(task.name, []), indices)
        target = next(t for t in targets if t.name == p.get("cluster", default_cluster))
        async with RawHttp(target, connections=1) as http:
            s1, state = await http.request("GET", f"/_cluster/state/metadata,routing_table/{index}")
            s2, nodes = await http.request("GET", "/_nodes/http")
        if s1 >= 300 or s2 >= 300 or not isinstance(state, dict) or not isinstance(nodes, dict):
            raise RaceError(f"task '{task.name}': reading the routing of index {index} failed "
                            f"(HTTP {s1 if s1 >= 300 else s2})")
        scheme = target.urls()[0].split("://", 1)[0]
        try:
            table = shard_table(index, state, nodes, scheme, id_prefix=secrets.token_hex(4) + "-")
        except ValueError as e:
            raise RaceError(f"task '{task.name}': {e}") from None
        op = task.operation.model_copy(update={"params": {**p, SHARD_TABLE: table.model_dump()}})
        out.append(task.model_copy(update={"operation": op}))
    return out
