r"""Logging policies: which documents a simulated search engine shows, in which order.

A logging policy turns a batch of sessions (query indices and session ids)
into the displayed top-``K`` lists, ``rows[S, K]`` (row indices into the
:class:`~clickrank.datasets.RankingData`, ``-1`` for empty slots when a query
has fewer than ``K`` documents), and the name of the ranker that produced each
list (the log's ``ranker`` column, which intervention harvesting needs).

Policies
--------
:class:`DeterministicPolicy`
    Rank by fixed scores (an array, or any object with ``predict(X)``);
    ties keep the row order (stable sort, DESIGN §2).
:class:`PlackettLuce`
    Stochastic ranking, :math:`P(\pi) = \prod_i \exp(s_{\pi_i}/\tau) /
    \sum_{j \ge i} \exp(s_{\pi_j}/\tau)`, sampled with the Gumbel-top-k trick.
:class:`UniformRandom`
    Every order equally likely (Plackett–Luce with equal scores).
:class:`MixturePolicy`
    Each session picks one of several policies (e.g. several production
    rankers, the setting of intervention harvesting, Agarwal et al. (2019a)).

The production ranker that usually drives these policies (a small LambdaMART
trained on a few labelled queries) is in :mod:`clickrank.policies.production`.

All randomness goes through :mod:`clickrank._core._random`, so a session's list
depends only on the seed and the session index, never on the batch size.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import numba as nb
import numpy as np

from .._core._random import STREAM_POLICY, session_state, session_uniforms, stream_key, uniform_at
from .._core._segments import top_rows
from .._core._validation import InputError, check_positive
from ..datasets import RankingData
from ..ranking import ranker_scores

__all__ = [
    "LoggingPolicy",
    "PreparedPolicy",
    "DeterministicPolicy",
    "PlackettLuce",
    "UniformRandom",
    "MixturePolicy",
    "policy_scores",
]

#: The old name of :func:`clickrank.ranking.ranker_scores` (kept for callers not yet moved).
policy_scores = ranker_scores


class PreparedPolicy(ABC):
    """A policy bound to one dataset and cut-off, ready to rank sessions."""

    names: tuple[str, ...]
    top_k: int
    #: The fixed lists a session can be shown, ``int64 [n_lists, K]`` (rows, -1 = empty),
    #: when every list is one of them (fixed rankings: one list per query and ranker), else
    #: None; :meth:`pick` then says which. The simulator reads each list's cells from one
    #: contiguous block.
    lists: np.ndarray | None = None

    @abstractmethod
    def rank(
        self, queries: np.ndarray, sessions: np.ndarray, seed: int, stream: int = STREAM_POLICY
    ) -> tuple[np.ndarray, np.ndarray]:
        """Displayed rows ``int64 [S, K]`` (-1 = empty) and ranker codes ``int16 [S]``.

        The rows are a new array: the simulator applies interventions in place
        and then writes the doc ids over them.
        """

    def pick(
        self, queries: np.ndarray, sessions: np.ndarray, seed: int, stream: int = STREAM_POLICY
    ) -> tuple[np.ndarray, np.ndarray]:
        """With :attr:`lists`: the list each session is shown (``int64 [S]``, rows of
        ``lists``) and its ranker code, the draws of :meth:`rank`
        (``rank(...)[0] == lists[pick(...)[0]]``)."""
        raise NotImplementedError(f"{type(self).__name__} has no fixed lists")


class LoggingPolicy(ABC):
    """A logging policy; :meth:`prepare` binds it to data (precomputing what it can)."""

    @property
    @abstractmethod
    def names(self) -> tuple[str, ...]:
        """Ranker names this policy can record, indexed by the codes of ``rank``."""

    @abstractmethod
    def prepare(self, data: RankingData, top_k: int) -> PreparedPolicy:
        """Bind to ``data`` and cut-off ``top_k``."""


# -- deterministic -------------------------------------------------------------


class _PreparedDeterministic(PreparedPolicy):
    def __init__(self, top: np.ndarray, names: tuple[str, ...]) -> None:
        self.lists = top
        self.names = names
        self.top_k = top.shape[1]

    def rank(self, queries, sessions, seed, stream=STREAM_POLICY):
        queries = np.ascontiguousarray(queries, dtype=np.int64)
        rows = np.empty((len(queries), self.top_k), dtype=self.lists.dtype)
        _gather_lists(self.lists, queries, rows)
        return rows, np.zeros(len(queries), dtype=np.int16)

    def pick(self, queries, sessions, seed, stream=STREAM_POLICY):
        return np.asarray(queries, dtype=np.int64), np.zeros(len(queries), dtype=np.int16)


@nb.njit(cache=True, parallel=True)
def _gather_lists(top: np.ndarray, queries: np.ndarray, out: np.ndarray) -> None:
    """``out[i] = top[queries[i]]`` over the sessions in parallel (``np.take`` is serial;
    ``out`` comes from numpy, whose large buffers fault in huge pages)."""
    for i in nb.prange(queries.shape[0]):
        for k in range(top.shape[1]):
            out[i, k] = top[queries[i], k]


class DeterministicPolicy(LoggingPolicy):
    """Show every query's documents sorted by a fixed score (ties: row order).

    Parameters
    ----------
    ranker : array ``[n_docs]`` or object with ``predict(X)``
        Scores, higher ranks higher.
    name : str
        Recorded in the log's ``ranker`` column.
    """

    def __init__(self, ranker: Any, *, name: str = "production") -> None:
        self.ranker = ranker
        self.name = name

    @property
    def names(self) -> tuple[str, ...]:
        return (str(self.name),)

    def prepare(self, data: RankingData, top_k: int) -> PreparedPolicy:
        scores = ranker_scores(self.ranker, data, name=f"ranker {self.name!r}")
        return _PreparedDeterministic(top_rows(scores, data.qptr, top_k), self.names)


# -- Plackett-Luce ---------------------------------------------------------------


#: Sessions per block of :func:`_gumbel_top_k` (one sort buffer per block).
_PL_BLOCK = 1024


@nb.njit(cache=True, parallel=True)
def _gumbel_top_k(
    logits: np.ndarray,
    qptr: np.ndarray,
    queries: np.ndarray,
    sessions: np.ndarray,
    key: np.uint64,
    out: np.ndarray,
) -> None:
    """Top-``k`` of ``logits + Gumbel noise`` per session (Gumbel-top-k trick) into
    ``out`` ``[S, k]`` (filled with -1), blocks of sessions on numba's threads.

    The noise of document ``j`` (0-based within its query) in session ``s``
    is the ``j``-th counter-based uniform of the session, so the list does
    not depend on the batch or the threads. Ties keep the row order.
    """
    n, k = out.shape
    for b in nb.prange((n + _PL_BLOCK - 1) // _PL_BLOCK):
        best = np.empty(k, dtype=np.float64)
        for i in range(b * _PL_BLOCK, min(n, (b + 1) * _PL_BLOCK)):
            q = queries[i]
            a = qptr[q]
            m = qptr[q + 1] - a
            st = session_state(key, sessions[i])
            filled = 0
            for j in range(m):
                u = uniform_at(st, j)
                if u > 0.0:
                    v = logits[a + j] - np.log(-np.log(u))
                else:
                    v = -np.inf
                # insertion into the sorted (descending) buffer; strict > keeps row order on ties
                if filled < k:
                    pos = filled
                    filled += 1
                elif v > best[k - 1]:
                    pos = k - 1
                else:
                    continue
                while pos > 0 and v > best[pos - 1]:
                    best[pos] = best[pos - 1]
                    out[i, pos] = out[i, pos - 1]
                    pos -= 1
                best[pos] = v
                out[i, pos] = a + j


class _PreparedPL(PreparedPolicy):
    def __init__(self, logits: np.ndarray, qptr: np.ndarray, top_k: int, names) -> None:
        self.logits = logits
        self.qptr = qptr
        self.top_k = top_k
        self.names = names

    def rank(self, queries, sessions, seed, stream=STREAM_POLICY):
        key = stream_key(seed, stream)
        rows = np.full((len(queries), self.top_k), -1, dtype=np.int64)
        _gumbel_top_k(
            self.logits,
            self.qptr,
            np.ascontiguousarray(queries, dtype=np.int64),
            np.ascontiguousarray(sessions, dtype=np.uint64),
            key,
            rows,
        )
        return rows, np.zeros(len(queries), dtype=np.int16)


class PlackettLuce(LoggingPolicy):
    r"""Stochastic ranking by the Plackett–Luce model with temperature.

    .. math::
        P(\pi \mid q) = \prod_{i=1}^{K}
            \frac{\exp(s_{\pi_i} / \tau)}{\sum_{j \ge i} \exp(s_{\pi_j} / \tau)}

    (Plackett (1975); Luce (1959)). Sampled exactly by perturbing each logit
    :math:`s_d/\tau` with independent Gumbel noise and keeping the ``K``
    largest (the Gumbel-top-k trick; Yellott (1977); Kool et al. (2019)).
    :math:`\tau \to 0` approaches the deterministic ranking, large
    :math:`\tau` a uniform shuffle.

    Parameters
    ----------
    ranker : array ``[n_docs]`` or object with ``predict(X)``
    temperature : float
        :math:`\tau > 0`.
    name : str
    """

    def __init__(self, ranker: Any, *, temperature: float = 1.0, name: str = "plackett-luce"):
        self.ranker = ranker
        self.temperature = temperature
        self.name = name

    @property
    def names(self) -> tuple[str, ...]:
        return (str(self.name),)

    def prepare(self, data: RankingData, top_k: int) -> PreparedPolicy:
        tau = check_positive(self.temperature, name="temperature")
        scores = ranker_scores(self.ranker, data, name=f"ranker {self.name!r}")
        return _PreparedPL(scores / tau, data.qptr, int(top_k), self.names)


class UniformRandom(LoggingPolicy):
    """Every ordering of a query's documents equally likely (a uniform shuffle)."""

    def __init__(self, *, name: str = "random") -> None:
        self.name = name

    @property
    def names(self) -> tuple[str, ...]:
        return (str(self.name),)

    def prepare(self, data: RankingData, top_k: int) -> PreparedPolicy:
        return _PreparedPL(np.zeros(data.n_docs), data.qptr, int(top_k), self.names)


