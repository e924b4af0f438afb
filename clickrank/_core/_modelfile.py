"""The saved-model folder of :class:`~clickrank.lambdamart.LambdaMART`: model.txt, meta.json.

LightGBM parses a model text in C++ and, for some malformed inputs, aborts
the whole process (a bad ``tree_sizes`` header or tree inside its parallel
parser) or reads past the end of a line. So a model folder is checked here,
in Python, before LightGBM sees it:

* ``meta.json``: UTF-8 JSON with exactly the known keys (:data:`META_KEYS`),
  the right format name and version, parameters LambdaMART knows, and the
  SHA-256 digest, size and feature count of ``model.txt`` (format version 2).
* ``model.txt``: its digest must match the one recorded (a truncated, edited
  or swapped file is refused); then its structure: the header (one class,
  ``max_feature_idx`` and the feature names matching the recorded feature
  count, one ``tree_sizes`` entry per tree), each tree at the byte offset
  ``tree_sizes`` gives, and in each tree the field counts LightGBM's parser
  expects (``num_leaves`` in 1..131072; ``num_leaves - 1`` splits whose
  children form a tree; split features below the feature count; no
  categorical or linear trees, which clickrank never writes). What follows
  ``end of trees`` (importances, training parameters) is not passed on.

A folder of :class:`~clickrank.training.distributed.SparkRanker` (format
``clickrank-xgboost``) holds XGBoost's JSON model ``model.json`` instead:
its ``meta.json`` is checked the same way (:func:`read_xgb_meta`) and
``model.json`` must have the recorded size and SHA-256 digest
(:func:`read_xgb_model`) before XGBoost parses it. :func:`model_format`
reads the format name for the one loader that dispatches on it,
:func:`clickrank.lambdamart.load_model`.

Every problem is a :class:`~clickrank._core._validation.DataFormatError` naming the
file (and line, for the model text).
"""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ._io import read_json
from ._validation import ClickRankWarning, DataFormatError

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "META_KEYS",
    "XGB_FORMAT",
    "XGB_FORMAT_VERSION",
    "XGB_META_KEYS",
    "digest",
    "model_format",
    "read_meta",
    "read_model_text",
    "read_xgb_meta",
    "read_xgb_model",
]

FORMAT = "clickrank-lambdamart"
FORMAT_VERSION = 2
#: Keys of ``meta.json``: required ones, and those only format version 2 requires.
META_KEYS = {
    "format",
    "format_version",
    "params",
    "n_features_in",
    "best_iteration",
    "target",
    "n_train_docs",
    "n_train_queries",
    "evals_result",
    "position_bias",
}
META_KEYS_V2 = {"model_sha256", "model_bytes"}
_OPTIONAL = {"evals_result", "position_bias"}
MAX_LEAVES = 131072  # LightGBM's upper bound of num_leaves


def digest(data: bytes) -> str:
    """SHA-256 hex digest of the model text."""
    return hashlib.sha256(data).hexdigest()


