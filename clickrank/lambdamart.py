r"""LambdaMART: clickrank's lambdas, LightGBM's trees (Burges (2010), §7; Wu et al. (2010)).

Every boosting round computes the forces :math:`\lambda_i` and Newton weights
:math:`w_i` of the current scores with :mod:`clickrank.lambdas` (listwise
gains or pairwise preferences from a :class:`~clickrank.targets.Target`) and
hands ``grad = -lambda``, ``hess = w`` to LightGBM's tree learner through a
callable objective; LightGBM grows the tree and sets the Newton leaf values
:math:`\sum_{i \in \text{leaf}} \lambda_i / (\sum w_i + \lambda_{L2})`.
With the oracle target and the default options the gradients are those of
LightGBM's built-in ``lambdarank`` objective (same truncation, ``lambdarank_norm``
and IDCG), so quality matches it; the point is that any target can be plugged in.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ._core import _modelfile
from ._core._io import atomic_write, atomic_write_text
from ._core._params import Params
from ._core._threads import fit_threads, sharing_cores
from ._core._validation import InputError, check_is_fitted, check_jobs, check_positive, check_qptr
from .datasets import RankingData, feature_matrix
from .objectives import lambdamart_objective
from .targets import Target, oracle

__all__ = ["LambdaMART", "load_model"]


#: LightGBM parameters that do not enter the binned data: fits that differ only in these may
#: share it (:meth:`LambdaMART._fit`).
_TREE_ONLY = frozenset({"num_leaves", "max_depth", "learning_rate", "num_threads"})


def _restrict(
    data: RankingData, target: Target
) -> tuple[
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray | None,
    np.ndarray | None,
    np.ndarray | None,
    np.ndarray | None,
]:
    """Rows of the candidate set: (X, qptr, gains, pairs, pair_weights, kept rows, doc weights).

    For a session-list target (:class:`~clickrank.targets.SessionLists`, e.g.
    Unbiased LambdaMART) the sessions, renumbered to the kept rows, take the
    place of ``pairs`` (``pair_weights`` is None);
    :func:`~clickrank.objectives.lambdamart_objective` dispatches on that.
    """
    X = data.X
    qptr = data.qptr
    gains = target.gains
    pairs = target.pairs if target.sessions is None else target.sessions
    dw = target.doc_weights
    if target.candidates is None:
        return X, qptr, gains, pairs, target.pair_weights, None, dw
    keep = np.asarray(target.candidates, dtype=bool)
    rows = np.flatnonzero(keep)
    counts = np.bincount(data.query_index[keep], minlength=data.n_queries)
    new_qptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    new_gains = None if gains is None else gains[keep]
    new_pairs = None
    pw = target.pair_weights
    remap = np.full(data.n_docs, -1, dtype=np.int64)
    remap[rows] = np.arange(len(rows))
    if target.sessions is not None:
        new_pairs = target.sessions.remap(remap)
    elif pairs is not None:
        new_pairs = remap[pairs]
        ok = np.all(new_pairs >= 0, axis=1)
        new_pairs, pw = new_pairs[ok], pw[ok]
    return X[keep], new_qptr, new_gains, new_pairs, pw, rows, None if dw is None else dw[keep]


def _checked_target(data: RankingData, target: Target | None) -> Target:
    """``target`` (the labels by default), checked against ``data``: the first step of a fit."""
    if not isinstance(data, RankingData):
        raise InputError(f"data must be a RankingData, got {type(data).__name__}")
    if target is None:
        target = oracle(data)
    if not isinstance(target, Target):
        raise InputError(f"target must be a clickrank.targets.Target, got {type(target).__name__}")
    target.check_aligned(data)
    return target


def _reference_scores(
    reference: np.ndarray | None, data: RankingData, rows: np.ndarray | None
) -> np.ndarray | None:
    """The safe ranker's scores on the candidate rows, checked: a step of a fit (CRM)."""
    ref = None
    if reference is not None:
        ref = np.asarray(reference, dtype=np.float64)
        if ref.shape != (data.n_docs,):
            raise InputError(f"reference must hold one score per row ({data.n_docs})")
        ref = ref if rows is None else ref[rows]
    return ref


