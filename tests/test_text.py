"""The text readers see stays short and free of history.

History (issue numbers, stop numbers, scratch paths, incident stories) has one home,
CHANGELOG.md; the README is a front door of at most 1,200 words, and no documentation
page is over 6,000 words (a longer page is split by what its reader wants). The
patterns and the counts are ``benchmarks/code_health.py``'s, so the figures it prints
and this test agree.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import code_health  # noqa: E402

README_WORDS = 1_200
PAGE_WORDS = 6_000


def test_no_history_markers():
    found = code_health.history_markers()
    assert not found, "history belongs in CHANGELOG.md: " + "; ".join(
        f"{f}: " + ", ".join(f"line {i} {text!r}" for i, text in m) for f, m in found.items()
    )


@pytest.mark.parametrize(
    "text",
    [
        "see issue 34",
        "Issue-18 suite",
        "(issues 21 and 34)",
        "(stop 47; before)",
        "stops 40-50",
        "fixed in #34.",
        "/work/notes/s29/big.py",
        "notes/s40/cost.sh",
    ],
)
def test_a_marker_is_found(text):
    assert code_health.markers_in(text), text


@pytest.mark.parametrize(
    "text",
    [
        "early stopping on held-out clicks",
        "members stop after 20 rounds without gain",
        "a member may stop 20 rounds early",
        "stop 5 trees later",
        "users who issue many sessions",
        'color="#1f77b4"',
        "### Variance control",
        "benchmarks/coverage_issue21.json",
    ],
)
def test_an_ordinary_word_is_not_a_marker(text):
    assert not code_health.markers_in(text), text


def test_the_readme_is_short():
    n = code_health.words(ROOT / "README.md")
    assert n <= README_WORDS, f"README.md has {n} words, at most {README_WORDS}"


def test_no_docs_page_is_too_long():
    long = {p: n for p, n in code_health.doc_pages().items() if n > PAGE_WORDS}
    assert not long, f"docs pages over {PAGE_WORDS} words (split them): {long}"
