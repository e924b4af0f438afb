"""RankNet vs LambdaRank forces on the documents of one query."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .._core._figures import finish, new_axes
from .._core._segments import rank_order
from .._core._validation import InputError


def forces(
    scores: Any = (2.5, 2.0, 1.5, 1.0, 0.5, 0.0),
    labels: Any = (0, 3, 1, 0, 2, 0),
    *,
    sigma: float = 1.0,
    normalize: bool = True,
    ax: Axes | None = None,
    path: str | os.PathLike | None = None,
) -> Figure:
    r"""RankNet vs LambdaRank forces on the documents of one query, in ranked order.

    Forces :math:`\lambda_i` (positive = pushed up) from
    :func:`clickrank.lambdas.lambdas` with gains :math:`2^y - 1`:
    ``weighting="none"`` (RankNet, every misordered pair counts the same) and
    ``"ndcg"`` (LambdaRank, each pair scaled by :math:`|\Delta\mathrm{NDCG}_{ij}|`;
    Burges (2010), §4). The defaults are the DESIGN §4 example: RankNet pushes
    hardest on the label-2 document at rank 5, LambdaRank on the label-3
    document at rank 2, where a move changes NDCG most.

    Parameters
    ----------
    scores, labels : array ``[n]``
        One query: current scores and graded labels (the documents are drawn in
        the order of the scores, descending, ties by row order).
    sigma : float
        Logistic steepness.
    normalize : bool
        Divide each method's forces by its largest absolute force so both fit one
        axis: RankNet's forces are an order of magnitude larger than LambdaRank's,
        and the comparison is of their *shapes*. The legend gives each method's
        largest :math:`|\lambda|` (the 1 of its bars), the one number that turns a
        bar back into a force. False draws the raw forces on one axis.
    """
    from ..lambdas import lambdas

    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    _check_query(s, y)
    qptr = np.array([0, s.size])
    gains = 2.0**y - 1.0
    order = rank_order(s, qptr)
    f_rn = lambdas(s, gains, qptr, sigma=sigma, weighting="none").forces[order]
    f_lr = lambdas(s, gains, qptr, sigma=sigma, weighting="ndcg").forces[order]
    yr = y[order]

    fig, ax, own = new_axes(ax, (max(6.0, 0.8 * s.size + 2), 4.3))
    x = np.arange(s.size)
    w = 0.38
    scale_rn = np.abs(f_rn).max() if normalize else 1.0
    scale_lr = np.abs(f_lr).max() if normalize else 1.0
    unit_rn = f"; 1 = {scale_rn:.3g}" if normalize else ""
    unit_lr = f"; 1 = {scale_lr:.3g}" if normalize else ""
    ax.bar(x - w / 2, f_rn / scale_rn, w, color="#7f7f7f",
           label=f"RankNet (all pairs equal{unit_rn})")  # fmt: skip
    ax.bar(x + w / 2, f_lr / scale_lr, w, color="#1f77b4",
           label=f"LambdaRank (pairs × |ΔNDCG|{unit_lr})")  # fmt: skip
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(x, [f"rank {r + 1}\nlabel {v:g}" for r, v in enumerate(yr)])
    ax.set_xlabel("documents in the current ranking (by score)")
    ax.set_ylabel(
        "force λᵢ / the method's max |λ| (+ = push up)" if normalize else "force λᵢ (+ = push up)"
    )
    if normalize:
        ax.set_ylim(-1.15, 1.5)
    ax.set_title(
        f"Forces on one query (σ = {sigma:g}; each method scaled to its largest force)"
        if normalize
        else f"Forces on one query (σ = {sigma:g})",
        fontsize=10,
    )
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", ncol=2)
    return finish(fig, path, own=own)


def _check_query(s: np.ndarray, y: np.ndarray) -> None:
    """Raise unless ``s``, ``y`` are one valid query: the validation step of :func:`forces`."""
    if s.ndim != 1 or y.shape != s.shape or s.size < 2:
        raise InputError(
            f"forces: scores and labels must be 1-d of the same length >= 2, got "
            f"shapes {s.shape} and {y.shape}"
        )
    if not (np.isfinite(s).all() and np.isfinite(y).all()) or np.any(y < 0):
        raise InputError("forces: scores must be finite and labels finite and >= 0")
    if np.unique(y).size < 2:
        raise InputError("forces: all labels are equal, so no pair has a force")
