"""The draws of a session: its query and its clicks (counter-based, :mod:`clickrank._core._random`).

:func:`sample_clicks` is the one click sampler of clickrank: :func:`~clickrank.simulation.simulate`
and the online experiments (:mod:`clickrank.online`) both draw clicks through it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba as nb
import numpy as np

from .._core._random import (
    STREAM_CLICK,
    STREAM_QUERY,
    _as_sessions,
    session_bernoulli,
    session_state,
    session_uniforms,
    stream_key,
    uniform_at,
)
from .._core._validation import InputError
from ..clickmodels.base import cell
from ..datasets import RankingData

#: Draw stream of the user-type uniform shared by the sessions of one user (:func:`sample_clicks`).
STREAM_USER = 223
# -- the steps on dense arrays -------------------------------------------------------


@nb.njit(cache=True, parallel=True)
def _uniform_pick(key: np.uint64, sessions: np.ndarray, table: np.ndarray, out) -> None:
    """``out = table[min(floor(u * n), n - 1)]`` with ``u`` the session's first draw."""
    n = table.shape[0]
    for i in nb.prange(sessions.shape[0]):
        j = np.int64(uniform_at(session_state(key, sessions[i]), 0) * n)
        out[i] = table[min(j, n - 1)]


def _sample_queries(seed: int, sessions: np.ndarray, sampler: tuple) -> np.ndarray:
    """Query index per session: uniform over ``sampler[1]`` or inverse CDF ``sampler[1]``."""
    kind, table = sampler
    if kind == "uniform":
        key = stream_key(seed, STREAM_QUERY)
        out = np.empty(len(sessions), dtype=np.int64)
        _uniform_pick(key, np.ascontiguousarray(sessions, dtype=np.uint64), table, out)
        return out
    u = session_uniforms(seed, sessions, 1, STREAM_QUERY)[:, 0]
    q = np.searchsorted(table, u, side="right")
    return np.minimum(q, len(table)).astype(np.int64)


# -- clicks ------------------------------------------------------------------------------

_MAX_GRADE = 1023  # larger or non-integer labels: click probabilities per chunk


@nb.njit(cache=True, parallel=True)
def _grade_bernoulli(
    key: np.uint64, sessions: np.ndarray, labels: np.ndarray, table: np.ndarray, step: int, out
) -> None:
    """Clicks ``out = u < table[g, k]`` for cells with whole label ``g`` (NaN: the last row).

    ``u`` is draw ``k * step`` of the session, as in
    :func:`clickrank._core._random.session_bernoulli`.
    """
    S, K = labels.shape
    for i in nb.prange(S):
        st = session_state(key, sessions[i])
        for k in range(K):
            out[i, k] = uniform_at(st, k * step) < cell(table, labels, i, k)


@nb.njit(cache=True)
def _top_grade(y: np.ndarray, max_grade: int) -> int:
    """The largest label if all are whole grades ``0..max_grade``, else -1 (one pass)."""
    top = -1
    for v in y:
        if not (0 <= v <= max_grade and v == np.floor(v)):
            return -1
        top = max(top, np.int64(v))
    return top


def _grade_grid(y: np.ndarray, K: int) -> np.ndarray | None:
    """Grades ``0..max(y)`` at every position plus a NaN row (empty slot), ``[grades + 1, K]``.

    None when the labels are not small whole grades: then the click
    probabilities are computed chunk by chunk.
    """
    hi = _top_grade(np.ascontiguousarray(y, dtype=np.float64), _MAX_GRADE)
    if hi < 0:
        return None
    grid = np.empty((hi + 2, K))
    grid[:-1] = np.arange(hi + 1, dtype=np.float64)[:, None]
    grid[-1] = np.nan
    return grid


def _grade_table(model: Any, y: np.ndarray, K: int) -> np.ndarray | None:
    """``P(click | grade g, position k)`` on :func:`_grade_grid`, or None.

    None also when the model rejects one of the grades (then, as in the
    generic path, an error is raised only if such a label is displayed).
    """
    grid = _grade_grid(y, K)
    if grid is None:
        return None
    try:
        table = np.asarray(model.click_probabilities(grid), dtype=np.float64)
    except InputError:
        return None
    return np.ascontiguousarray(table) if table.shape == grid.shape else None


def _grade_clicks(model: Any, y: np.ndarray, K: int, independent: bool):
    """The model's fused ``clicks(key, sessions, labels)`` for whole-grade labels, or None.

    Independent clicks compare each cell's draw with a grade table; a model
    with ``_grade_clicks(grid)`` (the cascade family, UBM) gives its own
    kernel, which reads its parameters from tables on the grid.
    """
    if independent:
        table, n_u = _grade_table(model, y, K), int(model.n_uniforms)
        if table is None:
            return None

        def clicks(key, sessions, labels):
            out = np.empty(labels.shape, dtype=np.bool_)
            _grade_bernoulli(key, sessions, labels, table, n_u, out)
            return out

        return clicks
    grid = _grade_grid(y, K) if hasattr(model, "_grade_clicks") else None
    if grid is None:
        return None
    try:
        return model._grade_clicks(grid)
    except InputError:
        return None


