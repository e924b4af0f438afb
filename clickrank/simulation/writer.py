"""Dense session arrays -> the long click-log table, and the chunked parquet writer."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

import numba as nb
import numpy as np
import polars as pl

from .._core._budget import available_memory
from .._core._io import (
    check_output,
    clean_stale,
    discard,
    first_foreign,
    output_errors,
    publish,
    record,
    remove_owned,
    temp_path,
)
from .._core._validation import InputError
from .interventions import INTERVENTION_CATEGORIES

# -- the click-log table ---------------------------------------------------------------


def _per_row(values: np.ndarray, K: int, sess_of_row: np.ndarray | None) -> np.ndarray:
    """A per-session array repeated onto the rows of the session's results."""
    return np.repeat(values, K) if sess_of_row is None else values[sess_of_row]


def _session_column(
    values: np.ndarray, name: str, dtype: pl.DataType, K: int, sess_of_row: np.ndarray | None
) -> pl.Series | pl.Expr:
    """Repeat a per-session value onto its rows (a literal when all values agree)."""
    if len(values) and (values == values[0]).all():
        return pl.lit(values[0].item(), dtype=dtype).alias(name)
    return pl.Series(name, _per_row(values, K, sess_of_row), dtype=dtype)


def _categorical(
    names: Sequence[str], codes: np.ndarray, name: str, K: int, sess_of_row: np.ndarray | None
) -> pl.Series | pl.Expr:
    if len(codes) and (codes == codes[0]).all():
        return pl.lit(names[int(codes[0])], dtype=pl.Categorical).alias(name)
    cats = pl.Series(name, list(names), dtype=pl.String).cast(pl.Categorical)
    return cats.gather(_per_row(codes.astype(np.uint32), K, sess_of_row))


def _session_ids(
    ids: pl.Series, index: np.ndarray, name: str, K: int, sess_of_row: np.ndarray | None
) -> pl.Series:
    """String ``ids[index]`` per session, repeated onto the session's rows (numeric ids
    come from :meth:`_Cells.fill`)."""
    return ids.gather(_per_row(index, K, sess_of_row)).alias(name)


def _row_ids(ids: np.ndarray | pl.Series, rows: np.ndarray, name: str) -> pl.Series:
    """``ids[rows]`` (rows >= 0), numeric ids written over ``rows`` (which the chunk owns).

    Reusing the buffer saves touching a fresh ``8 * rows.size`` bytes, the main
    cost of the table. ``mode="clip"`` (no index is out of range) lets numpy
    gather in place; the default mode would buffer a copy.
    """
    if isinstance(ids, pl.Series):
        return ids.gather(rows).alias(name)
    if rows.dtype != ids.dtype:
        return pl.Series(name, np.take(ids, rows))
    return pl.Series(name, np.take(ids, rows, out=rows, mode="clip"))


def _id_source(ids: np.ndarray) -> np.ndarray | pl.Series:
    """Numeric ids stay numpy (fast gathers); string ids become a polars String series."""
    if ids.dtype.kind in "iu":
        return ids.astype(np.int64, copy=False)
    return pl.Series(ids.astype(str) if ids.dtype.kind != "O" else ids, dtype=pl.String)


def _positions(S: int, K: int) -> np.ndarray:
    """Positions ``1..K`` of ``S`` full sessions, read-only (the log chunks share it)."""
    pos = np.tile(np.arange(1, K + 1, dtype=np.uint16), S)
    pos.flags.writeable = False
    return pos


class _RowTable:
    """What a displayed row puts in its cell, packed per row so that one gather reads it.

    ``packed[r] = (bits of label r, id written over row r)`` for the ``n_docs`` rows,
    plus a last entry (NaN, -1) that row -1 (an empty slot) reads. The id is the
    numeric doc id (``doc_ids`` True) or the row itself (string doc ids: polars
    gathers them from the rows later). Built once per simulation.
    """

    def __init__(self, y: np.ndarray, docs: np.ndarray | pl.Series) -> None:
        n = len(y)
        self.doc_ids = isinstance(docs, np.ndarray) and docs.dtype == np.int64
        packed = np.empty((n + 1, 2), dtype=np.int64)
        packed[:n, 0] = np.ascontiguousarray(y, dtype=np.float64).view(np.int64)
        packed[n, 0] = np.array([np.nan]).view(np.int64)[0]
        packed[:n, 1] = docs if self.doc_ids else np.arange(n)
        packed[n, 1] = -1
        self.packed = packed

    def of_lists(self, lists: np.ndarray | None) -> _FixedLists | None:
        """The entries of fixed lists ``[n_lists, K]`` in list order (None for None): each
        list's cells then sit in one contiguous block. Built once per simulation."""
        if lists is None:
            return None
        cells = self.packed[lists]  # row -1 reads the last entry
        return _FixedLists(cells, np.isnan(cells[:, :, 0].view(np.float64)).sum(axis=1))


