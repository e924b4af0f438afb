"""The click-log table: schema, validation, parquet/CSV IO and lazy aggregations.

A click log has one row per displayed result (DESIGN §2):

============== ======================== ==========================================
column         type                     meaning
============== ======================== ==========================================
``session``    UInt64                   one impression of a ranked list
``query``      integer or String        the query of the session
``position``   UInt16                   1-based rank at which ``doc`` was shown
``doc``        integer or String        document id, unique within the query
``click``      Boolean                  whether the user clicked it
``intervention`` Categorical, optional  ``none``, ``swap``, ``randpair``, ``randomized``,
                                        ``fairpairs``
``ranker``     Categorical, optional    the logging ranker (for harvesting)
``label``      Float64, optional        true relevance (simulated logs only)
``swap_pivot`` UInt16, optional         swapped sessions: the upper swapped rank (FairPairs: the
                                        first paired rank, 1 or 2), else 0
``swap_k``     UInt16, optional         swapped sessions: the lower swapped rank (FairPairs: the
                                        lower rank of the last pair), else 0
*context*      Categorical, optional    columns named by the user (``device``): one value per
                                        session (:class:`clickrank.simulation.Context`)
============== ======================== ==========================================

Each session shows positions ``1..n`` exactly once, for a single query.
Other columns are allowed and kept.

A parquet log written by clickrank also describes itself: the parquet
key-value metadata holds, under :data:`METADATA_KEY`, a JSON object with how
it was simulated (data, sessions, seed, click model, interventions, logging
policy) and the logging ranker's quality (its NDCG@10 on the queries it was not
trained on). :func:`read_log_metadata` returns it as a dict (None for logs
from elsewhere and CSV). :func:`validate_log` checks the schema
first (names and dtypes, via ``collect_schema()``, without reading data), then
the values, and returns the log cast to the canonical dtypes. The
aggregations take and return :class:`polars.LazyFrame` so they run on logs
larger than memory (``collect(engine="streaming")``).
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
import polars as pl

from ._core._io import atomic_write, check_input, check_output, json_default, parquet_parts
from ._core._result import Result
from ._core._validation import (
    ClickRankError,
    ClickRankWarning,
    InputError,
    LogSchemaError,
    check_alpha,
)

__all__ = [
    "LOG_SCHEMA",
    "context_columns",
    "REQUIRED_COLUMNS",
    "validate_log",
    "warn_thin_log",
    "MIN_TRAIN_SESSIONS",
    "read_log",
    "read_log_metadata",
    "write_log",
    "METADATA_KEY",
    "parquet_metadata",
    "click_counts",
    "ctr_by_position",
    "counts_by_query_doc_position",
    "counts_by_intervention_position",
    "counts_by_ranker_query_doc_position",
    "lazy_log",
    "select_intervention",
    "ctr_by_position_and_label",
    "log_totals",
    "mean_by_position",
    "share_at_least_by_position",
    "skip_above_pairs",
    "skip_above_by_distance",
    "LogStats",
    "PositionCTR",
    "SkipAboveCounts",
]

REQUIRED_COLUMNS = ("session", "query", "position", "doc", "click")


def context_columns(context: Any) -> tuple[str, ...]:
    """``context`` (a column name or a list of them) as a tuple of distinct names.

    Raises
    ------
    InputError
        Not a name or names, an empty name, or a name given twice.
    """
    cols = (context,) if isinstance(context, str) else context
    try:
        cols = tuple(cols)
    except TypeError:
        raise InputError(
            f"context must be a column name or a list of them, got {type(context).__name__}"
        ) from None
    if not cols or not all(isinstance(c, str) and c for c in cols):
        raise InputError(f"context must name one or more log columns, got {context!r}")
    if len(set(cols)) != len(cols):
        raise InputError(f"context names a column twice: {list(cols)}")
    return cols


#: Key of the parquet key-value metadata entry that holds a log's description (JSON).
METADATA_KEY = "clickrank"

#: Canonical dtype of every known column (``None``: integer or String ids kept as they are).
LOG_SCHEMA: dict[str, pl.DataType | None] = {
    "session": pl.UInt64(),
    "query": None,
    "position": pl.UInt16(),
    "doc": None,
    "click": pl.Boolean(),
    "intervention": pl.Categorical(),
    "ranker": pl.Categorical(),
    "label": pl.Float64(),
    "swap_pivot": pl.UInt16(),
    "swap_k": pl.UInt16(),
}

_KINDS = {
    "session": "integer",
    "query": "id",
    "position": "integer",
    "doc": "id",
    "click": "boolean",
    "intervention": "category",
    "ranker": "category",
    "label": "numeric",
    "swap_pivot": "integer",
    "swap_k": "integer",
}

_EXPECTED = {
    "integer": "an integer type",
    "id": "an integer or String type",
    "boolean": "Boolean (or integers 0/1)",
    "category": "Categorical, Enum or String",
    "numeric": "a numeric type",
}


def _kind_ok(kind: str, dtype: pl.DataType) -> bool:
    if kind == "integer":
        return dtype.is_integer()
    if kind == "id":
        return (
            dtype.is_integer() or dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum)
        )
    if kind == "boolean":
        return dtype == pl.Boolean or dtype.is_integer()
    if kind == "category":
        return dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum)
    return dtype.is_numeric()


def _where(row: dict[str, Any]) -> str:
    return ", ".join(f"{k} {row[k]!r}" for k in ("session", "position") if k in row)


def _first(lf: pl.LazyFrame, cols: Sequence[str]) -> dict[str, Any]:
    got = lf.select(cols).sort(cols, nulls_last=False).head(1).collect()
    return got.row(0, named=True) if got.height else {}


def validate_log(
    log: pl.DataFrame | pl.LazyFrame,
    *,
    source: str | os.PathLike | None = None,
    check_values: bool = True,
    progress: Callable[[int], None] | None = None,
) -> pl.DataFrame | pl.LazyFrame:
    """Check a click log against the schema and return it with canonical dtypes.

    Parameters
    ----------
    log : polars.DataFrame or polars.LazyFrame
    source : path, optional
        Named in error messages.
    check_values : bool
        Also check the values (one pass over the data): no nulls in the key
        columns, ``position >= 1``, positions ``1..n`` once each per session,
        one query per session, ``click`` 0/1 if stored as integers. A log in
        (session, position) order is checked in batches, in memory that does
        not grow with the log; another order needs a group-by over sessions.
    progress : callable, optional
        Called with the number of rows after each batch of the value check.

    Returns
    -------
    The same kind of frame, with ``session`` UInt64, ``position`` UInt16,
    ``click`` Boolean, categories Categorical and ``label`` Float64.

    Raises
    ------
    LogSchemaError
        Naming the column and, for bad values, an offending row (session and
        position).
    """
    if not isinstance(log, (pl.DataFrame, pl.LazyFrame)):
        raise InputError(
            f"a click log must be a polars DataFrame or LazyFrame, got {type(log).__name__}"
        )
    path = None if source is None else str(source)
    lf = log.lazy()
    schema = lf.collect_schema()
    missing = [c for c in REQUIRED_COLUMNS if c not in schema]
    if missing:
        raise LogSchemaError(
            f"missing required column(s) {missing}; a click log needs {list(REQUIRED_COLUMNS)}",
            path=path,
            column=missing[0],
        )
    for col, kind in _KINDS.items():
        if col in schema and not _kind_ok(kind, schema[col]):
            raise LogSchemaError(
                f"has dtype {schema[col]}, expected {_EXPECTED[kind]}", path=path, column=col
            )

    if check_values:
        _check_values(lf, schema, path, progress)

    casts = []
    for col, dtype in LOG_SCHEMA.items():
        if col in schema and dtype is not None and schema[col] != dtype:
            casts.append(pl.col(col).cast(dtype))
    out = lf.with_columns(casts) if casts else lf
    return out.collect() if isinstance(log, pl.DataFrame) else out


#: Rows per batch of the streaming validation pass (memory does not grow with the log).
VALIDATION_BATCH_ROWS = 1 << 20


def _scan_values(
    lf: pl.LazyFrame, schema: pl.Schema, progress: Callable[[int], None] | None = None
) -> tuple[dict[str, Any], bool]:
    """One streaming pass over the log in batches: global statistics and session order.

    Returns the statistics of :func:`_check_values` and whether the rows are
    in (session, position) order with every session showing positions 1..n
    of a single query -- a check that needs only the previous row, so memory
    stays at one batch whatever the size of the log.
    """
    key = list(REQUIRED_COLUMNS)
    extra = [c for c in ("swap_pivot", "swap_k") if c in schema]
    click_int = schema["click"].is_integer()
    signed = schema["session"].is_signed_integer()
    g: dict[str, Any] = {f"null_{c}": 0 for c in key}
    g.update(pos_min=None, pos_max=None, session_min=None, bad_click=0)
    g.update({f"max_{c}": None for c in extra})

    def fold(name: str, value: Any, pick: Any) -> None:
        if value is not None:
            g[name] = value if g[name] is None else pick(g[name], value)

    s, p, q = pl.col("session"), pl.col("position"), pl.col("query")
    ordered = True
    last: pl.DataFrame | None = None
    cols = ["session", "position", "query", "click", "doc", *extra]
    for batch in lf.select(cols).collect_batches(chunk_size=VALIDATION_BATCH_ROWS):
        if batch.height == 0:
            continue
        st = batch.select(
            *[pl.col(c).null_count().alias(f"null_{c}") for c in key],
            pos_min=p.min(),
            pos_max=p.max(),
            session_min=s.min() if signed else pl.lit(None),
            bad_click=((pl.col("click") != 0) & (pl.col("click") != 1)).sum()
            if click_int
            else pl.lit(0),
            **{f"max_{c}": pl.col(c).max() for c in extra},
        ).row(0, named=True)
        for c in key:
            g[f"null_{c}"] += st[f"null_{c}"]
        g["bad_click"] += st["bad_click"] or 0
        fold("pos_min", st["pos_min"], min)
        fold("pos_max", st["pos_max"], max)
        fold("session_min", st["session_min"], min)
        for c in extra:
            fold(f"max_{c}", st[f"max_{c}"], max)
        if ordered:
            rows = batch.select("session", "position", "query")
            first = last is None
            if not first:
                rows = pl.concat([last, rows], how="vertical_relaxed")
            same = s == s.shift(1)
            ok = rows.select(
                pl.when(same)
                .then((p.cast(pl.Int64) == p.shift(1).cast(pl.Int64) + 1) & (q == q.shift(1)))
                .otherwise((s > s.shift(1)) & (p == 1))
                .slice(1)
                .all()
            ).item()
            ordered = bool(ok) and (not first or rows["position"][0] == 1)
            last = rows.tail(1)
        if progress is not None:
            progress(batch.height)
    return g, ordered


def _check_values(
    lf: pl.LazyFrame,
    schema: pl.Schema,
    path: str | None,
    progress: Callable[[int], None] | None = None,
) -> None:
    """Check the values; see :func:`validate_log`.

    A log in (session, position) order -- as clickrank writes it -- is
    checked in one streaming pass whose memory does not grow with the log
    (:func:`_scan_values`). Any other order, or a broken session, takes a
    group-by over sessions, whose memory grows with their number, to find and
    name the first bad session.
    """
    key = list(REQUIRED_COLUMNS)
    present_int = [c for c in ("session", "position", "swap_pivot", "swap_k") if c in schema]
    click_int = schema["click"].is_integer()
    g, ordered = _scan_values(lf, schema, progress)
    for c in key:
        if g[f"null_{c}"]:
            row = _first(lf.filter(pl.col(c).is_null()), ["session", "position"])
            raise LogSchemaError(
                f"has {g[f'null_{c}']} null value(s), first at {_where(row)}", path=path, column=c
            )
    if g.get("session_min") is not None and g["session_min"] < 0:
        row = _first(lf.filter(pl.col("session") < 0), ["session", "position"])
        raise LogSchemaError(f"must be >= 0; found {_where(row)}", path=path, column="session")
    if g["pos_min"] is not None and g["pos_min"] < 1:
        row = _first(lf.filter(pl.col("position") < 1), ["session", "position"])
        raise LogSchemaError(
            f"positions are 1-based and must be >= 1; found {_where(row)}",
            path=path,
            column="position",
        )
    if g["pos_max"] is not None and g["pos_max"] > 65535:
        row = _first(lf.filter(pl.col("position") > 65535), ["session", "position"])
        raise LogSchemaError(f"must fit UInt16; found {_where(row)}", path=path, column="position")
    if click_int and g["bad_click"]:
        not01 = (pl.col("click") != 0) & (pl.col("click") != 1)
        row = _first(lf.filter(not01), ["session", "position"])
        raise LogSchemaError(
            f"must be Boolean or 0/1; found another value at {_where(row)}",
            path=path,
            column="click",
        )
    for c in present_int[2:]:
        if g[f"max_{c}"] is not None and g[f"max_{c}"] > 65535:
            raise LogSchemaError("must fit UInt16", path=path, column=c)
    if ordered:
        return
    _check_sessions(lf, path)


def _check_sessions(lf: pl.LazyFrame, path: str | None) -> None:
    """Raise on the first bad session: :func:`_check_values`'s group-by step (unordered logs)."""
    per_session = (
        lf.group_by("session")
        .agg(
            n=pl.len(),
            n_pos=pl.col("position").n_unique(),
            pos_max=pl.col("position").max(),
            n_query=pl.col("query").n_unique(),
        )
        .filter(
            (pl.col("n_pos") < pl.col("n"))
            | (pl.col("pos_max").cast(pl.Int64) != pl.col("n").cast(pl.Int64))
            | (pl.col("n_query") > 1)
        )
        .sort("session")
        .head(1)
    )
    bad_session = per_session.collect(engine="streaming")
    if bad_session.height:
        b = bad_session.row(0, named=True)
        s = b["session"]
        if b["n_query"] > 1:
            raise LogSchemaError(
                f"session {s!r} mixes {b['n_query']} queries; a session shows one query",
                path=path,
                column="query",
            )
        if b["n_pos"] < b["n"]:
            dup = (
                lf.filter(pl.col("session") == s)
                .group_by("position")
                .len()
                .filter(pl.col("len") > 1)
                .sort("position")
                .head(1)
                .collect()
            )
            p = dup["position"][0]
            raise LogSchemaError(
                f"duplicated position: session {s!r}, position {p!r} appears "
                f"{dup['len'][0]} times (one row per session and position)",
                path=path,
                column="position",
            )
        raise LogSchemaError(
            f"positions of session {s!r} are not contiguous: {b['n']} rows but the largest "
            f"position is {b['pos_max']} (expected positions 1..{b['n']})",
            path=path,
            column="position",
        )


