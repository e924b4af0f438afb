"""Estimated propensities against the truth, one or several estimators."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .._core._figures import finish, new_axes
from .._core._validation import InputError, check_alpha
from ._common import _empty_check


def _named_estimates(propensities: Any) -> dict:
    """name -> Propensities from one, a sequence (named by method) or a mapping of them."""
    from ..propensity import Propensities

    if isinstance(propensities, Propensities):
        items = {propensities.method: propensities}
    elif isinstance(propensities, Mapping):
        items = dict(propensities)
    elif isinstance(propensities, Sequence) and not isinstance(propensities, str):
        items = {}
        for p in propensities:
            key = getattr(p, "method", str(len(items)))
            while key in items:
                key += "'"
            items[key] = p
    else:
        raise InputError(
            "propensities must be a Propensities, a sequence or a mapping of them, "
            f"got {type(propensities).__name__}"
        )
    return items


def _draw_estimate(ax, p: Any, name: str, offset: float, col: str, alpha: float) -> int:
    """One estimate with its band and error bars, dodged by ``offset``; returns its K."""
    ok = p.identified
    x = p.positions[ok] + offset
    ci = p.conf_int(alpha).select("lower", "upper").to_numpy()[ok]
    ax.fill_between(x, ci[:, 0], ci[:, 1], color=col, alpha=0.15, lw=0)
    ax.errorbar(
        x,
        p.theta[ok],
        yerr=[p.theta[ok] - ci[:, 0], ci[:, 1] - p.theta[ok]],
        fmt="none",
        lw=1.0,
        capsize=2,
        color=col,
    )
    ax.plot(
        x, p.theta[ok], "o-", ms=3.5, lw=1.2, color=col, label=f"{name} ({p.n_sessions:,} sessions)"
    )
    return p.K


def propensity_vs_truth(
    propensities: Any,
    true_theta: Any = None,
    *,
    alpha: float = 0.05,
    ax: Axes | None = None,
    path: str | os.PathLike | None = None,
) -> Figure:
    r"""Estimated propensities with confidence bands against position (log y), truth overlaid.

    One :class:`~clickrank.propensity.Propensities` is drawn by its own
    :meth:`~clickrank.propensity.Propensities.plot`. Several (a sequence, or a
    mapping name -> Propensities) are overlaid for a comparison of methods,
    each with its ``1 - alpha`` band and slightly dodged along x so the bands
    stay readable; the true curve is drawn normalized like each estimate
    (:math:`\theta_p/\theta_1` for relative estimates).

    Parameters
    ----------
    propensities : Propensities, sequence or mapping of them
    true_theta : array, optional
        True examination probabilities (simulations).
    alpha : float
    ax, path
        Axes to draw into; PNG file to write.
    """
    from ..propensity import Propensities

    alpha = check_alpha(alpha)
    items = _named_estimates(propensities)
    _empty_check(len(items), "propensity_vs_truth", "no estimates given")
    for name, p in items.items():
        if not isinstance(p, Propensities):
            raise InputError(f"propensities[{name!r}] is a {type(p).__name__}, not Propensities")
    if true_theta is not None:
        t = np.asarray(true_theta, dtype=np.float64)
        if t.ndim != 1 or t.size == 0 or not np.all(t > 0):
            raise InputError("true_theta must be a 1-d array of positive probabilities")
    fig, ax, own = new_axes(ax, (6.6, 4.3))
    if len(items) == 1:
        (p,) = items.values()
        p.plot(true_theta=true_theta, ax=ax, alpha=alpha)
        return finish(fig, path, own=own)

    m = len(items)
    width = 0.3
    offsets = np.linspace(-width / 2, width / 2, m)
    level = f"{100 * (1 - alpha):g}%"
    k_max = max(
        _draw_estimate(ax, p, name, offsets[i], f"C{i}", alpha)
        for i, (name, p) in enumerate(items.items())
    )
    if true_theta is not None:
        t = np.asarray(true_theta, dtype=np.float64)[:k_max]
        ax.plot(np.arange(1, t.size + 1), t / t[0], "k--", lw=1.5, label="true θ (θ₁ = 1)")
    ax.set_yscale("log")
    ax.set_xlabel("position (rank)")
    ax.set_ylabel("examination propensity θ (θ₁ = 1, log scale)")
    ax.set_xticks(np.arange(1, k_max + 1))
    ax.set_title(f"Position bias by estimator ({level} CI)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return finish(fig, path, own=own)
