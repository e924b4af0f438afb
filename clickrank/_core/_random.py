r"""Counter-based random numbers: a session's draws depend only on (seed, session, stream).

Simulated click logs must not depend on how the sessions are chunked. A
sequential generator (``numpy.random.Generator``) cannot give that: the draws
of session 1,000,001 depend on how many numbers the first million sessions
consumed. Here every draw is a pure function of a key and a counter,

.. math::
    u(\text{seed}, \text{stream}, s, j)
      = 2^{-53} \left\lfloor h\big(h(k_{\text{stream}} \oplus h(s)) + (j + 1)\,\phi\big)
        / 2^{11} \right\rfloor \in [0, 1),

where :math:`k_{\text{stream}}` is a 64-bit key drawn from
``numpy.random.SeedSequence(seed, spawn_key=(stream,))``, :math:`s` the session
index, :math:`j` the draw index inside the session, :math:`\phi` the 64-bit
golden-ratio constant and :math:`h` the SplitMix64 finalizer (Steele et al.
(2014); the variant-13 mixing constants of Stafford (2011)). Hashing a counter with a
strong bijective mixer is the construction of counter-based generators
(Salmon et al. (2011)).
The top 53 bits of the hash give a double in [0, 1) with every value a
multiple of :math:`2^{-53}`.

Streams separate independent uses (query choice, policy noise, interventions,
clicks), so adding draws to one use never shifts another.
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np

from ._validation import InputError

__all__ = [
    "STREAM_QUERY",
    "STREAM_POLICY",
    "STREAM_INTERVENTION",
    "STREAM_INTERVENTION_DETAIL",
    "STREAM_CLICK",
    "STREAM_BOOTSTRAP",
    "stream_key",
    "session_buckets",
    "session_uniforms",
    "session_integers",
    "session_bernoulli",
]

# Stream numbers used by clickrank.simulation and clickrank.policies.
STREAM_QUERY = 1
STREAM_POLICY = 2  # mixtures derive 64 * stream (choice) and 64 * stream + 1 + i (parts)
STREAM_INTERVENTION = 101
STREAM_INTERVENTION_DETAIL = 102
STREAM_CLICK = 103
STREAM_BOOTSTRAP = 201  # clickrank.propensity.bootstrap: the bucket of each session

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_TWO_M53 = 1.0 / 9007199254740992.0  # 2 ** -53


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or int(seed) < 0:
        raise InputError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def stream_key(seed: int, stream: int) -> np.uint64:
    """64-bit key of ``stream`` under ``seed`` (from :class:`numpy.random.SeedSequence`)."""
    seed = _check_seed(seed)
    if isinstance(stream, bool) or not isinstance(stream, (int, np.integer)) or stream < 0:
        raise InputError(f"stream must be a non-negative integer, got {stream!r}")
    ss = np.random.SeedSequence(seed, spawn_key=(int(stream),))
    return ss.generate_state(1, dtype=np.uint64)[0]


@nb.njit(cache=True, inline="always")
def _mix(z: np.uint64) -> np.uint64:
    """SplitMix64 finalizer (a bijection of 64-bit integers)."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@nb.njit(cache=True, inline="always")
def session_state(key: np.uint64, session: np.uint64) -> np.uint64:
    """Per-session state from which the session's draws are hashed."""
    return _mix(key ^ _mix(session + _GOLDEN))


@nb.njit(cache=True, inline="always")
def uniform_at(state: np.uint64, j: np.int64) -> float:
    """Draw ``j`` (0-based) of a session with state ``state``, a double in [0, 1)."""
    z = _mix(state + np.uint64(j + 1) * _GOLDEN)
    return np.float64(z >> _S11) * _TWO_M53


# The kernels run over sessions on numba's threads and write into arrays numpy allocates:
# numpy advises the kernel to back large buffers with huge pages, which threads fault in
# far faster than the 4 KiB pages of numba's own allocations.


@nb.njit(cache=True, parallel=True)
def _buckets_kernel(key: np.uint64, sessions: np.ndarray, buckets: np.uint64, out) -> None:
    for i in nb.prange(sessions.shape[0]):
        out[i] = np.uint32(session_state(key, sessions[i]) % buckets)


def session_buckets(seed: int, sessions: Any, buckets: int, stream: int) -> np.ndarray:
    """Bucket ``0..buckets-1`` of each session: its :func:`session_state` modulo ``buckets``.

    A function of (seed, stream, session) only, so every row of a session gets
    the same bucket wherever it is read, and sessions fall into buckets
    independently and (up to 2^-64) uniformly.
    """
    if isinstance(buckets, bool) or not isinstance(buckets, (int, np.integer)) or buckets < 1:
        raise InputError(f"buckets must be a positive integer, got {buckets!r}")
    s = _as_sessions(sessions)
    out = np.empty(s.shape[0], dtype=np.uint32)
    _buckets_kernel(stream_key(seed, stream), s, np.uint64(buckets), out)
    return out