def _is_csv(path: str) -> bool:
    return path.lower().endswith((".csv", ".csv.gz", ".tsv"))


def read_log(
    path: str | os.PathLike,
    *,
    lazy: bool = True,
    validate: bool = True,
    progress: Callable[[int], None] | None = None,
) -> pl.LazyFrame | pl.DataFrame:
    """Read a click log: a parquet file, a folder of parquet files, a glob, or CSV.

    Parameters
    ----------
    path : path or glob
        ``*.parquet`` file, folder (all ``*.parquet`` below it), glob such as
        ``"logs/*.parquet"``, or a ``.csv``/``.tsv`` file (comma or tab).
    lazy : bool
        Return a LazyFrame (the default; scan, not read) or a DataFrame.
    validate : bool
        Run :func:`validate_log` (schema and values) with ``source=path``.
    progress : callable, optional
        Passed to :func:`validate_log` (rows checked so far).

    Raises
    ------
    DataFormatError
        If the path does not exist or cannot be parsed as a click log.
    LogSchemaError
        If the log violates the schema, or has no rows.
    """
    p = str(path)
    is_glob = any(ch in p for ch in "*?[")
    if not is_glob:
        check_input(p, what="click log", folder=True, error=LogSchemaError)
    try:
        if _is_csv(p):
            sep = "\t" if p.lower().endswith(".tsv") else ","
            lf = pl.scan_csv(p, separator=sep)
        elif Path(p).is_dir():
            if next(Path(p).rglob("*.parquet"), None) is None:
                raise LogSchemaError(
                    "is a folder without *.parquet files; expected a click log "
                    "(a parquet file, a folder of them, or CSV)",
                    path=p,
                )
            parquet_parts(p, error=LogSchemaError)
            lf = pl.scan_parquet(str(Path(p) / "**" / "*.parquet"))
        else:
            if is_glob:
                parquet_parts(p, error=LogSchemaError)
            lf = pl.scan_parquet(p)
        lf.collect_schema()
        empty = lf.head(1).collect().height == 0
    except (pl.exceptions.PolarsError, OSError) as err:
        raise LogSchemaError(f"cannot read a click log: {err}", path=p) from None
    if empty:  # before the dtypes: a header-only CSV has only String columns
        raise LogSchemaError("the click log is empty (no rows)", path=p)
    if validate:
        lf = validate_log(lf, source=p, progress=progress)
    return lf if lazy else lf.collect()


