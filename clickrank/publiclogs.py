"""Loaders for real public click logs, producing the standard click-log table (DESIGN §2).

* :func:`load_yandex_sample`: the Yandex WSCD 2011 "Relevance Prediction
  Challenge" sample shipped with early PyClick (``trainSample``/``testSample``).
* :func:`load_trec_session`: TREC 2014 Session Track impressions with clicks
  (and optional TREC relevance labels) as preprocessed for NCM/GraphCM.

Both return a polars DataFrame with ``session`` (UInt64, one impression),
``query``, ``position`` (UInt16, 1-based), ``doc``, ``click`` (Boolean) and
loader-specific extra columns. Parsing is vectorized with polars string
expressions; malformed input raises :class:`~clickrank.DataFormatError`
naming the file and line.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import polars as pl

from ._core._io import check_input, special_kind
from ._core._validation import DataFormatError

__all__ = ["load_yandex_sample", "load_trec_session"]

_log = logging.getLogger(__name__)

#: Positions and click counts are UInt16 in the log schema.
MAX_POSITION = 65_535


def _read_text(path: str | os.PathLike) -> tuple[Path, str]:
    path = check_input(path, what="click log")
    try:
        return path, path.read_text(encoding="ascii")
    except UnicodeDecodeError as err:
        line = path.read_bytes()[: err.start].count(b"\n") + 1
        raise DataFormatError(
            f"non-ASCII byte {err.object[err.start]:#x}", path=path, line=line
        ) from None


def _first_bad(
    frame: pl.DataFrame, mask: pl.Expr, what: str, path: Path, column: str | None = None
) -> None:
    bad = frame.filter(mask)
    if bad.height:
        row = bad.row(0, named=True)
        raise DataFormatError(
            f"{what}: {str(row.get('_show', ''))[:80]!r}",
            path=path,
            line=int(row["line"]),
            column=column,
        )


def _check_terminated(lines: list[str], path: Path) -> None:
    """Every non-empty line ends its last record with ``;``; a file cut mid-record does not."""
    filled = [i for i, ln in enumerate(lines) if ln.strip()]
    bad = next((i for i in filled if not lines[i].rstrip().endswith(";")), None)
    if bad is None:
        return
    last = lines[bad].rstrip().rsplit(";", 1)[-1].strip()
    where = (
        "the file ends inside a record (cut or truncated?)"
        if bad == filled[-1]
        else "the line ends inside a record"
    )
    raise DataFormatError(
        f"{where}: the last record {last[:40]!r} has no ';' at its end", path=path, line=bad + 1
    )


def _yandex_records(text: str, path: Path) -> pl.DataFrame:
    """Split and check the session records: the reading step of :func:`load_yandex_sample`."""
    lines = text.split("\n")
    _check_terminated(lines, path)
    records = (
        pl.DataFrame({"line": pl.int_range(1, len(lines) + 1, eager=True), "text": lines})
        .with_columns(rec=pl.col("text").str.split(";"))
        .explode("rec")
        .with_columns(rec=pl.col("rec").str.strip_chars())
        .filter(pl.col("rec") != "")
        .with_columns(_show=pl.col("rec"))
    )
    if records.height == 0:
        raise DataFormatError("no session records found", path=path)
    _first_bad(
        records, ~pl.col("rec").str.contains("\t"), "record without a tab after the query", path
    )
    _first_bad(
        records, ~pl.col("rec").str.contains(":"), "record without ':' before the clicks", path
    )
    records = (
        records.with_row_index("session")
        .with_columns(
            query=pl.col("rec").str.split_exact("\t", 1).struct.field("field_0").str.strip_chars(),
            rest=pl.col("rec").str.split_exact("\t", 1).struct.field("field_1"),
        )
        .with_columns(
            docs_s=pl.col("rest").str.split_exact(":", 1).struct.field("field_0"),
            clicks_s=pl.col("rest").str.split_exact(":", 1).struct.field("field_1"),
        )
    )
    _first_bad(records, pl.col("query") == "", "empty query id", path, "query")
    _first_bad(
        records.with_columns(_show=pl.col("docs_s").str.slice(0, 40)),
        pl.col("docs_s").str.count_matches(",") >= MAX_POSITION,
        f"a session lists more than {MAX_POSITION:,} documents (positions are UInt16)",
        path,
        "doc",
    )
    _first_bad(records, pl.col("clicks_s").str.contains(":"), "more than one ':' in a record", path)
    return records


def _yandex_docs(records: pl.DataFrame, path: Path) -> pl.DataFrame:
    """Rows per listed document, checked: the documents step of :func:`load_yandex_sample`."""
    docs = (
        records.select("session", "line", "query", doc_s=pl.col("docs_s").str.split(","))
        .with_columns(position=pl.int_ranges(1, pl.col("doc_s").list.len() + 1))
        .explode("doc_s", "position")
        .with_columns(doc_s=pl.col("doc_s").str.strip_chars())
        .with_columns(doc=pl.col("doc_s").cast(pl.Int64, strict=False), _show=pl.col("doc_s"))
    )
    _first_bad(docs, pl.col("doc").is_null(), "document id is empty or not an integer", path, "doc")
    dup = docs.filter(pl.struct("session", "doc").is_duplicated())
    _first_bad(
        dup.with_columns(_show=pl.col("doc_s")),
        pl.lit(True),
        "document listed twice in one session",
        path,
        "doc",
    )
    return docs


def _yandex_clicks(records: pl.DataFrame, path: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Click events and clicks per doc, checked: the clicks step of :func:`load_yandex_sample`."""
    clicks = (
        records.select("session", "line", c=pl.col("clicks_s").str.split(","))
        .explode("c")
        .with_columns(c=pl.col("c").str.strip_chars())
        .filter(pl.col("c") != "")
        .with_columns(doc=pl.col("c").cast(pl.Int64, strict=False), _show=pl.col("c"))
    )
    _first_bad(clicks, pl.col("doc").is_null(), "clicked id is not an integer", path, "click")
    per_doc = clicks.group_by("session", "doc").agg(n_clicks=pl.len(), line=pl.first("line"))
    _first_bad(
        per_doc.with_columns(_show=pl.col("doc").cast(pl.String)),
        pl.col("n_clicks") > MAX_POSITION,
        f"a document is clicked more than {MAX_POSITION:,} times in one session",
        path,
        "click",
    )
    per_doc = per_doc.select("session", "doc", pl.col("n_clicks").cast(pl.UInt16))
    return clicks, per_doc


