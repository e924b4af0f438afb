"""The default run is the product's reference: its summary.json must not drift.

``tests/data/default_run_summary.json`` is the summary of ``clickrank run`` with the
default configuration, recorded before the outer-ring redesign (issue 14) with the
library versions it lists. A refactor must leave every number, note and path in it
unchanged; only the timings (which are wall-clock) are left out of the comparison.
Regenerate the file only for a change that is meant to move the numbers, and say so.
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

import pytest

from clickrank.experiment import run_experiment

GOLDEN = Path(__file__).parent / "data" / "default_run_summary.json"


def _comparable(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k != "timings"}


@pytest.mark.slow  # the whole default run: about a minute of CPU
def test_the_default_run_gives_the_recorded_summary(tmp_path):
    golden = json.loads(GOLDEN.read_text())
    # the numbers are LightGBM's and numpy's: another release may move them legitimately
    for lib in ("lightgbm", "numpy", "polars", "scipy", "numba"):
        if version(lib) != golden["versions"][lib]:
            pytest.skip(
                f"{GOLDEN.name} was recorded with {lib} {golden['versions'][lib]}, "
                f"this environment has {version(lib)}"
            )
    out = tmp_path / "default"
    run_experiment(None, out, progress=False)
    summary = json.loads((out / "summary.json").read_text())
    got, want = _comparable(summary), _comparable(golden)
    assert got.keys() == want.keys()
    for key in want:
        assert got[key] == want[key], f"summary.json[{key!r}] differs from the recorded run"