def parquet_metadata(metadata: Mapping[str, Any] | None) -> dict[str, str] | None:
    """``{METADATA_KEY: JSON}`` for polars' ``write_parquet``/``sink_parquet(metadata=...)``.

    Keys are sorted, so the same metadata gives the same bytes.

    Raises
    ------
    InputError
        If ``metadata`` is not a mapping of JSON values (numpy values are
        converted; NaN and infinity are refused: write None).
    """
    if metadata is None:
        return None
    if not isinstance(metadata, Mapping):
        raise InputError(f"metadata must be a dict, got {type(metadata).__name__}")
    try:
        text = json.dumps(
            dict(metadata),
            sort_keys=True,
            default=json_default,
            allow_nan=False,
            separators=(",", ":"),
        )
    except (TypeError, ValueError) as err:
        raise InputError(
            f"metadata must be JSON (finite numbers, strings, lists, dicts): {err}"
        ) from None
    return {METADATA_KEY: text}


def _first_parquet(p: str) -> str | None:
    """The parquet file whose metadata describes the log at ``p`` (file, folder or glob)."""
    if _is_csv(p):
        return None
    if any(ch in p for ch in "*?[") or Path(p).is_dir():
        return next(iter(parquet_parts(p, error=LogSchemaError)), None)
    return p