def load_yandex_sample(
    path: str | os.PathLike, *, with_info: bool = False
) -> pl.DataFrame | tuple[pl.DataFrame, dict]:
    r"""Read a Yandex relevance-prediction sample in the PyClick-era text format.

    Format (see the data's PROVENANCE.md): one line per query; the line is a
    sequence of session records, each terminated by ``;``::

        <query>\t<d1>,<d2>,...,<d10> : <c1> , <c2> , ... ;

    The document list is in displayed order (rank 1 first); after ``:`` come
    the clicked document ids in click order, possibly repeated or empty.
    Spaces around separators vary and are stripped; empty lines are skipped.

    Parameters
    ----------
    path : path
        ``trainSample`` or ``testSample``.
    with_info : bool
        Also return a dict of counts (sessions, click events, clicks on
        documents outside the list, repeat clicks).

    Returns
    -------
    polars.DataFrame
        ``session`` (UInt64, record index in file order), ``query`` (String),
        ``position`` (UInt16), ``doc`` (Int64), ``click`` (Boolean: the doc
        was clicked at least once), ``n_clicks`` (UInt16, clicks on it),
        ``intervention`` (``none``). Clicks on documents that are not in the
        session's list (results beyond the top 10) are skipped and counted
        (``info["clicks_outside_list"]``, also logged).

    Raises
    ------
    DataFormatError
        A record without a tab or ``:``, an empty or non-integer document id,
        a document listed twice in one session, or a line whose last record
        has no ``;`` (a file cut mid-record); the message names the line.
    """
    path, text = _read_text(path)
    records = _yandex_records(text, path)
    docs = _yandex_docs(records, path)
    clicks, per_doc = _yandex_clicks(records, path)
    outside = per_doc.join(docs.select("session", "doc"), on=["session", "doc"], how="anti")
    log = (
        docs.join(per_doc, on=["session", "doc"], how="left")
        .select(
            pl.col("session").cast(pl.UInt64),
            pl.col("query"),
            pl.col("position").cast(pl.UInt16),
            pl.col("doc"),
            click=pl.col("n_clicks").is_not_null(),
            n_clicks=pl.col("n_clicks").fill_null(0),
            intervention=pl.lit("none").cast(pl.Categorical),
        )
        .sort("session", "position")
    )
    info = {
        "path": str(path),
        "sessions": records.height,
        "queries": records["query"].n_unique(),
        "rows": log.height,
        "click_events": clicks.height,
        "sessions_with_click_event": clicks["session"].n_unique(),
        "clicks_outside_list": int(outside["n_clicks"].sum() or 0),
        "repeat_clicks": int(clicks.height - per_doc.height),
    }
    if info["clicks_outside_list"]:
        _log.warning(
            "%s: skipped %d click events on documents not in the session's list",
            path,
            info["clicks_outside_list"],
        )
    return (log, info) if with_info else log