class _FixedLists(NamedTuple):
    """:meth:`_RowTable.of_lists`: ``cells[l, k]`` = (label bits, id) of place ``k`` of list
    ``l``, ``[n_lists, K, 2]``, and ``empty[l]`` its number of empty slots."""

    cells: np.ndarray
    empty: np.ndarray


# The kernels index with unsigned integers: numba then drops the per-cell check for
# negative (wrap-around) indices, about a sixth of their time.


@nb.njit(cache=True, parallel=True)
def _fill_cells(rows, packed, sessions, queries, qids, label_bits, session_col, query_col):
    """Labels (as bits), ids (over ``rows``), session and query ids of the displayed cells.

    Per cell, one gather of ``packed[row]`` (:class:`_RowTable`; row -1 reads its last
    entry) gives the label and the id; the session and, with numeric ``qids``, the
    query id go to ``session_col`` and ``query_col``. One pass over sessions on
    numba's threads. Returns the number of empty slots.
    """
    S, K = rows.shape
    flat_rows, flat_bits, flat_packed = rows.reshape(-1), label_bits.reshape(-1), packed.reshape(-1)
    last = np.uint64(packed.shape[0] - 1)
    empty = 0
    for i in nb.prange(S):
        s = sessions[i]
        qi = 0 if qids is None else qids[np.uint64(queries[i])]
        for k in range(K):
            c = np.uint64(i * K + k)
            r = flat_rows[c]
            if r < 0:
                empty += 1
            j = (np.uint64(r) if r >= 0 else last) * np.uint64(2)
            flat_bits[c] = flat_packed[j]
            flat_rows[c] = flat_packed[j + np.uint64(1)]
            session_col[c] = s
            if qids is not None:
                query_col[c] = qi
    return empty


@nb.njit(cache=True, parallel=True)
def _fill_lists(lists, picked, sessions, queries, qids, label_bits, ids, session_col, query_col):
    """:func:`_fill_cells` for sessions shown fixed lists: ``lists[picked[i]]``
    (:meth:`_RowTable.of_lists`) holds session ``i``'s cells in order, so it copies
    one contiguous block instead of gathering row by row."""
    S, K = ids.shape
    flat_lists, flat_bits, flat_ids = lists.reshape(-1), label_bits.reshape(-1), ids.reshape(-1)
    for i in nb.prange(S):
        s = sessions[i]
        first = np.uint64(picked[i]) * np.uint64(K)
        qi = 0 if qids is None else qids[np.uint64(queries[i])]
        for k in range(K):
            c = np.uint64(i * K + k)
            j = (first + np.uint64(k)) * np.uint64(2)
            flat_bits[c] = flat_lists[j]
            flat_ids[c] = flat_lists[j + np.uint64(1)]
            session_col[c] = s
            if qids is not None:
                query_col[c] = qi


