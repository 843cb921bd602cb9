"""Which Ray nodes drove with their workers so busy that the load driver, not the cluster, may have set the pace:
the driver's CPU per worker of each node in, the summary's notes out."""

from __future__ import annotations

BUSY_SHARE = 0.8  # a node whose workers used more than this share of a core each was the bottleneck, not the cluster


def _percent(share: float, limit: float) -> str:
    text = f"{share * 100:.0f}"
    # 80.4 % must not read "80 % (over 80 %)"
    return f"{share * 100:.1f}" if text == f"{limit * 100:.0f}" else text


def busy_node_notes(cpu_per_worker: dict[str, float], busy_share: float | None = None) -> list[str]:
    """One note per node (name -> CPU cores per worker, from the first start to the end) over ``busy_share``
    (default BUSY_SHARE)."""
    busy_share = BUSY_SHARE if busy_share is None else busy_share
    return [f"Load driver: {name} drove with {_percent(share, busy_share)} % of a core per worker (over {busy_share * 100:.0f} "
            "%): the load driver there may have limited the load; add Ray nodes or workers"
            for name, share in cpu_per_worker.items() if share > busy_share]