def load_trec_session(
    path: str | os.PathLike, *, labels: str | os.PathLike | None = None
) -> pl.DataFrame:
    r"""Read TREC 2014 Session Track impressions (NCM/GraphCM ``*_per_query_quid.txt``).

    Format (tab-separated, lists as Python literals, rank 1 first)::

        <session id>\t<query id>\t[doc ids]\t[vertical ids]\t[clicks 0/1]
        <session id>\t<query id>\t[doc ids]\t[vertical ids]\t[clicks 0/1]\t[relevance]

    (the second form is ``human_label_for_GraphCM_per_query_quid.txt``).

    Parameters
    ----------
    path : path
        A ``train``/``valid``/``test`` file or the label file.
    labels : path, optional
        The label file; its TREC relevance (−2..4) is joined onto ``path`` by
        (TREC session, query, doc); unmatched rows get null.

    Returns
    -------
    polars.DataFrame
        ``session`` (UInt64: one impression = one line, numbered in file
        order), ``query`` (Int64 query id), ``position`` (UInt16), ``doc``
        (Int64), ``click`` (Boolean), ``search_session`` (Int64, the TREC
        session holding several impressions), ``line`` (UInt32),
        ``intervention`` (``none``), and ``label`` (Float64) when available.

    Raises
    ------
    DataFormatError
        Wrong number of fields, a list that does not parse, lists of unequal
        length, or clicks other than 0/1; the message names the line.
    """
    log = _read_trec(path)
    if labels is not None:
        lab = _read_trec(labels)
        if "label" not in lab.columns:
            raise DataFormatError("the label file has no relevance column", path=labels)
        if "label" in log.columns:
            log = log.drop("label")
        lab = lab.group_by("search_session", "query", "doc").agg(pl.col("label").first())
        log = log.join(lab, on=["search_session", "query", "doc"], how="left")
        log = log.sort("session", "position")
    return log


def _trec_lines(path: str | os.PathLike) -> tuple[Path, pl.DataFrame, bool]:
    """Lines split into fields, checked; labels present: the reading step of :func:`_read_trec`."""
    path, text = _read_text(path)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    if not any(ln.strip() for ln in lines):
        raise DataFormatError("no impressions found (the file has no non-blank line)", path=path)
    raw = (
        pl.DataFrame(
            {
                "line": pl.int_range(1, len(lines) + 1, eager=True, dtype=pl.UInt32),
                "text": pl.Series(lines, dtype=pl.String),
            }
        )
        .filter(pl.col("text").str.strip_chars() != "")
        .with_columns(f=pl.col("text").str.split("\t"), _show=pl.col("text"))
    )
    if raw.height == 0:
        raise DataFormatError("no impressions found", path=path)
    nf = raw["f"].list.len()
    if nf.n_unique() != 1 or nf[0] not in (5, 6):
        _first_bad(
            raw, ~pl.col("f").list.len().is_in([5, 6]), "expected 5 or 6 tab-separated fields", path
        )
        _first_bad(
            raw,
            pl.col("f").list.len() != int(nf[0]),
            "number of fields differs from the first line",
            path,
        )
    has_label = int(nf[0]) == 6
    return path, raw, has_label