def _int(meta: dict, key: str, path: Path, low: int) -> int:
    v = meta[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < low:
        raise DataFormatError(f"must be an integer >= {low}, got {v!r}", path=path, column=key)
    return v


def _read_object(path: Path, fmt: str) -> dict[str, Any]:
    """``meta.json`` as a JSON object whose ``format`` is ``fmt``."""
    meta = read_json(path)
    if not isinstance(meta, dict):
        raise DataFormatError("expected a JSON object", path=path)
    if meta.get("format") != fmt:
        raise DataFormatError(
            f"not a {fmt} metadata file (its 'format' is {meta.get('format')!r})", path=path
        )
    return meta


def read_meta(path: Path, param_names: set[str]) -> dict[str, Any]:
    """Read and check ``meta.json`` (see the module docstring); returns the dict."""
    meta = _read_object(path, FORMAT)
    version = meta.get("format_version")
    if version not in (1, FORMAT_VERSION):
        raise DataFormatError(
            f"format_version {version!r} is not supported (this clickrank "
            f"reads 1 and {FORMAT_VERSION})",
            path=path,
            column="format_version",
        )
    known = META_KEYS | (META_KEYS_V2 if version == FORMAT_VERSION else set())
    required = known - _OPTIONAL
    missing = sorted(required - meta.keys())
    if missing:
        raise DataFormatError(f"missing key(s) {', '.join(missing)}", path=path)
    unknown = sorted(meta.keys() - known)
    if unknown:
        raise DataFormatError(
            f"unknown key(s) {', '.join(unknown)}; expected {', '.join(sorted(known))}", path=path
        )
    params = meta["params"]
    if not isinstance(params, dict):
        raise DataFormatError(
            "must be an object of LambdaMART parameters", path=path, column="params"
        )
    bad = sorted(params.keys() - param_names)
    if bad:
        raise DataFormatError(
            f"unknown LambdaMART parameter(s) {', '.join(bad)}", path=path, column="params"
        )
    _int(meta, "n_features_in", path, 1)
    for key in ("best_iteration", "n_train_docs", "n_train_queries"):
        _int(meta, key, path, 0)
    if not isinstance(meta["target"], str):
        raise DataFormatError("must be a string", path=path, column="target")
    if not isinstance(meta.get("evals_result", {}), dict):
        raise DataFormatError("must be an object", path=path, column="evals_result")
    _check_bias(meta.get("position_bias"), path)
    if version == FORMAT_VERSION:
        _check_sha(meta, path)
    else:  # an older format must not switch the integrity check off silently
        warnings.warn(
            f"{path}: format_version 1 records no SHA-256 digest of model.txt, so a truncated "
            "or edited model cannot be detected (save it again with this clickrank)",
            ClickRankWarning,
            stacklevel=2,
        )
    return meta


def _check_sha(meta: dict, path: Path) -> None:
    """``model_bytes`` an integer >= 1 and ``model_sha256`` a SHA-256 hex digest."""
    _int(meta, "model_bytes", path, 1)
    sha = meta["model_sha256"]
    if not (isinstance(sha, str) and len(sha) == 64 and all(c in "0123456789abcdef" for c in sha)):
        raise DataFormatError("must be a SHA-256 hex digest", path=path, column="model_sha256")


def _check_digest(raw: bytes, meta: dict, path: Path, meta_path: Path) -> None:
    """Refuse model bytes whose size or SHA-256 digest is not the one ``meta`` records."""
    if len(raw) != meta["model_bytes"] or digest(raw) != meta["model_sha256"]:
        raise DataFormatError(
            f"does not match the size and SHA-256 digest recorded in {meta_path} "
            f"({len(raw):,} bytes, expected {meta['model_bytes']:,}): the model file is "
            "truncated, corrupted or was replaced",
            path=path,
        )


def _check_bias(bias: Any, path: Path) -> None:
    """``position_bias``: null, or equally long lists ``t_plus``, ``t_minus`` of numbers >= 0."""
    if bias is None:
        return
    ok = (
        isinstance(bias, dict)
        and set(bias) == {"t_plus", "t_minus"}
        and all(isinstance(v, list) and v for v in bias.values())
        and len(bias["t_plus"]) == len(bias["t_minus"])
        and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and np.isfinite(x) and x >= 0
            for v in bias.values()
            for x in v
        )
    )
    if not ok:
        raise DataFormatError(
            'must be null or {"t_plus": [...], "t_minus": [...]}, two '
            "equally long lists of finite numbers >= 0",
            path=path,
            column="position_bias",
        )


def read_model_text(path: Path, meta: dict[str, Any], meta_path: Path) -> str:
    """Read ``model.txt``, check it against ``meta`` and its structure; return the text."""
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise DataFormatError(f"cannot read ({err.strerror})", path=path) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise DataFormatError(
            "is not a LightGBM text model (binary data, e.g. a pickle)", path=path
        ) from None
    if not text.startswith("tree\n"):
        raise DataFormatError(
            "is not a LightGBM text model (line 1 is not 'tree')", path=path, line=1
        )
    if "model_sha256" in meta:
        _check_digest(raw, meta, path, meta_path)
    return check_model_text(text, int(meta["n_features_in"]), path)


