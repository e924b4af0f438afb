r"""Training targets for LambdaMART: oracle, naive, IPS and click preferences.

A :class:`Target` turns a click log (DESIGN §2 schema) into what
:class:`clickrank.LambdaMART` optimizes, aligned to the rows of a
:class:`~clickrank.datasets.RankingData`:

* per-document non-negative **gains** (listwise LambdaRank targets), or
* weighted **preference pairs** (pairwise RankNet targets): click
  preferences by the strategies of Joachims et al. (2005, 2007) and FairPairs
  (Radlinski & Joachims 2006), :func:`click_preferences`,

plus a **candidate mask**: the documents that take part in each query's list.
For click-based targets the default candidate set is the documents *shown at
least once* for their query. A never-shown document has no click because it
was never seen, not because it is irrelevant; counting it as gain 0 re-learns
the logging ranker's cut-off (item-selection bias, Ovaisi et al. WWW 2020).

All log work is done by polars aggregations (the log may be a DataFrame or a
LazyFrame) joined to the data by ``(query, doc)``; there is no Python loop
over sessions.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ._validation import DataFormatError, InputError, LogSchemaError, check_choice, check_positive
from .datasets import RankingData

__all__ = [
    "Target",
    "oracle",
    "naive",
    "ips",
    "click_preferences",
    "skip_above",
    "fair_pairs",
    "label_agreement",
    "parse_strategy",
    "STRATEGIES",
    "as_theta",
    "read_theta",
]


@dataclass(frozen=True)
class Target:
    """What LambdaMART fits: gains or preference pairs aligned to a data set's rows.

    Attributes
    ----------
    name : str
        ``"oracle"``, ``"naive"``, ``"ips"``, ``"skip-above"`` or a custom name.
    gains : numpy.ndarray or None
        float64 ``[n_docs]`` non-negative per-document gains (listwise
        targets); None for pairwise targets.
    candidates : numpy.ndarray or None
        bool ``[n_docs]``: documents that take part in their query's list.
        None means every document.
    pairs : numpy.ndarray or None
        int64 ``[n_pairs, 2]`` global row indices ``(preferred, other)`` of one
        query each (pairwise targets).
    pair_weights : numpy.ndarray or None
        float64 ``[n_pairs]`` non-negative weights (aggregated counts).
    metadata : dict
        How the target was built (log size, clipping, ...), for reports.
    """

    name: str
    gains: np.ndarray | None = None
    candidates: np.ndarray | None = None
    pairs: np.ndarray | None = None
    pair_weights: np.ndarray | None = None
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if (self.gains is None) == (self.pairs is None):
            raise InputError("a Target holds either gains or preference pairs (exactly one)")
        if self.gains is not None:
            g = np.ascontiguousarray(self.gains, dtype=np.float64)
            if g.ndim != 1:
                raise InputError(f"gains must be 1-d, got shape {g.shape}")
            if not np.all(np.isfinite(g)) or np.any(g < 0):
                raise InputError("gains must be finite and non-negative")
            object.__setattr__(self, "gains", g)
        if self.pairs is not None:
            p = np.asarray(self.pairs)
            p = p.reshape(0, 2) if p.size == 0 else p
            if p.ndim != 2 or p.shape[1] != 2:
                raise InputError(f"pairs must have shape [n_pairs, 2], got {p.shape}")
            object.__setattr__(self, "pairs", p.astype(np.int64))
            w = (
                np.ones(len(p))
                if self.pair_weights is None
                else np.asarray(self.pair_weights, float)
            )
            if w.shape != (len(p),) or not np.all(np.isfinite(w)) or np.any(w < 0):
                raise InputError("pair_weights must be finite, non-negative, one per pair")
            object.__setattr__(self, "pair_weights", w)
        if self.candidates is not None:
            c = np.asarray(self.candidates)
            if c.dtype != bool or c.ndim != 1:
                raise InputError("candidates must be a 1-d boolean mask")

    @property
    def kind(self) -> str:
        """``"gains"`` (listwise) or ``"pairs"`` (pairwise)."""
        return "gains" if self.gains is not None else "pairs"

    @property
    def n_candidates(self) -> int | None:
        """Number of candidate documents (None if every document is a candidate)."""
        return None if self.candidates is None else int(self.candidates.sum())

    def check_aligned(self, data: RankingData) -> None:
        """Raise :class:`InputError` unless the target fits ``data``'s rows."""
        n = data.n_docs
        if self.gains is not None and self.gains.shape[0] != n:
            raise InputError(
                f"target {self.name!r} has {self.gains.shape[0]} gains, data has {n} rows"
            )
        if self.candidates is not None and self.candidates.shape[0] != n:
            raise InputError(
                f"target {self.name!r} candidate mask has {self.candidates.shape[0]} rows, data {n}"
            )
        if self.pairs is not None and self.pairs.size:
            if self.pairs.min() < 0 or self.pairs.max() >= n:
                raise InputError(
                    f"target {self.name!r} pairs index rows outside the data (0..{n - 1})"
                )
            q = data.query_index
            if np.any(q[self.pairs[:, 0]] != q[self.pairs[:, 1]]):
                raise InputError(f"target {self.name!r} has pairs across queries")

    def summary(self) -> str:
        """A short readable description."""
        lines = [f"Target {self.name!r} ({self.kind})"]
        if self.gains is not None:
            g = self.gains if self.candidates is None else self.gains[self.candidates]
            mean, top = (g.mean(), g.max()) if g.size else (float("nan"), float("nan"))
            lines.append(
                f"  gains: {g.size} docs, {int((g > 0).sum())} with gain > 0, "
                f"mean {mean:.4g}, max {top:.4g}"
            )
        else:
            lines.append(f"  pairs: {len(self.pairs)} (total weight {self.pair_weights.sum():.4g})")
        cand = (
            "all documents" if self.candidates is None else f"{self.n_candidates} documents shown"
        )
        lines.append(f"  candidates: {cand}")
        for k, v in self.metadata.items():
            lines.append(f"  {k}: {v}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        size = (
            f"{self.gains.shape[0]} gains" if self.gains is not None else f"{len(self.pairs)} pairs"
        )
        return f"Target(name={self.name!r}, {size}, candidates={self.n_candidates})"


