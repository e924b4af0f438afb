r"""The production ranker: the logging ranker of unbiased learning-to-rank simulations.

:func:`production_ranker` trains the standard "production ranker" of the
unbiased learning-to-rank literature: a ranker fitted on about 1 % of the
labelled training queries (Joachims et al. (2017), §6; Tran et al. (2021), ULTRA),
and on at least ``min_queries`` (20) of them, so that the logger is a weak
ranker rather than a random one on small data sets.
:meth:`ProductionRanker.quality` measures it: NDCG@10 on the queries it was
not trained on, the honest figure, and on all of them; :func:`describe_quality`
says it in one line.

This module belongs to the training layer (it fits a
:class:`~clickrank.lambdamart.LambdaMART`); the logging policies of
:mod:`clickrank.policies` take the fitted ranker like any other scorer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core._params import Params
from .._core._validation import InputError, check_is_fitted, check_positive
from ..datasets import RankingData
from ..lambdamart import LambdaMART
from ..metrics import ndcg

__all__ = ["ProductionRanker", "production_ranker", "describe_quality"]


class ProductionRanker(Params):
    """A small LambdaMART trained on the true labels of a few queries.

    This is the usual logging ranker of ULTR simulations (Joachims et al.
    (2017), §6; ULTRA: a ranker trained on 1 % of the training queries). It
    is clickrank's own :class:`~clickrank.lambdamart.LambdaMART` with the
    oracle target, which matches LightGBM's built-in ``lambdarank`` with the
    same settings.

    It trains on ``k = min(n, max(min_queries, round(fraction * n)))`` of the
    ``n`` labelled queries, drawn at random with ``seed``. The floor matters
    on small data: 1 % of MQ2008's 471 training queries is 5 queries, of the
    default synthetic run's 325 only 3, and a ranker fitted on 3 queries is
    a poor stand-in for a production system (on that synthetic data, NDCG@10
    on unseen queries is about 0.65 with 3 training queries and 0.79 with
    20). :meth:`quality` states how good the result is.

    Parameters
    ----------
    fraction : float
        Share of the labelled queries used for training, in (0, 1].
    min_queries : int
        Train on at least this many queries (all of them if there are fewer),
        whatever ``fraction`` gives; >= 1. ``min_queries=1`` gives the plain
        ``fraction`` of the queries.
    n_estimators, num_leaves, learning_rate, min_child_samples
        Tree parameters (a deliberately weak model); ``min_child_samples`` is
        LambdaMART's ``min_data_in_leaf``.
    seed : int
        Seeds the query subsample and the tree learner.

    Attributes
    ----------
    model_ : clickrank.lambdamart.LambdaMART or None
        None when the training documents have no varying feature (e.g. a
        single document): every score is then 0 and rankings keep the data order.
    train_queries_ : numpy.ndarray
        Indices of the queries it was trained on.
    train_qid_ : numpy.ndarray
        Their query ids (:meth:`quality` uses them to find the held-out queries).
    n_queries_ : int
        Number of queries of the data it was fitted on.
    note_ : str or None
        Set when the data were too small for the settings: LightGBM could not
        split them with ``min_child_samples`` documents per leaf (the model is
        retrained with 1), or there is nothing to learn from (``model_`` is None).
    """

    def __init__(
        self,
        *,
        fraction: float = 0.01,
        min_queries: int = 20,
        n_estimators: int = 50,
        num_leaves: int = 15,
        learning_rate: float = 0.1,
        min_child_samples: int = 5,
        seed: int = 0,
    ) -> None:
        self.fraction = fraction
        self.min_queries = min_queries
        self.n_estimators = n_estimators
        self.num_leaves = num_leaves
        self.learning_rate = learning_rate
        self.min_child_samples = min_child_samples
        self.seed = seed

    def fit(self, data: RankingData) -> ProductionRanker:
        if data.y is None:
            raise InputError("production_ranker needs labelled data (data.y is None)")
        frac = float(self.fraction)
        if not 0.0 < frac <= 1.0:
            raise InputError(f"fraction must be in (0, 1], got {self.fraction!r}")
        floor = check_positive(self.min_queries, name="min_queries", integer=True)
        n_q = data.n_queries
        k = min(n_q, max(floor, int(round(frac * n_q))))
        rng = np.random.default_rng(self.seed)
        queries = np.sort(rng.choice(n_q, size=k, replace=False))
        train = data.subset(queries)
        if np.any(train.y < 0):
            raise InputError("the production ranker needs non-negative labels")
        self.train_queries_ = queries
        self.train_qid_ = np.asarray(data.qid)[queries]
        self.n_queries_ = n_q
        self.note_ = None
        # LightGBM drops the features it cannot split with min_data_in_leaf documents per
        # leaf (its pre-filter, which LambdaMART turns off by default and this ranker keeps
        # on), and fails ("num_features() > 0") if none is left: a small sample is retried
        # with one document per leaf, and one without a varying feature keeps the data order
        if train.n_docs < 2 or np.all(np.ptp(train.X, axis=0) == 0):
            self.model_ = None
            self.note_ = (
                f"the production ranker's {train.n_docs} training document(s) have no "
                "feature that varies, so it keeps the data order"
            )
            return self
        import lightgbm as lgb

        for leaf in (int(self.min_child_samples), 1):
            try:
                self.model_ = LambdaMART(
                    n_estimators=int(self.n_estimators),
                    num_leaves=int(self.num_leaves),
                    learning_rate=float(self.learning_rate),
                    min_data_in_leaf=leaf,
                    seed=int(self.seed),
                    n_jobs=1,
                    lightgbm_params={"feature_pre_filter": True},
                ).fit(train)
                break
            except lgb.basic.LightGBMError:
                if leaf == 1:
                    raise
                self.note_ = (
                    f"LightGBM could not split the {train.n_docs} training documents "
                    f"with min_child_samples={leaf}; retrained with 1"
                )
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Scores of the rows of ``X`` (higher ranks higher)."""
        check_is_fitted(self, "model_")
        X = np.asarray(X, dtype=np.float32)
        if self.model_ is None:  # nothing could be learned: ties keep the data order
            return np.zeros(X.shape[0])
        return np.asarray(self.model_.predict(X), dtype=np.float64)

    def quality(self, data: RankingData, *, k: int = 10) -> dict[str, Any]:
        """NDCG@k of the ranker on the queries of ``data`` it was not trained on, and on all.

        The queries it was trained on are recognized by their ids
        (``train_qid_``), so ``data`` may be the training data (then the
        held-out figure is the honest one: the ranker never saw those labels)
        or other labelled queries of the same collection (e.g. its test
        split); a different data set that reuses the same query ids would
        be mistaken for the training queries. Queries without a relevant document
        (every label 0) have no NDCG and are skipped (``empty="skip"`` of
        :func:`clickrank.metrics.ndcg`); their number is reported.

        Returns
        -------
        dict
            ``metric`` (e.g. ``"ndcg@10"``), ``n_queries``, ``trained_on``
            (queries of ``data`` it was trained on), ``empty`` ("skip"), and
            for ``"held_out"`` and ``"all"`` a dict with ``queries``,
            ``n_empty`` (skipped), ``n_used`` and ``mean`` (None when no
            query is left). :func:`describe_quality` turns it into one line.
        """
        check_is_fitted(self, "model_")
        if not isinstance(data, RankingData) or data.y is None:
            raise InputError("quality() needs labelled RankingData")
        k = check_positive(k, name="k", integer=True)
        values = ndcg(self.predict(data.X), data.y, data.qptr, k=k, empty="skip").values
        trained = np.isin(np.asarray(data.qid), self.train_qid_)

        def part(mask: np.ndarray) -> dict[str, Any]:
            v = values[mask]
            used = ~np.isnan(v)
            return {
                "queries": int(mask.sum()),
                "n_empty": int((~used).sum()),
                "n_used": int(used.sum()),
                "mean": float(v[used].mean()) if used.any() else None,
            }

        return {
            "metric": f"ndcg@{k}",
            "n_queries": int(data.n_queries),
            "trained_on": int(trained.sum()),
            "empty": "skip",
            "held_out": part(~trained),
            "all": part(np.ones(data.n_queries, dtype=bool)),
        }


