"""The click-model protocol and the checks every model shares."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numba as nb
import numpy as np

from .._core._random import session_state, uniform_at
from .._core._validation import InputError

__all__ = ["ClickModel", "cell"]


@runtime_checkable
class ClickModel(Protocol):
    """What the simulator needs from a click model.

    A click model turns the true labels of a displayed list into clicks.
    ``labels`` is a float matrix ``[S, K]`` of sessions by positions in
    displayed order (column ``j`` is position ``j + 1``); NaN marks an empty
    slot, which is never clicked.

    Attributes
    ----------
    n_uniforms : int
        Uniform draws consumed per displayed position by :meth:`sample`.
    independent_clicks : bool, optional
        Optional (absent means False). True promises that every cell is an
        independent Bernoulli draw whose probability depends only on that
        cell's label and position: ``sample(labels, u) == (u[..., 0] <
        click_probabilities(labels))``, with ``click_probabilities`` applied
        cell by cell. The simulator then compares the hashed uniforms with the
        probabilities in one pass, without materializing ``u``, and may
        evaluate ``click_probabilities`` once on a ``[grades, positions]``
        grid; the clicks are bit-identical. PBM, trust bias and the click
        matrix set it; cascade models (clicks depend on earlier positions) and
        mixtures (one user type per session) do not.
    """

    n_uniforms: int

    def click_probabilities(self, labels: np.ndarray) -> np.ndarray:
        """Exact marginal P(click at each position), float64 ``[S, K]``."""
        ...

    def sample(self, labels: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Clicks, bool ``[S, K]``, from uniforms ``u`` of shape ``[S, K, n_uniforms]``.

        Deterministic given ``(labels, u)``; row ``s`` of the result depends
        only on row ``s`` of the inputs, so chunking sessions changes nothing.
        """
        ...


def check_labels(labels: object, *, name: str = "labels") -> np.ndarray:
    """Return ``labels`` as a float64 ``[S, K]`` matrix; NaN (empty slot) allowed, inf not."""
    arr = np.asarray(labels)
    if arr.dtype.kind not in "fiub":
        raise InputError(f"{name} must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if arr.ndim != 2:
        raise InputError(
            f"{name} must be a 2-d matrix [sessions, positions], got shape {arr.shape}"
        )
    if arr.shape[1] == 0:
        raise InputError(f"{name} must have at least one position (column)")
    if np.isinf(arr).any():
        raise InputError(f"{name} must be finite or NaN (empty slot); found inf")
    return arr


def check_uniforms(u: object, labels: np.ndarray, n_uniforms: int) -> np.ndarray:
    """Return ``u`` as float64 ``[S, K, n_uniforms]`` matching ``labels``.

    The values are not scanned (that would cost a pass over the largest array
    of the simulation); they must lie in [0, 1) as the protocol states.
    """
    arr = np.asarray(u)
    if arr.dtype != np.float64:
        if arr.dtype.kind != "f":
            raise InputError(f"u must hold floats in [0, 1), got dtype {arr.dtype}")
        arr = arr.astype(np.float64)
    expected = (*labels.shape, n_uniforms)
    if arr.shape != expected:
        raise InputError(
            f"u must have shape [sessions, positions, n_uniforms] = {expected}, got {arr.shape}"
        )
    return arr


def check_probability_array(values: object, *, name: str) -> np.ndarray:
    """Return ``values`` as a float64 array with every entry in [0, 1]."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be an array of probabilities, got {values!r}") from None
    if arr.size == 0:
        raise InputError(f"{name} must not be empty")
    bad = ~((arr >= 0.0) & (arr <= 1.0))
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        where = idx[0] if len(idx) == 1 else idx
        raise InputError(
            f"{name} must hold probabilities in [0, 1]; entry {where} is {float(arr[idx]):g}"
        )
    return arr


# -- the two sources of a click kernel's inputs --------------------------------------------
# A click kernel runs either inside ``sample(labels, u)`` (parameters per cell, uniforms
# given) or fused into the simulation (parameters in tables over whole grades, uniforms
# hashed only when the user's path reads them). numba compiles each source separately and
# skips the other branch (``x is None`` on an argument is a constant), but types both, so
# the unused arguments keep their types: ``_NO_SESSIONS`` is the (key, sessions) of ``sample``.

_NO_SESSIONS = (np.uint64(0), np.zeros(0, dtype=np.uint64))


@nb.njit(cache=True)
def cell(values: np.ndarray, grades, s: int, k: int) -> float:
    """``values[s, k]``, or with ``grades`` (labels ``[S, K]``) ``values[g, k]`` for the
    whole grade ``g = grades[s, k]`` (NaN, an empty slot: the last row)."""
    # unsigned indices: numba drops its per-access check for negative (wrap-around) ones
    i, j = np.uint64(s), np.uint64(k)
    if grades is None:
        return values[i, j]
    y = grades[i, j]
    return values[np.uint64(values.shape[0] - 1) if np.isnan(y) else np.uint64(y), j]


@nb.njit(cache=True)
def draw(u, state: np.uint64, n_u: int, s: int, k: int, m: int) -> float:
    """Uniform ``m`` of cell ``(s, k)``: ``u[s, k, m]``, or with ``u`` None draw
    ``k * n_u + m`` of the session with ``state`` (:mod:`clickrank._core._random`),
    the same number ``session_uniforms(...).reshape(S, K, n_u)`` would hold."""
    if u is None:
        return uniform_at(state, k * n_u + m)
    return u[s, k, m]


@nb.njit(cache=True)
def state_of(u, key: np.uint64, sessions: np.ndarray, s: int) -> np.uint64:
    """The hashing state of session ``s`` when its uniforms are drawn lazily (``u`` None)."""
    if u is None:
        return session_state(key, sessions[s])
    return np.uint64(0)
