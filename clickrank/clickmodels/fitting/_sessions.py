r"""A click log as its distinct sessions: the input of every click-model fit.

A click model scores a session as a whole (its displayed list and its click
vector), so a log of :math:`10^7` impressions is first reduced to its
*distinct* sessions with their multiplicities: two sessions that showed the
same documents of the same query in the same order and got the same clicks
contribute identically to every likelihood, E-step and statistic. Logs of a
deterministic ranker repeat the same few lists, so the reduction is large
(`benchmarks/bench_clickmodel_fit.py` reports it); every fit then runs on
``[U, K]`` arrays with weights instead of ``[S, K]``.

Grouping is by two independent 64-bit hashes of (query, documents, clicks,
split flag), one compiled pass over the rows, then :func:`numpy.unique` over
the first hash; the second hash must agree within every group, so a collision
of the first is detected (and the sessions regrouped by both), and two
different sessions are merged only if both hashes collide (probability
about :math:`S^2/2^{129}`).

Train/test split
    By session: a session is a test session iff its counter-based uniform
    ``u(seed, session id)`` (:mod:`clickrank._core._random`, stream
    :data:`STREAM_SPLIT`) is below ``test_fraction``. The split depends only on
    the seed and the session ids, not on the order or chunking of the log.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import polars as pl
from numba import njit

from ..._core._random import _mix, session_uniforms
from ..._core._validation import InputError, LogSchemaError, check_fraction

__all__ = ["Sessions", "sessions_from_log", "group_hashes", "STREAM_SPLIT"]

#: Stream of the train/test assignment of sessions (see :mod:`clickrank._core._random`).
STREAM_SPLIT = 201

_COLUMNS = ("session", "query", "position", "doc", "click")
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True, eq=False)
class Sessions:
    """Distinct sessions of a click log with their multiplicities.

    Attributes
    ----------
    pair : numpy.ndarray
        int64 ``[U, K]``: index of the displayed (query, doc) pair into
        ``pairs`` (row order), -1 for an empty slot (a list shorter than K).
    click : numpy.ndarray
        bool ``[U, K]``.
    weight : numpy.ndarray
        float64 ``[U]``: how many logged sessions had this list and these clicks.
    pairs : polars.DataFrame
        ``query``, ``doc`` of every pair index, sorted by (query, doc).
    test : numpy.ndarray
        bool ``[U]``: the session group belongs to the test split.
    inverse : numpy.ndarray or None
        int64 ``[S]``: the distinct-session index of every logged session, in
        log order (sorted by session, position); None for a subset.
    """

    pair: np.ndarray
    click: np.ndarray
    weight: np.ndarray
    pairs: pl.DataFrame
    test: np.ndarray
    inverse: np.ndarray | None = None

    @property
    def K(self) -> int:  # noqa: N802 - the usual symbol
        """Positions per session (the longest list)."""
        return int(self.pair.shape[1])

    @property
    def n_unique(self) -> int:
        """Number of distinct sessions."""
        return int(self.pair.shape[0])

    @property
    def n_sessions(self) -> int:
        """Number of logged sessions (the sum of the weights)."""
        return int(round(float(self.weight.sum())))

    @property
    def n_pairs(self) -> int:
        """Number of (query, doc) pairs in ``pairs``."""
        return int(self.pairs.height)

    @property
    def shown(self) -> np.ndarray:
        """bool ``[U, K]``: the slot holds a document."""
        return self.pair >= 0

    def subset(self, mask: np.ndarray) -> Sessions:
        """The distinct sessions where ``mask`` holds (same pair table)."""
        mask = np.asarray(mask, dtype=bool)
        return replace(
            self,
            pair=self.pair[mask],
            click=self.click[mask],
            weight=self.weight[mask],
            test=self.test[mask],
            inverse=None,
        )

    def train(self) -> Sessions:
        """The training sessions."""
        return self.subset(~self.test)

    def test_sessions(self) -> Sessions:
        """The test sessions."""
        return self.subset(self.test)

    def pair_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """Impressions and clicks per pair, float64 ``[n_pairs]`` each (weighted)."""
        shown = self.shown
        g = self.pair[shown]
        w = np.broadcast_to(self.weight[:, None], self.pair.shape)[shown]
        n = np.bincount(g, weights=w, minlength=self.n_pairs)
        c = np.bincount(g, weights=w * self.click[shown], minlength=self.n_pairs)
        return n, c

    def align(self, pairs: pl.DataFrame) -> Sessions:
        """The same sessions with pair indices into another pair table.

        Pairs absent from ``pairs`` get index ``pairs.height`` (one past the
        end: the slot of a model's default for unseen pairs).
        """
        mine = self.pairs.with_row_index("_mine")
        other = _cast_like(pairs, mine).with_row_index("_other")
        joined = mine.join(other, on=["query", "doc"], how="left").sort("_mine")
        idx = joined["_other"].fill_null(pairs.height).to_numpy().astype(np.int64)
        lookup = np.append(idx, -1)  # -1 (empty slot) stays -1
        return replace(self, pair=lookup[self.pair], pairs=pairs)


def _cast_like(pairs: pl.DataFrame, like: pl.DataFrame) -> pl.DataFrame:
    out = []
    for col in ("query", "doc"):
        want, have = like.schema[col], pairs.schema[col]
        if want == have:
            out.append(pl.col(col))
        elif want.is_integer() and have.is_integer():
            out.append(pl.col(col).cast(want))
        else:
            out.append(pl.col(col).cast(pl.String))
    frame = pairs.select(out)
    return frame


def _codes(column: pl.Series, name: str) -> np.ndarray:
    """int64 codes of an id column: the values themselves for integers, else dictionary codes."""
    if column.null_count():
        raise LogSchemaError(
            f"{column.null_count()} null value(s); every row needs an id", column=name
        )
    if column.dtype == pl.Int64:
        return column.to_numpy()
    if column.dtype.is_integer():
        return column.cast(pl.Int64).to_numpy()
    return column.cast(pl.String).cast(pl.Categorical).to_physical().cast(pl.Int64).to_numpy()


@njit(cache=True)
def _starts(sid):  # pragma: no cover - numba
    """Row offsets of the sessions (``[S + 1]``) of a log sorted by session."""
    n = sid.size
    count = 1
    for r in range(1, n):
        if sid[r] != sid[r - 1]:
            count += 1
    out = np.empty(count + 1, dtype=np.int64)
    out[0] = 0
    k = 1
    for r in range(1, n):
        if sid[r] != sid[r - 1]:
            out[k] = r
            k += 1
    out[count] = n
    return out


@njit(cache=True)
def _hash_sessions(starts, position, click, qcode, dcode, flag, salt1, salt2):  # pragma: no cover
    """Two independent 64-bit hashes of every session; the first row that breaks the
    layout (or -1) and why (1: positions, 2: query)."""
    S = starts.size - 1
    h1 = np.empty(S, dtype=np.uint64)
    h2 = np.empty(S, dtype=np.uint64)
    for s in range(S):
        a, b = starts[s], starts[s + 1]
        q = np.uint64(qcode[a]) + _GOLDEN
        x1 = _mix(salt1 ^ _mix(q))
        x2 = _mix(salt2 ^ _mix(q))
        for r in range(a, b):
            if position[r] != r - a + 1:
                return h1, h2, r, 1
            if qcode[r] != qcode[a]:
                return h1, h2, r, 2
            x = np.uint64(dcode[r]) * np.uint64(2) + np.uint64(click[r])
            x += np.uint64(r - a + 1) * _GOLDEN
            x1 = _mix(x1 ^ _mix(x))
            x2 = _mix(x2 ^ _mix(x ^ salt2))
        tail = np.uint64(b - a) * _GOLDEN + np.uint64(flag[s])
        h1[s] = _mix(x1 + tail)
        h2[s] = _mix(x2 + tail)
    return h1, h2, -1, 0


def group_hashes(h1: np.ndarray, h2: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Groups of equal (h1, h2): representative (first) index, inverse, counts."""
    _, rep, inverse, counts = np.unique(
        h1, return_index=True, return_inverse=True, return_counts=True
    )
    inverse = inverse.ravel()
    if np.array_equal(h2[rep][inverse], h2):
        return rep, inverse, counts
    # a collision of h1 (probability about S^2 / 2^65): group by both hashes
    order = np.lexsort((h2, h1))
    a, b = h1[order], h2[order]
    new = np.r_[True, (a[1:] != a[:-1]) | (b[1:] != b[:-1])]
    ids = np.cumsum(new) - 1
    inverse = np.empty_like(ids)
    inverse[order] = ids
    return order[new], inverse, np.bincount(ids)


@njit(cache=True)
def _fill(starts, rep, click, K):  # pragma: no cover - numba
    U = rep.size
    rows = np.full((U, K), -1, dtype=np.int64)
    clicks = np.zeros((U, K), dtype=np.bool_)
    for u in range(U):
        a, b = starts[rep[u]], starts[rep[u] + 1]
        for i in range(b - a):
            rows[u, i] = a + i
            clicks[u, i] = click[a + i]
    return rows, clicks


def _frame(log: Any) -> pl.DataFrame:
    from ...engine import as_lazy, require_columns

    lf = as_lazy(log)
    require_columns(lf, _COLUMNS, what="click-model fitting")
    return lf.select(_COLUMNS).collect()


def sessions_from_log(log: Any, *, test_fraction: float = 0.0, seed: int = 0) -> Sessions:
    """Reduce a click log to its distinct sessions (see the module docstring).

    Parameters
    ----------
    log : polars DataFrame, LazyFrame or parquet path
        Click log with ``session``, ``query``, ``position``, ``doc``, ``click``
        (DESIGN §2). Positions must run 1, 2, ..., n within every session.
    test_fraction : float
        Share of sessions assigned to the test split (by session id and seed).
    seed : int
        Seed of the split.

    Returns
    -------
    Sessions

    Raises
    ------
    LogSchemaError
        For missing columns, null ids, a session whose positions are not
        1..n, or a session that mixes queries; the message names the session.
    """
    test_fraction = check_fraction(test_fraction, name="test_fraction")
    df = _frame(log)
    if df.height == 0:
        raise LogSchemaError("the click log is empty")
    if not df["session"].is_sorted():
        df = df.sort("session", "position")
    try:
        return _group(df, test_fraction, seed)
    except _Unsorted:
        return _group(df.sort("session", "position"), test_fraction, seed)


class _Unsorted(Exception):
    """The positions of a session are not in increasing order (sort and retry)."""


def _group(df: pl.DataFrame, test_fraction: float, seed: int) -> Sessions:
    sid = df["session"].to_numpy()
    position = df["position"].to_numpy()
    click = df["click"].to_numpy()
    if click.dtype != np.bool_:
        click = click.astype(bool)
    qcode, dcode = _codes(df["query"], "query"), _codes(df["doc"], "doc")
    starts = _starts(sid)
    first = starts[:-1]
    flag = np.zeros(first.size, dtype=np.uint8)
    if test_fraction > 0:
        flag = (
            session_uniforms(seed, sid[first].astype(np.uint64), 1, STREAM_SPLIT)[:, 0]
            < test_fraction
        ).astype(np.uint8)
    K = int(position.max())
    if K > 10_000:
        raise InputError(f"sessions with {K} positions; click models need short lists")
    h1, h2, bad, why = _hash_sessions(
        starts, position, click, qcode, dcode, flag, np.uint64(0x5EED5EED), np.uint64(0xC0FFEE11)
    )
    if bad >= 0:
        s = df["session"][int(bad)]
        seg = np.searchsorted(starts, bad, side="right") - 1
        a, b = starts[seg], starts[seg + 1]
        if (
            why == 1
            and np.unique(position[a:b]).size == b - a
            and not np.all(np.diff(position[a:b].astype(np.int64)) > 0)
        ):
            raise _Unsorted
        what = (
            "positions must run 1, 2, ..., n within a session (no gaps or repeats); "
            f"found {position[a:b].tolist()[:12]}"
            if why == 1
            else "a session must show the results of one query"
        )
        raise LogSchemaError(f"session {s}: {what}", column="position" if why == 1 else "query")
    rep, inverse, counts = group_hashes(h1, h2)
    inverse = inverse.astype(np.int64)
    rows, clicks = _fill(starts, rep.astype(np.int64), click, K)
    shown = rows >= 0
    key_q = qcode[np.where(shown, rows, 0)]
    key_d = dcode[np.where(shown, rows, 0)]
    pair = np.full(rows.shape, -1, dtype=np.int64)
    order = np.lexsort((key_d[shown], key_q[shown]))
    kq, kd = key_q[shown][order], key_d[shown][order]
    new = np.r_[True, (kq[1:] != kq[:-1]) | (kd[1:] != kd[:-1])]
    ids = np.empty(order.size, dtype=np.int64)
    ids[order] = np.cumsum(new) - 1
    pair[shown] = ids
    first_rows = rows[shown][order[new]]
    pairs = df.select("query", "doc")[first_rows]
    if not (df.schema["query"].is_integer() and df.schema["doc"].is_integer()):
        perm = pairs.with_row_index("_i").sort("query", "doc")["_i"].to_numpy()
        remap = np.empty(perm.size, dtype=np.int64)
        remap[perm] = np.arange(perm.size)
        pair = np.where(pair >= 0, remap[np.maximum(pair, 0)], -1)
        pairs = pairs[perm]
    return Sessions(
        pair=pair,
        click=clicks,
        weight=counts.astype(np.float64),
        pairs=pairs,
        test=flag[rep].astype(bool),
        inverse=inverse,
    )
