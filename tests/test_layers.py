"""Imports flow one way: data -> clicks -> propensities -> targets -> training -> ...

The layer order of the top-level modules and subpackages of ``clickrank`` is
declared here once. Every import of a clickrank module, at module level or
inside a function, must go to the same or an earlier layer, and the module
import graph must have no cycle. The graph is the one that
``benchmarks/code_health.py`` measures (loaded from its path, so both agree).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Layers in import order; a module belongs to the layer of the longest prefix listed.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "data",
        (
            "_core",
            "_version",
            "specs.names",
            "specs._toml",
            "datasets",
            "metrics",
            "ranking",
        ),
    ),
    ("clicks", ("clickmodels", "clicklog", "engine", "publiclogs", "policies", "simulation")),
    ("propensities", ("propensity",)),
    ("targets", ("targets",)),
    (
        "training",
        (
            "lambdas",
            "deployment",
            "objectives",
            "lambdamart",
            "selection",
            "training",
            "clickranker",
            "production",
            "policies.production",
            "distributed",
        ),
    ),
    ("specs", ("specs",)),
    ("evaluation", ("evaluation", "interleaving", "online")),
    ("report", ("plots", "report")),
    ("experiment", ("experiment",)),
    ("cli", ("cli",)),
)

#: Upward imports still known (none: keep it that way). An entry that no longer
#: occurs fails the test, so the set cannot go stale.
KNOWN_VIOLATIONS: set[tuple[str, str]] = set()


def _health():
    spec = importlib.util.spec_from_file_location(
        "_code_health", ROOT / "benchmarks" / "code_health.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("_code_health", module)
    spec.loader.exec_module(module)
    return module


HEALTH = _health()


def _graph() -> dict[str, set[str]]:
    files = sorted((ROOT / "clickrank").rglob("*.py"))
    names = {HEALTH.module_name(p): p for p in files}
    return {n: HEALTH.imports(p, n, set(names)) for n, p in names.items()}


def layer_of(module: str) -> int | None:
    """Index in :data:`LAYERS` of a clickrank module (None for the package root)."""
    parts = module.split(".")[1:]
    best, best_len = None, 0
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            p = prefix.split(".")
            if parts[: len(p)] == p and len(p) > best_len:
                best, best_len = i, len(p)
    return best


def upward_imports(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    out = set()
    for a, targets in graph.items():
        la = layer_of(a)
        for b in targets:
            lb = layer_of(b)
            if la is not None and lb is not None and lb > la:
                out.add((a, b))
    return out


GRAPH = _graph()


def test_every_module_has_a_layer():
    missing = sorted(m for m in GRAPH if m != "clickrank" and layer_of(m) is None)
    assert missing == [], f"add these modules to LAYERS: {missing}"


def test_no_module_imports_a_later_layer():
    found = upward_imports(GRAPH)
    new = sorted(found - KNOWN_VIOLATIONS)
    assert new == [], "imports against the layer order:\n" + "\n".join(
        f"  {a} ({LAYERS[layer_of(a)][0]}) -> {b} ({LAYERS[layer_of(b)][0]})" for a, b in new
    )
    stale = sorted(KNOWN_VIOLATIONS - found)
    assert stale == [], f"fixed: remove from KNOWN_VIOLATIONS: {stale}"


def test_no_import_cycles():
    cycles = HEALTH.cycles(GRAPH)
    assert cycles == [], f"import cycles: {cycles}"


@pytest.mark.parametrize(
    ("module", "layer"),
    [
        ("clickrank.datasets", "data"),
        ("clickrank.targets._factory", "targets"),
        ("clickrank.cli._root", "cli"),
    ],
)
def test_layer_of_reads_the_longest_prefix(module, layer):
    assert LAYERS[layer_of(module)][0] == layer


def test_an_upward_import_is_found():
    graph = {"clickrank.metrics": {"clickrank.report"}, "clickrank.report": {"clickrank.metrics"}}
    assert upward_imports(graph) == {("clickrank.metrics", "clickrank.report")}
    assert HEALTH.cycles(graph) == [["clickrank.metrics", "clickrank.report"]]