def _fields(block: str, path: Path, line0: int) -> dict[str, str]:
    out: dict[str, str] = {}
    for i, line in enumerate(block.split("\n")):
        if "=" not in line:
            raise DataFormatError(
                f"expected 'key=value' in a tree, got {line[:40]!r}", path=path, line=line0 + i
            )
        k, v = line.split("=", 1)
        out[k] = v
    return out


def _array(
    fields: dict[str, str],
    key: str,
    n: int,
    kind: type,
    path: Path,
    line: int,
    required: bool = True,
) -> np.ndarray | None:
    if key not in fields:
        if required:
            raise DataFormatError(f"tree has no {key!r} field", path=path, line=line)
        return None
    parts = fields[key].split(" ") if fields[key] else []
    if len(parts) != n:
        raise DataFormatError(
            f"{key!r} has {len(parts)} values, expected {n}", path=path, line=line
        )
    try:
        arr = np.array(parts, dtype=np.float64)
    except ValueError:
        raise DataFormatError(
            f"{key!r} holds a value that is not a number", path=path, line=line
        ) from None
    if kind is int and not np.all(arr == np.round(arr)):
        raise DataFormatError(f"{key!r} must hold integers", path=path, line=line)
    return arr.astype(np.int64) if kind is int else arr


def _check_tree(block: str, index: int, n_features: int, path: Path, line0: int) -> None:
    head, _, body = block.partition("\n")
    if head != f"Tree={index}":
        raise DataFormatError(
            f"expected 'Tree={index}' where tree_sizes puts tree {index}, got {head[:40]!r}",
            path=path,
            line=line0,
        )
    body = body.rstrip("\n")
    if body.count("\n") >= 22:
        raise DataFormatError("a tree has more than 22 fields", path=path, line=line0)
    f = _fields(body, path, line0 + 1)
    try:
        L, C = int(f.get("num_leaves", "")), int(f.get("num_cat", ""))
    except ValueError:
        raise DataFormatError(
            "num_leaves and num_cat must be integers", path=path, line=line0
        ) from None
    if not 1 <= L <= MAX_LEAVES:
        raise DataFormatError(f"num_leaves={L} is outside 1..{MAX_LEAVES}", path=path, line=line0)
    if C != 0 or f.get("is_linear", "0") != "0":
        raise DataFormatError(
            "categorical or linear trees are not clickrank models", path=path, line=line0
        )
    leaf = _array(f, "leaf_value", L, float, path, line0)
    if not np.all(np.isfinite(leaf)):
        raise DataFormatError("a leaf value is not finite", path=path, line=line0)
    for key in ("leaf_weight", "leaf_count"):
        _array(f, key, L, float, path, line0, required=False)
    if L == 1:
        return
    for key in ("split_gain", "threshold", "internal_value", "internal_weight", "internal_count"):
        _array(f, key, L - 1, float, path, line0, required=key == "threshold")
    feat = _array(f, "split_feature", L - 1, int, path, line0)
    if feat.min() < 0 or feat.max() >= n_features:
        raise DataFormatError(
            f"split_feature refers to a feature outside 0..{n_features - 1}", path=path, line=line0
        )
    dec = _array(f, "decision_type", L - 1, int, path, line0)
    if np.any((dec < 0) | (dec > 255) | (dec & 1 == 1)):
        raise DataFormatError("decision_type must be a numerical split code", path=path, line=line0)
    kids = np.r_[
        _array(f, "left_child", L - 1, int, path, line0),
        _array(f, "right_child", L - 1, int, path, line0),
    ]
    # a tree: every internal node but the root, and every leaf (~leaf < 0), has one parent
    if not np.array_equal(np.sort(kids), np.r_[np.arange(-L, 0), np.arange(1, L - 1)]):
        raise DataFormatError("left_child/right_child do not form a tree", path=path, line=line0)


