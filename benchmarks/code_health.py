"""Structure figures of the package: code lines per ring, import cycles, long functions.

Run ``python benchmarks/code_health.py`` (``--json`` for a machine-readable copy).
It reads ``clickrank/`` with :mod:`ast` only, so it runs anywhere and measures what
the issue on the outer ring asks to report: how many code lines the outer ring
(experiment, report, cli, plots, online) holds, the import cycles between modules
(every strongly connected component of the module import graph, a package counted
as its ``__init__``), and the functions longer than 80 lines.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "clickrank"
OUTER = ("experiment", "report", "cli", "plots", "online")
LONG = 80


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def code_lines(source: str) -> int:
    """Lines holding a token other than a comment, a docstring or blank space."""
    lines: set[int] = set()
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docstrings.update(range(body[0].lineno, body[0].end_lineno + 1))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in skip and tok.type != tokenize.ENDMARKER:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return len(lines - docstrings)


def imports(path: Path, name: str, modules: set[str]) -> set[str]:
    """The clickrank modules that ``name`` imports (resolved to the nearest known module)."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from pkg import sub`` imports the module ``pkg.sub``; any other name comes
            # from ``pkg/__init__``, which is then an edge of its own
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names
            ]
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def long_functions(path: Path, name: str) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            n = node.end_lineno - node.lineno + 1
            if n > LONG:
                found.append((f"{name}.{node.name}", n))
    return found


def measure() -> dict:
    files = sorted(PKG.rglob("*.py"))
    names = {module_name(p): p for p in files}
    graph = {n: imports(p, n, set(names)) for n, p in names.items()}
    ring = {"outer": 0, "core": 0}
    per_module = {}
    for n, p in names.items():
        lines = code_lines(p.read_text())
        per_module[n] = lines
        top = n.split(".")[1] if "." in n else ""
        ring["outer" if top in OUTER else "core"] += lines
    longest = sorted(
        (f for n, p in names.items() for f in long_functions(p, n)), key=lambda f: -f[1]
    )
    return {
        "code_lines": ring,
        "modules": len(names),
        "largest_modules": sorted(per_module.items(), key=lambda m: -m[1])[:10],
        "cycles": cycles(graph),
        "cycle_edges": [
            [f"{a} -> {b}" for a in comp for b in sorted(graph[a]) if b in comp]
            for comp in cycles(graph)
        ],
        "functions_over_80_lines": longest,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    figures = measure()
    if parser.parse_args().json:
        print(json.dumps(figures, indent=1))
        return
    ring = figures["code_lines"]
    print(f"code lines: outer ring {ring['outer']}, core {ring['core']}")
    print(f"modules: {figures['modules']}")
    print("largest modules: " + ", ".join(f"{n} {k}" for n, k in figures["largest_modules"]))
    print(f"import cycles: {len(figures['cycles'])}")
    for edges in figures["cycle_edges"]:
        print("  cycle: " + "; ".join(edges))
    print(f"functions over {LONG} lines: {len(figures['functions_over_80_lines'])}")
    for f, n in figures["functions_over_80_lines"]:
        print(f"  {f} ({n})")


if __name__ == "__main__":
    main()
