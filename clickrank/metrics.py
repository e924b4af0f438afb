r"""Offline ranking metrics, one signature, vectorized over all queries.

Every metric has the signature ``f(scores, labels, qptr, *, k=None, empty="skip", ...)``
(data first, options keyword-only, as in google/rax) and returns a
:class:`MetricResult` holding one value per query, the mean, and the number of
queries without any relevant document together with the convention applied to
them. Nothing loops over queries in Python: each query's rows are sorted once
inside a padded ``[n_queries, width]`` matrix (or a segment lexsort for very
ragged data) and the metric is a row reduction of that matrix.

Conventions shared by all metrics (see ``docs/metrics.md``):

- **Ranking.** Higher score ranks higher; ties keep the original row order
  (stable sort, DESIGN §2); NaN scores rank last.
- **Cut-off.** ``k=None`` uses the whole list; ``k`` larger than a query's list
  simply uses the whole list (except for the denominator of :func:`precision`).
- **Queries without a relevant document** ("empty" queries: the metric's value
  is the same for every ranking, so they carry no information) follow ``empty``:
  ``"skip"`` (default; NaN, excluded from the mean), ``"zero"`` or ``"one"``.
  Libraries disagree here: XGBoost, LightGBM and allRank score such queries 1,
  ranx scores them 0, ULTRA drops them. The count is always reported as
  ``n_empty``. A query *with* relevant documents that all fall below ``k`` is
  not empty; it scores 0.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ._core._segments import is_dense as _dense  # the padded route pays off (also patched in tests)
from ._core._segments import rank_order, to_padded
from ._core._validation import (
    InputError,
    check_choice,
    check_positive,
    check_probability,
    check_qptr,
)

__all__ = [
    "MetricResult",
    "MetricFn",
    "dcg",
    "ndcg",
    "err",
    "average_precision",
    "reciprocal_rank",
    "precision",
    "pfound",
    "get_metric",
    "METRICS",
    "EMPTY_CONVENTIONS",
]

EMPTY_CONVENTIONS = ("skip", "zero", "one")
_EMPTY_MEANING = {
    "skip": "NaN, excluded from the mean",
    "zero": "scored 0, included in the mean",
    "one": "scored 1, included in the mean",
}
#: Largest label (or ``max_grade``) for which 2**y is computed without overflow worries.
_MAX_EXP_LABEL = 1000.0


# --------------------------------------------------------------------------- result


@dataclass(frozen=True, eq=False)
class MetricResult:
    """Per-query values of one metric, with the empty-query convention used.

    Parameters
    ----------
    name : str
        Metric name with its cut-off, e.g. ``"ndcg@10"``.
    values : numpy.ndarray
        float64 ``[n_queries]``; NaN for queries skipped under ``empty="skip"``.
    n_empty : int
        Number of queries without any relevant document (as the metric defines
        relevance; see each metric's docstring).
    empty : str
        The convention applied to those queries: ``"skip"``, ``"zero"`` or ``"one"``.

    Attributes
    ----------
    mean : float
        Mean over the queries that were not skipped (NaN if none is left).
    n_queries : int
        Number of queries.
    n_used : int
        Number of queries that enter the mean.

    Notes
    -----
    ``float(result)`` is the mean, ``result[i]`` is ``values[i]``, ``len(result)``
    is the number of queries and ``numpy.asarray(result)`` gives ``values``.
    """

    name: str
    values: np.ndarray
    n_empty: int
    empty: str
    mean: float = field(init=False)
    n_queries: int = field(init=False)

    def __post_init__(self) -> None:
        values = np.array(self.values, dtype=np.float64)  # own copy
        if values.ndim != 1:
            raise InputError(f"values must be 1-d, got shape {values.shape}")
        check_choice(self.empty, EMPTY_CONVENTIONS, name="empty")
        values.setflags(write=False)
        used = ~np.isnan(values)
        n_used = int(used.sum())
        mean = float(values[used].mean()) if n_used else math.nan
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "n_empty", int(self.n_empty))
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "n_queries", int(values.size))

    @property
    def n_used(self) -> int:
        """Number of queries entering the mean (not skipped)."""
        return int(np.count_nonzero(~np.isnan(self.values)))

    @property
    def sem(self) -> float:
        """Standard error of the mean over the used queries, ``std(ddof=1) / sqrt(n)``.

        Treats queries as independent draws; NaN with fewer than two used queries.
        """
        v = self.values[~np.isnan(self.values)]
        if v.size < 2:
            return math.nan
        return float(v.std(ddof=1) / math.sqrt(v.size))

    def __float__(self) -> float:
        return self.mean

    def __getitem__(self, index: Any) -> Any:
        return self.values[index]

    def __len__(self) -> int:
        return self.n_queries

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if copy:
            return np.array(self.values, dtype=dtype, copy=True)
        return np.asarray(self.values, dtype=dtype)

    def __repr__(self) -> str:
        return (
            f"MetricResult(name={self.name!r}, mean={self.mean:.6g}, n_queries={self.n_queries}, "
            f"n_used={self.n_used}, n_empty={self.n_empty}, empty={self.empty!r})"
        )

    def summary(self) -> str:
        """A few lines: the mean, its standard error and how empty queries were treated."""
        lines = [
            f"{self.name}: mean {self.mean:.6f} (SE {self.sem:.6f})",
            f"  queries  {self.n_queries}",
            f"  used     {self.n_used}",
            f"  empty    {self.n_empty} without a relevant document; "
            f"empty={self.empty!r}: {_EMPTY_MEANING[self.empty]}",
        ]
        return "\n".join(lines)


class MetricFn(Protocol):
    """The shape every metric in this module has."""

    def __call__(
        self,
        scores: Any,
        labels: Any,
        qptr: Any,
        /,
        *,
        k: int | None = None,
        empty: str = "skip",
    ) -> MetricResult: ...


# --------------------------------------------------------------------------- internals


def _check_inputs(
    scores: Any, labels: Any, qptr: Any, k: Any, empty: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int | None]:
    s = _as_float_array(scores, "scores")
    y = _as_float_array(labels, "labels")
    if s.ndim != 1:
        raise InputError(f"scores must be 1-d [n_docs], got shape {s.shape}")
    if y.ndim != 1:
        raise InputError(f"labels must be 1-d [n_docs], got shape {y.shape}")
    if s.shape != y.shape:
        raise InputError(
            f"scores and labels must have the same length, got {s.size} scores and {y.size} labels"
        )
    q = check_qptr(qptr, s.size, name="qptr")
    if not np.all(np.isfinite(y)):
        bad = int(np.flatnonzero(~np.isfinite(y))[0])
        raise InputError(f"labels must be finite; labels[{bad}] = {y[bad]}")
    if y.size and y.min() < 0:
        bad = int(np.argmin(y))
        raise InputError(f"labels must be >= 0 (graded relevance); labels[{bad}] = {y[bad]}")
    check_choice(empty, EMPTY_CONVENTIONS, name="empty")
    return s, y, q, _check_k(k)


def _as_float_array(values: Any, name: str) -> np.ndarray:
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be numeric, got {type(values).__name__}") from None


#: The largest cut-off ``k``: positions are UInt16 in the click log (DESIGN §2).
MAX_K = 65_535


def _check_k(k: Any, what: str = "k") -> int | None:
    if k is None:
        return None
    if isinstance(k, bool | np.bool_) or not isinstance(k, int | np.integer):
        raise InputError(f"{what} must be a positive integer or None, got {k!r}")
    if k < 1:
        raise InputError(f"{what} must be a positive integer or None, got {k}")
    if k > MAX_K:
        raise InputError(
            f"{what} must be at most {MAX_K:,} (the longest list a click log holds), got {k}; "
            "leave out @k for the whole list"
        )
    return int(k)


def _segment_count(mask: np.ndarray, qptr: np.ndarray) -> np.ndarray:
    """Per-query number of True rows (exact; works with empty queries)."""

    def count(qp: np.ndarray, m: np.ndarray) -> np.ndarray:
        c = np.concatenate(([0], np.cumsum(m, dtype=np.int64)))
        return c[qp[1:]] - c[qp[:-1]]

    return by_block(qptr, count, mask).astype(np.int64)


class _Ranked:
    """The rows of every query in ranked order, as a padded ``[n_queries, width]`` index.

    ``width`` is ``min(k, longest list)``. Cell ``[q, j]`` holds the row at rank
    ``j + 1`` of query ``q``; ``valid[q, j]`` is False beyond the query's length.
    Dense data (all lists of similar length) is sorted row-wise in a padded
    matrix with a stable argsort; very ragged data falls back to the segment
    lexsort of :func:`clickrank._core._segments.rank_order`. Both give the same order:
    descending score, ties by row order, NaN last.
    """

    def __init__(self, scores: np.ndarray, qptr: np.ndarray, k: int | None) -> None:
        lens = np.diff(qptr)
        n_q, n = lens.size, int(qptr[-1])
        longest = int(lens.max()) if n_q else 0
        width = longest if k is None else min(k, longest)
        self.width = width
        cols = np.arange(width)
        if _dense(qptr):
            key = np.negative(scores)
            key[np.isnan(key)] = np.inf  # NaN last; padding (also +inf) after real rows
            key = _padded(key, qptr, fill=np.inf)
            order = np.argsort(key, axis=1, kind="stable")[:, :width]
            rows = order + qptr[:-1, None]
        else:
            rows, _ = to_padded(rank_order(scores, qptr), qptr, fill=0, width=width)
        self.valid = None if n == n_q * longest else cols < lens[:, None]
        if self.valid is not None:
            rows = np.where(self.valid, rows, 0)
        self.rows = rows

    def take(self, row_values: np.ndarray, fill: float = 0.0) -> np.ndarray:
        """``row_values`` arranged as ``[n_queries, width]`` in ranked order."""
        if self.rows.size == 0:
            return np.full(self.rows.shape, fill, dtype=np.float64)
        out = np.asarray(row_values)[self.rows]
        if self.valid is not None:
            out = np.where(self.valid, out, fill)
        return out


def _padded(values: np.ndarray, qptr: np.ndarray, fill: float) -> np.ndarray:
    """``to_padded`` with a reshape shortcut when every list has the same length."""
    n_q, n = len(qptr) - 1, int(qptr[-1])
    if n_q and n % n_q == 0 and np.all(np.diff(qptr) == n // n_q):
        return values.reshape(n_q, n // n_q)
    return to_padded(values, qptr, fill=fill)[0]


def _ideal(values: np.ndarray, qptr: np.ndarray, width: int) -> np.ndarray:
    """Per query, the ``width`` largest of ``values`` (>= 0) in descending order, 0-padded."""
    if width == 0:
        return np.zeros((len(qptr) - 1, 0))
    if not _dense(qptr):
        return _Ranked(values, qptr, width).take(values)
    n_q = len(qptr) - 1
    if n_q * width == 0:
        return np.zeros((n_q, width))
    padded = _padded(values, qptr, fill=0.0)  # 0 sorts last since values >= 0
    return np.sort(padded, axis=1)[:, ::-1][:, :width]


#: Rows per block: whole queries are processed in blocks of about this many rows so that
#: the padded temporaries stay in cache (about 2x faster than one pass on 30M rows).
_BLOCK_ROWS = 1 << 18


def by_block(
    qptr: np.ndarray, kernel: Callable[..., np.ndarray], *row_arrays: np.ndarray
) -> np.ndarray:
    """Concatenated ``kernel(local_qptr, *row_slices)`` over blocks of whole queries.

    ``kernel`` returns one float per query of the block. Blocks hold about
    :data:`_BLOCK_ROWS` rows (a longer query forms a block of its own); the loop
    runs over blocks, never over queries.
    """
    n_q, n = len(qptr) - 1, int(qptr[-1])
    if n <= _BLOCK_ROWS:
        return np.asarray(kernel(qptr, *row_arrays), dtype=np.float64)
    cuts = np.searchsorted(qptr, np.arange(_BLOCK_ROWS, n, _BLOCK_ROWS), side="left")
    bounds = np.unique(np.concatenate(([0], cuts, [n_q])))
    out = np.empty(n_q, dtype=np.float64)
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        lo, hi = qptr[a], qptr[b]
        out[a:b] = kernel(qptr[a : b + 1] - lo, *(x[lo:hi] for x in row_arrays))
    return out


def discounts(width: int) -> np.ndarray:
    """The DCG discounts ``1 / log2(1 + r)`` of ranks ``r = 1..width``."""
    return 1.0 / np.log2(np.arange(2, width + 2, dtype=np.float64))


def _check_gain(labels: np.ndarray, gain: str) -> str:
    check_choice(gain, ("exponential", "linear"), name="gain")
    if gain == "exponential" and labels.size and labels.max() > _MAX_EXP_LABEL:
        raise InputError(
            f"labels up to {labels.max()} overflow the exponential gain 2**y - 1; use gain='linear'"
        )
    return gain


def _gains(labels: np.ndarray, gain: str) -> np.ndarray:
    """``2**y - 1`` (exponential) or ``y`` (linear); ``gain`` checked by :func:`_check_gain`."""
    return labels if gain == "linear" else np.exp2(labels) - 1.0


def _name(base: str, k: int | None) -> str:
    return base if k is None else f"{base}@{k}"


def _result(
    base: str, k: int | None, values: np.ndarray, is_empty: np.ndarray, empty: str
) -> MetricResult:
    values = np.asarray(values, dtype=np.float64).copy()
    values[is_empty] = {"skip": np.nan, "zero": 0.0, "one": 1.0}[empty]
    return MetricResult(_name(base, k), values, int(is_empty.sum()), empty)


def _max_grade(labels: np.ndarray, max_grade: Any) -> float:
    data_max = float(labels.max()) if labels.size else 0.0
    if max_grade is None:
        g = data_max
    else:
        g = float(check_positive(max_grade, name="max_grade"))
        if g < data_max:
            raise InputError(f"max_grade ({g}) is below the largest label ({data_max})")
    if g > _MAX_EXP_LABEL:
        raise InputError(f"max_grade {g} overflows 2**max_grade; rescale the labels")
    return g


# --------------------------------------------------------------------------- metrics


def dcg(
    scores: Any,
    labels: Any,
    qptr: Any,
    *,
    k: int | None = None,
    empty: str = "skip",
    gain: str = "exponential",
) -> MetricResult:
    r"""Discounted cumulative gain at cut-off ``k`` (not normalized).

    Definition (Järvelin & Kekäläinen (2002); exponential gain as in Burges et al. (2005)):

    .. math::
        \mathrm{DCG@}k = \sum_{j=1}^{\min(k, n)} \frac{g(y_{(j)})}{\log_2(1 + j)},
        \qquad g(y) = 2^{y} - 1 \text{ (``gain="exponential"``) or } y \text{ (``"linear"``)}

    where :math:`y_{(j)}` is the label of the document ``scores`` puts at rank
    :math:`j` (ties keep row order) and :math:`n` the length of the query's list.

    .. note:: No empty-query convention applies: a query without a relevant
       document has DCG 0 and is counted in the mean (the result records
       ``empty="zero"`` whatever ``empty`` says; the argument exists only for a
       uniform signature). ``n_empty`` still counts such queries.

    Parameters
    ----------
    scores, labels : array ``[n_docs]``
        Ranker scores and graded relevance labels (finite, >= 0), grouped by query.
    qptr : array ``[n_queries + 1]``
        Query offsets: query ``q`` owns rows ``qptr[q]:qptr[q + 1]``.
    k : int, optional
        Cut-off; None uses the whole list.
    gain : {"exponential", "linear"}
        Gain function.

    Examples
    --------
    >>> r = dcg([6, 5, 4, 3, 2, 1], [0, 3, 1, 0, 2, 0], [0, 6])
    >>> round(float(r), 3)
    6.077
    """
    s, y, q, k = _check_inputs(scores, labels, qptr, k, empty)
    _check_gain(y, gain)

    def kernel(qp: np.ndarray, s_: np.ndarray, y_: np.ndarray) -> np.ndarray:
        ranked = _Ranked(s_, qp, k)
        return ranked.take(_gains(y_, gain)) @ discounts(ranked.width)

    values = by_block(q, kernel, s, y)
    is_empty = _segment_count(y > 0, q) == 0
    return MetricResult(_name("dcg", k), values, int(is_empty.sum()), "zero")


def ndcg(
    scores: Any,
    labels: Any,
    qptr: Any,
    *,
    k: int | None = None,
    empty: str = "skip",
    gain: str = "exponential",
) -> MetricResult:
    r"""Normalized discounted cumulative gain at cut-off ``k``.

    Definition (Järvelin & Kekäläinen (2002); exponential gain as in Burges et al. (2005)):

    .. math::
        \mathrm{NDCG@}k = \frac{\mathrm{DCG@}k}{\mathrm{IDCG@}k}, \qquad
        \mathrm{DCG@}k = \sum_{j=1}^{\min(k, n)} \frac{g(y_{(j)})}{\log_2(1 + j)}

    where :math:`y_{(j)}` is the label of the document ``scores`` puts at rank
    :math:`j` (ties keep row order), :math:`g(y) = 2^y - 1` (``gain="exponential"``,
    default) or :math:`y` (``"linear"``), and IDCG@k is the DCG@k of the list sorted
    by ``labels``: the ideal is truncated at the same ``k``.

    .. note:: A query is empty when no label is > 0 (IDCG = 0). ``empty`` decides
       its value: "skip" (NaN, excluded from the mean; default), "zero" or "one".
       XGBoost, LightGBM and allRank score such queries 1; ranx scores 0; ULTRA
       drops them.

    Parameters
    ----------
    scores, labels : array ``[n_docs]``
        Ranker scores and graded relevance labels (finite, >= 0), grouped by query.
    qptr : array ``[n_queries + 1]``
        Query offsets.
    k : int, optional
        Cut-off for both DCG and IDCG; None uses the whole list.
    empty : {"skip", "zero", "one"}
        Value of queries without a relevant document.
    gain : {"exponential", "linear"}
        Gain function.

    Examples
    --------
    >>> r = ndcg([6, 5, 4, 3, 2, 1, 4, 3, 2, 1], [0, 3, 1, 0, 2, 0, 1, 0, 0, 1], [0, 6, 10], k=3)
    >>> r.values.round(3).tolist()
    [0.523, 0.613]
    >>> round(float(ndcg([3, 2, 1], [0, 0, 0], [0, 3], empty="one")), 1)
    1.0
    """
    s, y, q, k = _check_inputs(scores, labels, qptr, k, empty)
    _check_gain(y, gain)

    def kernel(qp: np.ndarray, s_: np.ndarray, y_: np.ndarray) -> np.ndarray:
        ranked = _Ranked(s_, qp, k)
        disc = discounts(ranked.width)
        g = _gains(y_, gain)
        dcg_k = ranked.take(g) @ disc
        idcg_k = _ideal(g, qp, ranked.width) @ disc
        return dcg_k / np.where(idcg_k > 0, idcg_k, 1.0)  # IDCG = 0: empty, set below

    values = by_block(q, kernel, s, y)
    is_empty = _segment_count(y > 0, q) == 0
    return _result("ndcg", k, values, is_empty, empty)


def err(
    scores: Any,
    labels: Any,
    qptr: Any,
    *,
    k: int | None = None,
    empty: str = "skip",
    max_grade: float | None = None,
) -> MetricResult:
    r"""Expected reciprocal rank at cut-off ``k``.

    Definition (Chapelle et al. (2009), Eq. 4 and Algorithm 2):

    .. math::
        \mathrm{ERR@}k = \sum_{r=1}^{\min(k, n)} \frac{1}{r}\, R_r \prod_{i<r} (1 - R_i),
        \qquad R_i = \frac{2^{y_{(i)}} - 1}{2^{y_\max}}

    where :math:`y_{(i)}` is the label at rank :math:`i` (ties keep row order) and
    :math:`y_\max` is ``max_grade``.

    .. note:: ``max_grade`` defaults to the largest label **in the data passed**
       (over all queries). Chapelle et al. use the top of the grading scale; pass
       it explicitly (``max_grade=4`` for the 0-4 LETOR/Yahoo scale) to compare
       with published figures or across datasets. A query is empty when no label
       is > 0; ``empty`` decides its value.

    Parameters
    ----------
    scores, labels : array ``[n_docs]``
        Ranker scores and graded relevance labels (finite, >= 0), grouped by query.
    qptr : array ``[n_queries + 1]``
        Query offsets.
    k : int, optional
        Cut-off; None uses the whole list.
    empty : {"skip", "zero", "one"}
        Value of queries without a relevant document.
    max_grade : float, optional
        :math:`y_\max`; must be >= every label.

    Examples
    --------
    >>> r = err([2, 1], [1, 2], [0, 2], max_grade=2)
    >>> float(r) == 1 / 4 + (1 - 1 / 4) * (3 / 4) / 2
    True
    """
    s, y, q, k = _check_inputs(scores, labels, qptr, k, empty)
    scale = 2.0 ** -_max_grade(y, max_grade)

    def kernel(qp: np.ndarray, s_: np.ndarray, y_: np.ndarray) -> np.ndarray:
        ranked = _Ranked(s_, qp, k)
        stop = (np.exp2(ranked.take(y_)) - 1.0) * scale  # padding: label 0, R = 0
        return _cascade(stop, rank_weights=1.0 / np.arange(1, ranked.width + 1))

    values = by_block(q, kernel, s, y)
    is_empty = _segment_count(y > 0, q) == 0
    return _result("err", k, values, is_empty, empty)


def _cascade(
    p: np.ndarray, *, rank_weights: np.ndarray | float = 1.0, p_continue: float = 1.0
) -> np.ndarray:
    r"""Row sums of :math:`w_r\, p_r\, c^{r-1} \prod_{i<r}(1 - p_i)` for ``p`` ``[n_q, width]``."""
    n_q, width = p.shape
    reach = np.ones((n_q, width), dtype=np.float64)
    if width > 1:
        np.cumprod((1.0 - p[:, :-1]) * p_continue, axis=1, out=reach[:, 1:])
    return (reach * p * rank_weights).sum(axis=1)


def average_precision(
    scores: Any,
    labels: Any,
    qptr: Any,
    *,
    k: int | None = None,
    empty: str = "skip",
    threshold: float = 1.0,
    denominator: str = "relevant",
) -> MetricResult:
    r"""Average precision at cut-off ``k`` (its mean over queries is MAP).

    Definition (Harman (1992); trec_eval's ``map``/``map_cut``):

    .. math::
        \mathrm{AP@}k = \frac{1}{D} \sum_{j=1}^{\min(k, n)} \mathrm{rel}_{(j)}\,
        \mathrm{P@}j, \qquad \mathrm{rel} = [\,y \ge \text{threshold}\,]

    where :math:`\mathrm{rel}_{(j)}` is the relevance of the document at rank
    :math:`j` (ties keep row order), and the denominator :math:`D` is the number
    :math:`R` of relevant documents of the query (``denominator="relevant"``,
    default; trec_eval, TF-Ranking) or :math:`\min(R, k)` (``"min_k"``; LightGBM's
    ``map@k`` and many recommender-system AP@k definitions). Without ``k`` both are R.

    .. note:: Relevance means ``label >= threshold`` (default 1). A query is empty
       when it has no relevant document; ``empty`` decides its value (LightGBM
       scores 1, ranx 0).

    Parameters
    ----------
    scores, labels : array ``[n_docs]``
        Ranker scores and graded relevance labels (finite, >= 0), grouped by query.
    qptr : array ``[n_queries + 1]``
        Query offsets.
    k : int, optional
        Cut-off; None uses the whole list.
    empty : {"skip", "zero", "one"}
        Value of queries without a relevant document.
    threshold : float
        Smallest relevant label (> 0).
    denominator : {"relevant", "min_k"}
        R, or min(R, k).

    Examples
    --------
    >>> r = average_precision([6, 5, 4, 3, 2, 1, 4, 3, 2, 1],
    ...                       [0, 3, 1, 0, 2, 0, 1, 0, 0, 1], [0, 6, 10])
    >>> r.values.round(3).tolist(), round(float(r), 3)
    ([0.589, 0.75], 0.669)
    """
    s, y, q, k = _check_inputs(scores, labels, qptr, k, empty)
    thr = float(check_positive(threshold, name="threshold"))
    check_choice(denominator, ("relevant", "min_k"), name="denominator")
    rel_rows = y >= thr

    def kernel(qp: np.ndarray, s_: np.ndarray, rel_: np.ndarray) -> np.ndarray:
        ranked = _Ranked(s_, qp, k)
        rel = ranked.take(rel_, fill=False).astype(np.float64)
        hits = np.cumsum(rel, axis=1)
        return (rel * hits / np.arange(1, ranked.width + 1)).sum(axis=1)

    total = by_block(q, kernel, s, rel_rows)
    n_rel = _segment_count(rel_rows, q)
    denom = n_rel if (denominator == "relevant" or k is None) else np.minimum(n_rel, k)
    is_empty = n_rel == 0
    values = total / np.maximum(denom, 1)
    return _result("ap", k, values, is_empty, empty)


def reciprocal_rank(
    scores: Any,
    labels: Any,
    qptr: Any,
    *,
    k: int | None = None,
    empty: str = "skip",
    threshold: float = 1.0,
) -> MetricResult:
    r"""Reciprocal rank of the first relevant document within the top ``k`` (mean: MRR).

    Definition (Voorhees (1999)):

    .. math::
        \mathrm{RR@}k = \frac{1}{r^*} \text{ if } r^* \le k \text{ else } 0, \qquad
        r^* = \min\{\, j : y_{(j)} \ge \text{threshold} \,\}

    where :math:`y_{(j)}` is the label at rank :math:`j` (ties keep row order).

    .. note:: Relevance means ``label >= threshold`` (default 1). A query without
       a relevant document is empty; ``empty`` decides its value.

    Parameters
    ----------
    scores, labels : array ``[n_docs]``
        Ranker scores and graded relevance labels (finite, >= 0), grouped by query.
    qptr : array ``[n_queries + 1]``
        Query offsets.
    k : int, optional
        Cut-off; None uses the whole list.
    empty : {"skip", "zero", "one"}
        Value of queries without a relevant document.
    threshold : float
        Smallest relevant label (> 0).

    Examples
    --------
    >>> r = reciprocal_rank([6, 5, 4, 3, 2, 1, 4, 3, 2, 1],
    ...                     [0, 3, 1, 0, 2, 0, 1, 0, 0, 1], [0, 6, 10])
    >>> r.values.tolist(), float(r)
    ([0.5, 1.0], 0.75)
    """
    s, y, q, k = _check_inputs(scores, labels, qptr, k, empty)
    thr = float(check_positive(threshold, name="threshold"))
    rel_rows = y >= thr

    def kernel(qp: np.ndarray, s_: np.ndarray, rel_: np.ndarray) -> np.ndarray:
        rel = _Ranked(s_, qp, k).take(rel_, fill=False)
        if rel.shape[1] == 0:
            return np.zeros(rel.shape[0])
        return np.where(rel.any(axis=1), 1.0 / (np.argmax(rel, axis=1) + 1.0), 0.0)

    values = by_block(q, kernel, s, rel_rows)
    is_empty = _segment_count(rel_rows, q) == 0
    return _result("rr", k, values, is_empty, empty)


def precision(
    scores: Any,
    labels: Any,
    qptr: Any,
    *,
    k: int | None = None,
    empty: str = "skip",
    threshold: float = 1.0,
    denominator: str = "k",
) -> MetricResult:
    r"""Precision at cut-off ``k``: the share of relevant documents in the top ``k``.

    Definition (trec_eval's ``P_k``):

    .. math::
        \mathrm{P@}k = \frac{1}{D} \sum_{j=1}^{\min(k, n)} [\,y_{(j)} \ge \text{threshold}\,]

    where :math:`y_{(j)}` is the label at rank :math:`j` (ties keep row order).
    The denominator is :math:`D = k` (``denominator="k"``, default; the TREC
    convention, also ranx: a list shorter than ``k`` counts its missing slots as
    non-relevant) or :math:`D = \min(k, n)` (``"length"``). Without ``k``,
    :math:`D = n` (the share of relevant documents in the whole list).

    .. note:: Relevance means ``label >= threshold`` (default 1). A query without
       a relevant document is empty; ``empty`` decides its value.

    Parameters
    ----------
    scores, labels : array ``[n_docs]``
        Ranker scores and graded relevance labels (finite, >= 0), grouped by query.
    qptr : array ``[n_queries + 1]``
        Query offsets.
    k : int, optional
        Cut-off; None uses the whole list.
    empty : {"skip", "zero", "one"}
        Value of queries without a relevant document.
    threshold : float
        Smallest relevant label (> 0).
    denominator : {"k", "length"}
        k, or min(k, list length).

    Examples
    --------
    >>> s, y, q = [6, 5, 4, 3, 2, 1], [0, 3, 1, 0, 2, 0], [0, 6]
    >>> [round(float(precision(s, y, q, k=k)), 3) for k in (1, 3, 5)]
    [0.0, 0.667, 0.6]
    >>> float(precision(s, y, q, k=10)), float(precision(s, y, q, k=10, denominator="length"))
    (0.3, 0.5)
    """
    s, y, q, k = _check_inputs(scores, labels, qptr, k, empty)
    thr = float(check_positive(threshold, name="threshold"))
    check_choice(denominator, ("k", "length"), name="denominator")
    rel_rows = y >= thr

    def kernel(qp: np.ndarray, s_: np.ndarray, rel_: np.ndarray) -> np.ndarray:
        return _Ranked(s_, qp, k).take(rel_, fill=False).sum(axis=1)

    hits = by_block(q, kernel, s, rel_rows)
    lens = np.diff(q)
    if k is None:
        denom = lens
    elif denominator == "k":
        denom = np.full(lens.shape, k)
    else:
        denom = np.minimum(lens, k)
    is_empty = _segment_count(rel_rows, q) == 0
    values = hits / np.maximum(denom, 1)
    return _result("p", k, values, is_empty, empty)


def _relevance_probabilities(y: np.ndarray, mapping: Any, max_grade: Any) -> np.ndarray:
    if isinstance(mapping, str):
        check_choice(
            mapping, ("exponential", "linear", "identity"), name="relevance_to_probability"
        )
        if mapping == "identity":
            p = y
        else:
            g_max = _max_grade(y, max_grade)
            if g_max == 0:
                return np.zeros_like(y)
            p = (np.exp2(y) - 1.0) / 2.0**g_max if mapping == "exponential" else y / g_max
    elif callable(mapping):
        p = np.asarray(mapping(y.copy()), dtype=np.float64)
        if p.shape != y.shape:
            raise InputError(
                f"relevance_to_probability must map labels [n_docs] to probabilities of the "
                f"same shape; got shape {p.shape} for {y.shape}"
            )
    else:
        table = np.asarray(mapping, dtype=np.float64)
        if table.ndim != 1 or table.size == 0:
            raise InputError(
                "relevance_to_probability must be a name, a callable or a 1-d array indexed "
                f"by grade; got shape {table.shape}"
            )
        if np.any(y != np.floor(y)) or (y.size and y.max() >= table.size):
            raise InputError(
                f"a relevance_to_probability table of {table.size} entries needs integer "
                f"labels in 0..{table.size - 1}"
            )
        p = table[y.astype(np.int64)]
    if not np.all((p >= 0) & (p <= 1)):
        raise InputError("relevance_to_probability must give probabilities in [0, 1]")
    return p


def pfound(
    scores: Any,
    labels: Any,
    qptr: Any,
    *,
    k: int | None = None,
    empty: str = "skip",
    p_break: float = 0.15,
    relevance_to_probability: Any = "exponential",
    max_grade: float | None = None,
) -> MetricResult:
    r"""pFound at cut-off ``k``: probability that a cascading user finds a relevant result.

    Definition (Gulin et al. (2009); Segalovich (2010)):

    .. math::
        \mathrm{pFound@}k = \sum_{r=1}^{\min(k, n)} \mathrm{pLook}_r\, \mathrm{pRel}_r,
        \qquad \mathrm{pLook}_1 = 1, \quad
        \mathrm{pLook}_{r+1} = \mathrm{pLook}_r (1 - \mathrm{pRel}_r)(1 - p_\mathrm{break})

    where :math:`\mathrm{pRel}_r` is the probability that the document at rank
    :math:`r` (ties keep row order) satisfies the user, obtained from its label by
    ``relevance_to_probability``.

    .. note:: Yandex estimated pRel per assessor grade from user data; those
       figures do not transfer to other grading scales. The default here is ERR's
       mapping :math:`(2^y - 1) / 2^{y_\max}` (Chapelle et al. (2009)), which keeps
       pRel < 1 for the top grade so the cascade never stops with certainty, and
       makes pFound with ``p_break=0`` the ERR user model without the 1/r utility.
       ``max_grade`` defaults to the largest label in the data, as in :func:`err`.
       Other choices: ``"linear"`` (y / y_max), ``"identity"`` (labels already are
       probabilities in [0, 1]: CatBoost's PFound, whose ``decay`` is
       1 - ``p_break``), a callable mapping the label array to probabilities, or an
       array indexed by integer grade. A query is empty when no document has
       pRel > 0; ``empty`` decides its value.

    Parameters
    ----------
    scores, labels : array ``[n_docs]``
        Ranker scores and graded relevance labels (finite, >= 0), grouped by query.
    qptr : array ``[n_queries + 1]``
        Query offsets.
    k : int, optional
        Cut-off; None uses the whole list.
    empty : {"skip", "zero", "one"}
        Value of queries without a relevant document.
    p_break : float
        Probability of abandoning the list after each result (0.15 in the original).
    relevance_to_probability : str, callable or array
        ``"exponential"`` (default), ``"linear"``, ``"identity"``, ``f(labels) -> p``,
        or a table ``p[grade]``.
    max_grade : float, optional
        :math:`y_\max` for the named mappings.

    Examples
    --------
    >>> r = pfound([2, 1], [0.5, 0.4], [0, 2], relevance_to_probability="identity")
    >>> float(r) == 0.5 + (1 - 0.5) * (1 - 0.15) * 0.4
    True
    >>> r = pfound([2, 1], [2, 1], [0, 2], relevance_to_probability=[0.0, 0.4, 0.6])
    >>> float(r) == 0.6 + (1 - 0.6) * (1 - 0.15) * 0.4
    True
    """
    s, y, q, k = _check_inputs(scores, labels, qptr, k, empty)
    pb = check_probability(p_break, name="p_break")
    p = _relevance_probabilities(y, relevance_to_probability, max_grade)

    def kernel(qp: np.ndarray, s_: np.ndarray, p_: np.ndarray) -> np.ndarray:
        return _cascade(_Ranked(s_, qp, k).take(p_), p_continue=1.0 - pb)

    values = by_block(q, kernel, s, p)
    is_empty = _segment_count(p > 0, q) == 0
    return _result("pfound", k, values, is_empty, empty)


# --------------------------------------------------------------------------- registry

_REGISTRY: dict[str, Callable[..., MetricResult]] = {
    "dcg": dcg,
    "ndcg": ndcg,
    "err": err,
    "ap": average_precision,
    "rr": reciprocal_rank,
    "p": precision,
    "pfound": pfound,
}
_ALIASES = {
    "map": "ap",
    "average_precision": "ap",
    "mrr": "rr",
    "reciprocal_rank": "rr",
    "precision": "p",
}
#: Names :func:`get_metric` understands (each optionally followed by ``@k``).
METRICS: tuple[str, ...] = tuple(_REGISTRY) + tuple(_ALIASES)
_NAME = re.compile(r"^\s*([a-z_]+)\s*(?:@\s*(\d+))?\s*$")


def get_metric(name: str, **options: Any) -> Callable[..., MetricResult]:
    """The metric called ``name`` (e.g. ``"ndcg@10"``, ``"map"``, ``"p@5"``) with ``k`` bound.

    Parameters
    ----------
    name : str
        A base name from :data:`METRICS`, case-insensitive, optionally followed by
        ``@k``: ``dcg``, ``ndcg``, ``err``, ``ap``/``map``, ``rr``/``mrr``,
        ``p``/``precision``, ``pfound``. ``map`` and ``mrr`` give the per-query
        AP and RR, whose means are MAP and MRR.
    **options
        Further keyword arguments bound as well (``empty=``, ``gain=``, ...).

    Returns
    -------
    callable
        ``f(scores, labels, qptr, **more_options) -> MetricResult``.

    Examples
    --------
    >>> f = get_metric("NDCG@3")
    >>> round(float(f([6, 5, 4, 3, 2, 1], [0, 3, 1, 0, 2, 0], [0, 6])), 3)
    0.523
    >>> get_metric("mrr")([6, 5, 4, 3, 2, 1], [0, 3, 1, 0, 2, 0], [0, 6]).name
    'rr'
    """
    if not isinstance(name, str):
        raise InputError(f"metric name must be a string, got {name!r}")
    m = _NAME.match(name.lower())
    base = None if m is None else _ALIASES.get(m.group(1), m.group(1))
    if m is None or base not in _REGISTRY:
        raise InputError(
            f"unknown metric {name!r}; expected one of {', '.join(METRICS)}, optionally "
            "followed by @k (e.g. 'ndcg@10')"
        )
    if m.group(2) is not None:
        if "k" in options:
            raise InputError(f"metric {name!r} already sets k; do not pass k= as well")
        options["k"] = _check_k(int(m.group(2)), what=f"the k of metric {name!r}")
    return functools.partial(_REGISTRY[base], **options)
