"""docs/benchmarks.md shows the performance record as it is committed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import benchmarks_page  # noqa: E402


def test_the_page_matches_the_record():
    page = benchmarks_page.PAGE.read_text(encoding="utf-8")
    record = json.loads(benchmarks_page.RECORD.read_text(encoding="utf-8"))
    assert benchmarks_page.render(page, record) == page, (
        "docs/benchmarks.md is stale: run python benchmarks/benchmarks_page.py"
    )


def test_every_figure_is_on_the_page():
    page = benchmarks_page.PAGE.read_text(encoding="utf-8")
    record = json.loads(benchmarks_page.RECORD.read_text(encoding="utf-8"))
    for name in record["figures"]:
        assert f"| `{name}` |" in page, name


def test_a_changed_record_changes_the_page():
    page = benchmarks_page.PAGE.read_text(encoding="utf-8")
    record = json.loads(benchmarks_page.RECORD.read_text(encoding="utf-8"))
    name = next(n for n, f in record["figures"].items() if "ratio" in f)
    record["figures"][name]["ratio"] = float(record["figures"][name]["ratio"]) + 1.0
    assert benchmarks_page.render(page, record) != page


def test_missing_markers_are_an_error():
    with pytest.raises(ValueError, match="markers"):
        benchmarks_page.render("# no markers\n", {"figures": {}})