class _Cells:
    """The per-cell columns of a chunk, from :meth:`fill` (displayed rows) or
    :meth:`from_lists` (fixed lists), before its clicks are drawn.

    Attributes
    ----------
    labels : float64 ``[S, K]``
        True labels of the displayed rows (NaN: empty slot); the click models read them.
    rows : int64 ``[S, K]``
        Numeric doc ids (written over the displayed rows), or the rows themselves
        when the doc ids are strings (``doc_ids`` False); -1 in empty slots.
    session : uint64 ``[S * K]``
        Session id of every cell.
    query : int64 ``[S * K]`` or None
        Query id of every cell; None for string query ids (:func:`_to_table` gathers them).
    empty : int
        Number of empty slots (NaN labels).
    """

    def __init__(self, labels, rows, doc_ids, session, query, empty) -> None:
        self.labels, self.rows, self.doc_ids = labels, rows, doc_ids
        self.session, self.query, self.empty = session, query, empty

    @classmethod
    def fill(
        cls,
        rows: np.ndarray,
        table: _RowTable,
        sessions: np.ndarray,
        queries: np.ndarray,
        qids: np.ndarray | pl.Series,
    ) -> _Cells:
        """The labels and id columns of ``rows`` (int64, overwritten with the ids)."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        labels, session, query, args, _ = _columns(rows.shape, sessions, queries, qids)
        empty = _fill_cells(rows, table.packed, *args, labels.view(np.int64), session, query)
        return cls(labels, rows, table.doc_ids, session, query, int(empty))

    @classmethod
    def from_lists(
        cls,
        lists: _FixedLists,
        table: _RowTable,
        sessions: np.ndarray,
        picked: np.ndarray,
        queries: np.ndarray,
        qids: np.ndarray | pl.Series,
    ) -> _Cells:
        """The columns of sessions shown fixed lists, list ``picked[i]`` of
        ``lists = table.of_lists(prepared.lists)`` with ``picked`` from
        ``prepared.pick``: the same as :meth:`fill` on the lists' rows."""
        K = lists.cells.shape[1]
        labels, session, query, args, ids = _columns(
            (len(sessions), K), sessions, queries, qids, ids=True
        )
        picked = np.ascontiguousarray(picked, dtype=np.int64)
        _fill_lists(lists.cells, picked, *args, labels.view(np.int64), ids, session, query)
        empty = int(lists.empty[picked].sum()) if lists.empty.any() else 0
        return cls(labels, ids, table.doc_ids, session, query, empty)


def _columns(shape: tuple[int, int], sessions, queries, qids, ids: bool = False) -> tuple:
    """A chunk's fresh columns and the kernels' session, query and query-id arguments.

    Returns ``labels`` float64 ``[S, K]``, ``session`` uint64 ``[S * K]``, ``query``
    int64 ``[S * K]`` (None for string ``qids``), the arguments, and with ``ids`` an
    int64 ``[S, K]`` id column. The columns are views of one allocation: numpy backs
    a large one with huge pages, while separate column-sized buffers come from the
    heap in 4 KiB pages, whose first touch costs more (at the default chunk size, a
    tenth of a simulation's time on one thread and a third on two). They share its
    lifetime: the block is freed with the last column of the chunk.
    """
    S, K = shape
    num_qids = isinstance(qids, np.ndarray)
    n = S * K
    block = np.empty((2 + num_qids + ids) * n, dtype=np.uint64)
    labels = block[:n].view(np.float64).reshape(S, K)
    session = block[n : 2 * n]
    query = block[2 * n : 3 * n].view(np.int64) if num_qids else None
    id_col = block[(2 + num_qids) * n :].view(np.int64).reshape(S, K) if ids else None
    args = (
        np.ascontiguousarray(sessions, dtype=np.uint64),
        np.ascontiguousarray(queries, dtype=np.int64),
        qids if num_qids else None,
    )
    return labels, session, query, args, id_col