def _train_set(
    sets: dict[Any, Any], key: tuple, binning: dict[str, Any], X: np.ndarray,
    rows_: np.ndarray | None,
) -> tuple[Any, str]:  # fmt: skip
    """The binned training set of the candidate rows, shared through ``sets``: a step of a fit."""
    import lightgbm as lgb

    same = sets.get("params") == binning and all(
        a is b for a, b in zip(sets["of"], key, strict=True)
    )
    if not same:
        sets.clear()  # other rows or LightGBM parameters: bin afresh
    sets["of"], sets["params"] = key, binning
    rows = "all" if rows_ is None else hashlib.sha1(rows_.tobytes()).hexdigest()
    if ("train", rows) not in sets:  # bins of the candidate rows, as a fit alone has
        sets["train", rows] = lgb.Dataset(X, params=dict(binning))
    dtrain = sets["train", rows]
    return dtrain, rows


class LambdaMART(Params):
    r"""LambdaMART ranker with pluggable (debiased) targets.

    Parameters
    ----------
    n_estimators : int
        Maximum number of boosting rounds (trees). To choose the number of
        trees and their shape from clicks, use
        :class:`clickrank.selection.LambdaMARTCV` (what ``clickrank train`` does).
    learning_rate : float
        Shrinkage :math:`\eta` of each tree.
    num_leaves : int
        Maximum leaves per tree (LightGBM ``num_leaves``). The default 8 with
        depth 3 is the middle shape of :data:`clickrank.selection.DEFAULT_GRID`:
        click targets overfit larger trees on real LETOR data (docs/target-benchmarks.md).
    max_depth : int
        Maximum tree depth; ``-1`` for none.
    min_data_in_leaf : int
        LightGBM ``min_data_in_leaf``.
    truncation_level : int or None
        Only pairs with a document in the current top ``truncation_level``
        (LightGBM's ``lambdarank_truncation_level``, default 30); None: all pairs.
    sigma : float
        Logistic steepness :math:`\sigma` (LightGBM ``sigmoid``).
    normalize : bool
        LightGBM's ``lambdarank_norm`` (score-distance damping and per-query
        :math:`\log_2(1+S)/S` scaling).
    weighting : {"ndcg", "none"}
        LambdaRank (|ΔNDCG|) or RankNet pair weights. For pairwise targets
        (skip-above) the default ``"ndcg"`` weights each preference by the
        discount difference :math:`|D(p_i) - D(p_j)|` of the current ranking.
    early_stopping_rounds : int, optional
        Stop when validation NDCG@``eval_at`` (true labels of ``valid``,
        computed by :func:`clickrank.metrics.ndcg`) has not improved for this
        many rounds; the model keeps the best iteration.
    early_stopping_fraction : float
        A patience that grows with the curve: stop after
        ``max(early_stopping_rounds, early_stopping_fraction * best round)`` rounds
        without improvement (0, the default: LightGBM's fixed patience). A model whose
        best is at round 400 has seen its validation score creep up for a long time, and
        a plateau of 20 rounds there is noise more often than at round 40.
    eval_at : int
        Cut-off ``k`` of the validation NDCG.
    lambda_l2 : float
        L2 regularization of leaf values (LightGBM ``lambda_l2``).
    proximal : float, optional
        Proximal ranking policy optimisation (PRPO; Gupta, Oosterhuis & de Rijke
        (2024)) with clipping :math:`\epsilon`: ``fit(..., reference=scores)``
        gives the rankings of a safe ranker, and a document's force is dropped
        once its exposure :math:`D(\mathrm{rank})` under the current scores
        is more than :math:`1 + \epsilon` times its exposure under the safe
        ranking and the force pushes it further up (or less than
        :math:`1/(1 + \epsilon)` times and the force pushes it down), so the
        learned ranking drifts less from the safe one the smaller
        :math:`\epsilon` (:func:`proximal_mask`; on trees a soft constraint: a
        leaf moves all its documents). None: no constraint.
    risk : float, optional
        Exposure-based counterfactual risk minimisation (CRM; Gupta, Oosterhuis &
        de Rijke (2023)) around the safe ranker of ``fit(..., reference=scores)``:
        the weight :math:`\alpha` of :math:`\sqrt{\hat d_2}`, the divergence of the
        learned exposures from the safe ones, subtracted from the target
        (:class:`~clickrank.training.deployment.RiskPenalty`;
        :func:`~clickrank.training.deployment.risk_weight` gives :math:`\alpha` for a number
        of sessions and a confidence). The pull towards the safe ranking weakens as the
        rankings agree and as :math:`\alpha` shrinks with more data. None: no penalty.
    seed : int
        Seed of LightGBM's randomness (bagging, feature fraction); training
        runs with ``deterministic=True`` and ``force_col_wise=True``, so a seed
        gives identical models, on any number of threads (unless ``lightgbm_params``
        turn bagging on: LightGBM draws its rows on each thread).
    n_jobs : int
        Threads of LightGBM's tree learner and of the lambdas' kernels.
    lightgbm_params : dict, optional
        Extra LightGBM parameters (e.g. ``feature_fraction``, ``max_bin``);
        they may not override the objective.

    Attributes
    ----------
    booster_ : lightgbm.Booster
    n_features_in_ : int
    best_iteration_ : int
        Number of trees used by :meth:`predict`.
    evals_result_ : dict
        Validation NDCG per round (when ``valid`` was given).
    target_name_ : str
    divergence_ : list of float
        With ``risk``: the mean exposure divergence :math:`\hat d_2` from the safe
        ranking at every round (1: the same rankings); else empty.
    position_bias_ : dict or None
        For the ``unbiased-lambdamart`` target, the position biases learned
        with the trees: ``{"t_plus": [K], "t_minus": [K]}`` (relative to
        position 1; the estimate after the last round), else None.

    Examples
    --------
    >>> from clickrank.datasets import synthetic, split_queries
    >>> train, test = split_queries(synthetic(200, 10, seed=1), [100, 100])
    >>> model = LambdaMART(n_estimators=5, seed=0).fit(train)
    >>> model.predict(test).shape
    (1000,)
    """

    #: ``predict`` takes a RankingData too (errors then name it): read by
    #: :func:`clickrank.ranking.ranker_scores`, which must not import this module.
    accepts_ranking_data: ClassVar[bool] = True

    def __init__(
        self,
        *,
        n_estimators: int = 100,
        learning_rate: float = 0.1,
        num_leaves: int = 8,
        max_depth: int = 3,
        min_data_in_leaf: int = 20,
        truncation_level: int | None = 30,
        sigma: float = 1.0,
        normalize: bool = True,
        weighting: str = "ndcg",
        early_stopping_rounds: int | None = None,
        early_stopping_fraction: float = 0.0,
        eval_at: int = 10,
        lambda_l2: float = 0.0,
        proximal: float | None = None,
        risk: float | None = None,
        seed: int = 0,
        n_jobs: int = 1,
        lightgbm_params: dict[str, Any] | None = None,
    ) -> None:
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.max_depth = max_depth
        self.min_data_in_leaf = min_data_in_leaf
        self.truncation_level = truncation_level
        self.sigma = sigma
        self.normalize = normalize
        self.weighting = weighting
        self.early_stopping_rounds = early_stopping_rounds
        self.early_stopping_fraction = early_stopping_fraction
        self.eval_at = eval_at
        self.lambda_l2 = lambda_l2
        self.proximal = proximal
        self.risk = risk
        self.seed = seed
        self.n_jobs = n_jobs
        self.lightgbm_params = lightgbm_params

    # -- parameters -------------------------------------------------------------

    # get_params / set_params: clickrank._core._params.Params (scikit-learn's contract)

    def _validate(self) -> None:
        _check_params(self)

    def _lgb_params(self) -> dict[str, Any]:
        params = {
            "learning_rate": float(self.learning_rate),
            "num_leaves": int(self.num_leaves),
            "max_depth": int(self.max_depth),
            "min_data_in_leaf": int(self.min_data_in_leaf),
            "lambda_l2": float(self.lambda_l2),
            "seed": int(self.seed),
            "deterministic": True,
            # column-wise histograms: each feature's bins summed by one thread in row
            # order, so the trees are those of one thread on any number (row-wise ones
            # add per-thread partial sums: measured, other trees on two threads)
            "force_col_wise": True,
            # keep every feature in the bins: LightGBM's pre-filter drops those it cannot split
            # with min_data_in_leaf, and with a custom objective a set left with none (a fold
            # with a handful of candidate rows) stops on a fatal check instead of a stump
            "feature_pre_filter": False,
            "num_threads": int(self.n_jobs),
            "verbosity": -1,
        }
        params.update(self.lightgbm_params or {})
        if not any(params.get(k, 0) for k in ("bagging_freq", "subsample_freq")):
            # bagging draws its rows on each thread: its trees change with the threads
            params["num_threads"] = fit_threads(int(params["num_threads"]))
        return params

    def lightgbm_threads(self) -> int:
        """LightGBM's threads for this model's fits and predictions (``n_jobs``, or
        ``lightgbm_params["num_threads"]``).

        Every LightGBM call passes them: LightGBM keeps one thread count for the whole
        process, and a call without ``num_threads`` (a ``predict``, a ``Dataset``) resets
        it to every core, so the next rounds of a one-thread booster would run on all of
        them -- against the member processes of ``ClickRanker(n_jobs=2)`` or anything else
        on the machine (OpenMP threads waiting on each other's cores: up to 20 times
        slower; docs/default-cost.md).
        """
        return int(self._lgb_params()["num_threads"])

    def _follow_share(self, threads: int):
        """A LightGBM callback giving the next rounds this member process's share of the
        cores whenever it changes (:func:`~clickrank._core._threads.fit_threads`): a training
        otherwise keeps the threads it started with, and the last member, started on one
        thread, would wait for its next fit to take the cores the others left."""
        state = {"threads": int(threads)}

        def callback(env):
            now = self._lgb_params()["num_threads"]
            if now != state["threads"]:
                env.model.reset_parameter({"num_threads": now})
                state["threads"] = now

        return callback

    # -- fitting ---------------------------------------------------------------

    def fit(
        self,
        data: RankingData,
        target: Target | None = None,
        *,
        valid: Any = None,
        reference: np.ndarray | None = None,
    ) -> LambdaMART:
        """Grow the trees on ``data`` for ``target``.

        Parameters
        ----------
        data : RankingData
            Training documents (features and query groups).
        target : Target, optional
            From :mod:`clickrank.targets`; None means :func:`~clickrank.targets.oracle`
            (``2^y - 1`` of ``data.y``). Only the target's candidate documents
            take part in the lists.
        valid : RankingData or ClickValidation, optional
            Validation queries for early stopping and ``evals_result_``:
            labelled data (NDCG@``eval_at`` with exponential gain; queries
            without a relevant document are skipped), or a
            :class:`clickrank.selection.ClickValidation` (a counterfactual
            DCG@``eval_at`` estimated from held-out clicks, no labels needed).
        reference : numpy.ndarray, optional
            ``[n_docs]`` scores of the safe ranker on ``data`` (its rankings bound
            the learned ones when ``proximal`` or ``risk`` is set; ignored otherwise).

        Returns
        -------
        LambdaMART
            ``self``.
        """
        return self._fit(data, target, valid=valid, reference=reference)

    def _fit(
        self,
        data: RankingData,
        target: Target | None = None,
        *,
        valid: Any = None,
        reference: np.ndarray | None = None,
        sets: dict[str, Any] | None = None,
    ) -> LambdaMART:
        """:meth:`fit`, sharing LightGBM's binned data between fits through ``sets``.

        Binning the features (``lgb.Dataset``) costs as much as dozens of boosting
        rounds (576,000 random rows x 136 features, one thread: 7.8 s, against 0.17 s
        a round of 8 leaves). Fits on the same ``data`` and ``valid`` objects (the tree
        shapes and the targets of :class:`~clickrank.selection.LambdaMARTCV` on one
        fold) pass the same dict: the first fit on a set of candidate rows stores their
        binned features there, the fits on the same rows reuse them. The bins depend
        only on those rows and the Dataset parameters, so the models are those of
        fresh sets (binning all of ``data``'s rows once and training each target on a
        subset, as ``lightgbm.cv`` does, would move the bins of a restricted target and
        with them its model: measured, 0.01-0.02 NDCG@10 on the default run's
        rankers, either way). A fit whose LightGBM parameters differ in more than
        ``_TREE_ONLY`` bins afresh.
        """
        import lightgbm as lgb

        key = (data, valid)
        self._validate()
        target = _checked_target(data, target)
        X, qptr, gains, pairs, pw, _rows, dw = _restrict(data, target)
        if X.shape[0] == 0:
            raise InputError(f"target {target.name!r} has no candidate documents")
        if self.early_stopping_rounds is not None and valid is None:
            raise InputError("early_stopping_rounds needs valid data")
        params = self._lgb_params()
        binning = {k: v for k, v in params.items() if k not in _TREE_ONLY}
        if reference is None and (self.proximal is not None or self.risk is not None):
            raise InputError("proximal and risk need the safe ranker's scores: "
                             "fit(..., reference=scores)")  # fmt: skip
        ref = _reference_scores(reference, data, _rows)
        self.divergence_: list[float] = []  # CRM: the mean divergence at every round
        params["objective"] = lambdamart_objective(self, qptr, gains, pairs, pw, dw, ref)
        sets = {} if sets is None else sets
        dtrain, rows = _train_set(sets, key, binning, X, _rows)
        from ._core._signals import lightgbm_callback

        callbacks = [lightgbm_callback]  # SIGTERM stops between trees (clickrank._core._signals)
        if sharing_cores():
            callbacks.append(self._follow_share(params["num_threads"]))
        valid_sets = []
        feval = None
        self.evals_result_ = {}
        if valid is not None:
            valid_sets, feval = _valid_sets(
                self, valid, data, sets, rows, dtrain, params, callbacks
            )
        booster = lgb.train(
            params,
            dtrain,
            num_boost_round=int(self.n_estimators),
            valid_sets=valid_sets,
            valid_names=["valid"] if valid_sets else None,
            feval=feval,
            callbacks=callbacks,
        )
        self.booster_ = booster
        self.n_features_in_ = data.n_features
        best = (
            booster.best_iteration
            if booster.best_iteration and booster.best_iteration > 0
            else booster.current_iteration()
        )
        self.best_iteration_ = int(best)
        self.target_name_ = target.name
        self.n_train_docs_ = int(X.shape[0])
        self.n_train_queries_ = int(data.n_queries)
        return self

    # -- use -----------------------------------------------------------------------

    def predict(self, X: np.ndarray | RankingData) -> np.ndarray:
        """Scores (higher ranks higher) for a feature matrix or a RankingData."""
        check_is_fitted(self, "booster_")
        X = feature_matrix(X, self.n_features_in_, getattr(self, "source_", None))
        return self.booster_.predict(
            X, num_iteration=self.best_iteration_, num_threads=self.lightgbm_threads()
        ).astype(np.float64)

    @property
    def feature_importances_(self) -> np.ndarray:
        """Total gain of the splits on each feature (LightGBM ``importance_type="gain"``)."""
        check_is_fitted(self, "booster_")
        return self.booster_.feature_importance(
            importance_type="gain", iteration=self.best_iteration_
        )

    def _rounds_note(self) -> str:
        curves = list(self.evals_result_.get("valid", {}).values())
        if self.early_stopping_rounds is None or not curves:
            return ""
        return f"; early stopping kept the best of {len(curves[0])} rounds"

    def summary(self) -> str:
        """A readable description of the fitted model."""
        return _summary(self)

    # -- persistence -------------------------------------------------------------

    def save(self, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
        """Write ``model.txt`` (LightGBM text model) and ``meta.json`` into folder ``path``.

        Both files are written atomically (temporary file, then rename); no
        pickle. ``meta.json`` records the size and SHA-256 digest of
        ``model.txt``, which :meth:`load` checks. Refuses to overwrite an
        existing model unless ``overwrite``, and never replaces files clickrank
        did not write.
        """
        return _save(self, path, overwrite=overwrite)

    @classmethod
    def load(cls, path: str | os.PathLike) -> LambdaMART:
        """Read a model written by :meth:`save`.

        ``meta.json`` and ``model.txt`` are checked before LightGBM parses the
        model (:mod:`clickrank._core._modelfile`): known keys only, the recorded
        digest of ``model.txt``, and its structure. Any problem is one
        :class:`~clickrank.DataFormatError` naming the file.
        """
        return _load(cls, path)

    @classmethod
    def average(cls, models: list[LambdaMART], weights: list[float] | np.ndarray,
                names: list[str] | None = None,
                trees: int | None = None) -> LambdaMART:  # fmt: skip
        r"""One model whose score is :math:`\sum_m w_m f_m(x)` of fitted ``models``.

        Every model's trees (up to its ``best_iteration_``, or its first ``trees``) in one
        LightGBM booster, leaf values scaled by the weights
        (:func:`clickrank._core._modelfile.merge_trees`): it predicts, saves, loads and explains
        like any LambdaMART. Its
        parameters are the first model's, with ``n_estimators``, ``num_leaves`` and
        ``max_depth`` the total trees and the largest shape; its target names the
        models' (``names``, else their targets').
        """
        return _average(cls, models, weights, names, trees)

    def __repr__(self) -> str:
        changed = {k: v for k, v in self.get_params().items() if v != _DEFAULTS.get(k)}
        args = ", ".join(f"{k}={v!r}" for k, v in changed.items())
        return f"LambdaMART({args})"


def load_model(path: str | os.PathLike) -> Any:
    """A saved ranker of any clickrank model format, by the ``format`` of its ``meta.json``.

    ``clickrank-xgboost`` folders (:class:`clickrank.training.distributed.SparkRanker`,
    trained on Spark) load with XGBoost; everything else is read as a
    :class:`LambdaMART` folder, whose loader reports what is wrong with it.
    Both have ``predict(data)``: this is the loader of every user-given model
    folder (``clickrank evaluate --model``, ``clickrank train --logging-model``).

    Raises
    ------
    DataFormatError
        If the folder is not a model clickrank wrote, or was changed since.
    """
    if _modelfile.model_format(Path(path)) == _modelfile.XGB_FORMAT:
        from .training.distributed import SparkRanker

        return SparkRanker.load(path)
    return LambdaMART.load(path)


def _check_params(model: LambdaMART) -> None:
    """Every parameter of ``model`` checked, one line for the first one out of range."""
    check_positive(model.n_estimators, name="n_estimators", integer=True)
    check_positive(model.learning_rate, name="learning_rate")
    if int(model.num_leaves) < 2:
        raise InputError(f"num_leaves must be >= 2, got {model.num_leaves}")
    if int(model.max_depth) == 0 or int(model.max_depth) < -1:
        raise InputError(f"max_depth must be -1 (no limit) or >= 1, got {model.max_depth}")
    check_positive(model.min_data_in_leaf, name="min_data_in_leaf", integer=True)
    if model.truncation_level is not None:
        from .metrics import MAX_K

        level = check_positive(model.truncation_level, name="truncation_level", integer=True)
        if level > MAX_K:  # deeper than any list: None (all pairs) says it
            raise InputError(f"truncation_level must be at most {MAX_K} (None: all pairs), "
                             f"got {model.truncation_level}")  # fmt: skip
    check_positive(model.sigma, name="sigma")
    if model.weighting not in ("ndcg", "none"):
        raise InputError(f"weighting must be 'ndcg' or 'none', got {model.weighting!r}")
    if model.early_stopping_rounds is not None:
        check_positive(model.early_stopping_rounds, name="early_stopping_rounds", integer=True)
    fraction = float(model.early_stopping_fraction)
    if not (np.isfinite(fraction) and fraction >= 0):
        raise InputError(
            f"early_stopping_fraction must be finite and >= 0, got {model.early_stopping_fraction}"
        )
    check_positive(model.eval_at, name="eval_at", integer=True)
    if float(model.lambda_l2) < 0:
        raise InputError(f"lambda_l2 must be >= 0, got {model.lambda_l2}")
    check_jobs(model.n_jobs)
    if model.proximal is not None:
        check_positive(model.proximal, name="proximal")
    if model.risk is not None:
        check_positive(model.risk, name="risk")
    extra = model.lightgbm_params or {}
    if not isinstance(extra, dict):
        raise InputError("lightgbm_params must be a dict")
    if {"objective", "fobj"} & set(extra):
        raise InputError("lightgbm_params may not set the objective (LambdaMART owns it)")


def _valid_sets(
    model: LambdaMART,
    valid: Any,
    data: RankingData,
    sets: dict[Any, Any],
    rows: str,
    dtrain: Any,
    params: dict[str, Any],
    callbacks: list,
) -> tuple[list, Any]:
    """Validation set, metric and callbacks (appended): the validation step of a fit."""
    import lightgbm as lgb

    k = int(model.eval_at)
    if hasattr(valid, "score") and isinstance(getattr(valid, "data", None), RankingData):
        vdata, name, metric = valid.data, valid.metric_name(k), valid.score
    elif isinstance(valid, RankingData) and valid.y is not None:
        from .metrics import ndcg  # the project's one NDCG implementation

        vdata, name = valid, f"ndcg@{k}"
        vqptr = check_qptr(valid.qptr, valid.n_docs)
        vy = np.asarray(valid.y, dtype=np.float64)

        def metric(preds, k=k):
            return float(ndcg(preds, vy, vqptr, k=k))

    else:
        raise InputError("valid must be a labelled RankingData or a ClickValidation")
    if vdata.n_features != data.n_features:
        raise InputError(f"valid has {vdata.n_features} features, data has {data.n_features}")

    def feval(preds, _dataset):
        return name, float(metric(preds, k=k)), True

    if ("valid", rows) not in sets:
        sets["valid", rows] = lgb.Dataset(vdata.X, reference=dtrain, params={
            "verbosity": -1, "num_threads": params["num_threads"]})  # fmt: skip
    valid_sets = [sets["valid", rows]]
    callbacks.append(lgb.record_evaluation(model.evals_result_))
    if model.early_stopping_rounds is not None:
        rounds, fraction = (
            int(model.early_stopping_rounds),
            float(model.early_stopping_fraction),
        )
        callbacks.append(lgb.early_stopping(rounds, verbose=False) if fraction == 0
                         else _growing_patience(rounds, fraction))  # fmt: skip
    return valid_sets, feval


def _summary(model: LambdaMART) -> str:
    """A readable description of the fitted model."""
    check_is_fitted(model, "booster_")
    lines = [
        "LambdaMART (clickrank lambdas, LightGBM trees)",
        f"  target: {model.target_name_}",
        f"  trees: {model.best_iteration_} (n_estimators={model.n_estimators}"
        f"{model._rounds_note()})",
        f"  learning_rate={model.learning_rate}, num_leaves={model.num_leaves},"
        f" max_depth={model.max_depth}, min_data_in_leaf={model.min_data_in_leaf}",
        f"  lambdas: weighting={model.weighting}, sigma={model.sigma},"
        f" truncation_level={model.truncation_level}, normalize={model.normalize}",
        f"  trained on {model.n_train_docs_} candidate documents of"
        f" {model.n_train_queries_} queries, {model.n_features_in_} features, seed={model.seed}",
    ]
    for name, values in model.evals_result_.get("valid", {}).items():
        if values:
            best = (
                model.best_iteration_ - 1
                if model.best_iteration_ <= len(values)
                else len(values) - 1
            )
            lines.append(
                f"  valid {name}: {values[best]:.4f} at tree {best + 1} (last {values[-1]:.4f})"
            )
    bias = getattr(model, "position_bias_", None)
    if bias is not None:
        for side in ("t_plus", "t_minus"):
            values = ", ".join(f"{v:.3f}" for v in bias[side])
            lines.append(f"  position bias {side} (positions 1..{len(bias[side])}): {values}")
    imp = model.feature_importances_
    if imp.sum() > 0:
        top = np.argsort(-imp)[:5]
        share = ", ".join(f"f{i}: {imp[i] / imp.sum():.0%}" for i in top)
        lines.append(f"  top features (gain share): {share}")
    return "\n".join(lines)


def _save(model: LambdaMART, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Write ``model.txt`` (LightGBM text model) and ``meta.json`` into folder ``path``.

    Both files are written atomically (temporary file, then rename); no
    pickle. ``meta.json`` records the size and SHA-256 digest of
    ``model.txt``, which :meth:`LambdaMART.load` checks. Refuses to overwrite an
    existing model unless ``overwrite``, and never replaces files clickrank
    did not write.
    """
    check_is_fitted(model, "booster_")
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    if (out / "model.txt").exists() and not overwrite:
        raise InputError(f"{out} already holds a model; pass overwrite=True to replace it")
    params = model.get_params()
    text = model.booster_.model_to_string(num_iteration=-1).encode("utf-8")
    meta = {
        "format": _modelfile.FORMAT,
        "format_version": _modelfile.FORMAT_VERSION,
        "params": params,
        "n_features_in": model.n_features_in_,
        "best_iteration": model.best_iteration_,
        "target": model.target_name_,
        "n_train_docs": model.n_train_docs_,
        "n_train_queries": model.n_train_queries_,
        "evals_result": model.evals_result_,
        "position_bias": _bias_json(getattr(model, "position_bias_", None)),
        "model_bytes": len(text),
        "model_sha256": _modelfile.digest(text),
    }
    atomic_write(out / "model.txt", lambda tmp: tmp.write_bytes(text))
    atomic_write_text(out / "meta.json", json.dumps(meta, indent=2, default=str) + "\n")
    return out


def _load(cls: type[LambdaMART], path: str | os.PathLike) -> LambdaMART:
    """:meth:`LambdaMART.load`: the folder checked, then the booster and the fitted state."""
    import lightgbm as lgb

    from ._core._validation import DataFormatError

    folder = Path(path)
    meta_path, model_path = folder / "meta.json", folder / "model.txt"
    if not folder.is_dir():
        raise DataFormatError(
            "not a folder; a saved model is a folder with model.txt and meta.json", path=folder
        )
    for p in (meta_path, model_path):
        if not p.is_file():
            raise DataFormatError("missing; not a saved clickrank LambdaMART model", path=p)
    meta = _modelfile.read_meta(meta_path, set(_DEFAULTS))
    text = _modelfile.read_model_text(model_path, meta, meta_path)
    model = cls(**meta["params"])
    try:
        model.booster_ = lgb.Booster(model_str=text)
    except lgb.basic.LightGBMError as err:
        raise DataFormatError(
            f"LightGBM cannot read it ({str(err).strip()})", path=model_path
        ) from None
    model.n_features_in_ = int(meta["n_features_in"])
    model.best_iteration_ = int(meta["best_iteration"])
    model.target_name_ = meta["target"]
    model.n_train_docs_ = int(meta["n_train_docs"])
    model.n_train_queries_ = int(meta["n_train_queries"])
    model.evals_result_ = meta.get("evals_result", {})
    bias = meta.get("position_bias")
    model.position_bias_ = (
        None if bias is None else {k: np.asarray(v, dtype=np.float64) for k, v in bias.items()}
    )
    model.source_ = str(folder)
    return model


def _average(cls: type[LambdaMART], models: list[LambdaMART],
             weights: list[float] | np.ndarray, names: list[str] | None = None,
             trees: int | None = None) -> LambdaMART:  # fmt: skip
    """:meth:`LambdaMART.average`: the models' trees in one booster, leaves scaled."""
    import lightgbm as lgb

    if not models or len(models) != len(weights):
        raise InputError("average needs at least one model and one weight per model")
    if not np.all(np.isfinite(np.asarray(weights, dtype=np.float64))):
        raise InputError(f"average: weights must be finite, got {list(weights)}")
    for m in models:
        check_is_fitted(m, "booster_")
    if len({m.n_features_in_ for m in models}) > 1:
        raise InputError("average: the models were trained on different feature counts")
    counts = [m.best_iteration_ if trees is None
              else min(int(trees), m.booster_.current_iteration()) for m in models]  # fmt: skip
    texts = [m.booster_.model_to_string(num_iteration=n)
             for m, n in zip(models, counts, strict=True)]  # fmt: skip
    trees = sum(counts)
    depths = [m.max_depth for m in models]
    params = {**models[0].get_params(), "n_estimators": trees,
              "num_leaves": max(m.num_leaves for m in models),
              "max_depth": -1 if -1 in depths else max(depths)}  # fmt: skip
    out = cls(**params)
    out.booster_ = lgb.Booster(model_str=_modelfile.merge_trees(texts, list(weights)))
    out.n_features_in_ = models[0].n_features_in_
    out.best_iteration_ = trees
    out.target_name_ = "average of " + ", ".join(names or [m.target_name_ for m in models])
    out.n_train_docs_ = max(m.n_train_docs_ for m in models)
    out.n_train_queries_ = models[0].n_train_queries_
    out.evals_result_ = {}
    return out


def _bias_json(bias: dict[str, np.ndarray] | None) -> dict[str, list[float]] | None:
    return None if bias is None else {k: [float(x) for x in v] for k, v in bias.items()}


_DEFAULTS = {
    k: v.default
    for k, v in inspect.signature(LambdaMART.__init__).parameters.items()
    if k != "self"
}


def _growing_patience(rounds: int, fraction: float) -> Any:
    """LightGBM's early stopping (the first validation score, higher is better) with a
    patience of ``max(rounds, int(fraction * best round))`` rounds."""
    import lightgbm as lgb

    best: list[Any] = [None, 0, None]  # score, iteration (0-based), evaluation list

    def callback(env: Any) -> None:
        value = env.evaluation_result_list[0][2]
        if best[0] is None or value > best[0]:
            best[:] = [value, env.iteration, env.evaluation_result_list]
        patience = max(rounds, int(fraction * (best[1] + 1)))
        if env.iteration - best[1] >= patience or env.iteration == env.end_iteration - 1:
            raise lgb.callback.EarlyStopException(best[1], best[2])

    callback.order = 30  # after record_evaluation (20), as LightGBM's own
    return callback
