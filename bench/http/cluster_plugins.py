"""Which plugins and modules a cluster runs, from ``GET _nodes/plugins``: part of the facts a trial keeps per cluster
(``check_cluster``), for clusters bench started and existing ones alike.

Compact on purpose: ``plugins`` maps each plugin to its version, ``modules`` lists module names (a module's version
is the engine's). A plugin that only some nodes have, or that nodes have in different versions, says so in its
version text, e.g. ``"2.19.4.0 (1 of 2 nodes)"``.
"""

from __future__ import annotations

from typing import Any

PATH = "/_nodes/_all/plugins"
FILTER = "nodes.*.plugins.name,nodes.*.plugins.version,nodes.*.modules.name"


def plugin_facts(body: Any) -> dict[str, Any]:
    """``{"plugins": {name: version}, "modules": [names]}`` from a ``_nodes/plugins`` answer; ``{}`` when the
    answer does not list plugins (an old or stripped-down server: then nothing is claimed)."""
    nodes = body.get("nodes") if isinstance(body, dict) else None
    if not isinstance(nodes, dict) or not nodes or not all(
            isinstance(n, dict) and isinstance(n.get("plugins"), list) for n in nodes.values()):
        return {}
    versions: dict[str, dict[str, int]] = {}  # plugin -> version -> nodes having it
    modules: set[str] = set()
    for node in nodes.values():
        for p in node["plugins"]:
            if isinstance(p, dict) and p.get("name"):
                per = versions.setdefault(str(p["name"]), {})
                per[str(p.get("version", "?"))] = per.get(str(p.get("version", "?")), 0) + 1
        modules.update(str(m["name"]) for m in node.get("modules") or [] if isinstance(m, dict) and m.get("name"))
    total = len(nodes)
    plugins = {}
    for name, per in sorted(versions.items()):
        if len(per) == 1 and next(iter(per.values())) == total:
            plugins[name] = next(iter(per))
        else:
            plugins[name] = ", ".join(f"{v} ({n} of {total} nodes)" for v, n in sorted(per.items()))
    return {"plugins": plugins, "modules": sorted(modules)}
