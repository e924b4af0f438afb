r"""Position bias from logs without interventions: EM for the position-based model.

Wang et al. (2018), §4. Clicks follow
the PBM, :math:`P(C=1 \mid q, d, k) = \theta_k\,\gamma_{qd}`, with hidden
examination :math:`E` and relevance :math:`R` (:math:`C = E R`). EM on the
counts :math:`(c, n)` of every (query, doc, position) cell:

E-step, for the :math:`n - c` non-clicks of a cell

.. math::
    P(E=1, R=0 \mid C=0) = \frac{\theta_k(1-\gamma_{qd})}{1-\theta_k\gamma_{qd}},\qquad
    P(E=0, R=1 \mid C=0) = \frac{(1-\theta_k)\gamma_{qd}}{1-\theta_k\gamma_{qd}};

M-step (Eq. 3–4 of the paper, here aggregated over sessions)

.. math::
    \theta_k \leftarrow \frac{\sum_{qd} c_{qdk} + (n_{qdk}-c_{qdk})P(E=1,R=0\mid C=0)}
    {\sum_{qd} n_{qdk}}, \qquad
    \gamma_{qd} \leftarrow \frac{\sum_k c_{qdk} + (n_{qdk}-c_{qdk})P(E=0,R=1\mid C=0)}
    {\sum_k n_{qdk}}.

This is the maximum-likelihood fit of the PBM with one relevance per
(query, doc). The *regression* EM of the paper replaces the
:math:`\gamma` M-step by a regression on features, which shares strength
between sparse pairs; a click log carries no features, so this module fits
:math:`\gamma_{qd}` per pair (the paper's "standard EM").

Identification
    :math:`\theta` is identified only through (query, doc) pairs seen at
    several positions: in the bipartite graph of pairs and positions,
    position :math:`k` is identified relative to position 1 iff they are
    connected. If every pair is always shown at the same position (a
    deterministic logging ranker with fixed rankings), nothing is identified
    and :func:`em` raises :class:`EstimationError`; positions outside the
    component of position 1 are NaN and flagged. The overall scale is never
    identified (:math:`\theta c`, :math:`\gamma/c`), so θ is reported relative to θ₁.

Interval
    Session-level bootstrap (:func:`clickrank.propensity.bootstrap`), the
    percentile interval of :math:`\log\hat\theta`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from .._validation import EstimationError, InputError, check_non_negative
from ._harvest import cell_statistics
from ._result import Propensities
from ._stats import as_lazy, finish, resolve_K

__all__ = ["em", "em_from_cells", "identified_positions"]


def identified_positions(cells: dict[str, np.ndarray], K: int) -> np.ndarray:
    """Bool ``[K]``: positions connected to position 1 through shared (query, doc) pairs."""
    g, pos = cells["g"], cells["position"]
    keep = (pos <= K) & (cells["n"] > 0)
    g, pos = g[keep], pos[keep]
    if g.size == 0:
        return np.zeros(K, dtype=bool)
    G = int(g.max()) + 1
    adj = sparse.coo_matrix((np.ones(g.size), (pos - 1, K + g)), shape=(K + G, K + G))
    _, comp = connected_components(adj, directed=False)
    shown = np.zeros(K, dtype=bool)
    shown[np.unique(pos) - 1] = True
    return (comp[:K] == comp[0]) & shown & shown[0]


def em_from_cells(
    cells: dict[str, np.ndarray],
    *,
    K: int | None = None,
    max_iter: int = 2000,
    tol: float = 1e-9,
) -> Propensities:
    """Run the EM of the module docstring on :func:`~.harvest.cell_statistics` output.

    The returned ``se`` is NaN (EM gives no variance); use :func:`em` with
    ``n_boot`` or :func:`~clickrank.propensity.bootstrap` for intervals.
    """
    pos_all = cells["position"]
    if pos_all.size == 0:
        raise EstimationError("em: the log is empty")
    K = resolve_K(K, int(pos_all.max()), "em")
    keep = (pos_all <= K) & (cells["n"] > 0)
    g, pos, n, c = cells["g"][keep], pos_all[keep] - 1, cells["n"][keep], cells["c"][keep]
    ident = identified_positions(cells, K)
    n_multi = _n_multi_position(g)
    if n_multi == 0:
        raise EstimationError(
            "em: not identified: every (query, doc) pair is always shown at the same position, "
            "so position and relevance cannot be told apart (use randomization or swaps)"
        )
    G = int(g.max()) + 1
    n_pos = np.bincount(pos, n, minlength=K)
    n_g = np.bincount(g, n, minlength=G)
    c_pos = np.bincount(pos, c, minlength=K)
    if c_pos[0] == 0:
        raise EstimationError(
            "em: no clicks at position 1; theta relative to position 1 is not identified"
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = np.clip(np.where(n_pos > 0, c_pos / n_pos, 0) / (c_pos[0] / n_pos[0]), 1e-3, 1)
        gamma = np.clip(np.bincount(g, c, minlength=G) / n_g, 1e-6, 1 - 1e-6)
    nc = n - c
    has = n_pos > 0

    def step(x: np.ndarray) -> np.ndarray:
        """One EM update of the stacked parameters (theta [K], gamma [G])."""
        t, r = x[:K][pos], x[K:][g]
        denom = np.maximum(1.0 - t * r, 1e-12)
        with np.errstate(divide="ignore", invalid="ignore"):
            new_t = np.bincount(pos, c + nc * t * (1 - r) / denom, minlength=K) / n_pos
            new_r = np.bincount(g, c + nc * (1 - t) * r / denom, minlength=G) / n_g
        new_t = np.where(has, new_t, x[:K])
        return np.clip(np.r_[new_t, new_r], 1e-10, 1.0)

    # SQUAREM acceleration of EM (Varadhan & Roland (2008), scheme S3): plain EM for the
    # PBM crawls when clicks are sparse; SQUAREM keeps EM's fixed point and monotonicity
    # safeguard (a final EM step) at a fraction of the iterations.
    x = np.r_[theta, gamma]
    warns: list[str] = []
    converged = False
    change = np.inf
    iterations = 0
    for iterations in range(1, int(max_iter) + 1):  # noqa: B007  # iterations; each is vectorized over cells
        x1 = step(x)
        x2 = step(x1)
        r_ = x1 - x
        v_ = x2 - x1 - r_
        nv = np.sqrt((v_ * v_).sum())
        alpha = -np.sqrt((r_ * r_).sum()) / nv if nv > 0 else -1.0
        alpha = min(alpha, -1.0)
        x_new = step(np.clip(x - 2 * alpha * r_ + alpha * alpha * v_, 1e-10, 1.0))
        lt_new, lt = np.log(x_new[:K][has]), np.log(x[:K][has])
        change = float(np.max(np.abs((lt_new - lt_new[0]) - (lt - lt[0]))))
        x = x_new
        if change < tol:
            converged = True
            break
    theta = x[:K]
    if not converged:
        warns.append(f"em: not converged after {max_iter} iterations (last change {change:.2e})")
    out = theta / theta[0]
    reasons = {
        p + 1: "no chain of (query, doc) pairs shown at several positions links it to position 1"
        for p in np.flatnonzero(~ident)
        if p > 0
    }
    return finish(
        out,
        np.full(K, np.nan),
        n_pos,
        method="em",
        n_sessions=round(cells["n_sessions"]),
        reasons=reasons,
        warnings=warns,
        info={
            "iterations": iterations,
            "converged": converged,
            "theta_1_absolute": float(theta[0]),
            "n_query_doc_pairs": G,
            "n_multi_position_pairs": n_multi,
            "reference": "Wang, Golbandi, Bendersky, Metzler & Najork, WSDM 2018, sec. 4",
        },
    )


def _n_multi_position(g: np.ndarray) -> int:
    """Number of (query, doc) pairs with cells at two or more positions."""
    if g.size == 0:
        return 0
    counts = np.bincount(g)
    return int((counts >= 2).sum())


def em(
    log: Any,
    *,
    K: int | None = None,
    n_boot: int = 100,
    seed: int = 0,
    max_iter: int = 2000,
    tol: float = 1e-9,
    progress: Callable[[int], None] | None = None,
) -> Propensities:
    r"""EM estimate of PBM position bias from a log without interventions (Wang et al. (2018)).

    Parameters
    ----------
    log : polars DataFrame, LazyFrame or parquet path
        Click log with ``session``, ``query``, ``doc``, ``position``, ``click``.
    K : int, optional
        Positions to estimate (default: all positions in the log).
    n_boot : int
        Session-bootstrap replicates for the intervals (0: point estimate only,
        NaN standard errors).
    seed : int
        Seed of the bootstrap.
    max_iter, tol : int, float
        EM stops when the largest change of log θ is below ``tol``.
    progress : callable, optional
        Called with 1 after each bootstrap replicate.

    Returns
    -------
    Propensities
        θ relative to position 1; percentile intervals from ``n_boot`` replicates.

    Raises
    ------
    EstimationError
        When θ is not identified (see the module docstring).

    Notes
    -----
    Clicks follow :math:`P(C = 1 \mid q, d, k) = \theta_k \gamma_{qd}` with hidden
    examination and relevance. On the counts :math:`(c_{qdk}, n_{qdk})` of every
    (query, doc, position) cell, EM alternates (Wang et al. (2018), §4, Eq. 3–4)

    .. math::
        \theta_k \leftarrow \frac{\sum_{qd} c_{qdk} + (n_{qdk} - c_{qdk})
              \frac{\theta_k (1 - \gamma_{qd})}{1 - \theta_k \gamma_{qd}}}{\sum_{qd} n_{qdk}},
        \qquad
        \gamma_{qd} \leftarrow \frac{\sum_k c_{qdk} + (n_{qdk} - c_{qdk})
              \frac{(1 - \theta_k) \gamma_{qd}}{1 - \theta_k \gamma_{qd}}}{\sum_k n_{qdk}},

    the maximum-likelihood fit of the PBM with one relevance per (query, doc).
    θ is reported relative to θ₁; the interval is the percentile interval of a
    session bootstrap.
    """
    if K is not None and (not isinstance(K, int | np.integer) or K < 2):
        raise InputError(f"K must be an integer >= 2, got {K!r}")
    n_boot = int(check_non_negative(n_boot, name="n_boot", integer=True))
    lf = as_lazy(log)
    if n_boot == 0:
        return em_from_cells(cell_statistics(lf), K=K, max_iter=max_iter, tol=tol)
    from ._bootstrap import bootstrap

    return bootstrap(
        "em", lf, n=n_boot, seed=seed, K=K, max_iter=max_iter, tol=tol, progress=progress
    )