def check_model_text(text: str, n_features: int, path: Path) -> str:
    """Check a LightGBM model text as LightGBM's parser reads it (see the module docstring).

    Returns the text up to ``end of trees``: what prediction needs. The rest
    (feature importances, training parameters) is dropped, because LightGBM's
    parser of that part crashes on some malformed inputs.
    """
    if not text.startswith("tree\n"):
        raise DataFormatError(
            "is not a LightGBM text model (line 1 is not 'tree')", path=path, line=1
        )
    end = text.find("\nend of trees")
    first = text.find("\nTree=")
    if end < 0:
        raise DataFormatError("has no 'end of trees' line (truncated?)", path=path)
    header_end = first if 0 <= first < end else end
    header: dict[str, str] = {}
    for i, line in enumerate(text[:header_end].split("\n")[1:]):
        if line and "=" not in line:
            raise DataFormatError(
                f"expected 'key=value' in the header, got {line[:40]!r}", path=path, line=i + 2
            )
        if line:
            key, value = line.split("=", 1)
            header[key] = value
    if not header.get("version", "").startswith("v"):
        raise DataFormatError("the header has no 'version=v...' line", path=path)
    for key in ("num_class", "num_tree_per_iteration"):
        if header.get(key) != "1":
            raise DataFormatError(
                f"{key} must be 1 for a ranking model, got {header.get(key)!r}", path=path
            )
    if header.get("max_feature_idx") != str(n_features - 1):
        raise DataFormatError(
            f"max_feature_idx is {header.get('max_feature_idx')!r} but meta.json records "
            f"{n_features} features (expected {n_features - 1})",
            path=path,
        )
    for key in ("feature_names", "feature_infos"):
        if key in header and len(header[key].split(" ")) != n_features:
            raise DataFormatError(f"{key} does not list {n_features} features", path=path)
    model = text[:end] + "\nend of trees\n"
    if not 0 <= first < end:
        return model  # a model without trees
    try:
        sizes = [int(v) for v in header.get("tree_sizes", "").split(" ") if v]
    except ValueError:
        raise DataFormatError("tree_sizes must hold integers", path=path) from None
    offsets = np.cumsum([first + 1, *sizes])
    if not sizes or min(sizes) < 1 or offsets[-1] != end + 1:
        raise DataFormatError(
            f"tree_sizes ({len(sizes)} trees, {sum(sizes):,} bytes) does not "
            "match the trees in the file (truncated or edited)",
            path=path,
        )
    line = text.count("\n", 0, first + 1) + 1
    for i, size in enumerate(sizes):
        a = int(offsets[i])
        block = text[a : a + size]
        _check_tree(block, i, n_features, path, line)
        line += block.count("\n")
    return model


# -- the XGBoost model folder (clickrank.training.distributed.SparkRanker) --------------------

XGB_FORMAT = "clickrank-xgboost"
XGB_FORMAT_VERSION = 1
#: Keys of an XGBoost model's ``meta.json`` (all required): LambdaMART's version 2 keys
#: but the position biases.
XGB_META_KEYS = (META_KEYS - {"position_bias"}) | META_KEYS_V2


def model_format(folder: Path) -> str | None:
    """The ``format`` recorded in ``folder/meta.json``, or None when there is none to read.

    Only the dispatch of :func:`clickrank.lambdamart.load_model` reads this; the
    loader of the format then checks the whole file.
    """
    meta_path = Path(folder) / "meta.json"
    if not meta_path.is_file():
        return None
    try:
        meta = read_json(meta_path)
    except DataFormatError:
        return None
    return meta.get("format") if isinstance(meta, dict) else None


