"""The click-model protocol and the checks every model shares."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numba as nb
import numpy as np

from .._validation import InputError

__all__ = ["ClickModel"]


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


@nb.njit(cache=True, inline="always")
def grade_rows(labels: np.ndarray, table: np.ndarray, out: np.ndarray) -> None:
    """``out[k] = table[g, k]`` for the whole grade ``g = labels[k]`` (NaN: the last row).

    The fused click kernels read a model's parameters from a table evaluated
    once on a ``[grades + 1, K]`` grid, instead of mapping every cell's label.
    """
    empty = table.shape[0] - 1
    for k in range(labels.shape[0]):
        y = labels[k]
        out[k] = table[empty if np.isnan(y) else np.int64(y), k]
