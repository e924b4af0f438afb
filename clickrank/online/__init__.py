r"""Simulated online experiments: interleaving, A/B tests, power curves and fidelity.

Modules: ``interleave`` (:func:`interleaving_experiment`), ``ab``
(:func:`ab_experiment`), ``power`` (:func:`power_analysis`), ``fidelity``
(:func:`fidelity_study`, :func:`expected_clicks`); the simulated traffic they
share (queries and clicks per impression, through
:func:`clickrank.simulation.sample_clicks`) is in ``_traffic``.

Impressions are simulated on a labelled test set: each impression samples a
query uniformly, shows a top-``k`` list (interleaved, or one ranker's list in
an A/B test) and draws clicks from a click model given the *true* labels of
the shown documents. Every random draw is counter-based
(:mod:`clickrank._random`): impression ``i`` uses streams keyed by
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

from ..simulation import STREAM_USER
from ._traffic import (  # noqa: F401  (private names: tests)
    STREAM_ARM,
    STREAM_CLICK_B,
    STREAM_INTERLEAVE,
    _setup,
    _sign_test,
    expected_clicks,
)
from .ab import AB_METRICS, ABResult, ab_experiment
from .fidelity import FidelityResult, fidelity_study
from .interleave import InterleavingResult, interleaving_experiment
from .power import PowerCurve, power_analysis

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
