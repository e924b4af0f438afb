"""The layout: moved public modules keep working from their old paths, and warn once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

MOVED = [
    ("clickrank.production", "clickrank.policies.production", "production_ranker"),
    ("clickrank.online.interleave", "clickrank.interleaving.experiment", "interleaving_experiment"),
    ("clickrank.distributed", "clickrank.training.distributed", "SparkRanker"),
    ("clickrank.deployment", "clickrank.training.deployment", "risk_weight"),
]


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-W", "always::DeprecationWarning", "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(("old", "new", "name"), MOVED)
def test_old_path_reexports_and_warns_once(old, new, name):
    code = (
        f"import {old} as a\nimport {old} as b\nimport {new} as n\n"
        f"assert a.{name} is n.{name}\n"
        f"from {old} import {name} as f\nassert f is n.{name}\n"
    )
    r = _run(code)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("DeprecationWarning") == 1, r.stderr
    assert new in r.stderr


@pytest.mark.parametrize(
    "module",
    ["clickrank.interleaving.experiment", "clickrank.online", "clickrank.policies.production"],
)
def test_new_path_imports_first_without_warning(module):
    r = _run(f"import {module}")
    assert r.returncode == 0, r.stderr
    assert "DeprecationWarning" not in r.stderr, r.stderr


def test_online_still_exports_the_interleaving_experiment():
    from clickrank.interleaving.experiment import InterleavingResult, interleaving_experiment
    from clickrank.online import InterleavingResult as r
    from clickrank.online import interleaving_experiment as e

    assert (r, e) == (InterleavingResult, interleaving_experiment)