# -- mixtures ----------------------------------------------------------------------


class _PreparedMixture(PreparedPolicy):
    def __init__(self, parts, cum, names, top_k) -> None:
        self.parts = parts
        self.cum = cum
        self.names = names
        self.top_k = top_k
        if all(part.lists is not None for part in parts):  # all fixed: their lists, stacked
            self.lists = np.concatenate([part.lists for part in parts])
            self._first = np.cumsum([0] + [len(part.lists) for part in parts])

    def _by_component(self, queries, sessions, seed, stream, shape, step) -> tuple:
        """Each session's component (one uniform of ``stream``), then ``step(c, part,
        queries, sessions, stream) -> (values, codes)`` on the sessions of component
        ``c``: the values gathered into an int64 array of ``shape`` (-1 elsewhere), the
        codes offset by the component's first ranker name."""
        u = session_uniforms(seed, sessions, 1, stream * 64)[:, 0]
        choice = np.searchsorted(self.cum, u, side="right")
        choice = np.minimum(choice, len(self.parts) - 1)
        out = np.full(shape, -1, dtype=np.int64)
        codes = np.zeros(len(queries), dtype=np.int16)
        offset = 0
        for c, part in enumerate(self.parts):  # loop over a few components, not sessions
            idx = np.flatnonzero(choice == c)
            if idx.size:
                out[idx], k = step(c, part, queries[idx], sessions[idx], stream * 64 + 1 + c)
                codes[idx] = k + offset
            offset += len(part.names)
        return out, codes

    def rank(self, queries, sessions, seed, stream=STREAM_POLICY):
        def step(c, part, q, s, sub):
            return part.rank(q, s, seed, sub)

        return self._by_component(queries, sessions, seed, stream, (len(queries), self.top_k), step)

    def pick(self, queries, sessions, seed, stream=STREAM_POLICY):
        def step(c, part, q, s, sub):
            index, k = part.pick(q, s, seed, sub)
            return index + self._first[c], k

        return self._by_component(queries, sessions, seed, stream, (len(queries),), step)