def read_xgb_meta(path: Path, param_names: set[str]) -> dict[str, Any]:
    """Read and check the ``meta.json`` of an XGBoost model folder; returns the dict."""
    meta = _read_object(path, XGB_FORMAT)
    if meta.get("format_version") != XGB_FORMAT_VERSION:
        raise DataFormatError(
            f"format_version {meta.get('format_version')!r} is not supported (this clickrank "
            f"reads {XGB_FORMAT_VERSION})",
            path=path,
            column="format_version",
        )
    missing = sorted(XGB_META_KEYS - meta.keys())
    if missing:
        raise DataFormatError(f"missing key(s) {', '.join(missing)}", path=path)
    unknown = sorted(meta.keys() - XGB_META_KEYS)
    if unknown:
        raise DataFormatError(f"unknown key(s) {', '.join(unknown)}", path=path)
    params = meta["params"]
    if not isinstance(params, dict) or params.keys() - param_names:
        bad = sorted(params.keys() - param_names) if isinstance(params, dict) else params
        raise DataFormatError(
            f"must be an object of SparkRanker parameters (unknown: {bad})",
            path=path,
            column="params",
        )
    _int(meta, "n_features_in", path, 1)
    for key in ("best_iteration", "n_train_docs", "n_train_queries"):
        _int(meta, key, path, 0)
    if not isinstance(meta["target"], str):
        raise DataFormatError("must be a string", path=path, column="target")
    if not isinstance(meta["evals_result"], dict):
        raise DataFormatError("must be an object", path=path, column="evals_result")
    _check_sha(meta, path)
    return meta


def read_xgb_model(path: Path, meta: dict[str, Any], meta_path: Path) -> bytes:
    """The bytes of ``model.json`` if their size and SHA-256 digest are those of ``meta``."""
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise DataFormatError(f"cannot read ({err.strerror})", path=path) from None
    _check_digest(raw, meta, path, meta_path)
    return raw


# -- a weighted sum of LightGBM models as one model (clickrank.lambdamart.LambdaMART.average) ----


def _tree_blocks(text: str) -> tuple[str, list[str], str]:
    """(header, tree blocks, tail) of a LightGBM text model, cut where ``tree_sizes`` says."""
    end = text.find("\nend of trees")
    first = text.find("\nTree=")
    if end < 0:
        raise ValueError("a LightGBM text model has an 'end of trees' line")
    if not 0 <= first < end:
        return text[: end + 1], [], text[end + 1 :]
    header = text[: first + 1]
    sizes = next(line for line in header.split("\n") if line.startswith("tree_sizes="))
    offsets = np.cumsum([first + 1, *(int(v) for v in sizes[len("tree_sizes=") :].split())])
    blocks = [text[a:b] for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
    return header, blocks, text[int(offsets[-1]) :]


def _scaled(block: str, index: int, weight: float) -> str:
    """One tree block renumbered ``index``, its leaf (and internal) values times ``weight``."""
    lines = block.split("\n")
    lines[0] = f"Tree={index}"
    for i, line in enumerate(lines):
        key, _, values = line.partition("=")
        if key in ("leaf_value", "internal_value") and values:
            lines[i] = key + "=" + " ".join(repr(float(v) * weight) for v in values.split(" "))
    return "\n".join(lines)


def merge_trees(texts: list[str], weights: list[float]) -> str:
    r"""One LightGBM text model scoring :math:`\sum_m w_m f_m(x)`: every model's trees in turn.

    A tree ensemble's score is the sum of its trees' leaf values, so the
    weighted sum of models is the concatenation of their trees with each
    leaf value (and internal value, which SHAP contributions read) scaled by
    its model's weight. The header and the parameters are the first model's,
    with ``tree_sizes`` recomputed; feature importances are left out (LightGBM
    recomputes them from the trees).
    """
    if len(texts) != len(weights) or not texts:
        raise ValueError("merge_trees needs one weight per model and at least one model")
    header, _, tail = _tree_blocks(texts[0])
    trees: list[str] = []
    for text, w in zip(texts, weights, strict=True):
        for block in _tree_blocks(text)[1]:
            trees.append(_scaled(block, len(trees), float(w)))
    sizes = " ".join(str(len(t.encode("utf-8"))) for t in trees)
    lines = [f"tree_sizes={sizes}" if s.startswith("tree_sizes=") else s
             for s in header.split("\n")]  # fmt: skip
    params = tail.find("\nparameters:")
    tail = "end of trees\n" + (tail[params:] if params >= 0 else "\n")
    return "\n".join(lines) + "".join(trees) + tail