def describe_quality(quality: dict[str, Any], *, name: str = "production ranker") -> str:
    """One line from :meth:`ProductionRanker.quality` (or a log's metadata).

    Examples
    --------
    >>> q = {"metric": "ndcg@10", "n_queries": 471, "trained_on": 24, "empty": "skip",
    ...      "held_out": {"queries": 447, "n_empty": 98, "n_used": 349, "mean": 0.6521},
    ...      "all": {"queries": 471, "n_empty": 103, "n_used": 368, "mean": 0.7013}}
    >>> print(describe_quality(q))
    production ranker: trained on 24 of 471 queries; NDCG@10 0.652 on the other 447 (0.701 \
on all; 103 queries without a relevant document skipped)
    """
    metric = str(quality["metric"]).upper()
    n, t = quality["n_queries"], quality["trained_on"]
    held, every = quality["held_out"], quality["all"]

    def fmt(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    skipped = (
        f"; {every['n_empty']} {'query' if every['n_empty'] == 1 else 'queries'} "
        "without a relevant document skipped"
        if every["n_empty"]
        else ""
    )
    if t == 0:
        return f"{name}: {metric} {fmt(every['mean'])} on {n} queries it was not trained on" + (
            f" ({skipped[2:]})" if skipped else ""
        )
    head = f"{name}: trained on {t} of {n} queries"
    if held["queries"] == 0:
        return (
            f"{head}; {metric} {fmt(every['mean'])} on them (no held-out query: an "
            f"optimistic figure{skipped})"
        )
    return (
        f"{head}; {metric} {fmt(held['mean'])} on the other {held['queries']} "
        f"({fmt(every['mean'])} on all{skipped})"
    )


def production_ranker(
    data: RankingData, fraction: float = 0.01, *, seed: int = 0, **params: Any
) -> ProductionRanker:
    """Train a :class:`ProductionRanker` on ``fraction`` of the queries of ``data``.

    ``params`` go to :class:`ProductionRanker` (e.g. ``min_queries``, 20 by
    default: at least that many queries, whatever the fraction).
    """
    return ProductionRanker(fraction=fraction, seed=seed, **params).fit(data)