def _to_table(
    *,
    cells: _Cells,
    queries: np.ndarray,
    clicks: np.ndarray,
    icode: np.ndarray,
    rcode: np.ndarray,
    pivot: np.ndarray,
    swap_k: np.ndarray,
    qids: np.ndarray | pl.Series,
    docs: np.ndarray | pl.Series,
    ranker_names: Sequence[str],
    positions: np.ndarray | None = None,
    contexts: Sequence[tuple[str, Sequence[str], np.ndarray]] = (),
) -> pl.DataFrame:
    """Dense ``[S, K]`` arrays -> the long click-log table, one vectorized pass.

    Empty slots (``rows == -1``) are dropped; as lists are filled from the
    top, the remaining positions of every session are ``1..n``. Numeric
    columns hand their numpy buffers to polars without a copy, and numeric
    doc ids are gathered into ``rows`` itself (which is overwritten);
    ``positions`` (from :func:`_positions`, at least ``S`` sessions long) is
    shared by the chunks of one run. The labels, doc, session and numeric query
    ids come from ``cells`` (:meth:`_Cells.fill`, which the simulator calls
    before drawing the clicks). ``contexts`` holds ``(name, values, codes)`` per context
    column: its values and each session's index into them, appended as Categorical
    columns after ``swap_k``.
    """
    S, K = cells.rows.shape
    flat = cells.rows.reshape(-1)
    if cells.empty == 0:  # counted by _Cells.fill
        keep = sess_of_row = None
        full = positions is not None and len(positions) >= S * K
        pos = positions[: S * K] if full else _positions(S, K)
    else:
        # doc ids hide the -1 rows; the labels do not (data labels are finite, empty slots NaN)
        shown = ~np.isnan(cells.labels.reshape(-1)) if cells.doc_ids else flat >= 0
        keep = np.flatnonzero(shown)
        sess_of_row = keep // K
        pos = (keep % K + 1).astype(np.uint16)
        flat = flat[keep]

    def cell(a: np.ndarray) -> np.ndarray:
        a = a.reshape(-1)
        return a if keep is None else a[keep]

    session = cell(cells.session)
    if cells.query is None:
        query = _session_ids(qids, queries, "query", K, sess_of_row)
    else:
        query = pl.Series("query", cell(cells.query))
    doc = pl.Series("doc", flat) if cells.doc_ids else _row_ids(docs, flat, "doc")
    cols = [
        pl.Series("session", session, dtype=pl.UInt64),
        query,
        pl.Series("position", pos, dtype=pl.UInt16),
        doc,
        pl.Series("click", cell(clicks), dtype=pl.Boolean),
        _categorical(INTERVENTION_CATEGORIES, icode, "intervention", K, sess_of_row),
        _categorical(ranker_names, rcode, "ranker", K, sess_of_row),
        pl.Series("label", cell(cells.labels), dtype=pl.Float64),
        _session_column(pivot, "swap_pivot", pl.UInt16, K, sess_of_row),
        _session_column(swap_k, "swap_k", pl.UInt16, K, sess_of_row),
        *(_categorical(values, codes, name, K, sess_of_row) for name, values, codes in contexts),
    ]
    # constant columns stay literals: polars keeps them as one scalar, not n copies
    table = pl.DataFrame([c for c in cols if isinstance(c, pl.Series)])
    if table.width == len(cols):
        return table
    return table.select(pl.col(c.name) if isinstance(c, pl.Series) else c for c in cols)


#: Sessions per part file when ``simulate(out=FOLDER)`` writes a folder of parquet parts.
PART_SESSIONS = 200_000
#: Rows per parquet row group: fixed, so the bytes of a log do not depend on ``chunk_size``.
ROW_GROUP_ROWS = 1 << 20
#: Rough size of a displayed result: in a parquet log (zstd) and in a polars DataFrame.
DISK_BYTES_PER_ROW = 3
MEMORY_BYTES_PER_ROW = 48


def estimate_log_bytes(n_sessions: int, top_k: int, *, on_disk: bool = True) -> int:
    """Rough size of a simulated log of ``n_sessions`` x ``top_k`` rows, on disk or in memory.

    Measured on clickrank's own logs (synthetic and LETOR data): about 1.6-2
    bytes per row as zstd parquet and 42-46 bytes per row as a polars
    DataFrame; the constants round these up (:data:`DISK_BYTES_PER_ROW`,
    :data:`MEMORY_BYTES_PER_ROW`).
    """
    per_row = DISK_BYTES_PER_ROW if on_disk else MEMORY_BYTES_PER_ROW
    return int(n_sessions) * int(top_k) * per_row


def _check_memory(n_sessions: int, top_k: int) -> None:
    need = estimate_log_bytes(n_sessions, top_k, on_disk=False)
    avail = available_memory()
    if avail is not None and need > avail:
        raise InputError(
            f"n_sessions={n_sessions:,} x top_k={top_k} would need about {need / 2**30:,.1f} GiB "
            f"of memory but {avail / 2**30:,.1f} GiB are available; stream the log to disk "
            "with out=..., simulate fewer sessions, or pass check_space=False"
        )