def read_log_metadata(path: str | os.PathLike) -> dict[str, Any] | None:
    """The description clickrank stored in a parquet log, or None.

    Reads only the parquet footer (no data). For a folder of part files or a
    glob the first part (in name order) is read: clickrank writes the same
    metadata into every part. Logs written by other tools, logs written by
    clickrank before it stored metadata, and CSV logs give None.

    The dict written by :func:`clickrank.simulation.simulate` has ``format``
    (``"clickrank.log"``), ``clickrank`` (version), ``data``, ``n_queries``,
    ``sessions``, ``first_session``, ``top_k``, ``seed``, ``policy`` (ranker
    names), ``click_model`` and ``interventions`` (their reprs) and, when
    the logging ranker's quality is known, ``logger_quality``: ranker name ->
    :meth:`clickrank.policies.ProductionRanker.quality` (see
    :func:`clickrank.policies.describe_quality`); plus any ``metadata=`` the
    caller added.

    Raises
    ------
    LogSchemaError
        If the path does not exist, is not parquet, or its clickrank entry is
        not a JSON object (one line naming the file).
    """
    p = str(path)
    if not any(ch in p for ch in "*?["):
        check_input(p, what="click log", folder=True, error=LogSchemaError)
    first = _first_parquet(p)
    if first is None:
        return None
    try:
        kv = pl.read_parquet_metadata(first)
    except (pl.exceptions.PolarsError, OSError) as err:
        raise LogSchemaError(f"cannot read the parquet metadata: {err}", path=first) from None
    text = kv.get(METADATA_KEY)
    if text is None:
        return None
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as err:
        raise LogSchemaError(
            f"the {METADATA_KEY!r} parquet metadata is not valid JSON: {err}", path=first
        ) from None
    if not isinstance(meta, dict):
        raise LogSchemaError(
            f"the {METADATA_KEY!r} parquet metadata is not a JSON object", path=first
        )
    return meta


def write_log(
    log: pl.DataFrame | pl.LazyFrame,
    path: str | os.PathLike,
    *,
    overwrite: bool = False,
    validate: bool = True,
    metadata: Mapping[str, Any] | None = None,
) -> Path:
    """Write a click log atomically to parquet (or CSV if ``path`` ends in ``.csv``).

    The log is validated first (unless ``validate=False``), written to a
    temporary file in the destination folder and renamed into place, so on
    any error nothing is written and an existing file is untouched.

    Parameters
    ----------
    log : DataFrame or LazyFrame
    path : path
    overwrite : bool
    validate : bool
    metadata : dict, optional
        A JSON description stored in the parquet key-value metadata under
        :data:`METADATA_KEY` (parquet only); :func:`read_log_metadata` reads
        it back. Pass ``read_log_metadata(source)`` to keep a simulated log's
        description when rewriting it.

    Raises
    ------
    InputError
        If ``path`` exists and ``overwrite`` is false, or its folder is
        missing; if ``metadata`` is not JSON or the output is CSV.
    LogSchemaError
        If the log is invalid.
    """
    out = Path(path)
    check_output(out, force=overwrite, what="", hint="overwrite=True (--force)")
    if out.is_dir():
        raise InputError(f"{out} is a folder; write_log writes one file")
    if not out.parent.is_dir():
        raise InputError(f"the folder of {out} does not exist")
    csv = _is_csv(out.name)
    if csv and metadata is not None:
        raise InputError(f"{out}: metadata is stored in parquet files only, not CSV")
    kv = parquet_metadata(metadata)
    if validate:
        log = validate_log(log)

    def write(tmp: Path) -> None:
        if isinstance(log, pl.LazyFrame) and csv:
            log.sink_csv(tmp)
        elif isinstance(log, pl.LazyFrame):
            log.sink_parquet(tmp, metadata=kv)
        elif csv:
            log.write_csv(tmp)
        else:
            log.write_parquet(tmp, statistics=True, metadata=kv)

    atomic_write(out, write, mkdir=False)
    return out


