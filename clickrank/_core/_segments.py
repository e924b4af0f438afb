"""Vectorized operations on query segments (rows grouped by ``qptr``).

Every ranking quantity in clickrank is computed for all queries at once. A
query owns rows ``qptr[q]:qptr[q + 1]``; these helpers turn that layout into
per-row query indices, stable within-query orders and padded matrices, so that
no hot path loops over queries in Python.
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = [
    "lengths",
    "segment_ids",
    "rank_order",
    "top_rows",
    "ranks",
    "to_padded",
    "within_index",
    "is_dense",
    "gather",
]


def lengths(qptr: np.ndarray) -> np.ndarray:
    """Number of rows of each query, ``diff(qptr)``."""
    return np.diff(qptr)


def segment_ids(qptr: np.ndarray) -> np.ndarray:
    """Query index of every row, int64 ``[n_rows]``."""
    return np.repeat(np.arange(len(qptr) - 1, dtype=np.int64), np.diff(qptr))


def within_index(qptr: np.ndarray) -> np.ndarray:
    """0-based index of every row inside its query, int64 ``[n_rows]``."""
    n = int(qptr[-1])
    return np.arange(n, dtype=np.int64) - np.repeat(qptr[:-1], np.diff(qptr))


def gather(qptr: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the given queries, in the given order: ``(rows, new_qptr)``.

    ``rows[new_qptr[i]:new_qptr[i + 1]]`` are the rows of query ``queries[i]``;
    one index array, no loop over queries.
    """
    q = np.asarray(queries, dtype=np.int64).reshape(-1)
    lens = np.diff(qptr)[q]
    new_qptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    starts = np.repeat(np.asarray(qptr, dtype=np.int64)[:-1][q], lens)
    return starts + within_index(new_qptr), new_qptr


def rank_order(scores: np.ndarray, qptr: np.ndarray) -> np.ndarray:
    """Row permutation that sorts every query by descending score.

    Ties keep the original row order (stable sort), the convention used
    everywhere in clickrank. NaN scores rank last (tied with -inf).

    Dense data (a padded ``[n_queries, longest]`` matrix at most about twice
    the data, e.g. equal-length lists) is sorted row by row with a stable
    argsort; very ragged data with one segmented ``lexsort``. Both give the
    same order.

    Returns
    -------
    numpy.ndarray
        int64 ``[n_rows]``; ``order[qptr[q]:qptr[q+1]]`` lists the rows of
        query ``q`` from rank 1 downwards.
    """
    key = np.negative(np.asarray(scores, dtype=np.float64))
    key[np.isnan(key)] = np.inf  # NaN last
    qptr = np.asarray(qptr, dtype=np.int64)
    if is_dense(qptr):
        return _dense_order(key, qptr)
    return _lexsort_order(key, qptr)


@nb.njit(cache=True)
def _top_query(scores, lo, hi, key, out):  # pragma: no cover - numba
    """The best ``len(out)`` of rows ``lo..hi-1`` into ``out`` (``key`` a buffer as long)."""
    width = out.shape[0]
    n = 0  # out[:n] holds the best rows so far, by (key, row): a stable order
    for r in range(lo, hi):
        k = -scores[r]
        if np.isnan(k):
            k = np.inf  # NaN last, tied with -inf
        if n == width and not k < key[n - 1]:
            continue  # not better than the last kept row (ties: the earlier row stays)
        j = n if n < width else n - 1
        while j > 0 and key[j - 1] > k:  # strict: equal keys keep row order
            key[j], out[j] = key[j - 1], out[j - 1]
            j -= 1
        key[j], out[j] = k, r
        n = min(n + 1, width)