def _click_sampler(
    model: Any, y: np.ndarray, K: int, stream: int = STREAM_CLICK
) -> Callable[[int, np.ndarray, np.ndarray], np.ndarray]:
    """``clicks(seed, sessions, labels) -> bool [S, K]`` for ``model``.

    The generic path materializes the session uniforms ``[S, K, n_uniforms]``
    and calls ``model.sample``. The fused paths hash the uniforms inside one
    compiled pass with the model's logic, never materializing them, and for
    whole-grade labels read the model's parameters from tables evaluated once
    on a ``[grades + 1, K]`` grid (:func:`_grade_clicks`). A model with
    ``independent_clicks`` clicks cell by cell iff ``u[..., 0] <
    click_probabilities(labels)`` (:func:`clickrank._core._random.session_bernoulli`
    for other labels). Same draws, same arithmetic: the clicks are the same bits.
    """
    n_u = int(model.n_uniforms)
    independent = getattr(model, "independent_clicks", False) is True and n_u >= 1
    fused = _grade_clicks(model, y, K, independent)
    if fused is not None:

        def by_grade(seed: int, sessions: np.ndarray, labels: np.ndarray) -> np.ndarray:
            # the counters are uint64 (as in _random): an int64 array would hash differently
            return fused(stream_key(seed, stream), _as_sessions(sessions), labels)

        return by_grade
    if independent:

        def bernoulli(seed: int, sessions: np.ndarray, labels: np.ndarray) -> np.ndarray:
            p = model.click_probabilities(labels)
            return session_bernoulli(seed, sessions, p, stream, step=n_u)

        return bernoulli

    def generic(seed: int, sessions: np.ndarray, labels: np.ndarray) -> np.ndarray:
        u = session_uniforms(seed, sessions, K * n_u, stream)
        return np.asarray(model.sample(labels, u.reshape(len(sessions), K, n_u)))

    return generic


def sample_clicks(
    model: Any,
    labels: np.ndarray,
    sessions: np.ndarray,
    seed: int,
    *,
    stream: int = STREAM_CLICK,
    users: np.ndarray | None = None,
) -> np.ndarray:
    """Clicks of ``model`` on displayed lists: the draws :func:`simulate` makes.

    Session ``sessions[i]`` sees the true labels ``labels[i]`` (NaN: empty
    slot) at positions ``1..K``; its clicks use the counter-based uniforms of
    ``(seed, stream, sessions[i])`` only (:mod:`clickrank._core._random`), so the
    same session gets the same clicks in any batch, here, in :func:`simulate`
    (``stream`` = ``STREAM_CLICK``) and in :mod:`clickrank.online`, which
    draws its A/B arms from two streams.

    Parameters
    ----------
    model : click model
        With ``n_uniforms`` and ``sample(labels, u)``.
    labels : float array ``[S, K]``
    sessions : int array ``[S]``
        Session (impression) indices: the counters of the draws.
    seed, stream : int
        Seed and draw stream.
    users : int array ``[S]``, optional
        The user of each session. A model with users of several types
        (:class:`~clickrank.clickmodels.UserMixture`: ``user_types`` reads the
        type from the uniform ``u[:, 0, -1]``) then draws that uniform once per
        user (stream :data:`STREAM_USER`), so a user keeps her type across her
        sessions; other models ignore ``users``.

    Returns
    -------
    bool array ``[S, K]``
    """
    labels = np.asarray(labels, dtype=np.float64)
    S, K = labels.shape
    if users is not None and hasattr(model, "user_types"):
        n_u = int(model.n_uniforms)
        u = session_uniforms(seed, sessions, K * n_u, stream).reshape(S, K, n_u)
        u[:, 0, -1] = session_uniforms(seed, users, 1, STREAM_USER)[:, 0]
        return np.asarray(model.sample(labels, u))
    y = labels[np.isfinite(labels)]
    return _click_sampler(model, y, K, stream)(seed, sessions, labels)


def _query_sampler(data: RankingData, query_frequency: Any) -> tuple[str, np.ndarray]:
    """("uniform", query indices with documents) or ("cdf", cumulative weights)."""
    nonempty = (data.lengths > 0).astype(np.float64)
    if query_frequency is None:
        return "uniform", np.flatnonzero(nonempty).astype(np.int64)
    else:
        w = np.asarray(query_frequency, dtype=np.float64)
        if w.shape != (data.n_queries,):
            raise InputError(
                f"query_frequency must have one weight per query ({data.n_queries}), "
                f"got shape {w.shape}"
            )
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise InputError("query_frequency must hold finite non-negative weights")
        w = w * nonempty
    total = w.sum()
    if total <= 0:
        raise InputError("query_frequency gives no weight to any query with documents")
    cdf = np.cumsum(w) / total
    return "cdf", cdf[:-1]
