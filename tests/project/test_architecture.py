"""The shape of the code, checked from its own imports: no import cycles, a core that knows no extension, and the
layer rule of docs/extending/architecture.md.

Every ``import``/``from ... import`` in ``bench/`` counts, also the ones inside functions and under
``TYPE_CHECKING``: a late import hides a cycle from Python, not from the reader.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

from tests.support.checkout import ROOT

# What plugs in: the core reaches these only through bench.extensions (entry points), never by import.
EXTENSIONS = ("bench.ccr", "bench.cloud", "bench.loadgen", "bench.ray", "bench.redline", "bench.telemetry")
# The command line is the composition root: it may name an extension's subcommand.
COMPOSITION_ROOT = ("bench.cli",)


def _modules() -> dict[str, Path]:
    root = ROOT
    mods = {}
    for p in (root / "bench").rglob("*.py"):
        parts = p.relative_to(root).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = p
    return mods


def _imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                # "from bench.util import redact" imports the module bench.util.redact; "from bench.x import f" imports bench.x
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            found.update(t for t in targets if t != name and (t in mods or t.startswith("bench")))
        graph[name] = found
    return graph


GRAPH = _imports(_modules())


def test_every_bench_import_names_a_module_that_exists() -> None:
    # A late import of a moved module fails only when its branch runs: catch it here.
    missing = sorted(f"{m} imports {t}" for m, targets in GRAPH.items() for t in targets if t not in GRAPH)
    assert missing == []


def test_there_is_no_import_cycle() -> None:
    try:
        tuple(graphlib.TopologicalSorter(GRAPH).static_order())
    except graphlib.CycleError as e:
        pytest.fail(f"import cycle: {' -> '.join(e.args[1])}")


def _is_in(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def test_the_core_imports_no_extension() -> None:
    offending = sorted(f"{m} imports {t}" for m, targets in GRAPH.items()
                       if not _is_in(m, EXTENSIONS + COMPOSITION_ROOT) for t in targets if _is_in(t, EXTENSIONS))
    assert offending == []


def test_the_checks_above_can_fail() -> None:
    # The graph is real: the core is imported by the extensions, and a known edge is present.
    assert "bench.driver.coordinator" in GRAPH and GRAPH["bench.race.race"]
    assert any(_is_in(t, ("bench.driver",)) for m, ts in GRAPH.items() if _is_in(m, ("bench.ccr",)) for t in ts)
    cyclic = {**GRAPH, "bench.util.errors": GRAPH["bench.util.errors"] | {"bench.race.race"}}
    with pytest.raises(graphlib.CycleError):
        tuple(graphlib.TopologicalSorter(cyclic).static_order())


# The layer rule. Lowest first: a package imports from its own package, from layers below its own, or along a
# sibling edge named below. ``bench`` is the package root (its ``__version__``).
LAYERS: list[tuple[str, set[str]]] = [
    ("util", {"bench", "util", "extensions"}),
    ("http", {"http"}),
    ("provision", {"provision"}),
    ("track and driver", {"track", "compat", "driver"}),
    ("results", {"results"}),
    ("trials", {"trials"}),
    ("compare", {"compare"}),
    ("race", {"race"}),
    ("reporting", {"reporting"}),
    ("api", {"api"}),
    ("extensions", {"ccr", "cloud", "loadgen", "ray", "redline", "telemetry"}),
    ("cli", {"cli", "__main__"}),
]
# Imports between packages of one layer, each with its reason.
SIBLING_EDGES = {
    # The loader refuses at load time what the driver cannot execute, so it reads the driver's registries of
    # operation types and schedulers; the driver runs the track's model.
    ("track", "driver"), ("driver", "track"),
    # Rally's and OSB's modules that track code imports read the corpus handling and the track's plugins; the loader
    # installs them and builds Rally-shaped views from them.
    ("track", "compat"), ("compat", "track"),
    # The extension registry raises bench's errors.
    ("extensions", "util"),
    # CCR's report and sync check read the follower lag and checkpoints that the telemetry devices collect.
    ("ccr", "telemetry"),
    # ``python -m bench`` is the command line.
    ("__main__", "cli"),
}
RANK = {pkg: i for i, (_, pkgs) in enumerate(LAYERS) for pkg in pkgs}


def _package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "bench"


def _upward(graph: dict[str, set[str]]) -> list[str]:
    wrong = []
    for module, targets in graph.items():
        source = _package_of(module)
        for target in targets:
            dest = _package_of(target)
            if dest != source and (source, dest) not in SIBLING_EDGES and RANK[dest] >= RANK[source]:
                wrong.append(f"{module} (layer {LAYERS[RANK[source]][0]!r}) imports {target} "
                             f"(layer {LAYERS[RANK[dest]][0]!r})")
    return sorted(wrong)


def test_every_package_has_a_layer() -> None:
    unplaced = sorted({_package_of(m) for m in GRAPH} - set(RANK))
    assert unplaced == [], "place them in LAYERS here and in docs/extending/architecture.md"


def test_no_module_imports_upward() -> None:
    assert _upward(GRAPH) == []


def test_the_layer_rule_can_fail() -> None:
    # A summary that asked the race layer for something would be found.
    assert _upward({**GRAPH, "bench.results.summary": {"bench.race.race"}}) == [
        "bench.results.summary (layer 'results') imports bench.race.race (layer 'race')"]


def test_the_top_of_the_package_stays_small() -> None:
    entries = sorted(p.name for p in (ROOT / "bench").iterdir() if p.name != "__pycache__")
    assert len(entries) <= 25, entries


MAX_FUNCTION_LINES = 80  # a function longer than a screen does more than one thing


def test_no_function_is_longer_than_a_screen() -> None:
    long = []
    for path in sorted((ROOT / "bench").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {lines} lines")
    assert not long, "\n".join(long)
