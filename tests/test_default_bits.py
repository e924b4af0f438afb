"""The default learner gives what it gave: its output against a recording, to the bit.

``benchmarks/records/default_bits.npz`` holds the test predictions and selection records
of :class:`clickrank.ClickRanker` fits (``benchmarks/default_bits.py`` makes and checks
them all); here two of its cells are fitted again: a small MQ2008 log where the safety
check fails and every averaged member is retrained with the CRM fallback, and the
large-log path (member processes, the average's weights on a sample of queries) on a
small synthetic set. A model folder saved by an earlier version must load and predict as
it did (``tests/data/saved_clickranker_test_pred.npy``: its predictions on MQ2008 Fold1's
test queries when it was saved).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
RECORDING = ROOT / "benchmarks" / "records" / "default_bits.npz"


def _bits():
    spec = importlib.util.spec_from_file_location("_default_bits", ROOT / "benchmarks" /
                                                  "default_bits.py")  # fmt: skip
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("_default_bits", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "cell", ["mq2008-fold1/2000-sessions/seed0/average", "synthetic/large-path"]
)
def test_the_default_learner_fits_what_it_fitted(cell, request):
    if cell.startswith("mq2008"):
        request.getfixturevalue("mq2008")  # skips, saying why, where MQ2008 is absent
    bits = _bits()
    assert bits.compare(bits.cells([cell]), RECORDING) == []


def test_a_model_folder_saved_before_loads_and_predicts_as_it_did(mq2008):
    from clickrank.datasets import load_letor
    from clickrank.lambdamart import load_model

    model = load_model(ROOT / "tests" / "data" / "saved_clickranker")
    test = load_letor(mq2008 / "test.txt")
    saved = np.load(ROOT / "tests" / "data" / "saved_clickranker_test_pred.npy")
    assert np.array_equal(np.asarray(model.predict(test.X), dtype=np.float64), saved)
