r"""Per-document gain targets (listwise LambdaRank): oracle labels, naive clicks and IPS."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from .._validation import InputError, check_choice, check_positive
from ..datasets import RankingData
from ._join import candidate_mask, per_doc, prepare_log, scatter
from ._target import Target
from ._theta import as_theta

__all__ = ["oracle", "naive", "ips"]

def oracle(data: RankingData) -> Target:
    r"""Oracle target: the true graded labels as exponential gains :math:`2^y - 1`.

    The skyline of every debiasing comparison (DESIGN §3, LambdaMART).
    Every document is a candidate.
    """
    if data.y is None:
        raise InputError(f"data {data.name!r} has no labels; the oracle target needs them")
    y = np.asarray(data.y, dtype=np.float64)
    if np.any(y < 0):
        raise InputError("labels must be non-negative for exponential gains 2^y - 1")
    return Target("oracle", gains=np.exp2(y) - 1.0, metadata={"gain": "2^y - 1"})


def naive(
    data: RankingData,
    log: pl.DataFrame | pl.LazyFrame,
    *,
    kind: str = "clicks",
    candidates: str = "shown",
) -> Target:
    r"""Naive click target: click counts (or click-through rates) as gains.

    :math:`G(d) = \sum_{\text{sessions}} c(d)` (``kind="clicks"``) or
    :math:`G(d) = \sum c(d) / \#\text{shown}(d)` (``kind="ctr"``), summed over
    the sessions of the document's query. Biased by position: documents the
    logging ranker put on top collect clicks because they were examined
    (Joachims et al. 2005).

    Parameters
    ----------
    data : RankingData
        The documents; ``(query, doc)`` of the log must be among its rows.
    log : polars DataFrame or LazyFrame
        Click log with at least ``query``, ``doc``, ``click``.
    kind : {"clicks", "ctr"}
    candidates : {"shown", "all"}
        Candidate set: documents shown at least once (default) or all.
    """
    check_choice(kind, ("clicks", "ctr"), name="kind")
    lf, keys = prepare_log(data, log, ("query", "doc", "click"))
    agg = per_doc(
        lf,
        keys,
        [pl.col("click").cast(pl.Float64).sum().alias("clicks"), pl.len().alias("shown")],
        "click log",
    )
    rows = agg["row"].to_numpy()
    clicks = agg["clicks"].to_numpy()
    shown = agg["shown"].to_numpy().astype(np.float64)
    value = clicks if kind == "clicks" else clicks / shown
    return Target(
        "naive",
        gains=scatter(data.n_docs, rows, value),
        candidates=candidate_mask(data.n_docs, rows, candidates),
        metadata={"kind": kind, "impressions": int(shown.sum()), "clicks": int(clicks.sum())},
    )


def ips(
    data: RankingData,
    log: pl.DataFrame | pl.LazyFrame,
    propensities: Any,
    *,
    clip: float | None = None,
    self_normalize: bool = False,
    candidates: str = "shown",
) -> Target:
    r"""Inverse-propensity-scored click gains (Joachims, Swaminathan, Schnabel 2017, Eq. 5).

    .. math::
        G(d) = \sum_{\text{sessions } s} \frac{c_s(d)}{\max(\theta_{p_s(d)}, \tau)}

    where :math:`c_s(d)` is the click on ``d`` in session ``s``,
    :math:`p_s(d)` its position and :math:`\tau` = ``clip``. Summed over a
    query's sessions, the IPS estimate of a ranking's DCG-like utility is a
    listwise metric with these per-document gains, so IPS-LambdaMART is
    LambdaMART with them (linear gain). Under the position-based model the
    expectation of :math:`G(d)` is :math:`\gamma(d)` times the number of
    sessions that showed ``d``: unbiased over the documents with
    :math:`\theta > 0`, hence the default candidate set ``"shown"``.

    Parameters
    ----------
    data : RankingData
    log : polars DataFrame or LazyFrame
        Click log with ``query``, ``doc``, ``position`` (1-based), ``click``.
    propensities : array-like or object with ``.theta``
        ``theta[p - 1]`` for positions ``1..K``; every position in the log
        must be covered and every value must be > 0.
    clip : float, optional
        Propensity clipping :math:`\tau` (Strehl et al. 2010; Joachims 2017
        §6): weights are at most :math:`1/\tau`. Trades variance for bias.
    self_normalize : bool
        Divide each query's gains by their sum (the query's total
        inverse-propensity click weight), the self-normalized estimator
        (Swaminathan & Joachims 2015). With LambdaRank's IDCG normalization
        this only changes the per-query scale seen by ``normalize``; it
        matters for RankNet-style weighting.
    candidates : {"shown", "all"}
        Candidate set (see module docs); ``"all"`` treats never-shown
        documents as gain 0, which re-learns the logging ranker's cut-off.
    """
    theta = as_theta(propensities)
    if clip is not None:
        clip = float(check_positive(clip, name="clip"))
        if clip > 1:
            raise InputError(f"clip is a minimum propensity in (0, 1], got {clip}")
        theta = np.maximum(theta, clip)
    lf, keys = prepare_log(data, log, ("query", "doc", "position", "click"), len(theta))
    # integer counts per (query, doc, position) in polars, then the 1/theta sums in a
    # fixed (row, position) order: the gains are the same bytes whatever polars' threading
    agg = per_doc(
        lf,
        keys,
        [pl.col("click").cast(pl.Int64).sum().alias("clicks"), pl.len().alias("shown")],
        "click log",
        by=("position",),
    ).sort("row", "position")
    rows = np.unique(agg["row"].to_numpy())
    pos = agg["position"].to_numpy().astype(np.int64)
    gains = np.bincount(
        agg["row"].to_numpy(),
        weights=agg["clicks"].to_numpy() / theta[pos - 1],
        minlength=data.n_docs,
    )
    if self_normalize:
        q = data.query_index
        total = np.bincount(q, weights=gains, minlength=data.n_queries)
        gains = np.where(total[q] > 0, gains / np.where(total[q] > 0, total[q], 1.0), 0.0)
    return Target(
        "ips",
        gains=gains,
        candidates=candidate_mask(data.n_docs, rows, candidates),
        metadata={
            "impressions": int(agg["shown"].sum()),
            "clicks": int(agg["clicks"].sum()),
            "positions": len(theta),
            "clip": clip,
            "self_normalize": bool(self_normalize),
            "min_theta": float(theta.min()),
        },
    )