@nb.njit(cache=True, parallel=True)
def _uniforms_kernel(key: np.uint64, sessions: np.ndarray, offset: int, out) -> None:
    n = out.shape[1]
    for i in nb.prange(sessions.shape[0]):
        st = session_state(key, sessions[i])
        for j in range(n):
            out[i, j] = uniform_at(st, offset + j)


@nb.njit(cache=True, parallel=True)
def _bernoulli_kernel(
    key: np.uint64, sessions: np.ndarray, p: np.ndarray, step: int, offset: int, out
) -> None:
    S, K = p.shape
    for i in nb.prange(S):
        st = session_state(key, sessions[i])
        for k in range(K):
            out[i, k] = uniform_at(st, offset + k * step) < p[i, k]


def _as_sessions(sessions: Any) -> np.ndarray:
    arr = np.asarray(sessions)
    if arr.ndim != 1:
        raise InputError(f"sessions must be a 1-d array of session indices, got shape {arr.shape}")
    if arr.dtype.kind == "i":
        if arr.size and arr.min() < 0:
            raise InputError("sessions must be non-negative session indices")
    elif arr.dtype.kind != "u":
        raise InputError(f"sessions must hold integers, got dtype {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=np.uint64)


def session_uniforms(
    seed: int, sessions: Any, n: int, stream: int, *, offset: int = 0
) -> np.ndarray:
    """Uniform doubles in [0, 1) that depend only on (seed, session, stream, draw).

    Parameters
    ----------
    seed : int
        Non-negative seed of the whole simulation.
    sessions : array of int ``[S]``
        Session indices (any order, repeats allowed).
    n : int
        Draws per session.
    stream : int
        Stream number; different streams are independent.
    offset : int
        Index of the first draw, so ``session_uniforms(..., n=a+b)[:, a:]`` equals
        ``session_uniforms(..., n=b, offset=a)``.

    Returns
    -------
    numpy.ndarray
        float64 ``[S, n]``; row ``i`` is the same whatever other sessions are
        in ``sessions``.

    Examples
    --------
    >>> u = session_uniforms(0, [5, 6], 3, stream=1)
    >>> bool((session_uniforms(0, [6], 3, stream=1) == u[1]).all())
    True
    """
    n = int(n)
    if n < 0:
        raise InputError(f"n must be >= 0, got {n}")
    s = _as_sessions(sessions)
    out = np.empty((s.shape[0], n), dtype=np.float64)
    _uniforms_kernel(stream_key(seed, stream), s, int(offset), out)
    return out


def session_integers(
    seed: int, sessions: Any, high: Any, stream: int, *, n: int = 1, offset: int = 0
) -> np.ndarray:
    """Integers uniform on ``0..high-1`` per session (``floor(u * high)``).

    ``high`` is a scalar or one bound per session (``[S]``). With 53-bit
    uniforms the bias of ``floor(u * high)`` is below ``high / 2**53``,
    negligible for any list or query count.

    Returns
    -------
    numpy.ndarray
        int64 ``[S, n]``.
    """
    h = np.asarray(high, dtype=np.int64)
    if np.any(h < 1):
        raise InputError("high must be >= 1")
    u = session_uniforms(seed, sessions, n, stream, offset=offset)
    if h.ndim == 1:
        h = h[:, None]
    return np.minimum(np.floor(u * h).astype(np.int64), h - 1)


def session_bernoulli(
    seed: int, sessions: Any, p: Any, stream: int, *, step: int = 1, offset: int = 0
) -> np.ndarray:
    """Bernoulli draws ``u < p`` from the session uniforms, without materializing ``u``.

    Cell ``[i, k]`` compares draw ``offset + k * step`` of session
    ``sessions[i]`` with ``p[i, k]``, so the result equals, bit for bit,
    ``session_uniforms(seed, sessions, K * step, stream, offset=offset)[:, ::step] < p``
    while hashing and comparing in one pass (no ``[S, K * step]`` array).

    Parameters
    ----------
    seed, sessions, stream
        As in :func:`session_uniforms`.
    p : array ``[S, K]``
        Success probabilities (values outside [0, 1] act as 0 or 1).
    step : int
        Draws per column (a click model's ``n_uniforms``); column ``k`` uses the
        first draw of its block of ``step``.
    offset : int
        Index of the first draw.

    Returns
    -------
    numpy.ndarray
        bool ``[S, K]``.

    Examples
    --------
    >>> p = np.full((2, 3), 0.5)
    >>> b = session_bernoulli(0, [5, 6], p, stream=1, step=2)
    >>> bool((b == (session_uniforms(0, [5, 6], 6, stream=1)[:, ::2] < p)).all())
    True
    """
    s = _as_sessions(sessions)
    prob = np.ascontiguousarray(p, dtype=np.float64)
    if prob.ndim != 2 or prob.shape[0] != s.shape[0]:
        raise InputError(
            f"p must be a matrix [sessions, columns] with {s.shape[0]} rows, got shape {prob.shape}"
        )
    step = int(step)
    if step < 1:
        raise InputError(f"step must be >= 1, got {step}")
    out = np.empty(prob.shape, dtype=np.bool_)
    _bernoulli_kernel(stream_key(seed, stream), s, prob, step, int(offset), out)
    return out
