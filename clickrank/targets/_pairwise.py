r"""Debiased pairwise targets: Unbiased LambdaMART, propensity-ratio pairs, IPS rank pairs.

Three corrections of the pairwise (click vs. non-click) loss for position bias,
each a :class:`Target` for :class:`clickrank.LambdaMART`:

* :func:`unbiased_lambdamart` (Hu et al. (2019)): the click and
  non-click biases :math:`t^+_k, t^-_k` of every position are estimated
  jointly with the ranker, one update per boosting round, from the pairs of
  each logged session (XGBoost's ``lambdarank_unbiased``). The target holds
  the distinct sessions (:class:`SessionLists`); the pair weights change with
  the model, so they are computed by :func:`clickrank.lambdas.session_lambdas`
  during training.
* :func:`propensity_ratio_pairs` (Wang et al.
  (2021)): every (clicked, unclicked shown) pair of a session weighted by
  :math:`\theta_{k'}/\theta_k`, the examination propensity of the unclicked
  result over that of the clicked one.
* :func:`ips_rank_pairs` (Joachims et al. (2017)): the
  propensity-weighted rank of every click, :math:`\sum_{\text{clicks}}
  \mathrm{rank}(d)/\theta_k`, as pairs of the clicked document against every
  other candidate of the query, weighted by its IPS gain.

All log work is polars aggregations joined to the data by ``(query, doc)``
(:mod:`clickrank.engine.join`), and for Unbiased LambdaMART one compiled grouping of the
sessions (:mod:`._session_lists`); there is no Python loop over sessions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from .._core._validation import InputError, check_choice, check_positive
from ..clicklog import context_columns
from ..datasets import RankingData
from ..engine import is_spark, preference_counts, session_patterns
from ..engine.join import candidate_mask, per_doc, prepare_log
from ._gains import ips
from ._preferences import _ADJACENT, _preference_rows, aggregate_pairs
from ._session_lists import distinct_sessions
from ._target import SessionLists, Target
from ._theta import ContextTheta, as_theta, context_theta

__all__ = ["unbiased_lambdamart", "propensity_ratio_pairs", "ips_rank_pairs"]

_SESSION_COLUMNS = ("session", "query", "doc", "position", "click")


def _session_log(
    data: RankingData,
    log: pl.DataFrame | pl.LazyFrame,
    n_theta: int | None,
    contexts: ContextTheta | None = None,
) -> tuple[pl.LazyFrame, pl.DataFrame, np.ndarray, int, int]:
    """``(base, keys, shown rows, impressions, largest position)`` of a checked log.

    ``base`` holds ``session, query, doc, position (Int64), click (Boolean)``
    with the ids cast to the data's; every ``(query, doc)`` must be in ``data``.
    With per-context propensities the positions are their (context, rank) slots
    (:meth:`ContextTheta.slot_positions`).
    """
    by = () if contexts is None else contexts.columns
    lf, keys = prepare_log(data, log, (*_SESSION_COLUMNS, *by), n_theta)
    if contexts is not None and is_spark(lf):
        raise InputError("per-context propensities read a polars log; aggregate the Spark "
                         "log first or weigh by the pooled curve")  # fmt: skip
    shown = per_doc(
        lf, keys, [pl.len().alias("shown"), pl.col("position").max().alias("top")], "click log"
    )
    base = (
        lf
        if is_spark(lf)
        else lf.select(
            "session",
            "query",
            "doc",
            pl.col("position").cast(pl.Int64),
            pl.col("click").cast(pl.Boolean),
            *by,
        )
    )
    if contexts is not None:
        base = contexts.slot_positions(base)
    return (base, keys, shown["row"].to_numpy(), int(shown["shown"].sum()), int(shown["top"].max()))


def _theta(propensities: Any, clip: float | None) -> tuple[np.ndarray, float | None]:
    theta = as_theta(propensities)
    if clip is not None:
        clip = float(check_positive(clip, name="clip"))
        if clip > 1:
            raise InputError(f"clip is a minimum propensity in (0, 1], got {clip}")
        theta = np.maximum(theta, clip)
    return theta, clip


def _context_positions(lf: pl.LazyFrame, columns: tuple[str, ...]) -> tuple[pl.Expr, int, list]:
    """The position of an entry as context block + rank, the block, and the contexts.

    Context :math:`c` (the sorted distinct values of ``columns``) at rank :math:`k` gets
    position :math:`cK + k`, :math:`K` the largest logged rank, so every context's ranks
    have their own biases.
    """
    cols = list(columns)
    known = lf.select(pl.col(c).cast(pl.String) for c in cols).unique().sort(cols).collect()
    if any(known[c].null_count() for c in cols):
        bad = next(c for c in cols if known[c].null_count())
        raise InputError(
            f"context column {bad!r} has null values; give those sessions a value "
            "(e.g. 'unknown') or drop them"
        )
    block = int(lf.select(pl.col("position").max()).collect().item())
    index = pl.struct(pl.col(c).cast(pl.String) for c in cols).rank("dense") - 1
    expr = (pl.col("position").cast(pl.Int64) + block * index.cast(pl.Int64)).alias("position")
    return expr, block, known.rows()


def _distinct_sessions(
    data: RankingData, log: Any, context: tuple[str, ...] = ()
) -> tuple[dict[str, np.ndarray], np.ndarray, int, int, tuple[int, list] | None]:
    """Distinct sessions, shown rows, impressions, positions: the reading step (Spark or local).

    With ``context`` columns the positions are context blocks + ranks
    (:func:`_context_positions`), and the last item is ``(block, contexts)``."""
    if is_spark(log) and context:
        raise InputError(
            "per-context position biases read a polars log (a DataFrame, LazyFrame or "
            "parquet file); aggregate the Spark log first or train without context"
        )
    blocks = None
    if is_spark(log):
        base, keys, shown, impressions, top = _session_log(data, log, None)
        lists = session_patterns(base, keys)
        sizes = lists["row"].list.len().to_numpy()
        arrays = {
            "rows": lists["row"].explode().to_numpy().astype(np.int64),
            "sptr": np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
            "positions": lists["position"].explode().to_numpy().astype(np.int32),
            "clicks": lists["click"].explode().to_numpy().astype(bool),
            "counts": lists["count"].to_numpy().astype(np.float64),
        }
    else:  # one join in log order, the grouping compiled (._session_lists)
        lf, keys = prepare_log(data, log, (*_SESSION_COLUMNS, *context))
        position = pl.col("position").cast(pl.Int64)
        if context:
            position, block, values = _context_positions(lf, context)
            blocks = (block, values)
        base = lf.select("session", "query", "doc", position, pl.col("click").cast(pl.Boolean))
        arrays, shown, top = distinct_sessions(base, keys)
        impressions = shown.size
    return arrays, shown, impressions, top, blocks


def _session_target(
    data: RankingData,
    sessions: SessionLists,
    shown: np.ndarray,
    impressions: int,
    top: int,
    bias_norm: float,
    cost: str,
) -> Target:
    """The target and its counts: the result step of :func:`unbiased_lambdamart`."""
    sizes = np.diff(sessions.sptr)
    owner = np.repeat(np.arange(sessions.n_sessions), sizes)
    n_click = np.bincount(owner, weights=sessions.clicks, minlength=sessions.n_sessions)
    n_pairs = float(np.sum(sessions.counts * n_click * (sizes - n_click)))
    return Target(
        "unbiased-lambdamart",
        sessions=sessions,
        candidates=candidate_mask(data.n_docs, shown, "shown"),
        metadata={
            "impressions": impressions,
            "sessions_with_pairs": int(round(sessions.n_logged)),
            "distinct_sessions": sessions.n_sessions,
            "pairs": int(round(n_pairs)),
            "positions": top,
            "bias_norm": bias_norm,
            "cost": cost,
            "reference": "Hu, Wang, Peng & Li, WWW 2019",
        },
    )


def unbiased_lambdamart(
    data: RankingData,
    log: pl.DataFrame | pl.LazyFrame,
    *,
    bias_norm: float = 1.0,
    positions: int | None = None,
    context: Any = None,
    _cost: str = "ranknet",
) -> Target:
    r"""Unbiased LambdaMART (Hu et al. (2019)): biases learned with the ranker.

    Under the paper's model a click on :math:`d` at position :math:`k` and a
    non-click at :math:`k'` are biased by the position ratios
    :math:`t^+_k = P(c=1 \mid k) / P(c=1 \mid \text{relevant}, k)` and
    :math:`t^-_{k'} = P(c=0 \mid k') / P(c=0 \mid \text{irrelevant}, k')`, and the
    unbiased pairwise loss divides each (clicked :math:`i`, unclicked
    :math:`j`) pair of a session by :math:`t^+_{k_i} t^-_{k_j}` (Eq. 22).
    Minimising it over the biases with an :math:`L_p` penalty gives
    (Eq. 30-31)

    .. math::
        t^+_k = \Bigl(\frac{\sum_{\text{pairs with } k_i = k} C_{ij} / t^-_{k_j}}
                           {\sum_{\text{pairs with } k_i = 1} C_{ij} / t^-_{k_j}}
                \Bigr)^{\frac{1}{1 + p}},
        \qquad
        t^-_{k} = \Bigl(\frac{\sum_{k_j = k} C_{ij} / t^+_{k_i}}
                            {\sum_{k_j = 1} C_{ij} / t^+_{k_i}}\Bigr)^{\frac{1}{1 + p}}

    with :math:`C_{ij}` the pair's LambdaRank-weighted RankNet cost. Training
    alternates, as XGBoost's ``lambdarank_unbiased`` does: round :math:`t`'s
    gradients use the biases of round :math:`t - 1` (ones at first), then the
    biases are recomputed from round :math:`t`'s costs
    (:func:`clickrank.lambdas.session_lambdas`,
    :func:`clickrank.lambdas.position_bias_update`). The fitted biases are
    ``LambdaMART.position_bias_``.

    The log is reduced to its *distinct* sessions (same query, same documents
    in the same order, same clicks) with a count each; only sessions with a
    click and a non-click have pairs. Every session is its own list, in the
    logged order, as in XGBoost (one query group per session).

    Parameters
    ----------
    data : RankingData
    log : polars DataFrame or LazyFrame
        Click log with ``session``, ``query``, ``doc``, ``position``
        (1-based) and ``click``.
    bias_norm : float
        :math:`p` of the :math:`L_p` regularisation (XGBoost's
        ``lambdarank_bias_norm``, default 1: square roots of the ratios).
    positions : int, optional
        Number of positions whose biases are estimated (default: the largest
        logged position). Pairs with a result below it get unscaled gradients
        and do not update the biases.
    context : str or list of str, optional
        Context columns of the log (``"device"``): each context (combination of their
        values) gets its own biases, relative to its own first position, since
        examination depends on the context (``LambdaMART.position_bias_`` then holds
        the contexts' blocks of ``positions`` biases, in the sorted order of the
        values).

    Returns
    -------
    Target
        ``name="unbiased-lambdamart"``, ``sessions`` set, candidates = the
        shown documents.
    """
    bias_norm = float(bias_norm)
    if not np.isfinite(bias_norm) or bias_norm < 0:
        raise InputError(f"bias_norm must be finite and >= 0, got {bias_norm!r}")
    check_choice(_cost, ("ranknet", "xgboost"), name="_cost")
    cols: tuple[str, ...] = () if context is None else context_columns(context)
    if cols and positions is not None:
        raise InputError("positions and context: the context blocks are the logged ranks")
    arrays, shown, impressions, top, blocks = _distinct_sessions(data, log, cols)
    block = None
    if blocks is not None:  # blocks of the largest logged rank, one per context
        block, values = blocks
        top = block * len(values)
    if positions is not None:
        top = int(check_positive(positions, name="positions", integer=True))
    sessions = SessionLists(
        **arrays, n_positions=top, bias_norm=bias_norm, cost=_cost, context_block=block
    )
    target = _session_target(data, sessions, shown, impressions, top, bias_norm, _cost)
    if cols:
        target.metadata.update(context=list(cols), contexts=[list(v) for v in values])
    return target


def propensity_ratio_pairs(
    data: RankingData,
    log: pl.DataFrame | pl.LazyFrame,
    propensities: Any,
    *,
    clip: float | None = None,
    candidates: str = "shown",
) -> Target:
    r"""Propensity-ratio scoring pairs (Wang et al. (2021)).

    Every clicked result :math:`i` at position :math:`k` and unclicked result
    :math:`j` at position :math:`k'` of a session give the preference
    :math:`i \succ j` with weight :math:`\theta_{k'} / \theta_k`; the weights
    are summed per (query, :math:`i`, :math:`j`):

    .. math::
        c_{ij} = \sum_{\text{sessions } s} c_s(i) \bigl(1 - c_s(j)\bigr)
                 \frac{\max(\theta_{k_s(j)}, \tau)}{\max(\theta_{k_s(i)}, \tau)}

    A non-click is only evidence of irrelevance if the result was examined;
    weighting the pair by the non-click's propensity (and the click by its
    inverse, as in IPS) discounts non-clicks the user probably never saw,
    instead of treating every non-click as irrelevant (the paper's
    "non-clicks mean irrelevant?").

    Parameters
    ----------
    data : RankingData
    log : polars DataFrame or LazyFrame
        Click log with ``session``, ``query``, ``doc``, ``position``, ``click``.
    propensities : array-like or object with ``.theta``
        ``theta[p - 1]`` for positions ``1..K`` covering the log; an estimate per
        context weighs each preference by its session's context's curve.
    clip : float, optional
        Minimum propensity :math:`\tau` on both sides of the ratio.
    candidates : {"shown", "all"}
        Documents that take part in the ranking (for ΔNDCG weighting).

    Returns
    -------
    Target
        Pairwise target ``"prs-pairs"``.
    """
    theta, clip = _theta(propensities, clip)
    check_choice(candidates, ("shown", "all"), name="candidates")
    contexts = context_theta(propensities)
    base, keys, shown, impressions, _ = _session_log(data, log, len(theta), contexts)
    if contexts is not None:  # θ of each (context, rank) slot
        theta = contexts.table.ravel() if clip is None else np.maximum(contexts.table, clip).ravel()
    prefs = (
        preference_counts(base, ("all",), _ADJACENT)
        if is_spark(base)
        else _preference_rows(base, ("all",))
    )

    def weight(count: np.ndarray, p_win: np.ndarray, p_lose: np.ndarray) -> np.ndarray:
        return count * theta[p_lose - 1] / theta[p_win - 1]

    pairs, weights, counts = aggregate_pairs(prefs, keys, weight)
    return Target(
        "prs-pairs",
        pairs=pairs,
        pair_weights=weights,
        candidates=candidate_mask(data.n_docs, shown, candidates),
        metadata={
            "impressions": impressions,
            **counts,
            "clip": clip,
            "reference": "Wang, Qin, Wang & Wang, WSDM 2021",
        },
    )


def ips_rank_pairs(
    data: RankingData,
    log: pl.DataFrame | pl.LazyFrame,
    propensities: Any,
    *,
    candidates: str = "shown",
    clip: float | None = None,
) -> Target:
    r"""Propensity-weighted rank loss (Joachims et al. (2017)) as pairs.

    The IPS estimate of the average rank of the relevant results,
    :math:`\sum_s \sum_{d: c_s(d) = 1} \mathrm{rank}(d) / \theta_{k_s(d)}`
    (Eq. 4-5, the objective of Propensity SVM-Rank), with
    :math:`\mathrm{rank}(d) = 1 + \sum_{d' \ne d} [s_{d'} > s_d]` bounded by a
    pairwise surrogate, is a pairwise loss in which every clicked document
    :math:`d` is preferred to every other candidate :math:`d'` of its query
    with weight :math:`1/\theta` per click. Summed over sessions:

    .. math::
        c_{dd'} = G(d) = \sum_{\text{sessions } s} \frac{c_s(d)}{\max(\theta_{k_s(d)}, \tau)}
        \quad \text{for every candidate } d' \ne d,

    the IPS gain of :func:`~clickrank.targets.ips`. Clicked documents are also
    paired with each other (both directions, each with its own gain). Here
    LambdaMART fits the pairs with the RankNet / LambdaRank surrogate instead
    of the SVM's hinge.

    Parameters
    ----------
    data : RankingData
    log : polars DataFrame or LazyFrame
        Click log with ``query``, ``doc``, ``position``, ``click``.
    propensities : array-like or object with ``.theta``
    candidates : {"shown", "all"}
        The documents :math:`d'` a click is compared with, and that take part
        in the ranking: shown at least once (default; IPS is unbiased only
        over documents with :math:`\theta > 0`) or all documents of the query.
    clip : float, optional
        Minimum propensity :math:`\tau`.

    Returns
    -------
    Target
        Pairwise target ``"ips-pairs"``.
    """
    gains = ips(data, log, propensities, clip=clip, candidates=candidates)
    cand = np.ones(data.n_docs, bool) if gains.candidates is None else gains.candidates
    rows = pl.DataFrame(
        {"q": data.query_index, "row": np.arange(data.n_docs, dtype=np.int64), "gain": gains.gains}
    ).filter(pl.Series(cand))
    clicked = rows.filter(pl.col("gain") > 0)
    pairs = (
        clicked.join(rows.select("q", pl.col("row").alias("other")), on="q", how="inner")
        .filter(pl.col("row") != pl.col("other"))
        .sort("row", "other")
    )
    return Target(
        "ips-pairs",
        pairs=np.column_stack([pairs["row"].to_numpy(), pairs["other"].to_numpy()])
        .astype(np.int64)
        .reshape(-1, 2),
        pair_weights=pairs["gain"].to_numpy().astype(np.float64),
        candidates=gains.candidates,
        metadata={
            **gains.metadata,
            "clicked_documents": clicked.height,
            "pairs": pairs.height,
            "candidates": candidates,
            "reference": "Joachims, Swaminathan & Schnabel, WSDM 2017",
        },
    )
