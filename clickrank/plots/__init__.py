r"""Bias-analysis figures: position bias, its correction, and what it does to learning.

Every function reads results or a click log (DESIGN §2), does at most a light
aggregation (through :mod:`clickrank.clicklog`, :mod:`clickrank.lambdas`, the
result objects' own ``plot`` methods), and returns a
:class:`matplotlib.figure.Figure`. Each takes ``ax=`` (draw into an existing
axes) and ``path=`` (also save a PNG, written atomically: a temporary file in
the same folder, then :func:`os.replace`). Figures are created with
:class:`matplotlib.figure.Figure`, never through pyplot, so nothing is left
open in pyplot's figure manager and no display is needed (Agg).

==========================  =====================================================
function                    shows
==========================  =====================================================
:func:`ctr_by_position`     observed CTR vs IPS-corrected CTR vs true relevance
:func:`propensity_vs_truth` estimated θ_p with CI band (one or several methods), truth
:func:`click_heatmap`       CTR per position × relevance label
:func:`learning_curves`     NDCG@10 vs training sessions per method (log x), CI bands
:func:`severity_curves`     NDCG@10 vs position-bias severity η per method
:func:`power_curves`        power of interleaving / A/B vs impressions
:func:`forces`              RankNet vs LambdaRank forces on one query
:func:`skip_above_bias`     how often skip-above preferences contradict the labels
                            (table: :func:`skip_above_pairs`)
==========================  =====================================================

See ``docs/plots.md`` for how to read each figure.
"""

from __future__ import annotations

from ._common import _METHOD_COLORS, CURVE_COLUMNS  # noqa: F401  (_METHOD_COLORS: simulations/)
from .clicks import click_heatmap, ctr_by_position, skip_above_bias, skip_above_pairs
from .curves import learning_curves, power_curves, severity_curves
from .forces import forces
from .propensities import propensity_vs_truth

__all__ = [
    "ctr_by_position",
    "propensity_vs_truth",
    "click_heatmap",
    "learning_curves",
    "severity_curves",
    "power_curves",
    "forces",
    "skip_above_bias",
    "skip_above_pairs",
    "CURVE_COLUMNS",
]