def _check_trec_fields(parsed: pl.DataFrame, path: Path, has_label: bool) -> None:
    """Raise on the first line with bad ids or lists: the checking step of :func:`_read_trec`."""
    _first_bad(
        parsed, pl.col("search_session").is_null(), "session id is not an integer", path, "session"
    )
    _first_bad(parsed, pl.col("query").is_null(), "query id is not an integer", path, "query")
    _first_bad(parsed, ~pl.col("ok_brackets"), "a list field is not a [..] list", path)
    _first_bad(
        parsed.with_columns(_show=pl.col("f").list.get(2).str.slice(0, 40)),
        pl.col("doc").list.len() > MAX_POSITION,
        f"an impression lists more than {MAX_POSITION:,} documents (positions are UInt16)",
        path,
        "doc",
    )
    lists = ["doc", "click"] + (["label"] if has_label else [])
    for col in lists:
        _first_bad(
            parsed,
            pl.col(col).list.eval(pl.element().is_null()).list.any(),
            f"{col} list holds a value that is not an integer",
            path,
            col,
        )
    for col in lists[1:]:
        _first_bad(
            parsed,
            pl.col(col).list.len() != pl.col("doc").list.len(),
            f"{col} list and doc list differ in length",
            path,
            col,
        )
    _first_bad(
        parsed,
        (pl.col("click").list.eval((pl.element() != 0) & (pl.element() != 1)).list.any()),
        "clicks must be 0 or 1",
        path,
        "click",
    )


def _read_trec(path: str | os.PathLike) -> pl.DataFrame:
    path, raw, has_label = _trec_lines(path)

    def ints(i: int) -> pl.Expr:
        return pl.col("f").list.get(i).str.strip_chars()

    def int_list(i: int) -> pl.Expr:
        return (
            pl.col("f")
            .list.get(i)
            .str.strip_chars()
            .str.strip_prefix("[")
            .str.strip_suffix("]")
            .str.split(",")
            .list.eval(pl.element().str.strip_chars().cast(pl.Int64, strict=False))
        )

    parsed = raw.with_columns(
        search_session=ints(0).cast(pl.Int64, strict=False),
        query=ints(1).cast(pl.Int64, strict=False),
        doc=int_list(2),
        click=int_list(4),
        **({"label": int_list(5)} if has_label else {}),
        ok_brackets=pl.all_horizontal(
            [
                pl.col("f").list.get(i).str.strip_chars().str.contains(r"^\[.*\]$")
                for i in ([2, 3, 4, 5] if has_label else [2, 3, 4])
            ]
        ),
    )
    _check_trec_fields(parsed, path, has_label)
    out = (
        parsed.with_row_index("session")
        .with_columns(position=pl.int_ranges(1, pl.col("doc").list.len() + 1))
        .explode(["doc", "click", "position"] + (["label"] if has_label else []))
        .select(
            pl.col("session").cast(pl.UInt64),
            "query",
            pl.col("position").cast(pl.UInt16),
            "doc",
            pl.col("click").cast(pl.Boolean),
            *([pl.col("label").cast(pl.Float64)] if has_label else []),
            "search_session",
            "line",
            intervention=pl.lit("none").cast(pl.Categorical),
        )
    )
    return out


#: The text formats :func:`sniff_format` recognises, and their loaders.
FORMATS = {"yandex": "load_yandex_sample", "trec": "load_trec_session"}


def sniff_format(path: str | os.PathLike) -> str | None:
    r"""Guess which public-log text format a file is in, from its first line.

    Returns ``"parquet"`` for a parquet file, ``"trec"`` for a TREC session
    file (:func:`load_trec_session`: tab-separated, lists in brackets),
    ``"yandex"`` for a Yandex sample (:func:`load_yandex_sample`: ``query\tdocs :
    clicks ;``), else None. Reads at most the first 64 KiB.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.txt"
    >>> _ = p.write_text("460\t798\t[1, 2]\t[1, 1]\t[0, 1]\n")
    >>> sniff_format(p)
    'trec'
    """
    p = Path(path)
    if special_kind(p) is not None or not p.is_file():
        return None
    with open(p, "rb") as f:
        head = f.read(65536)
    if head[:4] == b"PAR1":
        return "parquet"
    first = head.split(b"\n", 1)[0].decode("utf-8", "replace")
    fields = first.split("\t")
    if len(fields) in (5, 6) and all(f.strip().startswith("[") for f in fields[2:]):
        return "trec"
    if len(fields) >= 2 and ":" in fields[1] and ";" in first:
        return "yandex"
    return None
