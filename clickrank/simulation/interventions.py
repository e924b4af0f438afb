"""Randomized interventions on the displayed lists: Swap, RandPair, Randomize, FairPairs.

See :mod:`clickrank.simulation` for what each does and the papers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core._random import (
    STREAM_INTERVENTION,
    STREAM_INTERVENTION_DETAIL,
    session_uniforms,
)
from .._core._validation import InputError, check_fraction, check_positive

INTERVENTION_CATEGORIES = ("none", "swap", "randpair", "randomized", "fairpairs")


@dataclass(frozen=True)
class Intervention:
    """Base of the randomized interventions; ``fraction`` of sessions receive it."""

    fraction: float

    label = "none"

    def _check(self, top_k: int) -> None:
        check_fraction(self.fraction, name=f"{type(self).__name__}.fraction")


@dataclass(frozen=True)
class Swap(Intervention):
    """Swap ranks 1 and ``k`` (Joachims et al. (2017), §5.3).

    Parameters
    ----------
    fraction : float
        Share of sessions swapped, in [0, 1].
    k : int, optional
        The rank swapped with rank 1 (2..top_k). None draws ``k`` uniformly
        from 2..n per session, ``n`` the number of displayed results.
        A session showing fewer than ``k`` results is left unswapped and
        recorded as ``none``.
    """

    k: int | None = None
    label = "swap"

    def _check(self, top_k: int) -> None:
        super()._check(top_k)
        if self.k is not None:
            k = check_positive(self.k, name="Swap.k", integer=True)
            if not 2 <= k <= top_k:
                raise InputError(f"Swap.k must be in 2..top_k={top_k}, got {self.k}")


@dataclass(frozen=True)
class RandPair(Intervention):
    """Swap the result at rank ``pivot`` with one at a uniformly chosen other rank.

    RandPair of Wang et al. (2018), §4. With ``pivot=None`` both ranks of
    the pair are random (a uniformly chosen unordered pair of the displayed
    ranks). Sessions with fewer than two results (or than ``pivot``) are left
    unchanged and recorded as ``none``.
    """

    pivot: int | None = 1
    label = "randpair"

    def _check(self, top_k: int) -> None:
        super()._check(top_k)
        if self.pivot is not None:
            p = check_positive(self.pivot, name="RandPair.pivot", integer=True)
            if p > top_k:
                raise InputError(f"RandPair.pivot must be in 1..top_k={top_k}, got {self.pivot}")


@dataclass(frozen=True)
class Randomize(Intervention):
    """Shuffle the top ``k`` results uniformly (all ``k!`` orders equally likely).

    ``k=None`` shuffles every displayed result (the whole top ``K``).
    """

    k: int | None = None
    label = "randomized"

    def _check(self, top_k: int) -> None:
        super()._check(top_k)
        if self.k is not None:
            k = check_positive(self.k, name="Randomize.k", integer=True)
            if not 2 <= k <= top_k:
                raise InputError(f"Randomize.k must be in 2..top_k={top_k}, got {self.k}")


@dataclass(frozen=True)
class FairPairs(Intervention):
    r"""FairPairs: swap adjacent pairs of results at random (Radlinski & Joachims (2006)).

    In a FairPairs session the displayed ranks are paired from rank 1,
    ``(1,2), (3,4), ...``, or from rank 2, ``(2,3), (4,5), ...``, each with
    probability 1/2 (an odd last rank, and rank 1 when starting at 2, stay
    unpaired); then every pair is swapped independently with probability
    1/2. Each result moves by at most one rank, so the presented ranking
    stays close to the logging policy's ("minimally invasive").

    Within a pair, each of the two documents is on top equally often. If
    whether a user examines and clicks within a pair depends on the pair's
    ranks but not on which document is on top, the preference "lower clicked,
    upper not clicked" is then as likely to favour either document for equal
    relevance, and favours the more relevant one otherwise: it carries no
    presentation bias (Radlinski & Joachims (2006)). The preferences are
    extracted by :func:`clickrank.targets.fair_pairs`.

    Parameters
    ----------
    fraction : float
        Share of sessions receiving FairPairs, in [0, 1]. A session whose
        drawn pairing has no complete pair (one result, or two results with
        pairing from rank 2) is left unchanged and recorded as ``none``.

    Notes
    -----
    Logged as intervention ``"fairpairs"`` with ``swap_pivot`` = the first
    paired rank (1 or 2) and ``swap_k`` = the lower rank of the last
    complete pair, so the pairs are ``(r, r + 1)``, ``r = swap_pivot,
    swap_pivot + 2, ...``, ``r + 1 <= swap_k``. Which pairs were swapped is
    not needed to extract the preferences and is not recorded.
    """

    label = "fairpairs"


def _fair_pairs_permutation(n: np.ndarray, d: np.ndarray, K: int) -> tuple[np.ndarray, ...]:
    """Column permutation ``[m, K]`` of FairPairs, its first paired rank and last paired rank.

    ``d`` holds the session's detail uniforms: ``d[:, 0]`` picks the start
    (rank 1 or 2), ``d[:, 1 + i]`` decides whether the pair whose upper rank
    is ``i + 1`` is swapped.
    """
    start = 1 + (d[:, 0] >= 0.5).astype(np.int64)  # 1 or 2, probability 1/2 each
    last = start + 2 * ((n - start + 1) // 2) - 1  # lower rank of the last complete pair
    upper = np.arange(1, K)[None, :]  # candidate upper ranks 1..K-1
    is_pair = (upper >= start[:, None]) & ((upper - start[:, None]) % 2 == 0)
    is_pair &= upper + 1 <= last[:, None]
    flip = is_pair & (d[:, 1:K] < 0.5)
    perm = np.broadcast_to(np.arange(K), (len(n), K)).copy()
    perm[:, :-1] += flip  # the upper slot takes the lower result
    perm[:, 1:] -= flip  # and the lower slot the upper one
    return perm, start, last


def _as_interventions(interventions: Any, top_k: int) -> list[Intervention]:
    if interventions is None:
        return []
    if isinstance(interventions, Intervention):
        interventions = [interventions]
    items = list(interventions)
    for it in items:
        if not isinstance(it, Intervention) or type(it) is Intervention:
            raise InputError(
                f"interventions must be Swap, RandPair, Randomize or FairPairs objects, got {it!r}"
            )
        it._check(top_k)
    total = sum(float(it.fraction) for it in items)
    if total > 1 + 1e-12:
        raise InputError(f"intervention fractions must sum to at most 1, got {total:g}")
    return items


def _apply_interventions(
    items: list[Intervention],
    labels: np.ndarray,
    ids: np.ndarray,
    seed: int,
    sessions: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Permute the displayed cells of the intervened sessions in place.

    ``labels`` ``[S, K]`` (NaN: empty slot, as data labels are finite) and
    ``ids`` ``[S, K]`` (what each cell shows) are permuted alike, which is the
    same as permuting the lists before looking up their cells. Returns the
    intervention codes, ``swap_pivot`` and ``swap_k`` per session.
    """
    S, K = labels.shape
    code = np.zeros(S, dtype=np.uint8)
    pivot = np.zeros(S, dtype=np.uint16)
    swap_k = np.zeros(S, dtype=np.uint16)
    if not items:
        return code, pivot, swap_k
    v = session_uniforms(seed, sessions, 1, STREAM_INTERVENTION)[:, 0]
    bounds = np.cumsum([float(it.fraction) for it in items])
    which = np.searchsorted(bounds, v, side="right")  # == len(items) -> none
    n_shown = (~np.isnan(labels)).sum(axis=1)
    arange = np.arange(K)
    for i, it in enumerate(items):  # a loop over intervention kinds, not sessions
        idx = np.flatnonzero(which == i)
        if idx.size == 0:
            continue
        n = n_shown[idx]
        d = session_uniforms(seed, sessions[idx], K + 2, STREAM_INTERVENTION_DETAIL)
        cat = np.uint8(INTERVENTION_CATEGORIES.index(it.label))
        if isinstance(it, Randomize):
            m = n if it.k is None else np.minimum(n, int(it.k))
            ok = m >= 2
            keys = np.where(arange[None, :] < m[:, None], d[:, :K], arange[None, :] + 2.0)
            perm = np.argsort(keys, axis=1, kind="stable")
            _permute(idx, perm, labels, ids)
            code[idx[ok]] = cat
            continue
        if isinstance(it, FairPairs):
            perm, start, last = _fair_pairs_permutation(n, d, K)
            ok = last > start  # at least one complete pair
            _permute(idx, perm, labels, ids)
            code[idx[ok]] = cat
            pivot[idx[ok]] = start[ok]
            swap_k[idx[ok]] = last[ok]
            continue
        if isinstance(it, Swap):
            a = np.ones(idx.size, dtype=np.int64)
            if it.k is None:
                b = 2 + np.floor(d[:, 0] * (n - 1)).astype(np.int64)
                ok = n >= 2
            else:
                b = np.full(idx.size, int(it.k), dtype=np.int64)
                ok = n >= int(it.k)
        else:  # RandPair
            if it.pivot is None:
                a = 1 + np.floor(d[:, 0] * n).astype(np.int64)
                ok = n >= 2
            else:
                a = np.full(idx.size, int(it.pivot), dtype=np.int64)
                ok = n >= max(2, int(it.pivot))
            other = 1 + np.floor(d[:, 1] * (n - 1)).astype(np.int64)  # 1..n-1
            b = other + (other >= a)  # skip the pivot: uniform over the other ranks
            a, b = np.minimum(a, b), np.maximum(a, b)
        b = np.minimum(b, np.maximum(n, 1))  # only matters where not ok
        sel = idx[ok]
        a0, b0 = a[ok] - 1, b[ok] - 1
        for cells in (labels, ids):
            ra = cells[sel, a0].copy()
            cells[sel, a0] = cells[sel, b0]
            cells[sel, b0] = ra
        code[sel] = cat
        pivot[sel] = a[ok]
        swap_k[sel] = b[ok]
    return code, pivot, swap_k


def _permute(idx: np.ndarray, perm: np.ndarray, *cells: np.ndarray) -> None:
    """``cells[idx] = cells[idx][perm]`` row by row, for each array of ``cells``."""
    for a in cells:
        a[idx] = np.take_along_axis(a[idx], perm, axis=1)