@nb.njit(cache=True, parallel=True)
def _top_rows_kernel(scores, qptr, out):  # pragma: no cover - numba
    width, nq = out.shape[1], qptr.shape[0] - 1
    blocks = min(nq, 256)  # blocks of queries over numba's threads, each with its buffer
    for b in nb.prange(blocks):
        key = np.empty(width)
        for q in range(b * nq // blocks, (b + 1) * nq // blocks):
            _top_query(scores, qptr[q], qptr[q + 1], key, out[q])


@nb.njit(cache=True)
def _top_rows_serial(scores, qptr, out):  # pragma: no cover - numba
    key = np.empty(out.shape[1])
    for q in range(qptr.shape[0] - 1):
        _top_query(scores, qptr[q], qptr[q + 1], key, out[q])


def top_rows(
    scores: np.ndarray, qptr: np.ndarray, width: int, *, threads: bool = True
) -> np.ndarray:
    """The first ``width`` rows of every query under :func:`rank_order`, ``[n_queries, width]``.

    Equal to ``to_padded(rank_order(scores, qptr), qptr, fill=-1, width=width)[0]``
    (-1 pads short queries), but one insertion pass per query keeps only the
    top ``width`` instead of sorting every list: a logging policy shows the top
    10 of lists of hundreds. ``threads``: blocks of queries on numba's threads
    (False: the calling thread only, for small calls made often).
    """
    qptr = np.asarray(qptr, dtype=np.int64)
    out = np.full((len(qptr) - 1, int(width)), -1, dtype=np.int64)
    if out.size:
        kernel = _top_rows_kernel if threads else _top_rows_serial
        kernel(np.asarray(scores, dtype=np.float64), qptr, out)
    return out


def is_dense(qptr: np.ndarray) -> bool:
    """Whether a padded ``[n_queries, longest]`` matrix is at most ~2x the data."""
    lens = np.diff(qptr)
    longest = int(lens.max()) if lens.size else 0
    return lens.size * longest <= 2 * int(qptr[-1]) + 1024


def _lexsort_order(key: np.ndarray, qptr: np.ndarray) -> np.ndarray:
    """Ascending ``key`` within each query by one segmented stable sort."""
    return np.lexsort((key, segment_ids(qptr))).astype(np.int64)


def _dense_order(key: np.ndarray, qptr: np.ndarray) -> np.ndarray:
    """Ascending ``key`` within each query by a stable argsort of the padded rows.

    Padding cells hold +inf and sit after a query's real rows, so the stable
    sort keeps them behind every real row (also behind real +inf keys).
    """
    lens = np.diff(qptr)
    n_q, n = lens.size, int(qptr[-1])
    longest = int(lens.max()) if n_q else 0
    if n == n_q * longest:  # equal lengths: a reshape, no padding
        padded = key.reshape(n_q, longest)
    else:
        padded = np.full((n_q, longest), np.inf)
        padded[segment_ids(qptr), within_index(qptr)] = key
    order = np.argsort(padded, axis=1, kind="stable")
    order += qptr[:-1, None]
    if n == n_q * longest:
        return order.reshape(-1)
    return order[np.arange(longest) < lens[:, None]]


def ranks(scores: np.ndarray, qptr: np.ndarray) -> np.ndarray:
    """1-based rank of every row within its query under :func:`rank_order`."""
    order = rank_order(scores, qptr)
    out = np.empty(len(order), dtype=np.int64)
    out[order] = within_index(qptr) + 1
    return out


def to_padded(
    values: np.ndarray, qptr: np.ndarray, fill: float = 0.0, width: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Scatter row values into a ``[n_queries, width]`` matrix.

    Parameters
    ----------
    values : array ``[n_rows]``
        Per-row values, already in the desired within-query order.
    qptr : array ``[n_queries + 1]``
        Query offsets.
    fill : float
        Value of padding cells.
    width : int, optional
        Number of columns; defaults to the longest query. Longer queries are
        truncated to their first ``width`` rows.

    Returns
    -------
    padded : numpy.ndarray ``[n_queries, width]``
    mask : numpy.ndarray of bool ``[n_queries, width]``
        True where a cell holds a real row.
    """
    values = np.asarray(values)
    n_q = len(qptr) - 1
    lens = np.diff(qptr)
    max_len = int(lens.max()) if n_q else 0
    width = max_len if width is None else int(width)
    dtype = np.result_type(values.dtype, np.asarray(fill).dtype)
    padded = np.full((n_q, width), fill, dtype=dtype)
    mask = np.zeros((n_q, width), dtype=bool)
    col = within_index(qptr)
    keep = col < width
    row = segment_ids(qptr)
    padded[row[keep], col[keep]] = values[keep]
    mask[row[keep], col[keep]] = True
    return padded, mask
