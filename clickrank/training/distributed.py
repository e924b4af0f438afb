r"""A ranker trained on a Spark cluster: XGBoost's ``SparkXGBRanker`` on clickrank's gains.

``clickrank train --engine spark`` aggregates the click log on Spark but
trains LightGBM on the driver, so the feature table has to fit there. This
module trains where the features live:

1. **Keys, not features.** Only the ``(query, doc)`` columns of the feature
   table are collected (:func:`key_data`): a :class:`~clickrank.datasets.RankingData`
   with zero feature columns, enough for :func:`clickrank.targets.make_target`
   to compute clickrank's own naive, IPS or DR gains (the log is aggregated on
   Spark as before; DR's direct-method model is fitted on the cluster,
   :func:`spark_relevance`). There is no second implementation of a target.
2. **Gains to the cluster.** The target's candidate rows become a small table
   ``(query, doc, gain)`` (:func:`gains_table`; the candidate set ``shown``
   drops never-shown documents, ``all`` keeps them with gain 0), which goes to
   Spark and is inner-joined with the features on ``(query, doc)``.
3. **Trees on the executors.** ``xgboost.spark.SparkXGBRanker`` fits
   ``rank:ndcg`` (LambdaMART) with linear gains (``ndcg_exp_gain=False``, so
   the float gains of IPS are taken as they are), one XGBoost worker per Spark
   task, the rows of each query in one task (``qid_col``).
4. **Model selection on held-out clicks.** A fraction of the queries, drawn
   from the seed over the sorted query ids, is the validation set
   (``validation_indicator_col``): XGBoost's ``ndcg@k`` on their gains is, with
   linear gains, a per-query normalised counterfactual DCG@k estimate from
   held-out clicks. Early stopping picks the number of trees; the model is then
   refitted on all queries with that many trees, as
   :class:`~clickrank.selection.LambdaMARTCV` refits after its selection.

The fitted model is an XGBoost booster, saved as a folder ``model.json`` +
``meta.json`` (format ``clickrank-xgboost``, :mod:`clickrank._core._modelfile`) that
:func:`clickrank.lambdamart.load_model` (``clickrank evaluate``) reads and
predicts with on this machine. XGBoost and pyspark are imported only when
used.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl

from .._core import _modelfile
from .._core._io import atomic_write, atomic_write_text
from .._core._params import Params
from .._core._validation import DataFormatError, InputError, check_is_fitted, check_positive
from ..datasets import RankingData, feature_matrix
from ..targets import ClickStats, Target, make_target

__all__ = [
    "SparkRanker",
    "DISTRIBUTED_TARGETS",
    "read_spark_data",
    "feature_columns",
    "key_data",
    "gains_table",
    "spark_target",
    "spark_relevance",
    "validation_queries",
]

#: Targets trained on Spark: the per-document gains (pairwise targets have none); ``dr``
#: fits its direct-method model on the cluster (:func:`spark_relevance`).
DISTRIBUTED_TARGETS = ("naive", "ips", "dr")
#: XGBoost's form of :data:`clickrank.targets.RELEVANCE_PARAMS` (LightGBM's Poisson
#: regression with 8 leaves, learning rate 0.05, 200 rounds) for :func:`spark_relevance`.
RELEVANCE_XGB: dict[str, Any] = {
    "objective": "count:poisson",
    "tree_method": "hist",
    "grow_policy": "lossguide",
    "max_leaves": 8,
    "max_depth": 0,
    "learning_rate": 0.05,
    "n_estimators": 200,
}
_FEATURE = re.compile(r"^f([1-9][0-9]*)$")
_NUMERIC = ("ByteType", "ShortType", "IntegerType", "LongType", "FloatType", "DoubleType")


def feature_columns(schema: Any, source: str) -> list[str]:
    """The feature columns ``f1..fK`` of a feature table's Spark schema, in order.

    Raises
    ------
    DataFormatError
        Naming ``source`` and the column, if ``query`` or ``doc`` is missing,
        there is no ``f1``, a column between ``f1`` and the last one is
        missing, or a feature is not numeric.
    """
    types = {f.name: type(f.dataType).__name__ for f in schema.fields}
    for col in ("query", "doc"):
        if col not in types:
            raise DataFormatError(
                f"missing column {col!r}; feature data has query, doc, optional label and "
                "f1..fK (clickrank.datasets.save_parquet)",
                path=source,
                column=col,
            )
    numbers = sorted(int(m.group(1)) for c in types if (m := _FEATURE.match(c)))
    if not numbers:
        raise DataFormatError("no feature columns f1..fK", path=source, column="f1")
    gaps = sorted(set(range(1, numbers[-1] + 1)) - set(numbers))
    if gaps:
        raise DataFormatError(
            f"missing feature column f{gaps[0]} (features are f1..f{numbers[-1]})",
            path=source,
            column=f"f{gaps[0]}",
        )
    cols = [f"f{i}" for i in numbers]
    for c in cols:
        if types[c] not in _NUMERIC:
            raise DataFormatError(
                f"must be numeric, got {types[c].removesuffix('Type').lower()}",
                path=source,
                column=c,
            )
    return cols


def read_spark_data(source: str | os.PathLike, spark: Any = None) -> Any:
    """Feature data as a Spark DataFrame: a parquet file or folder, a URI, or ``table:db.name``.

    The layout is the one :func:`clickrank.datasets.save_parquet` writes:
    ``query``, ``doc``, optional ``label``, features ``f1..fK``. Only the
    schema is read here.

    Raises
    ------
    DataFormatError
        If the path does not exist, Spark cannot read it, or a column is
        missing or not numeric (:func:`feature_columns`); one line naming the
        path and column.
    """
    from ..engine import read_spark_source

    src = str(source)
    df = read_spark_source(src, spark, what="feature data", error=DataFormatError)
    feature_columns(df.schema, src)
    return df


def key_data(features: Any, source: str = "features") -> RankingData:
    """The ``(query, doc)`` keys of a Spark feature table as a RankingData without features.

    The only collect of the feature table: two columns, sorted by query and
    doc. The result has ``X`` of shape ``(n, 0)``, which is all the gain
    targets read (:func:`clickrank.targets.click_stats` joins the log on the
    keys).

    Raises
    ------
    DataFormatError
        If a key is null or a document appears twice in a query (naming ``source``).
    """
    from ..engine import to_polars

    keys = to_polars(features.select("query", "doc"))
    for col in ("query", "doc"):
        if keys[col].null_count():
            raise DataFormatError("holds a null value", path=source, column=col)
    keys = keys.sort(["query", "doc"])
    dup = keys.is_duplicated()
    if dup.any():
        q, d = keys.filter(dup).row(0)
        raise DataFormatError(
            f"document {d!r} appears more than once in query {q!r}", path=source, column="doc"
        )
    per = keys.group_by("query", maintain_order=True).len()
    qptr = np.concatenate([[0], np.cumsum(per["len"].to_numpy())]).astype(np.int64)
    X = np.zeros((keys.height, 0), dtype=np.float32)
    qid, doc = per["query"].to_numpy(), keys["doc"].to_numpy()
    return RankingData(X, None, qptr, qid, doc, name=source)


def gains_table(keys: RankingData, target: Target) -> pl.DataFrame:
    """The target's candidate rows as a table ``(query, doc, gain)`` (Float64 gains).

    Raises
    ------
    InputError
        If the target is not a gains target, or weights documents (the
        ``hybrid`` candidate set): XGBoost's ranking objectives weight whole
        queries, not documents.
    """
    target.check_aligned(keys)
    if target.kind != "gains":
        raise InputError(
            f"target {target.name!r} holds {target.kind}; the distributed ranker trains on "
            f"gains ({', '.join(DISTRIBUTED_TARGETS)})"
        )
    if target.doc_weights is not None:
        raise InputError(
            f"target {target.name!r} uses the candidate set "
            f"{target.metadata.get('candidates', 'hybrid')!r}, which weights documents; "
            "XGBoost weights whole queries: pass candidates 'shown' or 'all'"
        )
    frame = pl.DataFrame(
        {
            "query": np.repeat(keys.qid, keys.lengths),
            "doc": keys.doc,
            "gain": target.gains,
        }
    )
    return frame if target.candidates is None else frame.filter(pl.Series(target.candidates))


def spark_relevance(
    features: Any,
    *,
    folds: int = 5,
    seed: int = 0,
    num_workers: int = 2,
    source: str = "features",
) -> Callable[[RankingData, ClickStats], np.ndarray]:
    r"""The direct-method relevance model of DR gains, fitted on the cluster.

    Returns ``relevance(keys, stats)`` for :func:`clickrank.targets.make_target`:
    the model of :func:`clickrank.targets.relevance_model` (a Poisson
    regression of the clicks on the features with the exposure as offset,
    :math:`C(d) \sim \mathrm{Poisson}(E(d) e^{f(x_d)})`, fitted as the rate
    :math:`C/E` with weight :math:`E` on the shown rows, cross-fitted over
    ``folds`` folds of the queries drawn as it draws them) grown by XGBoost's
    ``SparkXGBRegressor`` (:data:`RELEVANCE_XGB`) where the features are. The
    click statistics and fold of every row go to the cluster as a table
    ``(query, doc, row, fold, rate, exposure, shown)``; one prediction per row
    comes back. The features stay on the cluster.
    """
    folds = int(check_positive(folds, name="folds", integer=True))

    def relevance(keys: RankingData, stats: ClickStats) -> np.ndarray:
        from pyspark.sql import functions as F
        from xgboost.spark import SparkXGBRegressor

        from ..engine import to_polars

        cols = feature_columns(features.schema, source)
        # relevance_model's folds (selection.query_folds' first split; importing it would
        # close an import cycle through lambdamart.load_model)
        fold = np.random.default_rng(seed).permutation(keys.n_queries) % folds
        table = pl.DataFrame({
            "query": np.repeat(keys.qid, keys.lengths), "doc": keys.doc,
            "row": np.arange(keys.n_docs, dtype=np.int64), "fold": fold[keys.query_index],
            "rate": stats.ratio(), "exposure": stats.exposure, "shown": stats.shown,
        })  # fmt: skip
        spark = features.sparkSession
        feats = features.select("query", "doc", *[F.col(c).cast("float").alias(c) for c in cols])
        rows = feats.join(spark.createDataFrame(table.to_arrow()), on=["query", "doc"]).persist()
        out = np.zeros(keys.n_docs)
        try:
            for f in range(folds):  # a handful of distributed fits, not a loop over rows
                held = F.col("fold") == f if folds > 1 else F.lit(True)
                fit = rows.filter(F.col("shown") & (~held if folds > 1 else F.lit(True)))
                model = SparkXGBRegressor(
                    features_col=cols, label_col="rate", weight_col="exposure",
                    num_workers=int(num_workers), random_state=int(seed), **RELEVANCE_XGB,
                ).fit(fit)  # fmt: skip
                pred = to_polars(model.transform(rows.filter(held)).select("row", "prediction"))
                out[pred["row"].to_numpy()] = pred["prediction"].to_numpy()
        finally:
            rows.unpersist()
        return np.clip(out, 0.0, 1.0)

    return relevance


def spark_target(
    features: Any,
    log: Any,
    name: str,
    propensities: Any = None,
    *,
    candidates: str = "auto",
    clip: float | str | None = "auto",
    normalize: str = "none",
    naive_kind: str = "clicks",
    seed: int = 0,
    num_workers: int = 2,
    folds: int = 5,
    source: str = "features",
) -> tuple[pl.DataFrame, Target]:
    """Clickrank's target ``name`` for the documents of a Spark feature table.

    Collects the keys (:func:`key_data`), builds the target with
    :func:`clickrank.targets.make_target` from ``log`` (a Spark or polars
    click log; for ``dr``, with the relevance model of :func:`spark_relevance`
    on ``num_workers`` workers, cross-fitted over ``folds`` folds drawn with
    ``seed``) and returns the table of
    :func:`gains_table` with the target.

    Raises
    ------
    InputError
        If ``name`` is not one of :data:`DISTRIBUTED_TARGETS`.
    """
    if name not in DISTRIBUTED_TARGETS:
        raise InputError(
            f"distributed training takes the targets {', '.join(DISTRIBUTED_TARGETS)}, "
            f"not {name!r} (it has no per-document gains)"
        )
    keys = key_data(features, source)
    direct = None
    if name == "dr":
        direct = spark_relevance(features, folds=folds, seed=seed, num_workers=num_workers,
                                 source=source)  # fmt: skip
    target = make_target(name, keys, log, propensities, candidates=candidates, clip=clip,
                         normalize=normalize, naive_kind=naive_kind, seed=seed,
                         relevance=direct)  # fmt: skip
    return gains_table(keys, target), target


def validation_queries(queries: Any, fraction: float, seed: int) -> np.ndarray:
    """Which queries are held out: a uniform draw below ``fraction`` per distinct query id.

    The ids are sorted (``np.unique``) and drawn from ``seed`` in that order,
    so the split depends only on the set of queries and the seed: the same
    for any order of the rows, any number of workers, and on one machine.
    One vectorised pass, however many queries.
    """
    ids, inverse = np.unique(np.asarray(queries), return_inverse=True)
    held = np.random.default_rng(seed).random(ids.size) < fraction
    return held[inverse.reshape(-1)]


class SparkRanker(Params):
    """LambdaMART trained on a Spark cluster with XGBoost (``SparkXGBRanker``).

    Parameters
    ----------
    n_estimators : int
        Most trees (early stopping may choose fewer).
    learning_rate : float
        Shrinkage per tree.
    max_depth : int
        Depth of each tree.
    min_child_weight : float
        Least Hessian sum in a leaf (XGBoost's).
    num_workers : int
        XGBoost workers, one Spark task each (at most the cluster's task slots).
    early_stopping_rounds : int or None
        Stop after this many rounds without a better validation NDCG@``eval_at``;
        None trains ``n_estimators`` trees on all queries, without validation.
    eval_at : int
        ``k`` of the validation NDCG@k.
    valid_fraction : float
        Share of queries held out for early stopping (:func:`validation_queries`).
    refit : bool
        After early stopping, refit on all queries with the chosen number of
        trees (True), or keep the early-stopped model's first trees.
    seed : int
        Seed of the validation split and of XGBoost.

    Attributes
    ----------
    booster_ : xgboost.Booster
        The trees (exactly ``best_iteration_`` of them).
    best_iteration_ : int
        Number of trees kept.
    evals_result_ : dict
        ``{"valid": {"ndcg@k": [...]}}`` per round of the selection fit.
    """

    #: ``predict`` takes a RankingData (read by :func:`clickrank.ranking.ranker_scores`).
    accepts_ranking_data: ClassVar[bool] = True

    def __init__(
        self,
        *,
        n_estimators: int = 500,
        learning_rate: float = 0.1,
        max_depth: int = 6,
        min_child_weight: float = 1.0,
        num_workers: int = 2,
        early_stopping_rounds: int | None = 50,
        eval_at: int = 10,
        valid_fraction: float = 0.2,
        refit: bool = True,
        seed: int = 0,
    ) -> None:
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.min_child_weight = min_child_weight
        self.num_workers = num_workers
        self.early_stopping_rounds = early_stopping_rounds
        self.eval_at = eval_at
        self.valid_fraction = valid_fraction
        self.refit = refit
        self.seed = seed

    _PARAMS = (
        "n_estimators",
        "learning_rate",
        "max_depth",
        "min_child_weight",
        "num_workers",
        "early_stopping_rounds",
        "eval_at",
        "valid_fraction",
        "refit",
        "seed",
    )

    def _check(self) -> None:
        for name in ("n_estimators", "max_depth", "num_workers", "eval_at"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise InputError(f"{name} must be an integer >= 1, got {v!r}")
        stop = self.early_stopping_rounds
        if stop is not None and int(stop) < 1:
            raise InputError(f"early_stopping_rounds must be >= 1, got {stop}")
        if not 0.0 < float(self.valid_fraction) < 1.0:
            raise InputError(f"valid_fraction must be in (0, 1), got {self.valid_fraction}")
        if not float(self.learning_rate) > 0:
            raise InputError(f"learning_rate must be > 0, got {self.learning_rate}")
        if isinstance(self.seed, bool) or int(self.seed) < 0:
            raise InputError(f"seed must be an integer >= 0, got {self.seed!r}")

    def xgb_params(self) -> dict[str, Any]:
        """The XGBoost parameters both the Spark fit and a local ``XGBRanker`` use."""
        return dict(
            objective="rank:ndcg",
            ndcg_exp_gain=False,
            tree_method="hist",
            n_estimators=int(self.n_estimators),
            learning_rate=float(self.learning_rate),
            max_depth=int(self.max_depth),
            min_child_weight=float(self.min_child_weight),
            eval_metric=f"ndcg@{int(self.eval_at)}",
            random_state=int(self.seed),
        )

    def _estimator(self, cols: list[str], trees: int, validation: bool) -> Any:
        from xgboost.spark import SparkXGBRanker

        params = {**self.xgb_params(), "n_estimators": int(trees)}
        extra: dict[str, Any] = {}
        if validation:
            extra = dict(
                validation_indicator_col="valid",
                early_stopping_rounds=int(self.early_stopping_rounds),
            )
        return SparkXGBRanker(features_col=cols, label_col="gain", qid_col="qid",
                              num_workers=int(self.num_workers), **params,
                              **extra)  # fmt: skip

    def training_frame(self, features: Any, gains: pl.DataFrame) -> Any:
        """The Spark table XGBoost trains on: ``features`` inner-joined with ``gains``.

        Columns ``query``, ``doc``, ``qid`` (int64, the query's index in sorted order), ``gain``,
        ``valid`` (held-out query) and the features ``f1..fK`` as float32. The
        features never leave the cluster; ``gains`` (from :func:`spark_target`)
        is sent to it.
        """
        from pyspark.sql import functions as F

        for col in ("query", "doc", "gain"):
            if col not in gains.columns:
                raise InputError(f"the gains table needs a column {col!r}")
        cols = feature_columns(features.schema, "features")
        queries = gains["query"].unique().sort()
        held = validation_queries(queries.to_list(), float(self.valid_fraction), int(self.seed))
        split = pl.DataFrame(
            {"query": queries, "qid": np.arange(len(queries), dtype=np.int64), "valid": held}
        )
        table = gains.select("query", "doc", pl.col("gain").cast(pl.Float64)).join(
            split, on="query", how="left"
        )
        spark = features.sparkSession
        remote = spark.createDataFrame(table.to_arrow())
        feats = features.select("query", "doc", *[F.col(c).cast("float").alias(c) for c in cols])
        return feats.join(remote, on=["query", "doc"], how="inner").select(
            "query", "doc", "qid", "gain", "valid", *cols
        )

    def fit(self, features: Any, gains: pl.DataFrame, *, target_name: str = "gains") -> SparkRanker:
        """Train on a Spark feature table and a gains table ``(query, doc, gain)``.

        Parameters
        ----------
        features : pyspark.sql.DataFrame
            ``query``, ``doc``, features ``f1..fK`` (:func:`read_spark_data`).
        gains : polars.DataFrame
            One row per candidate document with its gain (:func:`spark_target`);
            feature rows without one are not trained on.
        target_name : str
            Recorded in the model (``meta.json``) and the summary.
        """
        from pyspark.sql import functions as F

        self._check()
        cols = feature_columns(features.schema, "features")
        start = time.perf_counter()
        train = self.training_frame(features, gains).persist()
        try:
            n_docs, n_valid = train.select(F.count("*"), F.sum(F.col("valid").cast("int"))).first()
            n_queries = int(gains["query"].n_unique())
            if n_docs == 0:
                raise InputError("no feature row has a gain: the keys of features and gains differ")
            self.evals_result_: dict[str, Any] = {}
            selecting = self.early_stopping_rounds is not None
            if selecting and not 0 < (n_valid or 0) < n_docs:
                raise InputError(
                    f"valid_fraction={self.valid_fraction} holds out "
                    f"{'none' if not n_valid else 'all'} of the {n_queries} queries; "
                    "change it or set early_stopping_rounds=None"
                )
            model = self._estimator(cols, int(self.n_estimators), selecting).fit(train)
            booster = model.get_booster()
            if selecting:
                history = model.training_summary.validation_objective_history
                self.evals_result_ = {"valid": {k: list(v) for k, v in history.items()}}
                best = int(booster.best_iteration) + 1
                if self.refit:
                    booster = self._estimator(cols, best, False).fit(train).get_booster()
                else:
                    booster = booster[:best]
            else:
                best = booster.num_boosted_rounds()
        finally:
            train.unpersist()
        self.booster_ = booster
        self.best_iteration_ = int(best)
        self.n_features_in_ = len(cols)
        self.target_name_ = target_name
        self.n_train_docs_ = int(n_docs)
        self.n_train_queries_ = n_queries
        self.fit_seconds_ = time.perf_counter() - start
        return self

    # -- use -----------------------------------------------------------------------

    def predict(self, data: Any) -> Any:
        """Scores (higher ranks higher).

        A :class:`~clickrank.datasets.RankingData` or a feature matrix is scored
        here with the booster (a numpy array); a Spark DataFrame with columns
        ``f1..fK`` is scored on the executors and returned with a column
        ``score`` added.
        """
        check_is_fitted(self, "booster_")
        if type(data).__name__ == "DataFrame" and hasattr(data, "sparkSession"):
            return self._predict_spark(data)
        X = feature_matrix(data, self.n_features_in_, getattr(self, "source_", None))
        if X.shape[0] == 0:
            return np.zeros(0)
        return np.asarray(self.booster_.inplace_predict(X), dtype=np.float64)

    def _predict_spark(self, df: Any) -> Any:
        from pyspark.sql.types import DoubleType, StructField, StructType

        cols = feature_columns(df.schema, "data")
        if len(cols) != self.n_features_in_:
            raise InputError(
                f"this model was trained on {self.n_features_in_} features but the data has "
                f"{len(cols)}"
            )
        raw = bytes(self.booster_.save_raw("json"))

        def score(batches):
            import pyarrow as pa
            import xgboost as xgb

            booster = xgb.Booster()
            booster.load_model(bytearray(raw))
            for batch in batches:
                X = np.column_stack(
                    [batch.column(c).to_numpy(zero_copy_only=False) for c in cols]
                ).astype(np.float32)
                s = booster.inplace_predict(X) if len(X) else np.zeros(0)
                yield batch.append_column("score", pa.array(np.asarray(s, dtype=np.float64)))

        schema = StructType([*df.schema.fields, StructField("score", DoubleType())])
        return df.mapInArrow(score, schema)

    def summary(self) -> str:
        """A readable description of the fitted model, with the chosen number of trees."""
        check_is_fitted(self, "booster_")
        curves = list(self.evals_result_.get("valid", {}).items())
        if curves:
            how = (
                f"chosen by early stopping on NDCG@{self.eval_at} of held-out clicks "
                f"({self.valid_fraction:.0%} of the queries; best of {len(curves[0][1])} rounds), "
                + ("then refitted on all queries" if self.refit else "early-stopped model kept")
            )
        else:
            how = "no early stopping"
        lines = [
            "SparkRanker (XGBoost rank:ndcg with linear gains, trained on Spark)",
            f"  target: {self.target_name_}",
            f"  trees: {self.best_iteration_} ({how}; n_estimators={self.n_estimators})",
            f"  learning_rate={self.learning_rate}, max_depth={self.max_depth},"
            f" min_child_weight={self.min_child_weight}, num_workers={self.num_workers},"
            f" seed={self.seed}",
            f"  trained on {self.n_train_docs_} candidate documents of"
            f" {self.n_train_queries_} queries, {self.n_features_in_} features",
        ]
        for name, values in curves:
            if values:
                b = min(self.best_iteration_, len(values)) - 1
                lines.append(
                    f"  valid {name}: {values[b]:.4f} at tree {b + 1} (last {values[-1]:.4f})"
                )
        return "\n".join(lines)

    # -- persistence -------------------------------------------------------------

    def save(self, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
        """Write ``model.json`` (XGBoost's JSON model) and ``meta.json`` into folder ``path``.

        Both are written atomically; ``meta.json`` records the size and
        SHA-256 digest of ``model.json`` (format ``clickrank-xgboost``), which
        :meth:`load` checks. Refuses to overwrite a model unless
        ``overwrite``, and never replaces files clickrank did not write.
        """
        check_is_fitted(self, "booster_")
        out = Path(path)
        out.mkdir(parents=True, exist_ok=True)
        if (out / "model.json").exists() and not overwrite:
            raise InputError(f"{out} already holds a model; pass overwrite=True to replace it")
        raw = bytes(self.booster_.save_raw("json"))
        meta = {
            "format": _modelfile.XGB_FORMAT,
            "format_version": _modelfile.XGB_FORMAT_VERSION,
            "params": self.get_params(),
            "n_features_in": self.n_features_in_,
            "best_iteration": self.best_iteration_,
            "target": self.target_name_,
            "n_train_docs": self.n_train_docs_,
            "n_train_queries": self.n_train_queries_,
            "evals_result": self.evals_result_,
            "model_bytes": len(raw),
            "model_sha256": _modelfile.digest(raw),
        }
        atomic_write(out / "model.json", lambda tmp: tmp.write_bytes(raw))
        atomic_write_text(out / "meta.json", json.dumps(meta, indent=2) + "\n")
        return out

    @classmethod
    def load(cls, path: str | os.PathLike) -> SparkRanker:
        """Read a model written by :meth:`save` (no Spark needed: XGBoost on this machine).

        Raises
        ------
        DataFormatError
            Naming the file, if ``meta.json`` is not a ``clickrank-xgboost``
            record or ``model.json`` does not have its recorded digest, size,
            feature count and number of trees.
        """
        import xgboost as xgb

        folder = Path(path)
        meta_path, model_path = folder / "meta.json", folder / "model.json"
        for p in (meta_path, model_path):
            if not p.is_file():
                raise DataFormatError("missing; not a saved clickrank XGBoost model", path=p)
        meta = _modelfile.read_xgb_meta(meta_path, set(cls._PARAMS))
        raw = _modelfile.read_xgb_model(model_path, meta, meta_path)
        booster = xgb.Booster()
        try:
            booster.load_model(bytearray(raw))
        except xgb.core.XGBoostError as err:
            first = (str(err).strip().splitlines() or ["?"])[0]
            raise DataFormatError(f"XGBoost cannot read it ({first})", path=model_path) from None
        if booster.num_features() != meta["n_features_in"]:
            raise DataFormatError(
                f"has {booster.num_features()} features, {meta_path} records "
                f"{meta['n_features_in']}",
                path=model_path,
            )
        if booster.num_boosted_rounds() != meta["best_iteration"]:
            raise DataFormatError(
                f"has {booster.num_boosted_rounds()} trees, {meta_path} records "
                f"{meta['best_iteration']}",
                path=model_path,
            )
        model = cls(**meta["params"])
        model.booster_ = booster
        model.best_iteration_ = int(meta["best_iteration"])
        model.n_features_in_ = int(meta["n_features_in"])
        model.target_name_ = meta["target"]
        model.n_train_docs_ = int(meta["n_train_docs"])
        model.n_train_queries_ = int(meta["n_train_queries"])
        model.evals_result_ = meta["evals_result"]
        model.source_ = str(folder)
        return model

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"SparkRanker({args})"
