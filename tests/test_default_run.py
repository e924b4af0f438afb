"""The default run is the product's reference: its summary.json must not drift.

``tests/data/default_run_summary.json`` is the summary of ``clickrank run`` with the
default configuration, recorded before the outer-ring redesign (issue 14) with the
library versions it lists. A refactor must leave every number, note and path in it
unchanged; only the timings (which are wall-clock) are left out of the comparison.
Floats are compared to a relative 1e-12 (:func:`assert_same`): numpy's sums take a
different order on a CPU with other vector widths (SIMD dispatch), which moves a
bootstrap interval endpoint in its last bit; every other value (ints, strings, keys,
lengths, None, booleans) must be identical. Regenerate the file only for a change that
is meant to move the numbers, and say so.
"""

from __future__ import annotations

import json
import math
from importlib.metadata import version
from pathlib import Path

import pytest

from clickrank.experiment import run_experiment

#: The run follows the machine's load, as a user's does (its numbers do not depend on the
#: threads; tests/conftest.py).
pytestmark = pytest.mark.usefixtures("follow_load")

GOLDEN = Path(__file__).parent / "data" / "default_run_summary.json"

#: Relative tolerance of a float: a few units in the last place of a double, no more.
REL = 1e-12


def assert_same(got, want, where: str = "summary.json") -> None:
    """``got == want``, except that floats may differ by ``REL`` (relative).

    The float tolerance covers summation order only (another CPU's SIMD width); types,
    keys, lengths and every non-float value are compared exactly, and NaN equals NaN.
    """
    if isinstance(want, float) and isinstance(got, float):
        if math.isnan(want) or math.isnan(got):
            assert math.isnan(want) and math.isnan(got), f"{where}: {got!r} != {want!r}"
        else:
            assert math.isclose(got, want, rel_tol=REL, abs_tol=0.0), (
                f"{where}: {got!r} != {want!r} (beyond a relative {REL})"
            )
        return
    assert type(got) is type(want), f"{where}: {type(got).__name__} != {type(want).__name__}"
    if isinstance(want, dict):
        assert got.keys() == want.keys(), f"{where}: keys {sorted(got)} != {sorted(want)}"
        for key in want:
            assert_same(got[key], want[key], f"{where}[{key!r}]")
    elif isinstance(want, list):
        assert len(got) == len(want), f"{where}: length {len(got)} != {len(want)}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_same(g, w, f"{where}[{i}]")
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


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
    assert_same(got, want)


def test_assert_same_forgives_the_last_bit_of_a_float_and_nothing_else():
    # the endpoint of issue 35: recorded on one CPU, summed in another order on another
    assert_same({"ci_high": [0.7784676298728281]}, {"ci_high": [0.778467629872828]})
    assert_same(float("nan"), float("nan"))
    for got, want in [
        (0.7785, 0.7784676298728281),
        (1, 1.0),
        ("0.5", "0.50"),
        ([1.0], [1.0, 2.0]),
        ({"a": 1.0}, {"b": 1.0}),
        (None, 0.0),
        (True, 1),
        (float("nan"), 1.0),
    ]:
        with pytest.raises(AssertionError):
            assert_same(got, want)