def _parts(chunks: Iterator[pl.DataFrame], first: int, size: int) -> Iterator[pl.DataFrame]:
    """Regroup session-ordered chunks into parts of ``size`` sessions each.

    Part ``j`` holds sessions ``first + j*size .. first + (j+1)*size - 1``,
    whatever the chunks were, so a folder of parts has the same files for any
    ``chunk_size``.
    """
    pending: list[pl.DataFrame] = []
    boundary = first + size
    for table in chunks:
        while table.height:
            cut = int(np.searchsorted(table["session"].to_numpy(), boundary))
            if cut == table.height:
                pending.append(table)
                break
            if cut:
                pending.append(table.slice(0, cut))
            if pending:
                yield pl.concat(pending, rechunk=False)
            pending = []
            table = table.slice(cut)
            boundary += size
    if pending:
        yield pl.concat(pending, rechunk=False)


class _Writer:
    """Writes chunks atomically: one parquet file (streamed) or a folder of part files.

    A single file is written by polars' streaming engine from a Python source
    that yields the chunks (``polars.io.plugins.register_io_source``), so only
    a chunk or two is in memory; a folder gets one part file per
    :data:`PART_SESSIONS` sessions. Row groups have :data:`ROW_GROUP_ROWS`
    rows, so the bytes do not depend on ``chunk_size``. Both go to a temporary
    name in the destination folder and are renamed into place at the end; on
    any error nothing is left behind. An existing ``out`` is replaced only with
    ``overwrite`` and only if clickrank wrote it (:func:`clickrank._core._io.check_output`).
    """

    def __init__(self, out: str | os.PathLike, overwrite: bool, need_bytes: int = 0) -> None:
        self.out = Path(out)
        self.metadata: dict[str, str] | None = None  # parquet key-value metadata of every file
        if not self.out.parent.is_dir():
            raise InputError(f"the folder of out ({self.out.parent}) does not exist")
        check_output(self.out, force=overwrite, what="out", need_bytes=need_bytes)

    def run(self, chunks: Iterator[pl.DataFrame], first_session: int) -> Path:
        clean_stale(self.out.parent)
        with output_errors(self.out):
            if self.out.suffix == ".parquet":
                return self._single(chunks)
            return self._folder(_parts(chunks, first_session, PART_SESSIONS))

    def _single(self, chunks: Iterator[pl.DataFrame]) -> Path:
        from polars.io.plugins import register_io_source

        tmp = temp_path(self.out)
        failure: list[BaseException] = []

        try:
            first = next(chunks)

            def source(with_columns, predicate, n_rows, batch_size) -> Iterator[pl.DataFrame]:
                try:
                    yield first
                    yield from chunks
                except GeneratorExit:  # polars closed the source (the sink stopped): not a failure
                    raise
                except BaseException as err:  # re-raised below with its own type
                    failure.append(err)
                    raise

            lazy = register_io_source(source, schema=first.schema)
            try:
                lazy.sink_parquet(
                    tmp, statistics=True, row_group_size=ROW_GROUP_ROWS, metadata=self.metadata
                )
            except BaseException:
                if failure:
                    raise failure[0] from None
                raise
            if self.out.is_dir():
                remove_owned(self.out)
            publish(tmp, self.out)
        except BaseException:
            discard(tmp)
            raise
        return self.out

    def _folder(self, parts: Iterator[pl.DataFrame]) -> Path:
        tmp = temp_path(self.out, folder=True)
        trash = None
        try:
            for i, table in enumerate(parts):
                part = tmp / f"part-{i:05d}.parquet"
                table.write_parquet(
                    part, statistics=True, row_group_size=ROW_GROUP_ROWS, metadata=self.metadata
                )
                record(part)
            if self.out.is_dir():
                bad = first_foreign(self.out)
                if bad is not None:  # changed since the check: keep it, drop the new log
                    raise InputError(
                        f"out {self.out}: {bad} was not written by clickrank; "
                        "the folder is left as it is"
                    )
                trash = temp_path(self.out, folder=True)
                os.replace(self.out, trash)  # onto the empty temporary folder
            elif self.out.exists():
                remove_owned(self.out)
            publish(tmp, self.out)
        except BaseException:
            discard(tmp)
            raise
        if trash is not None:
            discard(trash)
        return self.out
