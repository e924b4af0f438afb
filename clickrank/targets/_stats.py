r"""Per-document click statistics of a log: the sufficient statistics of every gain target.

One polars aggregation per ``(query, doc, position)`` gives, for every row
``d`` of a :class:`~clickrank.datasets.RankingData`,

.. math::
    C(d) = \sum_s c_s(d), \quad n(d) = \sum_s o_s(d), \quad
    E(d) = \sum_s \theta_{p_s(d)}, \quad G(d) = \sum_s \frac{c_s(d)}{\theta_{p_s(d)}},

summed over the sessions ``s`` that showed ``d`` (:math:`o_s(d) = 1`), and the
number of sessions :math:`N_q` of each query. The naive, IPS, doubly robust
and hybrid targets and the counterfactual validation of
:mod:`clickrank.selection` are all functions of these arrays, so a log is read
once whatever the target.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import polars as pl

from .._core._validation import InputError
from ..datasets import RankingData
from ..engine import n_unique, n_unique_by
from ..engine.join import per_doc, prepare_log
from ._theta import ContextTheta, as_theta, context_theta

__all__ = ["ClickStats", "click_stats", "auto_clip"]


def auto_clip(n_sessions: int) -> float:
    r"""The default propensity clipping :math:`\tau = \min(10/\sqrt{N}, 1)` for ``N`` sessions.

    Oosterhuis (2023), §7, clips the expected exposure at
    :math:`10/\sqrt{N}`: the bound on the weights grows with the amount of data,
    so the clipping bias vanishes as :math:`N \to \infty` while a small log is
    not dominated by a few heavily weighted clicks. With :math:`N \le 100`
    every weight is 1 (no correction); with :math:`10^6` sessions
    :math:`\tau = 0.01`, which leaves propensities of a top-10 list untouched.
    """
    if n_sessions <= 0:
        raise InputError(f"the number of sessions must be positive, got {n_sessions}")
    return float(min(10.0 / np.sqrt(n_sessions), 1.0))


def _level(clip: float | str, n_sessions: int) -> float:
    """The clipping level of ``clip`` (a number in (0, 1] or ``"auto"``) for a log size."""
    try:
        tau = auto_clip(n_sessions) if clip == "auto" else float(clip)
    except (TypeError, ValueError):
        tau = float("nan")
    if not 0.0 < tau <= 1.0:
        raise InputError(f"clip is a minimum propensity in (0, 1] or 'auto', got {clip!r}")
    return tau


@dataclass(frozen=True, eq=False)
class ClickStats:
    r"""Click statistics of a log aligned to a data set's rows (float64 ``[n_docs]`` each).

    Attributes
    ----------
    clicks : numpy.ndarray
        :math:`C(d)`, clicks on the row's (query, doc).
    impressions : numpy.ndarray
        :math:`n(d)`, sessions that showed it.
    exposure : numpy.ndarray
        :math:`E(d) = \sum_s \theta_{p_s(d)}` (with the clipped propensities).
    ips : numpy.ndarray
        :math:`G(d) = \sum_s c_s(d) / \theta_{p_s(d)}` (clipped propensities).
    sessions : numpy.ndarray
        :math:`N_q` of the row's query (sessions of the query in the log).
    query_index : numpy.ndarray
        int64 query number of every row (``RankingData.query_index``).
    theta : numpy.ndarray or None
        The propensities used, after clipping (None without propensities).
    clip : float or None
        The clipping level applied to ``theta``.
    n_sessions : int
        Sessions in the log.
    cells : tuple of numpy.ndarray
        ``(row, position, clicks, impressions)`` per logged (document, position) (and
        context, with per-context propensities), from which :meth:`clipped` recomputes
        the weighted sums.
    contexts : ContextTheta or None
        The per-context curves (clipped) when the propensities hold them; ``exposure`` and
        ``ips`` then weigh each impression by its context's :math:`\theta_{c_s, p_s(d)}`.
    cell_context : numpy.ndarray or None
        The row of ``contexts.table`` of every cell.
    """

    clicks: np.ndarray
    impressions: np.ndarray
    exposure: np.ndarray
    ips: np.ndarray
    sessions: np.ndarray
    query_index: np.ndarray
    theta: np.ndarray | None
    clip: float | None
    n_sessions: int
    cells: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    contexts: ContextTheta | None = None
    cell_context: np.ndarray | None = None

    def cell_theta(self) -> np.ndarray:
        """The propensity of every cell: its context's, else the pooled one at its position."""
        pos = self.cells[1]
        if self.contexts is None:
            return self.theta[pos - 1]
        return self.contexts.table[self.cell_context, pos - 1]

    def clipped(self, clip: float | str | None) -> ClickStats:
        """The statistics with the propensities clipped at ``clip`` (a level in
        (0, 1], ``"auto"`` for :func:`auto_clip`, None for none). Clipping
        composes: statistics already clipped keep the larger level."""
        if self.theta is None or clip is None:
            return self
        tau = _level(clip, self.n_sessions)
        out = replace(
            self, theta=np.maximum(self.theta, tau), clip=tau,
            contexts=None if self.contexts is None else self.contexts.clipped(tau),
        )  # fmt: skip
        return out._weighted()

    def _weighted(self) -> ClickStats:
        """The statistics with ``exposure`` and ``ips`` summed from the cells at ``theta``."""
        rows, _, c, n = self.cells
        th = self.cell_theta()
        size = self.clicks.shape[0]
        return replace(
            self,
            exposure=np.bincount(rows, weights=n * th, minlength=size),
            ips=np.bincount(rows, weights=c / th, minlength=size),
        )

    @property
    def shown(self) -> np.ndarray:
        """Mask of the rows shown at least once."""
        return self.impressions > 0

    @property
    def shown_fraction(self) -> float:
        """Share of the data's rows shown at least once."""
        return float(self.shown.mean()) if self.shown.size else 0.0

    def ratio(self) -> np.ndarray:
        r"""Per-exposure click rate :math:`C(d)/E(d)` (0 where never shown).

        The policy-aware estimate of the click probability after examination
        with the empirical expected exposure :math:`\rho_d = E(d)/N_q`
        (Oosterhuis & de Rijke (2020)): :math:`N_q C(d)/E(d)` is the
        per-impression normalised IPS gain.
        """
        e = self.exposure
        return np.divide(self.clicks, e, out=np.zeros_like(e), where=e > 0)