# -- aggregations ------------------------------------------------------------------------


def click_counts(log: pl.DataFrame | pl.LazyFrame, by: Sequence[str]) -> pl.LazyFrame:
    r"""Impressions, clicks, CTR and its binomial standard error per group.

    .. math::
        \widehat{\mathrm{CTR}} = c / n, \qquad
        \mathrm{SE} = \sqrt{\widehat{\mathrm{CTR}}(1 - \widehat{\mathrm{CTR}}) / n}

    Returns a LazyFrame with the ``by`` columns, ``impressions`` (UInt32/64),
    ``clicks``, ``ctr`` and ``se``, sorted by ``by``.
    """
    by = list(by)
    lf = log.lazy()
    schema = lf.collect_schema()
    for col in [*by, "click"]:
        if col not in schema:
            raise LogSchemaError("missing column needed for this aggregation", column=col)
    return (
        lf.group_by(by)
        .agg(impressions=pl.len(), clicks=pl.col("click").cast(pl.UInt64).sum())
        .with_columns(ctr=pl.col("clicks") / pl.col("impressions"))
        .with_columns(se=(pl.col("ctr") * (1 - pl.col("ctr")) / pl.col("impressions")).sqrt())
        .sort(by)
    )


def ctr_by_position(log: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    """Impressions, clicks, CTR and SE per position."""
    return click_counts(log, ["position"])


def counts_by_query_doc_position(log: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    """Counts per (query, doc, position): the input of click-model EM and IPS targets."""
    return click_counts(log, ["query", "doc", "position"])


def counts_by_intervention_position(log: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    """Counts per (intervention, swap_pivot, swap_k, position), for swap/randomization estimators.

    ``swap_pivot``/``swap_k`` are included when the log has them.
    """
    schema = log.lazy().collect_schema()
    by = ["intervention"] + [c for c in ("swap_pivot", "swap_k") if c in schema] + ["position"]
    return click_counts(log, by)


def counts_by_ranker_query_doc_position(log: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    """Counts per (ranker, query, doc, position): the input of intervention harvesting."""
    return click_counts(log, ["ranker", "query", "doc", "position"])


# -- per-position statistics for figures and run summaries -------------------------------
#
# Everything a figure or a run summary computes from a log lives here, so that
# ``clickrank.plots`` only draws. Errors name the caller (``what``) so that a
# message reads "ctr_by_position needs log column(s) ['label']".


def lazy_log(log: Any, needed: Sequence[str], what: str) -> pl.LazyFrame:
    """The log as a LazyFrame, after checking it is a polars frame with the ``needed`` columns.

    Raises
    ------
    InputError
        If ``log`` is not a polars DataFrame/LazyFrame or lacks a needed column
        (``what`` names the caller in the message).
    """
    if not isinstance(log, (pl.DataFrame, pl.LazyFrame)):
        raise InputError(
            f"{what}: log must be a polars DataFrame or LazyFrame (clickrank.clicklog.read_log), "
            f"got {type(log).__name__}"
        )
    lf = log.lazy()
    schema = lf.collect_schema()
    missing = [c for c in needed if c not in schema]
    if missing:
        hint = (
            " (true relevance labels exist only in simulated logs; simulate() writes them)"
            if "label" in missing
            else ""
        )
        raise InputError(f"{what} needs log column(s) {missing}{hint}; log has {schema.names()}")
    return lf


def select_intervention(lf: pl.LazyFrame, intervention: str | None, what: str) -> pl.LazyFrame:
    """Only the rows of sessions with this ``intervention`` (all rows if None)."""
    if intervention is None:
        return lf
    if "intervention" not in lf.collect_schema():
        raise InputError(
            f"{what}: intervention={intervention!r} given but the log has no 'intervention' column"
        )
    return lf.filter(pl.col("intervention").cast(pl.String) == intervention)


def ctr_by_position_and_label(log: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    r"""Impressions, clicks, CTR and SE per (position, label), rows with a label only.

    The cells of a click heat map: under the PBM each label's row is
    :math:`\alpha(y)\,\theta_p`.
    """
    lf = log.lazy()
    return click_counts(lf.filter(pl.col("label").is_not_null()), ["position", "label"])


#: A log with fewer sessions than this is too little click evidence to train on (a warning).
MIN_TRAIN_SESSIONS = 10


def warn_thin_log(path: str | os.PathLike | None) -> None:
    """Warn (one :class:`ClickRankWarning` line naming the cause) about a log too thin to
    train on: no clicks at all, or fewer than :data:`MIN_TRAIN_SESSIONS` sessions.

    One streaming pass over three columns; a log that cannot be read is left to
    :func:`read_log`, which reports it.
    """
    if path is None:
        return
    try:
        lf = read_log(path, validate=False)
        row = lf.select(
            sessions=pl.col("session").n_unique(),
            rows=pl.len(),
            clicks=pl.col("click").cast(pl.Int64).sum(),
        ).collect()
    except (ClickRankError, pl.exceptions.PolarsError, OSError):
        return
    sessions, rows, clicks = (int(row[c][0] or 0) for c in ("sessions", "rows", "clicks"))
    if clicks == 0:
        cause = f"has no clicks ({rows:,} rows)"
    elif sessions < MIN_TRAIN_SESSIONS:
        cause = f"has only {sessions:,} session(s) ({rows:,} rows, {clicks:,} clicks)"
    else:
        return
    warnings.warn(
        f"{path}: the log {cause}: too little click evidence, the model learns next to "
        "nothing from it",
        ClickRankWarning,
        stacklevel=2,
    )


def log_totals(log: pl.DataFrame | pl.LazyFrame) -> dict[str, Any]:
    """Sessions, impressions (rows) and clicks of a log, and sessions per intervention.

    Returns a dict with ``sessions``, ``impressions``, ``clicks`` (ints) and
    ``sessions_by_intervention`` (intervention name -> sessions, sorted by name).
    """
    lf = log.lazy()
    totals = (
        lf.select(
            sessions=pl.col("session").n_unique(),
            impressions=pl.len(),
            clicks=pl.col("click").cast(pl.Int64).sum(),
        )
        .collect()
        .row(0, named=True)
    )
    by_iv = (
        lf.group_by("intervention")
        .agg(sessions=pl.col("session").n_unique())
        .sort(pl.col("intervention").cast(pl.String))
        .collect()
    )
    return {
        **{k: int(v) for k, v in totals.items()},
        "sessions_by_intervention": {
            str(r["intervention"]): int(r["sessions"]) for r in by_iv.iter_rows(named=True)
        },
    }


def mean_by_position(
    log: pl.DataFrame | pl.LazyFrame,
    values: Callable[[np.ndarray], np.ndarray] | None = None,
    column: str = "label",
) -> pl.DataFrame:
    r"""Mean of ``column`` and of ``values(column)`` over the rows shown at each position.

    ``values`` maps the column's distinct values (float ``[1, m]``) to one value
    each (``[1, m]``), e.g. a relevance map giving :math:`P(\text{click} \mid
    \text{examined})` of the shown documents. The log is reduced to counts per
    (position, value) first, so the memory is that of the distinct cells. The
    result has one row per position shown, sorted: ``position``, ``shown``
    (rows), ``mean`` (of ``column``) and, with ``values``, ``mean_value``.
    """
    cells = (
        log.lazy().group_by("position", column).agg(n=pl.len()).sort("position", column).collect()
    )
    pos = cells["position"].to_numpy().astype(np.int64)
    lab = cells[column].to_numpy().astype(np.float64)
    n = cells["n"].to_numpy().astype(np.float64)
    size = int(pos.max()) + 1 if pos.size else 1
    shown = np.bincount(pos, weights=n, minlength=size)
    out = {
        "position": np.arange(size),
        "shown": shown.astype(np.int64),
        "mean": np.bincount(pos, weights=n * lab, minlength=size) / np.maximum(shown, 1),
    }
    if values is not None:
        a = np.asarray(values(lab[None, :]), dtype=np.float64)[0]
        out["mean_value"] = np.bincount(pos, weights=n * a, minlength=size) / np.maximum(shown, 1)
    return pl.DataFrame(out).filter(pl.col("shown") > 0)


def share_at_least_by_position(
    log: pl.DataFrame | pl.LazyFrame, threshold: float, column: str = "label"
) -> pl.DataFrame:
    """Share of the rows at each position whose ``column`` is at least ``threshold``.

    Returns ``position`` and ``share``, sorted by position.
    """
    return (
        log.lazy()
        .group_by("position")
        .agg((pl.col(column) >= threshold).mean().alias("share"))
        .sort("position")
        .collect()
    )


def skip_above_pairs(
    log: pl.DataFrame | pl.LazyFrame, what: str = "skip_above_pairs"
) -> pl.DataFrame:
    """Skip-above preference counts by (clicked position, skipped position), against the labels.

    The same pairs as :func:`clickrank.targets.skip_above` (a click at ``p``
    over each unclicked result above ``p``, Joachims et al. (2005), §5.3), kept
    by position and compared with the true labels of the two documents.

    Returns
    -------
    polars.DataFrame
        ``p_click``, ``p_skip`` (Int64), ``pairs``, ``agree`` (clicked label >
        skipped label), ``tie``, ``invert`` (clicked label < skipped label),
        sorted by positions.
    """
    lf = lazy_log(log, ("session", "position", "click", "label"), what)
    base = lf.select(
        "session",
        pl.col("position").cast(pl.Int64),
        pl.col("click").cast(pl.Boolean),
        pl.col("label").cast(pl.Float64),
    )
    clicked = base.filter(pl.col("click")).select(
        "session", pl.col("position").alias("p_click"), pl.col("label").alias("y_click")
    )
    skipped = base.filter(~pl.col("click")).select(
        "session", pl.col("position").alias("p_skip"), pl.col("label").alias("y_skip")
    )
    return (
        clicked.join(skipped, on="session", how="inner")
        .filter(pl.col("p_skip") < pl.col("p_click"))
        .group_by("p_click", "p_skip")
        .agg(
            pairs=pl.len(),
            agree=(pl.col("y_click") > pl.col("y_skip")).sum(),
            tie=(pl.col("y_click") == pl.col("y_skip")).sum(),
            invert=(pl.col("y_click") < pl.col("y_skip")).sum(),
        )
        .sort("p_click", "p_skip")
        .collect()
    )


def skip_above_by_distance(pairs: pl.DataFrame) -> pl.DataFrame:
    """:func:`skip_above_pairs` summed by the distance ``d = p_click - p_skip``.

    Returns ``d``, ``pairs``, ``agree``, ``tie``, ``invert``, sorted by ``d``.
    """
    return (
        pairs.with_columns(d=pl.col("p_click") - pl.col("p_skip"))
        .group_by("d")
        .agg(pl.col("pairs", "agree", "tie", "invert").sum())
        .sort("d")
    )


# -- the statistics of a click log as a result ----------------------------------------------


@dataclass(frozen=True)
class PositionCTR:
    r"""One row of :attr:`LogStats.ctr_by_position`: the clicks at one position.

    ``ctr`` is clicks / impressions and ``se`` its binomial standard error
    (:func:`click_counts`); ``mean_label`` is the mean true label of the
    documents shown there, ``mean_click_given_examined`` their mean
    :math:`P(\text{click} \mid \text{examined})` under the click model's
    relevance map, ``true_theta`` the click model's examination probability
    (None where not known).
    """

    position: int
    impressions: int
    clicks: int
    ctr: float
    se: float
    mean_label: float
    mean_click_given_examined: float | None = None
    true_theta: float | None = None


@dataclass(frozen=True)
class SkipAboveCounts:
    """Skip-above preferences of a log against the true labels (:func:`skip_above_pairs`)."""

    preferences: int = 0
    agree: int = 0
    tie: int = 0
    invert: int = 0


@dataclass(frozen=True, eq=False)
class LogStats(Result):
    """What a click log holds: totals, CTR by position, skip-above preferences.

    Built from a simulated log by :meth:`from_log`; the run summary of
    :func:`clickrank.experiment.run_experiment` stores :meth:`to_dict` under
    ``log`` (and in ``log_stats.json``) and the report renders from
    :meth:`from_dict`. ``ctr_by_position`` is over the sessions without
    intervention (``ctr_view`` ``"none"``) when the log has some, else over all
    of them (``"all"``). ``click_model`` (its repr), ``relevance`` (how labels
    map to click probabilities) and ``path`` describe where the log came from.

    Examples
    --------
    >>> import polars as pl
    >>> log = pl.DataFrame({
    ...     "session": [0, 0, 1, 1], "query": [1, 1, 1, 1], "position": [1, 2, 1, 2],
    ...     "doc": [1, 2, 2, 1], "click": [True, False, False, True],
    ...     "intervention": ["none"] * 4, "label": [1.0, 0.0, 0.0, 1.0],
    ... })
    >>> s = LogStats.from_log(log, click_model="PBM()")
    >>> print(s)
    Click log: 2 sessions, 4 displayed results, 2 clicks (1.000 per session)
    sessions by intervention: none: 2; click model: PBM()
    CTR by position (sessions without intervention (none)):
      position  impressions   clicks     CTR      SE  mean label
             1            2        1  0.5000  0.3536        0.50
             2            2        1  0.5000  0.3536        0.50
    skip-above preferences: 1 (agree 1, tie 0, invert 0)
    >>> s.conf_int().columns
    ['position', 'estimate', 'lower', 'upper', 'alpha']
    >>> LogStats.from_dict(s.to_dict()) == s
    True
    """

    sessions: int
    impressions: int
    clicks: int
    sessions_by_intervention: dict[str, int]
    ctr_view: str
    ctr_by_position: tuple[PositionCTR, ...]
    skip_above: SkipAboveCounts
    click_model: str | None = None
    relevance: str | None = None
    path: str | None = None

    FORMAT = "clickrank.log_stats"

    @classmethod
    def from_log(
        cls,
        log: pl.DataFrame | pl.LazyFrame,
        *,
        values: Callable[[np.ndarray], np.ndarray] | None = None,
        true_theta: Sequence[float] | np.ndarray | None = None,
        click_model: str | None = None,
        relevance: str | None = None,
        path: str | None = None,
    ) -> LogStats:
        r"""The statistics of a simulated ``log`` (columns session, position, click,
        intervention, label).

        ``values`` maps labels to :math:`P(\text{click} \mid \text{examined})`
        (the click model's relevance map, as for :func:`mean_by_position`);
        ``true_theta`` is the click model's examination probability per
        position (1-based positions, beyond its length None). ``click_model``,
        ``relevance`` and ``path`` are kept as given.
        """
        lf = lazy_log(
            log, ("session", "position", "click", "intervention", "label"), "LogStats.from_log"
        )
        totals = log_totals(lf)
        sessions_by_iv = totals["sessions_by_intervention"]
        view = "none" if sessions_by_iv.get("none", 0) > 0 else None
        sel = lf if view is None else lf.filter(pl.col("intervention").cast(pl.String) == view)
        ctr = click_counts(sel, ["position"]).collect()
        # mean label and mean P(click | examined) of the documents shown at each position
        per = mean_by_position(sel, values)
        mean_label = dict(zip(per["position"], per["mean"], strict=True))
        mean_alpha = (
            None if values is None else dict(zip(per["position"], per["mean_value"], strict=True))
        )
        theta = None if true_theta is None else np.asarray(true_theta, dtype=np.float64)
        rows = []
        for r in ctr.iter_rows(named=True):
            p = int(r["position"])
            rows.append(
                PositionCTR(
                    position=p,
                    impressions=int(r["impressions"]),
                    clicks=int(r["clicks"]),
                    ctr=r["ctr"],
                    se=r["se"],
                    mean_label=float(mean_label[p]),
                    mean_click_given_examined=None if mean_alpha is None else float(mean_alpha[p]),
                    true_theta=None if theta is None or p > theta.size else float(theta[p - 1]),
                )
            )
        pairs = skip_above_pairs(lf)
        n_pairs = int(pairs["pairs"].sum()) if pairs.height else 0
        sa = SkipAboveCounts(
            preferences=n_pairs,
            agree=int(pairs["agree"].sum()) if n_pairs else 0,
            tie=int(pairs["tie"].sum()) if n_pairs else 0,
            invert=int(pairs["invert"].sum()) if n_pairs else 0,
        )
        return cls(
            sessions=int(totals["sessions"]),
            impressions=int(totals["impressions"]),
            clicks=int(totals["clicks"]),
            sessions_by_intervention=sessions_by_iv,
            ctr_view=view or "all",
            ctr_by_position=tuple(rows),
            skip_above=sa,
            click_model=click_model,
            relevance=relevance,
            path=path,
        )

    def to_dict(self) -> dict:
        """The fields in order; ``ctr_by_position`` a list of row dicts, ``skip_above`` a dict."""
        return {
            "sessions": self.sessions,
            "impressions": self.impressions,
            "clicks": self.clicks,
            "sessions_by_intervention": dict(self.sessions_by_intervention),
            "ctr_view": self.ctr_view,
            "ctr_by_position": [asdict(r) for r in self.ctr_by_position],
            "skip_above": asdict(self.skip_above),
            "click_model": self.click_model,
            "relevance": self.relevance,
            "path": self.path,
        }

    @classmethod
    def from_dict(cls, d: dict) -> LogStats:
        f = cls._fields_in(d)
        f["ctr_by_position"] = tuple(PositionCTR(**r) for r in f.get("ctr_by_position", ()))
        f["skip_above"] = SkipAboveCounts(**f.get("skip_above", {}))
        f["sessions_by_intervention"] = dict(f.get("sessions_by_intervention", {}))
        return cls(**f)

    def conf_int(self, alpha: float = 0.05) -> pl.DataFrame:
        """Normal interval ``ctr ± z·se`` of the CTR at each position, at level ``1 - alpha``.

        Columns ``position``, ``estimate`` (the CTR), ``lower``, ``upper``, ``alpha``.
        """
        a = check_alpha(alpha)
        z = NormalDist().inv_cdf(1 - a / 2)
        return pl.DataFrame(
            {
                "position": [r.position for r in self.ctr_by_position],
                "estimate": [r.ctr for r in self.ctr_by_position],
                "lower": [r.ctr - z * r.se for r in self.ctr_by_position],
                "upper": [r.ctr + z * r.se for r in self.ctr_by_position],
                "alpha": [a] * len(self.ctr_by_position),
            },
            schema={
                "position": pl.Int64,
                "estimate": pl.Float64,
                "lower": pl.Float64,
                "upper": pl.Float64,
                "alpha": pl.Float64,
            },
        )

    def summary(self) -> str:
        iv = ", ".join(f"{k}: {v:,}" for k, v in self.sessions_by_intervention.items())
        view = (
            f"sessions without intervention ({self.ctr_view})"
            if self.ctr_view != "all"
            else "all sessions"
        )
        extra = [
            (name, [getattr(r, attr) for r in self.ctr_by_position], digits)
            for name, attr, digits in (
                ("mean label", "mean_label", 2),
                ("P(click|exam)", "mean_click_given_examined", 3),
                ("true θ", "true_theta", 3),
            )
            if any(getattr(r, attr) is not None for r in self.ctr_by_position)
        ]
        lines = [
            f"Click log: {self.sessions:,} sessions, {self.impressions:,} displayed results, "
            f"{self.clicks:,} clicks ({self.clicks / max(self.sessions, 1):.3f} per session)",
            f"sessions by intervention: {iv or 'none'}"
            + (f"; click model: {self.click_model}" if self.click_model else ""),
            f"CTR by position ({view}):",
            f"  {'position':>8}{'impressions':>13}{'clicks':>9}{'CTR':>8}{'SE':>8}"
            + "".join(f"{name:>{max(len(name) + 2, 8)}}" for name, _, _ in extra),
        ]
        for i, r in enumerate(self.ctr_by_position):
            cells = "".join(
                f"{'—' if v[i] is None else f'{v[i]:.{digits}f}':>{max(len(name) + 2, 8)}}"
                for name, v, digits in extra
            )
            lines.append(
                f"  {r.position:>8}{r.impressions:>13,}{r.clicks:>9,}{r.ctr:>8.4f}{r.se:>8.4f}"
                + cells
            )
        sa = self.skip_above
        lines.append(
            f"skip-above preferences: {sa.preferences:,} "
            f"(agree {sa.agree:,}, tie {sa.tie:,}, invert {sa.invert:,})"
        )
        return "\n".join(lines)