# -- helpers -------------------------------------------------------------------


def as_theta(propensities: Any) -> np.ndarray:
    """Propensities as float64 ``theta[p - 1]`` for positions ``p = 1..K``.

    Accepts an array-like or any object with a ``.theta`` array (such as
    :class:`clickrank.propensity.Propensities`). Raises :class:`InputError`
    for empty, non-finite, zero or negative values.
    """
    raw = getattr(propensities, "theta", propensities)
    try:
        theta = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(
            f"propensities must be numbers or have a .theta array, got {type(raw).__name__}"
        ) from None
    if theta.ndim != 1 or theta.size == 0:
        raise InputError(
            f"propensities must be a non-empty 1-d array theta[p-1], got shape {theta.shape}"
        )
    nan = np.flatnonzero(~np.isfinite(theta))
    if nan.size:
        raise InputError(
            f"propensity at position {nan[0] + 1} is {float(theta[nan[0]])!r} (not identified); "
            "IPS needs a finite theta at every logged position"
        )
    bad = np.flatnonzero(theta <= 0)
    if bad.size:
        raise InputError(
            f"propensity at position {bad[0] + 1} is {float(theta[bad[0]])!r}; "
            "IPS needs theta > 0 at every position"
        )
    return theta


def read_theta(path: str | os.PathLike) -> np.ndarray:
    """Read propensities from JSON: ``{"theta": [...], ...}`` or a plain list.

    The object form is what :meth:`clickrank.propensity.Propensities.save`
    writes. Errors name the file; values are checked by :func:`as_theta`.
    """
    p = Path(path)
    try:
        obj = json.loads(p.read_text())
    except FileNotFoundError:
        raise DataFormatError("file not found", path=p) from None
    except json.JSONDecodeError as err:
        raise DataFormatError(f"not valid JSON ({err.msg})", path=p, line=err.lineno) from None
    if isinstance(obj, dict):
        obj = obj.get("theta")
    if not isinstance(obj, list) or not all(isinstance(v, (int, float)) or v is None for v in obj):
        raise DataFormatError(
            'expected a JSON list of numbers or an object with a "theta" list', path=p
        )
    try:
        return as_theta([np.nan if v is None else v for v in obj])
    except InputError as err:
        raise DataFormatError(str(err), path=p, column="theta") from None


