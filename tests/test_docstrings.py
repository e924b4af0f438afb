"""Docstrings hold what their authors typed: no control characters from ``\\t``, ``\\b``, ``\\r``.

A backslash in a non-raw docstring is an escape: ``:math:`\\theta``` written in
a plain string becomes a TAB and ``heta`` in the API docs. Docstrings with
backslashes are raw (``r\"\"\"``), except the few listed below, whose backslashes
are deliberate.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: (file, line) of non-raw docstrings whose backslashes are deliberate: click's ``\b``
#: (do not rewrap the next paragraph) and line continuations inside a doctest.
DELIBERATE = {
    ("clickrank/cli/run.py", "\b"),
    ("clickrank/cli/simulate.py", "\b"),
    ("clickrank/clickmodels/_factory.py", "continuation"),
    ("clickrank/policies/production.py", "continuation"),
}


def _docstrings():
    for path in sorted((ROOT / "clickrank").rglob("*.py")):
        src = path.read_text()
        lines = src.splitlines()
        for node in ast.walk(ast.parse(src)):
            body = getattr(node, "body", None)
            if not (isinstance(body, list) and body and isinstance(body[0], ast.Expr)):
                continue
            const = body[0].value
            if isinstance(const, ast.Constant) and isinstance(const.value, str):
                raw = lines[const.lineno - 1][const.col_offset] in "rR"
                yield path.relative_to(ROOT).as_posix(), const, raw, src


def test_no_docstring_holds_a_control_character():
    found = []
    for name, const, _, _ in _docstrings():
        bad = sorted({c for c in const.value if c in "\t\r\f\v\a" or (c == "\b" and
                      (name, "\b") not in DELIBERATE)})  # fmt: skip
        if bad:
            found.append(f"{name}:{const.lineno} {bad}")
    assert found == []


def test_docstrings_with_backslashes_are_raw():
    found = []
    for name, const, raw, src in _docstrings():
        if raw or "\\" not in ast.get_source_segment(src, const):
            continue
        if not any(f == name for f, _ in DELIBERATE):
            found.append(f"{name}:{const.lineno}")
    assert found == []


def test_the_random_module_docstring_renders_its_latex():
    import clickrank._core._random as r

    assert r"\left\lfloor" in r.__doc__ and r"\text{seed}" in r.__doc__ and "\t" not in r.__doc__
