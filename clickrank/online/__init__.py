r"""Simulated online experiments: interleaving, A/B tests, power curves and fidelity.

Modules: ``ab`` (:func:`ab_experiment`), ``power`` (:func:`power_analysis`),
``fidelity`` (:func:`fidelity_study`, :func:`expected_clicks`); the simulated
traffic they share (queries and clicks per impression, through
:func:`clickrank.simulation.sample_clicks`) is in ``traffic``. The interleaving
experiment (:func:`interleaving_experiment`, re-exported here) is
:mod:`clickrank.interleaving.experiment`.

Impressions are simulated on a labelled test set: each impression samples a
query uniformly, shows a top-``k`` list (interleaved, or one ranker's list in
an A/B test) and draws clicks from a click model given the *true* labels of
the shown documents. Every random draw is counter-based
(:mod:`clickrank._core._random`): impression ``i`` uses streams keyed by
``(seed, i)`` only, so results do not depend on ``chunk_size``.

Statistics
----------
Interleaving (Chapelle et al. (2012), §4): per
impression the outcome is a win for A, a loss, or a tie;

.. math::
    \Delta = \frac{\text{wins} + \text{ties}/2}{n} - \frac12 ,

with a normal confidence interval from the per-impression score
(1, 1/2, 0) and a **two-sided exact binomial sign test on the non-tied
impressions** (H0: P(A wins | not tie) = 1/2). A/B: each impression goes to
A or B with probability 1/2; clicks per impression use Welch's t-test, CTR@1
and abandonment (no click) a pooled two-proportion z-test.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ..simulation import STREAM_USER
from .ab import AB_METRICS, ABResult, ab_experiment
from .traffic import (  # noqa: F401  (private names: tests)
    STREAM_ARM,
    STREAM_CLICK_B,
    STREAM_INTERLEAVE,
    expected_clicks,
    setup_traffic,
    sign_test,
)

__all__ = [
    "AB_METRICS",
    "STREAM_USER",
    "ABResult",
    "FidelityResult",
    "InterleavingResult",
    "PowerCurve",
    "ab_experiment",
    "expected_clicks",
    "fidelity_study",
    "interleaving_experiment",
    "power_analysis",
]


# Imported on first use (PEP 562): the interleaving experiment
# (clickrank.interleaving.experiment) uses this package's traffic, so importing it
# here eagerly would make the two import each other.
_LAZY = {
    "FidelityResult": ".fidelity",
    "InterleavingResult": "..interleaving.experiment",
    "PowerCurve": ".power",
    "fidelity_study": ".fidelity",
    "interleaving_experiment": "..interleaving.experiment",
    "power_analysis": ".power",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


if TYPE_CHECKING:
    from ..interleaving.experiment import InterleavingResult, interleaving_experiment  # noqa: F401
    from .fidelity import FidelityResult, fidelity_study  # noqa: F401
    from .power import PowerCurve, power_analysis  # noqa: F401
