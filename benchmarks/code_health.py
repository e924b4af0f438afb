"""Health figures of the package and its text.

Run ``python benchmarks/code_health.py`` (``--json`` for a machine-readable copy). It
reads ``clickrank/`` with :mod:`ast` and prints:

* the code lines of the outer ring (experiment, report, cli, plots, online) and of the
  core, the module count and the largest modules;
* the import cycles between modules (every strongly connected component of the module
  import graph, a package counted as its ``__init__``);
* the largest class (the lines of its body) and the functions longer than 80 lines;
* the cross-package private imports. Rule: a module of one top-level package or module
  of clickrank (``clickrank.targets``, ``clickrank.metrics``, ...) may import the private
  modules and names (``_x``) of its own package, and those of the top-level private
  modules (``clickrank._core._validation``, ``clickrank._core._io``, ...), which are the shared
  core;
  importing a private module or name that belongs to another top-level package
  (``clickrank.engine._spark`` or ``clickrank.clickmodels._cascade`` from ``clickrank.targets``)
  is counted;
* the number of options ``clickrank train --help`` lists (its non-hidden click options);
* the words of README.md and of the largest documentation pages;
* the history markers (issue numbers, stop numbers, scratch paths) in clickrank/, docs/
  and README.md, per file, from the patterns in :data:`MARKERS`: history belongs in
  CHANGELOG.md, and ``tests/test_text.py`` fails on any of them.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "clickrank"
OUTER = ("experiment", "report", "cli", "plots", "online")
#: The shared private core: every package may import its private modules and names
#: (``_version`` stays at the top level, where packaging reads it).
SHARED_CORE = ("_core", "_version")
LONG = 80
#: History markers, each a pattern matched case-insensitively against every line of the
#: scanned text: "issue 34", "issues 21 and 34", "issue-18"; "stop 47", "stops 40-50" (but
#: not "stop after 20 rounds" or "stop 20 rounds early": a number of rounds, trees,
#: iterations or sessions is a setting); "#34" (a number after "#" at a word start, as
#: GitHub refers to an issue); scratch paths "/work/..." and "notes/s40".
MARKERS = {
    "issue": re.compile(r"\bissues?[ -]#?\d+", re.IGNORECASE),
    "stop": re.compile(
        r"\bstops? \d+(?:\s*[-–]\s*\d+)?\b(?!\s*(?:rounds?|trees?|iterations?|sessions?|times?))",
        re.IGNORECASE,
    ),
    "ref": re.compile(r"(?<![\w&#/])#\d+\b"),
    "path": re.compile(r"/work/[\w.]|\bnotes/s\d+", re.IGNORECASE),
}
#: The text scanned for markers: the package, the documentation and the README.
TEXT = ("clickrank/**/*.py", "docs/**/*.md", "docs/**/*.py", "README.md")


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


def largest_classes(path: Path, name: str) -> list[tuple[str, int]]:
    """Every class of a module with the lines of its body (docstring included)."""
    return [
        (f"{name}.{node.name}", node.end_lineno - node.body[0].lineno + 1)
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
    ]


def _top(module: str) -> str:
    """The top-level package or module of clickrank a module belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _is_private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def private_imports(path: Path, name: str) -> list[str]:
    """The imports of ``name`` that reach a private module or name of another top-level
    package (the rule is in the module docstring), as ``"importer -> imported"``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        reached: list[str] = []
        if isinstance(node, ast.Import):
            reached = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            reached = [f"{base}.{a.name}" for a in node.names]
        for target in reached:
            parts = target.split(".")
            if parts[0] != "clickrank" or len(parts) < 2:
                continue
            owner = parts[1]
            if owner == _top(name) or owner in SHARED_CORE:
                continue  # the package's own privates, or the shared core
            private = [i for i, p in enumerate(parts) if i >= 2 and _is_private(p)]
            if private:  # named up to its first private part: one edge per private module
                found.append(f"{name} -> {'.'.join(parts[: private[0] + 1])}")
    return sorted(set(found))


def train_options() -> int:
    """The options ``clickrank train --help`` lists: the non-hidden click options."""
    import click

    sys.path.insert(0, str(ROOT))
    from clickrank.cli import cli

    train = cli.commands["train"]
    return sum(isinstance(p, click.Option) and not p.hidden for p in train.params)


def words(path: Path) -> int:
    """Words of a text file, split at white space (what ``wc -w`` counts)."""
    return len(path.read_text(encoding="utf-8").split())


def doc_pages() -> dict[str, int]:
    """Words of every documentation page, largest first."""
    pages = {str(p.relative_to(ROOT)): words(p) for p in sorted((ROOT / "docs").rglob("*.md"))}
    return dict(sorted(pages.items(), key=lambda kv: -kv[1]))


def text_files() -> list[Path]:
    """The files :func:`history_markers` scans (:data:`TEXT`)."""
    return sorted({p for pattern in TEXT for p in ROOT.glob(pattern) if p.is_file()})


def markers_in(text: str) -> list[tuple[int, str]]:
    """(line number, matched text) of every history marker in a text."""
    return [
        (i, m.group(0))
        for i, line in enumerate(text.splitlines(), 1)
        for pattern in MARKERS.values()
        for m in pattern.finditer(line)
    ]


def history_markers(files: list[Path] | None = None) -> dict[str, list[tuple[int, str]]]:
    """History markers per file (path relative to the checkout), files without none left out."""
    out = {}
    for p in text_files() if files is None else files:
        found = markers_in(p.read_text(encoding="utf-8"))
        if found:
            out[str(p.relative_to(ROOT))] = found
    return out


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
    classes = sorted(
        (c for n, p in names.items() for c in largest_classes(p, n)), key=lambda c: -c[1]
    )
    markers = history_markers()
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
        "largest_class": list(classes[0]) if classes else None,
        "private_imports": [i for n, p in names.items() for i in private_imports(p, n)],
        "train_options": train_options(),
        "readme_words": words(ROOT / "README.md"),
        "largest_doc_pages": list(doc_pages().items())[:5],
        "history_markers": sum(len(v) for v in markers.values()),
        "history_markers_per_file": {f: len(v) for f, v in markers.items()},
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
    if figures["largest_class"]:
        cls, n = figures["largest_class"]
        print(f"largest class: {cls} ({n} lines)")
    print(f"cross-package private imports: {len(figures['private_imports'])}")
    for edge in figures["private_imports"]:
        print(f"  {edge}")
    print(f"train --help options: {figures['train_options']}")
    print(f"README words: {figures['readme_words']}")
    pages = figures["largest_doc_pages"]
    print("largest docs pages (words): " + ", ".join(f"{p} {n}" for p, n in pages))
    print(f"history markers: {figures['history_markers']}")
    for f, n in figures["history_markers_per_file"].items():
        print(f"  {f} ({n})")


if __name__ == "__main__":
    main()
