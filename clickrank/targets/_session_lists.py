"""A click log as the distinct sessions of Unbiased LambdaMART (:class:`SessionLists`).

One left join of the log to the data's ``(query, doc)`` keys (in log order) gives
the data row of every entry; the entries are sorted by ``(session, position)``
only if the log is not already in that order (simulated and most stored logs
are). The sessions with a click and a non-click are then grouped by two
independent 64-bit hashes of their (rows, positions, clicks) in one compiled
pass, as :mod:`clickrank.clickmodels.fitting._sessions` groups click-model
sessions, and the distinct sessions are put in lexicographic order of
(rows, positions, clicks) lists: the order of a polars sort of list columns,
so the lists are the same as those of the Spark path
(:func:`clickrank.engine.session_patterns`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
from numba import njit

from .._core._random import _mix
from ..clickmodels.fitting import group_hashes
from ..engine.join import per_doc

__all__ = ["distinct_sessions"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True)
def _hash_paired(starts, rows, pos, clicks, salt1, salt2):  # pragma: no cover - numba
    """Indices of the sessions with a click and a non-click, and two hashes of each."""
    n_s = starts.size - 1
    keep = np.empty(n_s, np.int64)
    h1 = np.empty(n_s, np.uint64)
    h2 = np.empty(n_s, np.uint64)
    n_keep = 0
    for u in range(n_s):
        a, b = starts[u], starts[u + 1]
        n_click = 0
        for r in range(a, b):
            n_click += clicks[r]
        if n_click == 0 or n_click == b - a:
            continue
        x1, x2 = salt1, salt2
        for r in range(a, b):
            x = (np.uint64(rows[r]) * _GOLDEN + np.uint64(pos[r])) * np.uint64(2)
            x += np.uint64(clicks[r])
            x1 = _mix(x1 ^ _mix(x))
            x2 = _mix(x2 ^ _mix(x ^ salt2))
        tail = np.uint64(b - a) * _GOLDEN
        keep[n_keep] = u
        h1[n_keep] = _mix(x1 + tail)
        h2[n_keep] = _mix(x2 + tail)
        n_keep += 1
    return keep[:n_keep], h1[:n_keep], h2[:n_keep]


@njit(cache=True)
def _list_less(starts, rows, pos, clicks, u, v):  # pragma: no cover - numba
    """Session ``u`` before ``v``: (rows, positions, clicks) compared as lists, in turn."""
    a, b = starts[u], starts[v]
    n_a, n_b = starts[u + 1] - a, starts[v + 1] - b
    n = min(n_a, n_b)
    for r in range(n):
        if rows[a + r] != rows[b + r]:
            return rows[a + r] < rows[b + r]
    if n_a != n_b:  # a list that is a prefix of the other comes first
        return n_a < n_b
    for r in range(n):  # same rows: same length
        if pos[a + r] != pos[b + r]:
            return pos[a + r] < pos[b + r]
    for r in range(n):
        if clicks[a + r] != clicks[b + r]:
            return clicks[b + r]
    return False


@njit(cache=True)
def _lexicographic(starts, rows, pos, clicks, sess):  # pragma: no cover - numba
    """The order of sessions ``sess`` by :func:`_list_less` (a merge sort: it compares lists)."""
    n = sess.size
    src = np.arange(n)
    dst = np.empty_like(src)
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if _list_less(starts, rows, pos, clicks, sess[src[j]], sess[src[i]]):
                    dst[k] = src[j]
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
                k += 1
            while i < mid:
                dst[k] = src[i]
                i += 1
                k += 1
            while j < hi:
                dst[k] = src[j]
                j += 1
                k += 1
        src, dst = dst, src
        width *= 2
    return src


@njit(cache=True)
def _gather(starts, sel, rows, pos, clicks):  # pragma: no cover - numba
    """The entries of sessions ``sel`` (in that order) and their offsets."""
    sptr = np.empty(sel.size + 1, np.int64)
    sptr[0] = 0
    for u in range(sel.size):
        sptr[u + 1] = sptr[u] + starts[sel[u] + 1] - starts[sel[u]]
    out_rows = np.empty(sptr[-1], np.int64)
    out_pos = np.empty(sptr[-1], np.int32)
    out_clicks = np.empty(sptr[-1], np.bool_)
    for u in range(sel.size):
        a = starts[sel[u]]
        for r in range(sptr[u + 1] - sptr[u]):
            out_rows[sptr[u] + r] = rows[a + r]
            out_pos[sptr[u] + r] = pos[a + r]
            out_clicks[sptr[u] + r] = clicks[a + r]
    return out_rows, sptr, out_pos, out_clicks


def distinct_sessions(
    base: Any, keys: pl.DataFrame
) -> tuple[dict[str, np.ndarray], np.ndarray, int]:
    """The distinct sessions with a click and a non-click of a polars log, and its rows.

    Parameters
    ----------
    base : polars LazyFrame
        ``session, query, doc, position (Int64), click (Boolean)``, ids cast
        to the data's (:func:`clickrank.engine.join.prepare_log`).
    keys : polars DataFrame
        ``(query, doc, row)`` of every data row.

    Returns
    -------
    (lists, rows, top)
        ``lists``: ``rows``, ``sptr``, ``positions``, ``clicks`` and ``counts``
        of the distinct sessions (the fields of :class:`SessionLists`), in
        lexicographic order of (rows, positions, clicks); ``rows``: the data
        row of every log entry (for the shown rows and the impressions);
        ``top``: the largest logged position.
    """
    df = base.select("session", "position", "click").collect()
    # the data row of every entry: an unordered join (keeping the log's order costs
    # 2-3x more), scattered back by entry number
    found = (
        base.select("query", "doc")
        .with_row_index("entry")
        .join(keys.lazy(), on=["query", "doc"], how="inner")
        .select("entry", "row")
        .collect()
    )
    if found.height < df.height:  # the error names the (query, doc) pairs missing from the data
        per_doc(base, keys, [pl.len().alias("n")], "click log")
    rows = np.empty(df.height, np.int64)
    rows[found["entry"].to_numpy()] = found["row"].to_numpy()
    session = df["session"]
    first = session.ne_missing(session.shift()).to_numpy()
    pos = df["position"].to_numpy().astype(np.int64, copy=False)
    if not (session.is_sorted() and np.all(first[1:] | (pos[1:] > pos[:-1]))):
        order = df.with_row_index("entry").sort("session", "position")["entry"].to_numpy()
        rows, pos, session = rows[order], pos[order], session.gather(order)
        df = df[order]
        first = session.ne_missing(session.shift()).to_numpy()
    clicks = df["click"].to_numpy().astype(np.bool_, copy=False)
    starts = np.append(np.flatnonzero(first), rows.size).astype(np.int64)
    keep, h1, h2 = _hash_paired(
        starts, rows, pos, clicks, np.uint64(0x5EED5EED), np.uint64(0xC0FFEE11)
    )
    rep, _, counts = group_hashes(h1, h2)
    rep = keep[rep]
    order = _lexicographic(starts, rows, pos, clicks, rep)
    sel = rep[order]
    out_rows, sptr, out_pos, out_clicks = _gather(starts, sel, rows, pos, clicks)
    lists = {
        "rows": out_rows,
        "sptr": sptr,
        "positions": out_pos,
        "clicks": out_clicks,
        "counts": counts[order].astype(np.float64),
    }
    return lists, rows, int(pos.max())