def _lazy(log: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    if isinstance(log, pl.DataFrame):
        return log.lazy()
    if isinstance(log, pl.LazyFrame):
        return log
    raise InputError(f"log must be a polars DataFrame or LazyFrame, got {type(log).__name__}")


def _check_columns(lf: pl.LazyFrame, needed: tuple[str, ...]) -> dict[str, pl.DataType]:
    schema = lf.collect_schema()
    missing = [c for c in needed if c not in schema]
    if missing:
        raise LogSchemaError(f"click log lacks column(s) {missing}; it has {list(schema.names())}")
    click = schema["click"]
    if click != pl.Boolean and not click.is_integer():
        raise LogSchemaError(f"must be Boolean (or 0/1 integers), got {click}", column="click")
    if "position" in needed and not schema["position"].is_integer():
        raise LogSchemaError(
            f"must hold integers (1-based ranks), got {schema['position']}", column="position"
        )
    return dict(schema)


def _id_dtype(values: np.ndarray) -> pl.DataType:
    return pl.Int64 if values.dtype.kind in "iu" else pl.String


def _keys(data: RankingData) -> pl.DataFrame:
    """(query, doc, row) of every data row, ids as Int64 or String."""
    qid = np.asarray(data.qid)[data.query_index]
    doc = np.asarray(data.doc)
    return pl.DataFrame(
        {
            "query": pl.Series(qid if qid.dtype.kind in "iu" else qid.astype(str)).cast(
                _id_dtype(qid)
            ),
            "doc": pl.Series(doc if doc.dtype.kind in "iu" else doc.astype(str)).cast(
                _id_dtype(doc)
            ),
            "row": np.arange(data.n_docs, dtype=np.int64),
        }
    )


def _cast_ids(lf: pl.LazyFrame, keys: pl.DataFrame, schema: dict[str, pl.DataType]) -> pl.LazyFrame:
    out = []
    for col in ("query", "doc"):
        want = keys.schema[col]
        have = schema[col]
        if want == pl.String:
            out.append(pl.col(col).cast(pl.String))
        elif have.is_integer():
            out.append(pl.col(col).cast(pl.Int64))
        else:
            raise LogSchemaError(
                f"log has {have} ids but the data has integer ids; convert one to match", column=col
            )
    return lf.with_columns(out)


def _attach_rows(agg: pl.DataFrame, keys: pl.DataFrame, what: str) -> np.ndarray:
    """Row index of every (query, doc) of ``agg``; error if any is not in the data."""
    joined = agg.join(keys, on=["query", "doc"], how="left")
    missing = joined.filter(pl.col("row").is_null())
    if missing.height:
        ex = missing.select("query", "doc").head(3).rows()
        raise LogSchemaError(
            f"{missing.height} (query, doc) pair(s) of the {what} are not in the data, e.g. {ex}"
        )
    return joined


def _check_positions(lf: pl.LazyFrame, n_theta: int | None) -> None:
    stats = lf.select(
        pl.col("position").min().alias("lo"), pl.col("position").max().alias("hi")
    ).collect()
    lo, hi = stats.row(0)
    if lo is None:
        raise LogSchemaError("the click log is empty")
    if lo < 1:
        raise LogSchemaError(f"positions are 1-based; found {lo}", column="position")
    if n_theta is not None and hi > n_theta:
        raise InputError(
            f"the log shows results at position {hi} but propensities cover positions 1..{n_theta}"
        )


def _per_doc(
    data: RankingData,
    lf: pl.LazyFrame,
    value_exprs: list[pl.Expr],
    what: str,
    by: tuple[str, ...] = (),
) -> pl.DataFrame:
    """Aggregate the log per (query, doc, *by) and attach the data row of each (query, doc)."""
    keys = _keys(data)
    lf = _cast_ids(lf, keys, lf.collect_schema())
    agg = lf.group_by(["query", "doc", *by]).agg(value_exprs).collect()
    return _attach_rows(agg, keys, what)


def _scatter(n: int, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    out = np.zeros(n)
    out[rows] = values
    return out


def _candidates(n: int, rows: np.ndarray, candidates: str) -> np.ndarray | None:
    check_choice(candidates, ("shown", "all"), name="candidates")
    if candidates == "all":
        return None
    mask = np.zeros(n, dtype=bool)
    mask[rows] = True
    return mask


# -- builders ------------------------------------------------------------------


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
    lf = _lazy(log)
    _check_columns(lf, ("query", "doc", "click"))
    agg = _per_doc(
        data,
        lf,
        [pl.col("click").cast(pl.Float64).sum().alias("clicks"), pl.len().alias("shown")],
        "click log",
    )
    rows = agg["row"].to_numpy()
    clicks = agg["clicks"].to_numpy()
    shown = agg["shown"].to_numpy().astype(np.float64)
    value = clicks if kind == "clicks" else clicks / shown
    return Target(
        "naive",
        gains=_scatter(data.n_docs, rows, value),
        candidates=_candidates(data.n_docs, rows, candidates),
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
    lf = _lazy(log)
    _check_columns(lf, ("query", "doc", "position", "click"))
    _check_positions(lf, len(theta))
    # integer counts per (query, doc, position) in polars, then the 1/theta sums in a
    # fixed (row, position) order: the gains are the same bytes whatever polars' threading
    agg = _per_doc(
        data,
        lf,
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
        candidates=_candidates(data.n_docs, rows, candidates),
        metadata={
            "impressions": int(agg["shown"].sum()),
            "clicks": int(agg["clicks"].sum()),
            "positions": len(theta),
            "clip": clip,
            "self_normalize": bool(self_normalize),
            "min_theta": float(theta.min()),
        },
    )


# -- click preferences -------------------------------------------------------------

#: Preference strategies of :func:`click_preferences` (combine with ``"+"``).
STRATEGIES = ("skip-above", "last-click-skip-above", "skip-previous", "skip-next", "fairpairs")

_ALIASES = {
    "click-skip-above": "skip-above",
    "click-skip-previous": "skip-previous",
    "click-skip-next": "skip-next",
    "no-click-next": "skip-next",
    "click-no-click-next": "skip-next",
}

_ADJACENT = {"skip-previous": -1, "skip-next": 1, "fairpairs": -1}  # p_lose - p_win


def parse_strategy(strategy: str) -> tuple[str, ...]:
    """Canonical rule names of a strategy string such as ``"skip-above+skip-next"``.

    Names are case-insensitive; ``"click-skip-next"`` and ``"no-click-next"``
    mean ``"skip-next"``, ``"click-skip-above"`` means ``"skip-above"``,
    ``"click-skip-previous"`` means ``"skip-previous"``. Repeated rules count once.
    ``"fairpairs"`` cannot be combined: its preferences come from the FairPairs
    sessions only and are unbiased on their own.
    """
    if not isinstance(strategy, str) or not strategy.strip():
        raise InputError(f"strategy must be a non-empty string, got {strategy!r}")
    rules: list[str] = []
    for part in strategy.split("+"):
        name = _ALIASES.get(part.strip().lower(), part.strip().lower())
        if name not in STRATEGIES:
            raise InputError(
                f"unknown preference strategy {part.strip()!r} in {strategy!r}; choose from "
                f"{list(STRATEGIES)} (or aliases {sorted(_ALIASES)}), combined with '+'"
            )
        if name not in rules:
            rules.append(name)
    if "fairpairs" in rules and len(rules) > 1:
        raise InputError(
            "'fairpairs' cannot be combined with other strategies: it reads only the FairPairs "
            "sessions; build the targets separately"
        )
    return tuple(rules)


def _rule_expr(rule: str) -> pl.Expr:
    """Filter on a (clicked ``win``, unclicked ``lose``) pair of one session."""
    p_win, p_lose = pl.col("p_win"), pl.col("p_lose")
    if rule == "skip-above":
        return p_lose < p_win
    if rule == "last-click-skip-above":
        return (p_win == pl.col("last_click")) & (p_lose < p_win)
    if rule == "fairpairs":
        start, last = pl.col("swap_pivot"), pl.col("swap_k")
        return (
            (p_lose == p_win - 1)
            & (p_lose >= start)
            & ((p_lose - start) % 2 == 0)
            & (p_win <= last)
        )
    return p_lose == p_win + _ADJACENT[rule]


def _preference_rows(base: pl.LazyFrame, rules: tuple[str, ...]) -> pl.LazyFrame:
    """One row per preference ``(session, query, win, p_win, lose)`` the rules derive.

    A pair derived by several rules in one session is one preference. Rules
    between neighbours only are equi-joins on the shifted position; the others
    join the clicked and the unclicked results of a session (at most
    ``K^2 / 4`` rows per session).
    """
    extra = ["swap_pivot", "swap_k"] if rules == ("fairpairs",) else []
    clicked = base.filter(pl.col("click")).select(
        "session", "query", pl.col("doc").alias("win"), pl.col("position").alias("p_win"), *extra
    )
    if "last-click-skip-above" in rules:
        clicked = clicked.with_columns(last_click=pl.col("p_win").max().over("session"))
    skipped = base.filter(~pl.col("click")).select(
        "session", "query", pl.col("doc").alias("lose"), pl.col("position").alias("p_lose")
    )
    keep = ["session", "query", "win", "p_win", "lose"]
    if all(r in _ADJACENT for r in rules):
        frames = []
        for rule in rules:  # a loop over at most two rules
            f = clicked.with_columns(p_lose=pl.col("p_win") + _ADJACENT[rule]).join(
                skipped, on=["session", "query", "p_lose"], how="inner"
            )
            frames.append(f.filter(_rule_expr(rule)).select(keep))
        return frames[0] if len(frames) == 1 else pl.concat(frames)
    joined = clicked.join(skipped, on=["session", "query"], how="inner")
    keep_pair = pl.any_horizontal([_rule_expr(r) for r in rules])
    return joined.filter(keep_pair).select(keep)


def click_preferences(
    data: RankingData,
    log: pl.DataFrame | pl.LazyFrame,
    *,
    strategy: str = "skip-above",
    ips_weighted: bool = False,
    propensities: Any = None,
    candidates: str = "shown",
) -> Target:
    r"""Pairwise preferences read from clicks, by the strategies of Joachims et al. (2005, 2007).

    In a session, let a result ``d`` at position :math:`p` be clicked and a
    result ``d'`` at position :math:`p'` not be clicked. The strategies
    derive :math:`d \succ d'` when

    ==========================  ===========================================================
    ``"skip-above"``            :math:`p' < p` ("Click > Skip Above", Joachims 2002;
                                Joachims et al. 2005 §5.3)
    ``"last-click-skip-above"`` :math:`p' < p` and ``d`` is the lowest-ranked click of the
                                session ("Last Click > Skip Above")
    ``"skip-previous"``         :math:`p' = p - 1` ("Click > Skip Previous")
    ``"skip-next"``             :math:`p' = p + 1` ("Click > No-Click Next";
                                alias ``"click-skip-next"``)
    ``"fairpairs"``             FairPairs sessions only: ``(p', p)`` is one of the session's
                                pairs ``(r, r + 1)`` (Radlinski & Joachims 2006), i.e. the
                                lower result of a pair was clicked and the upper one was not
    ==========================  ===========================================================

    Strategies combine with ``"+"`` (e.g. ``"skip-above+skip-next"``): the
    union of the rules, a pair derived by several rules in one session
    counting once. Preferences are counted per query over all sessions
    (weights = counts) and LambdaMART fits a pairwise logistic (RankNet)
    loss on them (:func:`clickrank.lambdas.pair_lambdas`).

    **What each assumes and its bias.** All strategies assume that an
    unclicked result was examined, which the position says nothing about
    below the last click; that is why the rules above only compare a click
    with results above it or adjacent to it. Users scan top-down, so a
    clicked result below an unclicked one is evidence of relative relevance
    ("relative, not absolute", Joachims et al. 2005). But the pairs are
    *presentation-biased*: ``skip-above``, ``last-click-skip-above`` and
    ``skip-previous`` only ever prefer a lower-ranked result to a
    higher-ranked one, so they always contradict the presented order; a
    learner trained on logs of a fixed ranker learns to reverse that ranker
    (Joachims et al. 2005; Radlinski & Joachims 2006). ``skip-next``
    always agrees with the presented order and rewards what the logger put on
    top (a clicked top result and an unexamined next one give a preference,
    so it inherits trust and position bias). Combining the two
    (``"skip-above+skip-next"``) only balances the directions. The
    "last click" is the lowest-ranked click: logs carry no click times, and
    under top-down scanning the last click in time is the lowest one.
    ``"fairpairs"`` is unbiased by design if a user's examination and clicks
    within a pair depend on its ranks but not on which document is on top
    (Radlinski & Joachims 2006): each pair is shown in both orders with
    probability 1/2 (:class:`clickrank.simulation.FairPairs`).

    Parameters
    ----------
    data : RankingData
    log : polars DataFrame or LazyFrame
        Click log with ``session``, ``query``, ``doc``, ``position``,
        ``click``; ``"fairpairs"`` also needs ``intervention``,
        ``swap_pivot`` (the first paired rank, 1 or 2) and ``swap_k`` (the
        lower rank of the last pair), as written by
        :func:`clickrank.simulation.simulate`. Strategies other than
        ``"fairpairs"`` read every session, whatever its intervention; filter
        the log to restrict them.
    strategy : str
        One of :data:`STRATEGIES`, or several joined with ``"+"``.
    ips_weighted : bool
        Weight each preference by :math:`1/\theta_p` of the click's position
        (propensity-weighted pairwise loss, Joachims et al. 2017 §4);
        requires ``propensities``. Not defined for ``"fairpairs"``.
    propensities : array-like or object with ``.theta``, optional
    candidates : {"shown", "all"}
        Documents that take part in the ranking (for ΔNDCG weighting).

    Returns
    -------
    Target
        Pairwise target named after the strategy; ``metadata`` holds the
        number of impressions, preferences, distinct pairs and sessions with
        a preference (and FairPairs sessions for ``"fairpairs"``).

    Raises
    ------
    InputError
        Unknown strategy, ``ips_weighted`` without propensities, or
        ``"fairpairs"`` on a log without FairPairs sessions.
    LogSchemaError
        Missing columns, non-boolean clicks, or ``(query, doc)`` not in ``data``.
    """
    rules = parse_strategy(strategy)
    fair = rules == ("fairpairs",)
    if ips_weighted and propensities is None:
        raise InputError("ips_weighted=True needs propensities")
    if ips_weighted and fair:
        raise InputError(
            "ips_weighted is not defined for 'fairpairs': its preferences need no propensities"
        )
    theta = as_theta(propensities) if ips_weighted else None
    lf = _lazy(log)
    needed = ("session", "query", "doc", "position", "click")
    if fair:
        needed += ("intervention", "swap_pivot", "swap_k")
    schema = _check_columns(lf, needed)
    _check_positions(lf, None if theta is None else len(theta))
    keys = _keys(data)
    lf = _cast_ids(lf, keys, schema)
    shown = lf.group_by(["query", "doc"]).agg(pl.len().alias("shown")).collect()
    shown = _attach_rows(shown, keys, "click log")
    rows_shown = shown["row"].to_numpy()
    base = lf.select(
        "session",
        "query",
        "doc",
        pl.col("position").cast(pl.Int64),
        pl.col("click").cast(pl.Boolean),
        *(
            [
                pl.col("intervention").cast(pl.String),
                pl.col("swap_pivot").cast(pl.Int64),
                pl.col("swap_k").cast(pl.Int64),
            ]
            if fair
            else []
        ),
    )
    metadata: dict[str, Any] = {"strategy": "+".join(rules)}
    if fair:
        base = base.filter(pl.col("intervention") == "fairpairs")
        n_fair, lo, hi = (
            base.group_by("session")
            .agg(pl.col("swap_pivot").first())
            .select(pl.len(), pl.col("swap_pivot").min().alias("lo"), pl.col("swap_pivot").max())
            .collect()
            .row(0)
        )
        if n_fair == 0:
            raise InputError(
                "the log has no FairPairs sessions (intervention 'fairpairs'); simulate with "
                "interventions=FairPairs(fraction) or log the pairing of a FairPairs experiment"
            )
        if lo is None or lo < 1 or hi > 2:
            raise LogSchemaError(
                f"FairPairs sessions must record the first paired rank (1 or 2); found {lo}..{hi}",
                column="swap_pivot",
            )
        metadata["fairpairs_sessions"] = int(n_fair)
    prefs = _preference_rows(base, rules)
    # integer counts per (pair, click position); 1/theta weights summed in numpy in a
    # fixed order, so the weights are the same bytes whatever polars' threading
    agg, n_sess = pl.collect_all(
        [
            prefs.group_by(["query", "win", "lose", "p_win"]).agg(pl.len().alias("count")),
            prefs.select(pl.col("session").n_unique().alias("n")),
        ]
    )
    kq = keys.rename({"doc": "win", "row": "row_win"})
    agg = (
        agg.join(kq, on=["query", "win"], how="left")
        .join(keys.rename({"doc": "lose", "row": "row_lose"}), on=["query", "lose"], how="left")
        .sort("row_win", "row_lose", "p_win")
    )
    both = np.column_stack([agg["row_win"].to_numpy(), agg["row_lose"].to_numpy()])
    count = agg["count"].to_numpy().astype(np.float64)
    w = count if theta is None else count / theta[agg["p_win"].to_numpy() - 1]
    pair_rows, inverse = np.unique(
        both.reshape(-1, 2).astype(np.int64), axis=0, return_inverse=True
    )
    weights = np.bincount(inverse.ravel(), weights=w, minlength=len(pair_rows))
    metadata.update(
        impressions=int(shown["shown"].sum()),
        preferences=int(agg["count"].sum()) if agg.height else 0,
        distinct_pairs=len(pair_rows),
        sessions_with_preferences=int(n_sess.item()),
        ips_weighted=bool(ips_weighted),
    )
    return Target(
        "+".join(rules),
        pairs=pair_rows.reshape(-1, 2),
        pair_weights=weights,
        candidates=_candidates(data.n_docs, rows_shown, candidates),
        metadata=metadata,
    )


def skip_above(
    data: RankingData,
    log: pl.DataFrame | pl.LazyFrame,
    *,
    ips_weighted: bool = False,
    propensities: Any = None,
    candidates: str = "shown",
) -> Target:
    r"""Skip-above preferences: a clicked result is preferred to every unclicked result above it.

    ``click_preferences(data, log, strategy="skip-above", ...)``: Joachims
    2002; Joachims et al. 2005 §5.3 ("Click > Skip Above"). Every such pair
    contradicts the presented order, so on logs of a deterministic ranker the
    learner reverses that ranker; use randomized logging or
    :func:`fair_pairs` (see :func:`click_preferences`).

    Parameters
    ----------
    data, log, ips_weighted, propensities, candidates
        As in :func:`click_preferences`.
    """
    return click_preferences(
        data,
        log,
        strategy="skip-above",
        ips_weighted=ips_weighted,
        propensities=propensities,
        candidates=candidates,
    )


def fair_pairs(
    data: RankingData, log: pl.DataFrame | pl.LazyFrame, *, candidates: str = "shown"
) -> Target:
    r"""FairPairs preferences (Radlinski & Joachims, AAAI 2006).

    ``click_preferences(data, log, strategy="fairpairs")``: in the sessions
    with intervention ``"fairpairs"`` (:class:`clickrank.simulation.FairPairs`),
    for each pair of ranks ``(r, r + 1)`` of the session's pairing, a click on
    the lower result and none on the upper one gives
    lower :math:`\succ` upper. Because each pair was swapped with probability
    1/2, these preferences are not affected by presentation bias under the
    paper's assumptions. Other sessions are ignored (they still define the
    shown candidates).
    """
    return click_preferences(data, log, strategy="fairpairs", candidates=candidates)


def label_agreement(target: Target, labels: np.ndarray) -> dict[str, float]:
    """How the preference weight of a pairwise target relates to true labels.

    Returns the shares of the total weight whose preferred document has a
    higher (``"agree"``), lower (``"contradict"``) or equal (``"tie"``)
    label, the accuracy on non-tied pairs ``agree / (agree + contradict)``
    and the total ``"weight"``.
    NaN shares when the target has no pairs.
    """
    if target.pairs is None:
        raise InputError(f"target {target.name!r} holds gains, not preference pairs")
    y = np.asarray(labels, dtype=np.float64)
    if target.pairs.size and target.pairs.max() >= y.shape[0]:
        raise InputError(
            f"labels has {y.shape[0]} rows, the target indexes row {target.pairs.max()}"
        )
    w = target.pair_weights
    total = float(w.sum())
    a, b = y[target.pairs[:, 0]], y[target.pairs[:, 1]]
    share = (lambda m: float(w[m].sum()) / total) if total > 0 else (lambda m: float("nan"))
    agree, contra, tie = share(a > b), share(a < b), share(a == b)
    decided = agree + contra
    return {
        "agree": agree,
        "contradict": contra,
        "tie": tie,
        "accuracy": agree / decided if decided > 0 else float("nan"),
        "weight": total,
    }
