"""Labelled learning-to-rank data: :class:`RankingData`, loaders, synthetic data, splits.

Rows are grouped by query and contiguous: query ``q`` owns rows
``qptr[q]:qptr[q + 1]`` (DESIGN §2). Loaders read LETOR/SVMlight text (with
``qid:``, ``#docid = ...`` comments, or LightGBM ``.query`` group files),
parquet and polars/pandas frames; writers produce the same formats.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ._core._io import atomic_write, check_input, check_output
from ._core._segments import gather, segment_ids
from ._core._segments import lengths as _lengths
from ._core._validation import DataFormatError, InputError, check_qptr

__all__ = [
    "RankingData",
    "feature_matrix",
    "load_letor",
    "save_letor",
    "from_frame",
    "read_parquet",
    "synthetic",
    "split_queries",
    "save_parquet",
    "load",
]


@dataclass(frozen=True, eq=False)
class RankingData:
    """Query-grouped learning-to-rank data (DESIGN §2).

    Parameters
    ----------
    X : array ``[n_docs, n_features]``
        Features, stored as float32.
    y : array ``[n_docs]`` or None
        Graded relevance labels (float64); None for unlabelled data.
    qptr : array ``[n_queries + 1]``
        Row offsets: query ``q`` owns rows ``qptr[q]:qptr[q + 1]``.
    qid : array ``[n_queries]``, optional
        Query ids (int or str). Defaults to ``0..n_queries-1``.
    doc : array ``[n_docs]``, optional
        Document ids, unique within a query. Defaults to the row index within
        the query.
    name : str
        A label for summaries and reports.

    Examples
    --------
    >>> import numpy as np
    >>> d = RankingData(np.zeros((3, 2)), np.array([0, 1, 2]), np.array([0, 2, 3]))
    >>> d.n_queries, d.n_docs, d.n_features
    (2, 3, 2)
    >>> d.doc.tolist()
    [0, 1, 0]
    """

    X: np.ndarray
    y: np.ndarray | None
    qptr: np.ndarray
    qid: np.ndarray = None  # type: ignore[assignment]
    doc: np.ndarray = None  # type: ignore[assignment]
    name: str = field(default="data", compare=False)

    def __post_init__(self) -> None:
        X = np.asarray(self.X, dtype=np.float32)
        if X.ndim != 2:
            raise InputError(f"X must be 2-d [n_docs, n_features], got shape {X.shape}")
        n = X.shape[0]
        qptr = check_qptr(self.qptr, n)
        y = None
        if self.y is not None:
            y = np.asarray(self.y, dtype=np.float64)
            if y.shape != (n,):
                raise InputError(f"y must have shape ({n},) to match X, got {y.shape}")
            if not np.all(np.isfinite(y)):
                raise InputError("y must be finite (no NaN or inf labels)")
        n_q = len(qptr) - 1
        qid = np.arange(n_q, dtype=np.int64) if self.qid is None else np.asarray(self.qid)
        if qid.shape != (n_q,):
            raise InputError(f"qid must have one entry per query ({n_q}), got shape {qid.shape}")
        if self.doc is None:
            doc = np.arange(n, dtype=np.int64) - np.repeat(qptr[:-1], np.diff(qptr))
        else:
            doc = np.asarray(self.doc)
            if doc.shape != (n,):
                raise InputError(f"doc must have one entry per row ({n}), got shape {doc.shape}")
        for name, value in (("X", X), ("y", y), ("qptr", qptr), ("qid", qid), ("doc", doc)):
            object.__setattr__(self, name, value)

    # -- sizes -----------------------------------------------------------
    @property
    def n_queries(self) -> int:
        return len(self.qptr) - 1

    @property
    def n_docs(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def lengths(self) -> np.ndarray:
        """Documents per query, int64 ``[n_queries]``."""
        return _lengths(self.qptr)

    @property
    def query_index(self) -> np.ndarray:
        """Query index (0-based position, not id) of every row."""
        return segment_ids(self.qptr)

    def __len__(self) -> int:
        return self.n_queries

    def __repr__(self) -> str:
        labels = "unlabelled" if self.y is None else f"labels {self.y.min():g}..{self.y.max():g}"
        return (
            f"RankingData({self.name!r}: {self.n_queries:,} queries, {self.n_docs:,} docs, "
            f"{self.n_features} features, {labels})"
        )

    # -- selection -------------------------------------------------------
    def subset(self, queries: Sequence[int] | np.ndarray) -> RankingData:
        """Data restricted to the given query indices (in the given order).

        Vectorized: rows are gathered with one index array, no loop over
        queries.
        """
        q = np.asarray(queries, dtype=np.int64).reshape(-1)
        rows = self.rows_of(q)
        qptr = np.concatenate([[0], np.cumsum(self.lengths[q])]).astype(np.int64)
        return RankingData(
            self.X[rows],
            None if self.y is None else self.y[rows],
            qptr,
            self.qid[q],
            self.doc[rows],
            name=self.name,
        )

    def rows_of(self, queries: Sequence[int] | np.ndarray) -> np.ndarray:
        """Row indices of the given queries, query by query in the given order (int64)."""
        q = np.asarray(queries, dtype=np.int64).reshape(-1)
        if q.size and (q.min() < 0 or q.max() >= self.n_queries):
            raise InputError(
                f"query indices must lie in [0, {self.n_queries}), got {q.min()}..{q.max()}"
            )
        return gather(self.qptr, q)[0]

    def subsample(self, n_or_fraction: float, *, seed: int | None = None) -> RankingData:
        """A random subset of queries: a count (int >= 1) or a fraction in (0, 1)."""
        k = _count(n_or_fraction, self.n_queries, "n_or_fraction")
        rng = np.random.default_rng(seed)
        return self.subset(np.sort(rng.choice(self.n_queries, size=k, replace=False)))

    def groups(self) -> Iterator[tuple[Any, slice]]:
        """Iterate ``(qid, row slice)`` per query (for inspection, not hot paths)."""
        for q in range(self.n_queries):
            yield self.qid[q], slice(int(self.qptr[q]), int(self.qptr[q + 1]))

    def with_labels(self, y: np.ndarray | None) -> RankingData:
        """The same data with other labels (None drops them)."""
        return RankingData(self.X, y, self.qptr, self.qid, self.doc, name=self.name)

    # -- conversion ------------------------------------------------------
    def to_frame(self) -> pl.DataFrame:
        """Long polars frame: ``query``, ``doc``, ``label`` (if any), ``f1..fK``."""
        cols: dict[str, Any] = {
            "query": np.repeat(self.qid, self.lengths),
            "doc": self.doc,
        }
        if self.y is not None:
            cols["label"] = self.y
        frame = pl.DataFrame(cols)
        feats = pl.DataFrame(self.X, schema=[f"f{j + 1}" for j in range(self.n_features)])
        return pl.concat([frame, feats], how="horizontal")


def feature_matrix(X: Any, n_features: int, model: str | None = None) -> np.ndarray:
    """The float32 features of ``X`` (a RankingData or a matrix) for a model trained on
    ``n_features`` features.

    Raises
    ------
    InputError
        One line naming ``model`` (its folder, when loaded) and the data, if the
        number of features differs.
    """
    name = f"data {X.name!r}" if isinstance(X, RankingData) else "X"
    X = np.asarray(X.X if isinstance(X, RankingData) else X, dtype=np.float32)
    if X.ndim != 2 or X.shape[1] != n_features:
        got = f"{X.shape[1]} features" if X.ndim == 2 else f"shape {X.shape}"
        raise InputError(
            f"{f'model {model}' if model else 'this model'} was trained on {n_features} "
            f"features but {name} has {got}"
        )
    return X


def _count(n_or_fraction: float, total: int, name: str) -> int:
    """Turn a count (int >= 1) or a fraction in (0, 1) of ``total`` into a count."""
    if isinstance(n_or_fraction, bool) or not isinstance(n_or_fraction, (int, float, np.number)):
        raise InputError(f"{name} must be a count or a fraction, got {n_or_fraction!r}")
    if 0 < n_or_fraction < 1:
        k = int(round(n_or_fraction * total))
    elif n_or_fraction >= 1 and float(n_or_fraction).is_integer():
        k = int(n_or_fraction)
    else:
        raise InputError(
            f"{name} must be a whole count >= 1 or a fraction in (0, 1), got {n_or_fraction!r}"
        )
    if not 1 <= k <= total:
        raise InputError(f"{name} selects {k} of {total} queries; it must select 1..{total}")
    return k


# -- synthetic data -------------------------------------------------------

SYNTHETIC_THRESHOLDS = (1.0, 2.0, 3.0, 4.0)


def synthetic(
    n_queries: int = 1300,
    docs_per_query: int = 30,
    n_features: int = 6,
    *,
    noise: float = 0.7,
    seed: int | None = 0,
) -> RankingData:
    r"""The course-notes synthetic ranking data (DESIGN §4).

    Features are standard normal, and feature 5 (0-based) is constant within a
    query (a query-level feature). The latent relevance is

    .. math::
        z = x_0 + 0.7\,x_1 + x_2 x_3 + 1.5\,x_5 + \varepsilon,
        \qquad \varepsilon \sim N(0, \sigma^2),\ \sigma = 0.7,

    and the graded label is ``digitize(z, [1, 2, 3, 4])`` in 0..4. Features
    beyond the sixth are pure noise.

    Parameters
    ----------
    n_queries, docs_per_query, n_features : int
        Sizes; ``n_features`` must be at least 6.
    noise : float
        Standard deviation of the label noise :math:`\sigma`.
    seed : int, optional
        Seed of the generator; the same seed gives the same data.

    Examples
    --------
    >>> d = synthetic(10, 5, seed=1)
    >>> d.X.shape, set(d.y.tolist()) <= {0.0, 1.0, 2.0, 3.0, 4.0}
    ((50, 6), True)
    """
    n_queries = int(n_queries)
    docs_per_query = int(docs_per_query)
    if n_queries < 1 or docs_per_query < 1:
        raise InputError("n_queries and docs_per_query must be >= 1")
    if n_features < 6:
        raise InputError(f"n_features must be >= 6 (the generator uses x0..x5), got {n_features}")
    if noise < 0:
        raise InputError(f"noise must be >= 0, got {noise}")
    rng = np.random.default_rng(seed)
    n = n_queries * docs_per_query
    X = rng.standard_normal((n, n_features))
    X[:, 5] = np.repeat(rng.standard_normal(n_queries), docs_per_query)
    z = X[:, 0] + 0.7 * X[:, 1] + X[:, 2] * X[:, 3] + 1.5 * X[:, 5]
    z += noise * rng.standard_normal(n)
    y = np.digitize(z, SYNTHETIC_THRESHOLDS).astype(np.float64)
    qptr = np.arange(0, n + 1, docs_per_query, dtype=np.int64)
    return RankingData(X, y, qptr, name=f"synthetic(seed={seed})")


def split_queries(
    data: RankingData, fractions: Sequence[float], *, seed: int | None = 0
) -> tuple[RankingData, ...]:
    """Split by query into parts of the given fractions (or counts).

    Queries are shuffled with ``seed`` and cut into consecutive parts; each
    part keeps the original query order. Fractions must sum to at most 1; if
    they sum to less, the remainder is dropped. Counts (integers >= 1) may be
    given instead of fractions.

    Examples
    --------
    >>> train, test = split_queries(synthetic(1300, 30), [300, 1000])
    >>> train.n_queries, test.n_queries
    (300, 1000)
    """
    fr = np.asarray(fractions, dtype=np.float64)
    if fr.ndim != 1 or fr.size == 0 or np.any(fr <= 0):
        raise InputError(f"fractions must be positive numbers, got {list(fractions)}")
    n = data.n_queries
    counts = fr.astype(np.int64) if np.all(fr >= 1) else np.floor(fr * n + 1e-9).astype(np.int64)
    if np.all(fr < 1) and fr.sum() > 1 + 1e-9:
        raise InputError(f"fractions must sum to at most 1, got {fr.sum():g}")
    if np.all(fr < 1) and abs(fr.sum() - 1) < 1e-9:
        counts[-1] = n - counts[:-1].sum()  # give rounding leftovers to the last part
    if counts.sum() > n:
        raise InputError(f"the parts ask for {counts.sum()} queries but the data has {n}")
    perm = np.random.default_rng(seed).permutation(n)
    cuts = np.concatenate([[0], np.cumsum(counts)])
    return tuple(data.subset(np.sort(perm[a:b])) for a, b in zip(cuts[:-1], cuts[1:], strict=True))


# -- LETOR / SVMlight -------------------------------------------------------

_DOCID = r"docid\s*=\s*(\S+)"


def _ids(values: pl.Series) -> np.ndarray:
    """Ids as int64 when every value is an integer literal, else as str."""
    as_int = values.cast(pl.Int64, strict=False)
    if as_int.null_count() == 0:
        return as_int.to_numpy()
    return values.to_numpy().astype(str)


def load_letor(
    path: str | os.PathLike,
    *,
    n_features: int | None = None,
    query_file: str | os.PathLike | None = None,
    name: str | None = None,
) -> RankingData:
    """Read a LETOR / SVMlight ranking file.

    Each non-blank line is ``<label> qid:<id> <j>:<value> ... [# comment]``
    with feature indices ``j >= 1`` (missing features are 0). A ``docid = X``
    comment gives the document id. Without ``qid:``, query groups come from a
    LightGBM-style group file (one row count per line): ``query_file``, or
    ``<path>.query`` when it exists.

    Parsing is vectorized with polars, block by block (whole lines, about
    :data:`LETOR_BLOCK_BYTES` at a time), so large files (MSLR-WEB30K) load at
    memory speed with a peak memory of about 1.5 times the file (the dense
    matrix and one block's work), not a multiple of it; every error names
    the file and line.

    Parameters
    ----------
    path : path-like
        The ranking file.
    n_features : int, optional
        Number of features; defaults to the largest index seen. Indices above
        it are an error.
    query_file : path-like, optional
        Group file with the number of rows of each query, in file order.
    name : str, optional
        Label of the data; defaults to the file name.

    Raises
    ------
    DataFormatError
        For a missing ``qid:`` (without a group file), a non-numeric label or
        value, a feature index below 1 or repeated on a line, an implausibly
        large feature index (the dense matrix would exceed 256 MiB and 64 cells
        per value in the file; judged on the whole file), a token without
        ``:``, or a query whose rows are not contiguous. The message names the file and line.
    """
    path = check_input(path, what="LETOR file")
    blocks = [
        _parse_letor_block(text, first, path, n_features) for text, first in _letor_blocks(path)
    ]
    blocks = [b for b in blocks if b["n_rows"]]
    if not blocks:
        raise DataFormatError("no data lines", path=path)
    lineno = np.concatenate([b["lineno"] for b in blocks])
    has_qid = np.concatenate([b["has_qid"] for b in blocks])
    group_path = Path(query_file) if query_file is not None else Path(str(path) + ".query")
    if not has_qid.all() and (has_qid.any() or not group_path.is_file()):
        b = next(b for b in blocks if b["no_qid"] is not None)
        line, second = b["no_qid"]
        raise DataFormatError(
            f"missing 'qid:<id>' after the label (got {second!r})", path=path, line=line
        )
    n_rows = len(lineno)
    X = _letor_matrix(blocks, n_rows, n_features, path)
    label = np.concatenate([b["label"] for b in blocks])
    if has_qid.all():
        qid_str = pl.concat([b["qid"] for b in blocks])
        qptr, qid = _contiguous_groups(qid_str, pl.Series(lineno), path)
    else:
        qptr = _read_group_file(group_path, n_rows)
        qid = np.arange(len(qptr) - 1, dtype=np.int64)
    docid = pl.concat([b["docid"] for b in blocks])
    doc = _ids(docid) if docid.null_count() == 0 else None
    data = RankingData(X, label, qptr, qid, doc, name=name or path.name)
    if doc is not None:
        _check_unique_docs(data, path, lineno)
    return data


#: Bytes of a LETOR file parsed at once: the reader's peak memory is a small multiple of
#: this plus the dense matrix, not a multiple of the file size.
LETOR_BLOCK_BYTES = 4 << 20


def _letor_blocks(path: Path, size: int | None = None):
    """``(text, first line number)`` of consecutive blocks of whole lines of ``path``."""
    size = size or LETOR_BLOCK_BYTES
    first, offset, rest = 1, 0, b""
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(size)
            data = rest + chunk
            cut = data.rfind(b"\n") + 1 if chunk else len(data)
            if cut == 0 and chunk:
                rest = data  # a line longer than the block: read on
                continue
            block, rest = data[:cut], data[cut:]
            if block:
                try:
                    text = block.decode("utf-8")
                except UnicodeDecodeError as err:
                    reason = f"not UTF-8 text ({err.reason} at byte {offset + err.start})"
                    raise DataFormatError(reason, path=path) from None
                yield text, first
                first += len(text.splitlines())
                offset += len(block)
            if not chunk:
                return


def _feature_tokens(tokens: pl.DataFrame, has_qid: pl.Series) -> pl.DataFrame:
    """One row per feature token (row, token, line): the tokenizing step of a LETOR block."""
    n_rows = tokens.height
    feat_lists = (
        pl.DataFrame({"tok": tokens["tok"], "q": has_qid})
        .select(pl.when(pl.col("q")).then(pl.col("tok").list.slice(2)).otherwise(
            pl.col("tok").list.slice(1)))
        .to_series()
    )  # fmt: skip
    feats = (
        pl.DataFrame(
            {
                "row": np.arange(n_rows, dtype=np.int32),
                "tok": feat_lists,
                "lineno": tokens["lineno"],
            }
        )
        .explode("tok")
        .drop_nulls("tok")
    )
    return feats


def _feature_values(
    feats: pl.DataFrame, path: Path, n_features: int | None
) -> tuple[pl.Series, pl.Series]:
    """Indices and values of the feature tokens, checked: the checking step of a LETOR block."""
    parts = feats["tok"].str.split_exact(":", 1).struct.unnest()
    index = parts["field_0"].cast(pl.Int64, strict=False)
    value = parts["field_1"].cast(pl.Float64, strict=False)
    _raise_first(
        parts["field_1"].is_null(),
        feats["lineno"],
        path,
        "token {value!r} is not '<index>:<value>'",
        feats["tok"],
    )
    _raise_first(
        index.is_null(),
        feats["lineno"],
        path,
        "feature index in {value!r} is not an integer",
        feats["tok"],
    )
    _raise_first(
        index < 1,
        feats["lineno"],
        path,
        "feature index in {value!r} must be >= 1 (LETOR indices start at 1)",
        feats["tok"],
    )
    _raise_first(
        value.is_null() | ~value.is_finite().fill_null(False),
        feats["lineno"],
        path,
        "feature value in {value!r} is not a finite number",
        feats["tok"],
    )
    pairs = pl.DataFrame({"row": feats["row"], "index": index})
    dup = ~pairs.select(pl.struct("row", "index").is_first_distinct()).to_series()
    _raise_first(
        dup,
        feats["lineno"],
        path,
        "feature index in {value!r} appears twice on this line",
        feats["tok"],
    )
    if n_features is not None:
        _raise_first(
            index > n_features,
            feats["lineno"],
            path,
            f"feature index in {{value!r}} exceeds n_features={n_features}",
            feats["tok"],
        )
    return index, value


def _parse_letor_block(text: str, first: int, path: Path, n_features: int | None) -> dict:
    """Parse and check one block of lines (numbered from ``first``) of a LETOR file.

    Returns the block's labels, qid strings, docids, line numbers, which rows
    have ``qid:``, and its features: a dense float32 matrix as wide as its
    largest index, or (for an implausibly wide block) the sparse triplets,
    which :func:`_letor_matrix` checks against the whole file.
    """
    lines = pl.Series("line", text.splitlines(), dtype=pl.String)
    frame = (
        pl.DataFrame({"line": lines})
        .with_row_index("lineno", offset=first)
        .with_columns(
            body=pl.col("line").str.replace(r"#.*$", "").str.strip_chars(),
            docid=pl.col("line").str.extract(_DOCID, 1),
        )
        .filter(pl.col("body") != "")
        .drop("line")
    )
    del lines
    if frame.height == 0:
        return {"n_rows": 0}
    split = pl.col("body").str.split(" ").list.eval(pl.element().filter(pl.element() != ""))
    tokens = frame.select("lineno", tok=split).with_columns(
        label_s=pl.col("tok").list.get(0),
        second=pl.col("tok").list.get(1, null_on_oob=True),
    )
    label = tokens["label_s"].cast(pl.Float64, strict=False)
    _raise_first(
        label.is_null() | ~label.is_finite().fill_null(False),
        tokens["lineno"],
        path,
        "label {value!r} is not a finite number",
        tokens["label_s"],
    )
    has_qid = tokens["second"].str.starts_with("qid:").fill_null(False)
    qid_str = tokens["second"].str.slice(4)
    _raise_first(has_qid & (qid_str == ""), tokens["lineno"], path, "empty qid", qid_str)
    no_qid = None
    if not has_qid.all():
        i = int((~has_qid).arg_true()[0])
        no_qid = (int(tokens["lineno"][i]), tokens["second"].fill_null("<end of line>")[i])
    n_rows = tokens.height
    feats = _feature_tokens(tokens, has_qid)
    index, value = _feature_values(feats, path, n_features)
    idx = index.to_numpy()
    max_idx = int(idx.max()) if idx.size else 0
    widest = None
    if max_idx:
        i = int((index == max_idx).arg_true()[0])
        widest = (int(feats["lineno"][i]), feats["tok"][i])
    out = {
        "n_rows": n_rows,
        "n_values": feats.height,
        "max_idx": max_idx,
        "widest": widest,
        "label": label.to_numpy(),
        "qid": qid_str.fill_null(""),
        "has_qid": has_qid.to_numpy(),
        "no_qid": no_qid,
        "docid": frame["docid"],
        "lineno": tokens["lineno"].to_numpy().astype(np.int64),
    }
    rows = feats["row"].to_numpy()
    if n_rows * max_idx <= MAX_DENSE_CELLS:
        X = np.zeros((n_rows, max_idx), dtype=np.float32)
        X[rows, idx - 1] = value.to_numpy()
        out["X"] = X
    else:  # implausibly wide for one block: the whole file decides (_letor_matrix)
        out["sparse"] = (rows, (idx - 1).astype(np.int64), value.to_numpy().astype(np.float32))
    return out


def _letor_matrix(blocks: list[dict], n_rows: int, n_features: int | None, path: Path):
    """The dense float32 matrix of the blocks, after the whole file's plausibility check."""
    max_idx = max(b["max_idx"] for b in blocks)
    n_values = sum(b["n_values"] for b in blocks)
    if n_features is None:
        cells = n_rows * max_idx
        if cells > max(MAX_DENSE_CELLS, MAX_DENSITY_RATIO * n_values):
            line, tok = next(b["widest"] for b in blocks if b["max_idx"] == max_idx)
            raise DataFormatError(
                f"feature index in {tok!r} is implausible: {n_rows:,} rows x {max_idx:,} "
                f"features would take {cells * 4 / 2**30:,.1f} GiB for {n_values:,} values in "
                "the file (LETOR features are numbered 1..number of features)",
                path=path,
                line=line,
            )
        n_features = max_idx
    elif n_rows * n_features > max(MAX_DENSE_CELLS, MAX_DENSITY_RATIO * n_values):
        raise InputError(
            f"n_features={n_features:,} is implausible for {path}: "
            f"{n_rows:,} rows would take {n_rows * n_features * 4 / 2**30:,.1f} GiB"
        )
    X = np.zeros((n_rows, max(int(n_features), 0)), dtype=np.float32)
    start = 0
    for b in blocks:
        stop = start + b["n_rows"]
        if "X" in b:
            block = b.pop("X")
            X[start:stop, : block.shape[1]] = block
        else:
            rows, cols, vals = b.pop("sparse")
            X[start + rows, cols] = vals
        start = stop
    return X


#: A LETOR file is read into a dense matrix; beyond this many cells (256 MiB of float32) the
#: matrix may hold at most MAX_DENSITY_RATIO cells per value in the file.
MAX_DENSE_CELLS = 1 << 26
MAX_DENSITY_RATIO = 64


def _raise_first(
    bad: pl.Series, lineno: pl.Series, path: Path, template: str, values: pl.Series
) -> None:
    """Raise a DataFormatError for the first True in ``bad`` (null counts as False)."""
    bad = bad.fill_null(False)
    if bad.any():
        i = int(bad.arg_true()[0])
        raise DataFormatError(template.format(value=values[i]), path=path, line=int(lineno[i]))


def _contiguous_groups(
    qid: pl.Series, lineno: pl.Series, path: Path
) -> tuple[np.ndarray, np.ndarray]:
    """Query offsets from a per-row qid column, checking that groups are contiguous."""
    q = qid.to_numpy().astype(str)
    starts = np.flatnonzero(np.concatenate([[True], q[1:] != q[:-1]]))
    run_ids = q[starts]
    uniq, first = np.unique(run_ids, return_index=True)
    if len(uniq) != len(run_ids):
        seen = np.zeros(len(run_ids), dtype=bool)
        seen[first] = True
        dup = int(np.flatnonzero(~seen)[0])
        raise DataFormatError(
            f"rows of qid {run_ids[dup]} are not contiguous: the query started earlier in the "
            "file and reappears here (sort the file by query)",
            path=path,
            line=int(lineno[int(starts[dup])]),
        )
    qptr = np.append(starts, len(q)).astype(np.int64)
    return qptr, _ids(pl.Series(run_ids))


def _read_group_file(path: Path, n_rows: int) -> np.ndarray:
    """Query offsets from a LightGBM ``.query`` file (one row count per line)."""
    raw = [s.strip() for s in path.read_text().splitlines()]
    counts = np.zeros(len(raw), dtype=np.int64)
    keep = np.zeros(len(raw), dtype=bool)
    for i, s in enumerate(raw):  # group files have one short line per query
        if not s:
            continue
        if not s.isdigit() or int(s) < 1:
            msg = f"expected a positive row count, got {s!r}"
            raise DataFormatError(msg, path=path, line=i + 1)
        counts[i], keep[i] = int(s), True
    counts = counts[keep]
    if counts.sum() != n_rows:
        raise DataFormatError(
            f"group sizes sum to {counts.sum()} but the data file has {n_rows} rows", path=path
        )
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def _check_unique_docs(data: RankingData, path: Path | None, lineno: np.ndarray | None) -> None:
    """Raise if a document id repeats within a query."""
    frame = pl.DataFrame({"q": data.query_index, "doc": data.doc})
    dup = frame.is_duplicated()
    if dup.any():
        i = int(dup.arg_true()[1] if dup.sum() > 1 else dup.arg_true()[0])
        where = {"path": path, "line": int(lineno[i])} if lineno is not None else {}
        doc, qid = data.doc[i], data.qid[data.query_index[i]]
        raise DataFormatError(
            f"document id {_plain(doc)!r} appears twice in query {_plain(qid)!r}", **where
        )


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (``'A'``, not ``np.str_('A')``)."""
    return value.item() if isinstance(value, np.generic) else value


def save_letor(
    data: RankingData, path: str | os.PathLike, *, docid: bool = True, overwrite: bool = False
) -> Path:
    """Write ``data`` as a LETOR file (``label qid:id 1:v ... #docid = d``).

    Every feature is written (dense), in the shortest representation that
    reads back to the same float32. Unlabelled data gets label 0. The write is
    atomic, and an existing file is kept unless ``overwrite``.
    """
    path = Path(path)
    check_output(path, force=overwrite, what="", hint="overwrite=True")
    y = np.zeros(data.n_docs) if data.y is None else data.y
    cols = [
        pl.Series(y).cast(pl.String).str.replace(r"\.0$", ""),
        pl.lit(" qid:"),
        pl.Series(np.repeat(data.qid, data.lengths)).cast(pl.String),
    ]
    for j in range(data.n_features):
        cols += [pl.lit(f" {j + 1}:"), pl.Series(data.X[:, j]).cast(pl.String)]
    if docid:
        cols += [pl.lit(" #docid = "), pl.Series(data.doc).cast(pl.String)]
    lines = pl.select(pl.concat_str(cols).alias("line"))["line"]

    def write(tmp: Path) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines.to_list()))
            fh.write("\n")

    atomic_write(path, write)
    return path


# -- frames and parquet -----------------------------------------------------


def from_frame(
    frame: Any,
    *,
    query: str = "query",
    doc: str | None = "doc",
    label: str | None = "label",
    features: Sequence[str] | None = None,
    name: str = "frame",
) -> RankingData:
    """Build :class:`RankingData` from a polars or pandas frame (one row per document).

    Rows of a query must be contiguous. ``features`` defaults to every other
    numeric column. ``doc`` or ``label`` may be None (or absent columns when
    left at their defaults).
    """
    if not isinstance(frame, pl.DataFrame):
        if not hasattr(frame, "columns") or not hasattr(frame, "__getitem__"):
            raise InputError(f"frame must be a polars or pandas DataFrame, got {type(frame)}")
        # column by column through numpy: no pyarrow needed for pandas input
        frame = pl.DataFrame({str(c): np.asarray(frame[c].to_numpy()) for c in frame.columns})
    cols = frame.columns
    if query not in cols:
        raise DataFormatError(f"missing query column {query!r} (columns: {cols})", column=query)
    doc = doc if doc in cols else None
    label = label if label in cols else None
    if features is None:
        features = [c for c in cols if c not in {query, doc, label} and frame[c].dtype.is_numeric()]
    missing = [c for c in features if c not in cols]
    if missing:
        raise DataFormatError(f"missing feature columns {missing}", column=missing[0])
    if not features:
        raise DataFormatError("no numeric feature columns found")
    for c in [query, *features] + ([label] if label else []):
        bad = frame[c].is_null()
        if frame[c].dtype.is_float():
            bad = bad | frame[c].is_nan()
        if bad.any():
            row = int(bad.arg_true()[0])
            raise DataFormatError(f"missing (null or NaN) value in row {row}", column=c)
    lineno = pl.Series(np.arange(1, frame.height + 1))
    qptr, qid = _contiguous_groups(frame[query].cast(pl.String), lineno, Path(name))
    if frame[query].dtype.is_integer():
        qid = qid.astype(np.int64)
    X = frame.select(pl.col(features).cast(pl.Float32)).to_numpy()
    y = None if label is None else frame[label].cast(pl.Float64).to_numpy()
    data = RankingData(X, y, qptr, qid, None if doc is None else frame[doc].to_numpy(), name=name)
    if doc is not None:
        _check_unique_docs(data, None, None)
    return data


def read_parquet(path: str | os.PathLike, **kwargs: Any) -> RankingData:
    """Read a parquet file written by :func:`save_parquet` (or any frame of that shape)."""
    path = check_input(path, what="parquet file")
    return from_frame(pl.read_parquet(path), name=kwargs.pop("name", path.name), **kwargs)


def save_parquet(data: RankingData, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Write ``data`` as parquet (columns ``query``, ``doc``, ``label``, ``f1..fK``), atomically."""
    path = Path(path)
    check_output(path, force=overwrite, what="", hint="overwrite=True")
    frame = data.to_frame()
    atomic_write(path, lambda tmp: frame.write_parquet(tmp))
    return path


def load(path: str | os.PathLike, **kwargs: Any) -> RankingData:
    """Load ranking data by extension: ``.parquet`` or LETOR text (anything else)."""
    p = Path(path)
    if p.suffix == ".parquet":
        return read_parquet(p, **kwargs)
    return load_letor(p, **kwargs)