def _sessions_per_row(data: RankingData, lf: Any, keys: pl.DataFrame) -> np.ndarray:
    """Sessions of each row's query (0 for queries absent from the log)."""
    per_query = n_unique_by(lf, "query", "session")
    first = pl.DataFrame(
        {"query": keys["query"].gather(data.qptr[:-1]), "q": range(data.n_queries)}
    )
    joined = first.join(per_query, on="query", how="left").sort("q")
    n_q = joined["n"].fill_null(0).to_numpy().astype(np.float64)
    return n_q[data.query_index]


def click_stats(
    data: RankingData,
    log: Any,
    propensities: Any = None,
    *,
    clip: float | str | None = None,
) -> ClickStats:
    r"""Per-document click statistics of ``log`` aligned to ``data``'s rows.

    Parameters
    ----------
    data : RankingData
        The documents; every logged ``(query, doc)`` must be one of its rows.
    log : polars DataFrame or LazyFrame, or Spark DataFrame
        Click log with ``session``, ``query``, ``doc``, ``position``, ``click``
        (a Spark DataFrame is aggregated on Spark, :mod:`clickrank.engine`).
    propensities : array-like or object with ``.theta``, optional
        ``theta[p - 1]``; without them ``exposure`` and ``ips`` use
        :math:`\theta = 1` (no correction). An estimate per context
        (:class:`clickrank.propensity.Propensities` with ``contexts``, from
        ``estimate_propensities(..., context=...)``) weighs each impression by its
        context's curve; the log must hold the context columns.
    clip : float, "auto" or None
        Clip the propensities at :math:`\tau` (weights at most
        :math:`1/\tau`); ``"auto"`` uses :func:`auto_clip` of the log's
        number of sessions.
    """
    needed = ("session", "query", "doc", "position", "click")
    # a zero propensity (a swap estimate without clicks at a position) is usable once clipped
    allow_zero = clip is not None
    theta = None if propensities is None else as_theta(propensities, allow_zero=allow_zero)
    contexts = None if theta is None else context_theta(propensities, allow_zero=allow_zero)
    by = ("position",) if contexts is None else ("position", *contexts.columns)
    lf, keys = prepare_log(data, log, (*needed, *by[1:]), None if theta is None else len(theta))
    n_sessions = n_unique(lf, "session")
    # integer counts per (query, doc, position[, context]) in polars, then the theta sums in
    # a fixed (row, position, context) order: the same bytes whatever polars' threading
    agg = per_doc(
        lf,
        keys,
        [pl.col("click").cast(pl.Int64).sum().alias("clicks"), pl.len().alias("shown")],
        "click log",
        by=by,
    )
    cell_context = None if contexts is None else contexts.index(agg)
    order = ["row", "position"] if contexts is None else ["row", "position", "_context"]
    if cell_context is not None:
        agg = agg.with_columns(_context=cell_context)
    agg = agg.sort(order)
    rows = agg["row"].to_numpy()
    pos = agg["position"].to_numpy().astype(np.int64)
    c = agg["clicks"].to_numpy().astype(np.float64)
    n = agg["shown"].to_numpy().astype(np.float64)
    size = data.n_docs
    stats = ClickStats(
        clicks=np.bincount(rows, weights=c, minlength=size),
        impressions=np.bincount(rows, weights=n, minlength=size),
        exposure=np.bincount(rows, weights=n, minlength=size),
        ips=np.bincount(rows, weights=c, minlength=size),
        sessions=_sessions_per_row(data, lf, keys),
        query_index=data.query_index,
        theta=theta,
        clip=None,
        n_sessions=n_sessions,
        cells=(rows, pos, c, n),
        contexts=contexts,
        cell_context=None if contexts is None else agg["_context"].to_numpy(),
    )
    if theta is None:  # theta = 1: exposure = impressions, ips = clicks
        return stats
    return stats.clipped(clip) if clip is not None else stats._weighted()
