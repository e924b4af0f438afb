"""Confidence intervals that the estimators share (no imports from the package)."""

from __future__ import annotations

import numpy as np

__all__ = ["ratio_score_interval"]


def ratio_score_interval(
    c_num: np.ndarray, n_num: np.ndarray, c_den: np.ndarray, n_den: np.ndarray, z: float
) -> np.ndarray:
    r"""Score interval for the ratio :math:`\phi = p_1/p_0` of two independent binomial rates.

    The interval is :math:`\{\phi : Z(\phi)^2 \le z^2\}` with

    .. math::
        Z(\phi) = \frac{\hat p_1 - \phi\,\hat p_0}
        {\sqrt{\tilde p_1(1 - \tilde p_1)/n_1 + \phi^2\,\tilde p_0(1 - \tilde p_0)/n_0}},

    :math:`\tilde p_0, \tilde p_1 = \phi\tilde p_0` the maximum-likelihood
    rates under :math:`p_1 = \phi p_0` (the smaller root of
    :math:`\phi(n_1 + n_0)\,p^2 - (\phi n_1 + c_1 + n_0 + \phi c_0)\,p + c_1 + c_0`;
    Koopman (1984), Farrington & Manning (1990)). Unlike the delta method on
    :math:`\log\hat\phi`, whose standard error is computed at the estimate
    (and is smallest exactly when the estimate is too high), the variance is
    evaluated under each candidate ratio, so the interval keeps its level with
    a few dozen clicks. ``c_num = 0`` gives lower bound 0, ``c_den = 0`` upper
    bound inf. Bounds are found by bisection on :math:`\log\phi` (vectorized).

    Returns
    -------
    float array ``[..., 2]`` of (lower, upper); NaN where ``n_num`` or ``n_den`` is 0.
    """
    c1, n1, c0, n0 = (np.asarray(x, dtype=np.float64) for x in (c_num, n_num, c_den, n_den))
    c1, n1, c0, n0 = np.broadcast_arrays(c1, n1, c0, n0)
    z2 = float(z) ** 2
    ok = (n1 > 0) & (n0 > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        p1, p0 = c1 / n1, c0 / n0
        est = np.log(np.where((c1 > 0) & (c0 > 0), p1 / p0, np.where(c0 > 0, 1.0 / n0, n1)))
        # both sides at once: the counts repeated along a last axis of (lower, upper)
        c1, n1, c0, n0, p1, p0 = (
            np.repeat(x[..., None], 2, axis=-1) for x in (c1, n1, c0, n0, p1, p0)
        )
        n10, c10 = n1 + n0, c1 + c0  # the same sums at every step

        def excess(log_phi: np.ndarray) -> np.ndarray:
            """Z(phi)^2 - z^2 (decreasing towards the estimate on each side)."""
            phi = np.exp(log_phi)
            a = phi * n10
            b = -(phi * n1 + c1 + n0 + phi * c0)
            disc = np.sqrt(np.maximum(b * b - 4.0 * a * c10, 0.0))
            q0 = np.clip((-b - disc) / (2.0 * a), 0.0, 1.0)
            q1 = np.clip(phi * q0, 0.0, 1.0)
            var = q1 * (1 - q1) / n1 + phi * phi * q0 * (1 - q0) / n0
            return (p1 - phi * p0) ** 2 / var - z2

        inner = np.repeat(est[..., None], 2, axis=-1)  # Z^2 <= z^2 here
        outer = inner + np.array([-40.0, 40.0])  # and > z^2 here (where a bound exists)
        for _ in range(80):  # a loop over bisection steps, vectorized over positions and sides
            mid = 0.5 * (inner + outer)
            inside = excess(mid) <= 0
            inner = np.where(inside, mid, inner)
            outer = np.where(inside, outer, mid)
        out = np.exp(0.5 * (inner + outer))
        out[..., 0] = np.where(c1[..., 0] == 0, 0.0, out[..., 0])
        out[..., 1] = np.where(c0[..., 1] == 0, np.inf, out[..., 1])
    out[~ok] = np.nan
    return out