class MixturePolicy(LoggingPolicy):
    """Each session is served by one policy, chosen at random with ``weights``.

    The chosen component is recorded in the ``ranker`` column, so the same
    (query, document) is seen at different positions under different rankers:
    the data intervention harvesting needs (Agarwal et al. (2019a)).

    Parameters
    ----------
    policies : sequence of LoggingPolicy
        At most 63 components, with distinct ranker names.
    weights : sequence of float, optional
        Non-negative, normalized to sum 1; equal by default.
    """

    def __init__(
        self, policies: Sequence[LoggingPolicy], *, weights: Sequence[float] | None = None
    ) -> None:
        self.policies = policies
        self.weights = weights

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for p in self.policies for n in p.names)

    def _weights(self) -> np.ndarray:
        pols = list(self.policies)
        if not pols or not all(isinstance(p, LoggingPolicy) for p in pols):
            raise InputError("policies must be a non-empty sequence of LoggingPolicy objects")
        if len(pols) > 63:
            raise InputError(f"a mixture takes at most 63 policies, got {len(pols)}")
        names = self.names
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise InputError(f"ranker names in a mixture must be distinct; repeated: {dup}")
        if self.weights is None:
            return np.full(len(pols), 1.0 / len(pols))
        w = np.asarray(self.weights, dtype=np.float64)
        if w.shape != (len(pols),) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise InputError(
                f"weights must be {len(pols)} non-negative numbers with a positive sum, "
                f"got {self.weights!r}"
            )
        return w / w.sum()

    def prepare(self, data: RankingData, top_k: int) -> PreparedPolicy:
        w = self._weights()
        parts = [p.prepare(data, top_k) for p in self.policies]
        cum = np.cumsum(w)[:-1]
        return _PreparedMixture(parts, cum, self.names, int(top_k))
