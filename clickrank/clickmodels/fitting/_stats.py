r"""Numerical helpers of the click-model fits: accelerated EM and block standard errors.

EM acceleration
    SQUAREM (Varadhan & Roland (2008), scheme S3): from :math:`x`, two EM steps
    give :math:`r = F(x) - x` and :math:`v = F(F(x)) - 2F(x) + x`; the
    extrapolated point :math:`x - 2a r + a^2 v` with
    :math:`a = -\lVert r\rVert/\lVert v\rVert` (at most -1) is followed by one
    more EM step, and is kept only if the log-likelihood did not decrease
    (otherwise the plain EM point :math:`F(F(x))` is kept), so the iteration
    stays monotone and has EM's fixed points.

Standard errors
    Every model here has a few *global* parameters (examination per rank,
    perseverance, continuation) and one or two parameters per (query, doc)
    pair. With the information matrix in blocks, :math:`A` (global × global),
    :math:`B_g` (global × pair :math:`g`) and :math:`D_g` (pair × pair), and
    the pair–pair blocks of different pairs neglected (exact for the
    position-based models, whose pairs interact only through the global
    parameters),

    .. math::
        V_{\text{global}} = \Bigl(A - \sum_g B_g D_g^{-1} B_g^\top\Bigr)^{-1}, \qquad
        V_g = D_g^{-1} + D_g^{-1} B_g^\top V_{\text{global}} B_g D_g^{-1}

    (the inverse of a bordered block matrix by the Schur complement).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["squarem", "block_covariance"]


def squarem(
    step: Callable[[np.ndarray], tuple[np.ndarray, float]],
    x: np.ndarray,
    *,
    lower: np.ndarray | float,
    upper: np.ndarray | float,
    max_iter: int,
    tol: float,
    rel_tol: float = 0.0,
    accelerate: bool = True,
) -> tuple[np.ndarray, int, bool, float]:
    """EM from ``x`` (SQUAREM-accelerated unless ``accelerate`` is False).

    ``step(x)`` returns one EM update of the stacked parameter vector and the
    log-likelihood (or penalized objective) *at* ``x``. The extrapolated point
    is kept only if its objective is at least that of the first EM step,
    which keeps the iteration monotone. Stops when no coordinate moves by
    more than ``tol``, or when an iteration raised the objective by less than
    ``rel_tol`` times its magnitude. Returns ``(x, iterations, converged, objective)``.
    """
    ll = prev = -np.inf
    for it in range(1, int(max_iter) + 1):
        x1, ll = step(x)
        if rel_tol > 0 and np.isfinite(prev) and 0 <= ll - prev < rel_tol * abs(ll):
            return x, it, True, ll
        prev = ll
        if not accelerate:
            new = x1
        else:
            x2, ll1 = step(x1)
            r = x1 - x
            v = x2 - x1 - r
            nv = float(np.sqrt(v @ v))
            a = min(-float(np.sqrt(r @ r)) / nv, -1.0) if nv > 0 else -1.0
            xe = np.clip(x - 2 * a * r + a * a * v, lower, upper)
            xa, lle = step(xe)
            new = xa if np.isfinite(lle) and lle >= ll1 - 1e-12 * abs(ll1) else x2
        change = float(np.max(np.abs(new - x))) if x.size else 0.0
        x = new
        if change < tol:
            return x, it, True, ll
    return x, int(max_iter), False, ll


def block_covariance(A: np.ndarray, B: np.ndarray, D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Covariances from the blocks of an information matrix (module docstring).

    Parameters
    ----------
    A : float ``[P, P]``
        Global × global information.
    B : float ``[G, P, m]``
        Global × pair information, per pair.
    D : float ``[G, m, m]``
        Pair × pair information, per pair.

    Returns
    -------
    (V_global ``[P, P]``, V_pair ``[G, m, m]``)
        NaN for pairs whose block is singular (no information, or an
        estimate on the boundary): they are left out of the Schur complement.
    """
    m = D.shape[1]
    P = A.shape[0]
    det_ok = np.isfinite(D).all(axis=(1, 2))
    Dinv = np.full_like(D, np.nan)
    if m == 1:
        ok = det_ok & (D[:, 0, 0] > 0)
        Dinv[ok, 0, 0] = 1.0 / D[ok, 0, 0]
    else:
        det = D[:, 0, 0] * D[:, 1, 1] - D[:, 0, 1] * D[:, 1, 0]
        scale = np.abs(D[:, 0, 0] * D[:, 1, 1])
        ok = det_ok & (det > 1e-12 * scale) & (D[:, 0, 0] > 0) & (D[:, 1, 1] > 0)
        Dinv[ok, 0, 0] = D[ok, 1, 1] / det[ok]
        Dinv[ok, 1, 1] = D[ok, 0, 0] / det[ok]
        Dinv[ok, 0, 1] = -D[ok, 0, 1] / det[ok]
        Dinv[ok, 1, 0] = -D[ok, 1, 0] / det[ok]
    if P == 0:
        return np.zeros((0, 0)), Dinv
    Bok = np.where(np.isfinite(B), B, 0.0)[ok]
    BD = np.einsum("gpm,gmn->gpn", Bok, Dinv[ok])  # B_g D_g^-1
    schur = A - np.einsum("gpn,gqn->pq", BD, Bok)  # A - sum B D^-1 B^T
    try:
        Vg = np.linalg.inv(schur)
    except np.linalg.LinAlgError:
        Vg = np.linalg.pinv(schur)
    Vp = Dinv.copy()
    Vp[ok] += np.einsum("gpm,pq,gqn->gmn", BD, Vg, BD)
    return Vg, Vp
