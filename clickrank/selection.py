r"""Counterfactual model selection: tree size and number of trees chosen from clicks, not labels.

A user of click logs has no relevance labels, so the usual recipe, early
stopping on a labelled validation set, is not available. Held-out clicks are:
for a ranking :math:`S` of a validation query and per-document relevance
estimates :math:`\hat g(d)` from the log (IPS gains :math:`G(d) = \sum_s
c_s(d)/\theta_{p_s(d)}`, or doubly robust gains), the counterfactual estimate
of the DCG@k a user session would collect is

.. math::
    \widehat{\mathrm{DCG@}k}(S) = \frac{1}{N} \sum_{q} \sum_{d \in q}
    \frac{\hat g(d)}{\log_2(1 + \mathrm{rank}_S(d))}\, [\mathrm{rank}_S(d) \le k],

:math:`N` the validation sessions (Joachims et al. (2017),
§4: unbiased under the position-based model over the documents the logger
showed; ranks are among *all* of the query's documents, so a ranker that puts a
never-shown document above a clicked one is charged for it).
:class:`ClickValidation` evaluates it; :class:`LambdaMARTCV` uses it to choose
the tree size and the number of trees by K-fold cross-validation *by query*
(the model must generalise to new queries, so held-out sessions of the training
queries would reward memorising their documents), then refits on all queries.
This is what ``clickrank train`` and ``clickrank run`` do by default.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ._core._params import Params
from ._core._segments import top_rows
from ._core._validation import InputError, check_is_fitted, check_jobs, check_positive
from .datasets import RankingData
from .lambdamart import LambdaMART
from .metrics import by_block, discounts
from .targets import Target
from .training.bounds import paired_bound

__all__ = ["ClickValidation", "LambdaMARTCV", "DEFAULT_GRID", "query_folds"]

#: Tree shapes tried by :class:`LambdaMARTCV` (smallest first: ties go to the smaller).
#: Chosen from measurements on MQ2008 and synthetic long lists (docs/lambdamart.md):
#: real LETOR data wants very small trees, long synthetic lists larger ones.
DEFAULT_GRID: tuple[dict[str, int], ...] = (
    {"num_leaves": 4, "max_depth": 2},
    {"num_leaves": 8, "max_depth": 3},
    {"num_leaves": 31, "max_depth": -1},
)


@dataclass(frozen=True, eq=False)
class ClickValidation:
    r"""Held-out queries with per-document relevance estimates from clicks.

    Parameters
    ----------
    data : RankingData
        The validation queries (features only are used).
    gains : numpy.ndarray
        float64 ``[n_docs]`` non-negative relevance estimates summed over the
        query's sessions: IPS gains (``targets.ips(..., candidates="all").gains``)
        or DR gains (``targets.dr(...).gains``); 0 for never-shown documents
        under IPS.
    n_sessions : float
        Sessions of these queries (the estimate is per session).
    estimator : str
        Name of the estimator behind ``gains`` (``"ips"``, ``"dr"``, ``"clicks"``).
    shown : numpy.ndarray, optional
        bool ``[n_docs]``: rank only these documents (those the logger showed),
        each ranking restricted to them. Under the PBM the IPS estimate is
        unbiased over the documents with :math:`\theta > 0` only; scored among
        all documents, a never-shown one counts as irrelevant, which favours
        rankers that copy the logger's cut-off (item-selection bias, Ovaisi et
        al. (2020)). None: all documents.
    """

    data: RankingData
    gains: np.ndarray
    n_sessions: float
    estimator: str = "ips"
    shown: np.ndarray | None = None

    def __post_init__(self) -> None:
        g = np.asarray(self.gains, dtype=np.float64)
        if g.shape != (self.data.n_docs,) or not np.all(np.isfinite(g)) or np.any(g < 0):
            raise InputError(
                f"validation gains must be finite, non-negative, one per row ({self.data.n_docs})"
            )
        object.__setattr__(self, "gains", g)
        if self.shown is not None:
            m = np.asarray(self.shown, dtype=bool)
            if m.shape != g.shape:
                raise InputError(f"shown must hold one flag per row ({self.data.n_docs})")
            object.__setattr__(self, "shown", m)
        if not self.n_sessions > 0:
            raise InputError(f"n_sessions must be positive, got {self.n_sessions}")

    @classmethod
    def from_log(
        cls,
        data: RankingData,
        log: Any,
        propensities: Any = None,
        *,
        estimator: str = "ips",
        stats: Any = None,
        clip: float | str | None = "auto",
        seed: int = 0,
        restrict: bool = False,
    ) -> ClickValidation:
        """Relevance estimates of every row of ``data`` from ``log``.

        ``estimator="ips"``: the IPS gains :math:`G(d)` (0 for never-shown
        documents); ``"dr"``: doubly robust gains (:func:`clickrank.targets.dr`,
        cross-fitted relevance model, every document); ``"clicks"``: raw click
        counts (biased; for logs without propensities). Propensities are
        clipped at ``clip`` as the training targets are (``"auto"``:
        :func:`clickrank.targets.auto_clip`, which changes nothing on large
        logs). ``stats`` may carry precomputed
        :func:`clickrank.targets.click_stats` (then ``clip`` is theirs).
        ``restrict``: rank only the documents the log shows (``shown``).
        """
        from .targets import click_stats, dr

        if estimator not in ("ips", "dr", "clicks"):
            raise InputError(f"estimator must be 'ips', 'dr' or 'clicks', got {estimator!r}")
        if estimator != "clicks" and propensities is None and getattr(stats, "theta", None) is None:
            raise InputError(f"the {estimator} validation needs propensities")
        if stats is None:
            theta = None if estimator == "clicks" else propensities
            stats = click_stats(data, log, theta, clip=None if theta is None else clip)
        if estimator == "dr":
            gains = dr(data, None, None, stats=stats, seed=seed).gains
        else:
            gains = stats.clicks if estimator == "clicks" else stats.ips
        shown = stats.shown if restrict else None
        return cls(data, gains, float(stats.n_sessions), estimator, shown)

    def per_query(self, scores: np.ndarray, k: int = 10) -> np.ndarray:
        """Each query's summed DCG@k contribution (divide by ``n_sessions`` for the mean).

        :func:`clickrank.metrics.dcg` with linear gains, the same numbers: the top ``k``
        of each list by one insertion pass (:func:`clickrank._core._segments.top_rows`, the
        ranking order of the metrics) instead of a sort of every list, since early
        stopping scores every boosting round.
        """
        s = np.asarray(scores, dtype=np.float64)
        if s.shape != self.gains.shape:
            raise InputError(
                f"scores must hold one value per row ({self.gains.size}), got {s.shape}"
            )
        if self.shown is not None:  # never-shown documents drop below every shown one
            s = np.where(self.shown, s, -np.inf)

        def kernel(qp: np.ndarray, s_: np.ndarray, g_: np.ndarray) -> np.ndarray:
            lens = np.diff(qp)  # blocks and widths as dcg's, so the sums are the same bits
            width = min(int(k), int(lens.max())) if lens.size else 0
            if width == 0:
                return np.zeros(lens.size)
            rows = top_rows(s_, qp, width, threads=False)  # -1 pads short lists: gain 0
            return np.append(g_, 0.0)[rows] @ discounts(width)

        return np.nan_to_num(by_block(self.data.qptr, kernel, s, self.gains))

    def score(self, scores: np.ndarray, k: int = 10) -> float:
        """Counterfactual DCG@k per session of the ranking by ``scores``."""
        return float(self.per_query(scores, k).sum() / self.n_sessions)

    def score_se(self, scores: np.ndarray, k: int = 10) -> tuple[float, float]:
        """``(estimate, standard error)``, queries as the sampling unit."""
        t = self.per_query(scores, k)
        n = t.size
        se = float(np.sqrt(n) * t.std(ddof=1) / self.n_sessions) if n > 1 else float("nan")
        return float(t.sum() / self.n_sessions), se

    def metric_name(self, k: int = 10) -> str:
        shown = " (shown documents)" if self.shown is not None else ""
        return f"{self.estimator}-dcg@{k}{shown}"

    def subset(self, queries: np.ndarray) -> ClickValidation:
        """The validation restricted to some queries (sessions in proportion to their gains'
        queries are not known here, so ``n_sessions`` is kept: scores stay comparable
        between models on the same subset, which is all selection needs)."""
        rows = self.data.rows_of(queries)
        return ClickValidation(
            self.data.subset(queries), self.gains[rows], self.n_sessions, self.estimator,
            None if self.shown is None else self.shown[rows],
        )  # fmt: skip


def _curve(model: LambdaMART, n: int) -> np.ndarray:
    """The validation metric after each of ``n`` rounds (padded with the last value)."""
    values = next(iter(model.evals_result_["valid"].values()))
    out = np.full(n, values[-1] if values else np.nan)
    out[: len(values)] = values
    return out


def query_folds(n_queries: int, folds: int, repeats: int, seed: int) -> np.ndarray:
    """Fold of every query in each repetition: int ``[repeats, n_queries]`` in ``0..folds-1``.

    Repetition ``r`` is a random permutation drawn from ``seed`` (the first one is
    the split :class:`LambdaMARTCV` has always used), so the folds depend only on
    the seed and the number of queries.
    """
    out = np.empty((repeats, n_queries), dtype=np.int64)
    for r in range(repeats):
        rng = np.random.default_rng(seed if r == 0 else [seed, r])
        out[r] = rng.permutation(n_queries) % folds
    return out


def _shared(shared: dict | None, data: RankingData, validation: Any, fold: np.ndarray) -> dict:
    """``shared`` (or a fresh dict), emptied unless it holds the folds of these ``data``,
    ``validation`` and fold assignment."""
    cache = {} if shared is None else shared
    of = cache.get("of")
    if (
        of is None
        or of[0] is not data
        or of[1] is not validation
        or not np.array_equal(of[2], fold)
    ):
        cache.clear()
        cache["of"] = (data, validation, fold)
    return cache


class _Race:
    r"""Racing of the tree shapes over the folds: after each fold, a shape shown worse than
    the leader is dropped from the remaining folds.

    Each shape's held-out queries are scored by its fold models at the best round of its
    mean curve so far (a query held out in several repetitions: the mean of its terms);
    the leader is the shape with the best mean curve. A shape is dropped when the
    paired mean of the leader's per-query gain over it has a one-sided ``confidence``
    lower bound (Student's :math:`t` over the queries scored so far) above zero: what a
    paired test would call clearly dominated. Shapes within noise run every fold, so the
    choice among them is the full cross-validation's (Maron & Moore's (1994) Hoeffding
    races, with a paired :math:`t` bound; successive halving would drop a fixed share
    whatever the evidence). At a confidence of 0.5 the bound is the paired mean itself:
    only the leader of the first fold runs the others (the default learner's members,
    whose average forgives a shape within noise of the best).
    """

    def __init__(self, n_queries: int) -> None:
        self.counts = np.zeros(n_queries)
        self.held: list[np.ndarray] = []  # each raced fold's held-out queries, in order

    def step(self, alive, held_q, held, models, curves, confidence: float, k: int) -> list[int]:
        """The shapes left after the fold of ``held_q``; ``held(j)``: fold j's held-out
        validation (the race keeps the folds' queries, not their data)."""
        self.held.append(held_q)
        self.counts[held_q] += 1
        rounds = {e: int(np.argmax(curves[e].mean(axis=0))) + 1 for e in alive}
        terms = {}
        for e in alive:
            s = np.zeros_like(self.counts)
            for j, q in enumerate(self.held):
                s[q] += _held_terms(models[e][j], held(j), rounds[e], k)
            terms[e] = s
        seen = self.counts > 0
        n = int(seen.sum())
        if n < 3:
            return alive
        lead = max(alive, key=lambda e: curves[e].mean(axis=0)[rounds[e] - 1])
        keep = []
        for e in alive:
            d = (terms[lead] - terms[e])[seen] / self.counts[seen]
            if e == lead or not paired_bound(d, confidence).lower > 0:
                keep.append(e)
        return keep


def _held_terms(model: LambdaMART, val: Any, rounds: int, k: int) -> np.ndarray:
    """Per-query scores on a held-out fold's validation ``val`` of ``model`` at ``rounds``."""
    pred = model.booster_.predict(val.data.X, num_iteration=rounds,
                                  num_threads=model.lightgbm_threads())  # fmt: skip
    return val.per_query(pred, k)


def _learnable(target: Target, data: RankingData) -> Target:
    """A fold's target, or, where the log shows none of the fold's training documents (a log
    of a few of the data's queries), gains of 0 on every row: nothing to learn there, so the
    fold's model scores every document alike instead of failing for want of rows."""
    if target.candidates is None or np.any(target.candidates):
        return target
    return Target(f"{target.name} (nothing logged in this fold)", gains=np.zeros(data.n_docs))


def _out_of_fold(data: RankingData, fold: np.ndarray, models: list, trees: int) -> np.ndarray:
    """Scores of every row by the model that did not see its query: ``[repeats, n_docs]``."""
    repeats, k = fold.shape[0], len(models) // fold.shape[0]
    out = np.empty((repeats, data.n_docs))
    q = data.query_index
    for i, model in enumerate(models):
        r, f = divmod(i, k)
        rows = np.flatnonzero(fold[r][q] == f)
        out[r, rows] = model.booster_.predict(data.X[rows], num_iteration=trees,
                                              num_threads=model.lightgbm_threads())  # fmt: skip
    return out


def _bagged(models: list[LambdaMART], trees: int, data: RankingData) -> LambdaMART:
    """The fold ``models``' mean at ``trees`` trees, as one model trained on ``data``."""
    out = LambdaMART.average(models, [1 / len(models)] * len(models), trees=trees)
    out.target_name_ = models[0].target_name_
    out.n_train_docs_, out.n_train_queries_ = data.n_docs, data.n_queries
    return out


class LambdaMARTCV(Params):
    r"""LambdaMART whose tree size and number of trees are chosen by cross-validation by query.

    For every tree shape of ``grid`` and each of ``folds`` folds of the
    queries, a :class:`~clickrank.lambdamart.LambdaMART` grows up to
    ``n_estimators`` trees on the other folds, scoring the held-out fold after
    every tree with a counterfactual DCG@``eval_at`` from clicks
    (:class:`ClickValidation`) or, on labelled data without ``validation``,
    NDCG@``eval_at``, and stops after ``early_stopping_rounds`` rounds without
    improvement. The shape and round with the best mean curve over the folds
    win; the final model is refitted on all queries with them (``refit``), or is the
    average of that shape's fold models at that round.

    Parameters
    ----------
    grid : sequence of dict
        LambdaMART parameters tried (default :data:`DEFAULT_GRID`).
    folds : int
        Folds of the queries (>= 2).
    repeats : int
        Repetitions of the K-fold split with fresh permutations (repeated K-fold:
        steadier choices where queries are few); scores average over all of them.
    n_estimators : int
        Most trees of any model.
    learning_rate : float
    early_stopping_rounds : int
        Patience of each fold's training.
    eval_at : int
        ``k`` of the validation metric.
    racing : float or None
        Race the tree shapes (:class:`_Race`): after each fold, a shape whose held-out
        score is below the leader's with this one-sided confidence (paired over the
        held-out queries) is not fitted on the remaining folds. 0.99 by default; None
        fits every shape on every fold. Only with a ``validation`` (held-out clicks).
    refit : bool
        Fit the chosen shape and number of trees again on all queries (True, the
        default), or keep the average of its ``folds * repeats`` fold models at that number
        of trees (False: cross-validation bagging; no fit on all rows, and the model is
        made of the very models the out-of-fold scores come from).
    seed : int
        Seeds the folds and LightGBM.
    n_jobs : int
    **params
        Further :class:`~clickrank.lambdamart.LambdaMART` parameters shared by
        every model (``min_data_in_leaf``, ``truncation_level``, ...).

    Attributes
    ----------
    model_ : LambdaMART
        The refitted model (``refit``), else the fold models' average as one model.
    best_params_ : dict
        The chosen grid entry plus ``n_estimators``.
    cv_results_ : polars.DataFrame
        One row per grid entry: its best round, mean score, standard error over
        folds and the per-fold scores at that round.
    curves_ : dict
        Mean validation curve of each grid entry (numpy arrays).
    fits_, rounds_ : int
        LightGBM trainings and boosting rounds this selection ran (its cost: a LightGBM
        fit of 100 trees is 100 rounds).
    oof_ : numpy.ndarray
        ``[repeats, n_docs]`` out-of-fold scores of the chosen shape at the chosen
        number of trees: every row scored by the fold model that did not train
        on its query (what :class:`clickrank.ClickRanker` compares targets on).
    held_terms_ : numpy.ndarray
        Set by a fit up to a fold (``fit(..., until=k)``): the first fold's per-query
        held-out scores by the leading shape (:meth:`fold_terms`).
    leader_ : dict
        Set by a fit up to a fold: the leading shape's grid entry (the best mean curve so
        far among the shapes not raced out).
    """

    def __init__(
        self,
        *,
        grid: tuple[dict[str, Any], ...] | list[dict[str, Any]] = DEFAULT_GRID,
        folds: int = 5,
        n_estimators: int = 500,
        learning_rate: float = 0.1,
        early_stopping_rounds: int = 50,
        eval_at: int = 10,
        repeats: int = 1,
        racing: float | None = 0.99,
        refit: bool = True,
        seed: int = 0,
        n_jobs: int = 1,
        **params: Any,
    ) -> None:
        self.grid = grid
        self.racing = racing
        self.refit = refit
        self.folds = folds
        self.repeats = repeats
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.early_stopping_rounds = early_stopping_rounds
        self.eval_at = eval_at
        self.seed = seed
        self.n_jobs = n_jobs
        self.params = params

    def _model(self, entry: dict[str, Any], **over: Any) -> LambdaMART:
        kw = {
            "n_estimators": int(self.n_estimators), "learning_rate": float(self.learning_rate),
            "eval_at": int(self.eval_at), "seed": int(self.seed), "n_jobs": int(self.n_jobs),
            **self.params, **entry, **over,
        }  # fmt: skip
        return LambdaMART(**kw)

    def _validate(self, data: RankingData) -> None:
        check_jobs(self.n_jobs)
        check_positive(self.n_estimators, name="n_estimators", integer=True)
        check_positive(self.early_stopping_rounds, name="early_stopping_rounds", integer=True)
        if int(self.folds) < 2:
            raise InputError(f"folds must be >= 2, got {self.folds}")
        check_positive(self.repeats, name="repeats", integer=True)
        if self.racing is not None and not 0.5 <= float(self.racing) < 1:
            raise InputError(f"racing must be a confidence in [0.5, 1) or None, got {self.racing}")
        if data.n_queries < int(self.folds):
            raise InputError(
                f"{data.n_queries} queries cannot be split into {self.folds} folds; lower folds"
            )
        if not self.grid:
            raise InputError("grid must hold at least one parameter set")
        bad = {"n_estimators", "early_stopping_rounds", "seed"} & {k for g in self.grid for k in g}
        if bad:
            raise InputError(f"grid entries may not set {sorted(bad)}")

    def fit(
        self,
        data: RankingData,
        target: Target | None = None,
        *,
        validation: ClickValidation | None = None,
        reference: np.ndarray | None = None,
        progress: Any = None,
        shared: dict[Any, Any] | None = None,
        until: int | None = None,
    ) -> LambdaMARTCV:
        """Choose the grid entry and number of trees, then refit on all of ``data`` (or average
        the fold models, without ``refit``).

        Parameters
        ----------
        data : RankingData
        target : Target, optional
            What the models fit (None: the oracle labels).
        validation : ClickValidation, optional
            Relevance estimates from the log over all of ``data``'s rows; it is
            restricted to each held-out fold. None: labelled NDCG@``eval_at``
            (needs ``data.y``; for oracle baselines and tests).
        progress : callable, optional
            Called with a one-line message after each fold, then with each grid
            entry's best.
        shared : dict, optional
            The folds' data and LightGBM's binned features, kept for other fits on the
            same ``data``, ``validation`` and folds (:class:`clickrank.ClickRanker`
            passes one dict to every member: the features are binned once per fold
            and once for the refits, not once per member). Start with an empty dict.
        until : int, optional
            Fit the folds up to this one only (counted over the repetitions), then stop:
            :meth:`resume` fits the rest. The selection fitted so far holds its fold
            models and curves, not the data, so it can be pickled and resumed in another
            process; ``held_terms_`` then holds its first fold's per-query held-out
            scores (:meth:`fold_terms`), what :class:`clickrank.ClickRanker` races its
            members on.
        """
        self._run = None  # a fresh selection
        return self._fit_folds(data, target, validation=validation, reference=reference,
                               progress=progress, shared=shared, until=until)  # fmt: skip

    def resume(self, data: RankingData, target: Target | None = None, **kw: Any) -> LambdaMARTCV:
        """Go on with a selection fitted up to a fold (``fit(..., until=k)``).

        The folds fitted in two or more calls give the selection of one :meth:`fit` to the
        bit. A selection fitted to the end resumed is an error.

        Parameters
        ----------
        data, target, **kw
            The arguments of that :meth:`fit` call (``validation``, ``reference``,
            ``progress``, ``shared``), with ``until`` again to stop at a later fold (None:
            to the end).
        """
        if getattr(self, "_run", None) is None:
            raise InputError("nothing to resume: start the selection with fit(..., until=k)")
        return self._fit_folds(data, target, **kw)

    @property
    def partial(self) -> bool:
        """Whether the selection is fitted up to a fold, with folds left to :meth:`resume`."""
        return getattr(self, "_run", None) is not None

    def _fit_folds(self, data, target, *, validation=None, reference=None, progress=None,
                   shared=None, until: int | None = None) -> LambdaMARTCV:  # fmt: skip
        """The folds from where the selection stands up to ``until`` (None: to the end, then
        the choice and the refit); the state between calls, ``_run``, holds the fold
        models and curves."""
        if getattr(self, "_run", None) is None:
            self._validate(data)
            if validation is None and data.y is None:
                raise InputError("LambdaMARTCV needs a ClickValidation (or labelled data)")
            if validation is not None and validation.data.n_docs != data.n_docs:
                raise InputError("validation must cover the same rows as data")
            fold = query_folds(data.n_queries, int(self.folds), int(self.repeats), self.seed)
            self._run = {
                "fold": fold, "next": 0, "alive": list(range(len(self.grid))),
                "per_fold": np.full((len(self.grid), fold.shape[0] * int(self.folds),
                                     int(self.n_estimators)), np.nan),
                "models": {e: [] for e in range(len(self.grid))},
                "race": _Race(data.n_queries) if self._racing(validation) else None,
            }  # fmt: skip
        run = self._run
        k, reps, n = int(self.folds), int(self.repeats), int(self.n_estimators)
        cache = _shared(shared, data, validation, run["fold"])
        per_fold, models, race = run["per_fold"], run["models"], run["race"]
        stop = k * reps if until is None else min(int(until), k * reps)

        def held(j: int) -> Any:  # fold j's held-out validation, for the race
            return self._fold(cache, j, data, validation)[2][1]

        for i in range(run["next"], stop):  # a handful of model fits per fold
            train_q, held_q, (sub, val, sets) = self._fold(cache, i, data, validation)
            tgt = None if target is None else _learnable(target.subset(data, train_q), sub)
            ref = None if reference is None else reference[data.rows_of(train_q)]
            for e in run["alive"]:
                model = self._model(
                    self.grid[e], early_stopping_rounds=int(self.early_stopping_rounds)
                )._fit(sub, tgt, valid=val, reference=ref, sets=sets)
                per_fold[e, i] = _curve(model, n)
                models[e].append(model)
            fitted = len(run["alive"])
            if race is not None and fitted > 1 and i < k * reps - 1:  # a fold left to save
                run["alive"] = race.step(run["alive"], held_q, held, models,
                                         per_fold[:, : i + 1], float(self.racing),
                                         int(self.eval_at))  # fmt: skip
            if progress is not None:
                progress(f"  fold {i + 1} of {k * reps}: {fitted} tree shapes fitted")
        run["next"] = stop
        fitted = [m for ms in models.values() for m in ms]
        if stop < k * reps:  # the rest later: the cost so far, the first fold's terms
            self.fits_ = len(fitted)
            self.rounds_ = sum(int(m.booster_.current_iteration()) for m in fitted)
            self.held_terms_ = self.fold_terms(0, data, validation, cache)[1]
            self.leader_ = dict(self.grid[self._leader()])
            return self
        _, e, trees = self._results(run, progress)
        self.best_params_ = {**dict(self.grid[e]), "n_estimators": trees}
        self.metric_ = (validation.metric_name(int(self.eval_at)) if validation is not None
                        else f"ndcg@{int(self.eval_at)}")  # fmt: skip
        self.oof_ = _out_of_fold(data, run["fold"], models[e], trees)
        if self.refit:
            self.model_ = self._model(self.grid[e], n_estimators=trees)._fit(
                data, target, reference=reference, sets=cache.setdefault("refit", {})
            )
            fitted.append(self.model_)
        else:
            self.model_ = _bagged(models[e], trees, data)
        self.fits_ = len(fitted)
        self.rounds_ = sum(int(m.booster_.current_iteration()) for m in fitted)
        self._run = None  # the fold models: not kept
        return self

    def _results(self, run: dict, progress: Any) -> tuple[float, int, int]:
        """Every grid entry's best round and score over the folds it fitted (``cv_results_``
        and ``curves_``), and the best ``(score, entry, trees)`` among those not raced out."""
        alive, per_fold, models = run["alive"], run["per_fold"], run["models"]
        rows = []
        self.curves_ = {}
        best = (-np.inf, 0, 0)
        for e, entry in enumerate(self.grid):
            done = len(models[e])
            mean = per_fold[e, :done].mean(axis=0)
            r = int(np.argmax(mean))  # first maximum: the fewest trees
            at = per_fold[e, :done, r]
            rows.append({
                "entry": e, **{p: entry.get(p) for p in ("num_leaves", "max_depth")},
                "params": json.dumps(entry, sort_keys=True), "n_estimators": r + 1,
                "score": float(mean[r]),
                "se": float(at.std(ddof=1) / np.sqrt(at.size)) if at.size > 1 else float("nan"),
                "fold_scores": [float(v) for v in at], "folds_fitted": done,
            })  # fmt: skip
            self.curves_[e] = mean
            if e in alive and mean[r] > best[0]:
                best = (float(mean[r]), e, r + 1)
            if progress is not None:
                progress(f"  {entry}: best {mean[r]:.4g} at {r + 1} trees"
                         + ("" if e in alive else f" (raced out after {done} folds)"))  # fmt: skip
        self.cv_results_ = pl.DataFrame(rows)
        return best

    def _fold(self, cache: dict, i: int, data: RankingData, validation: Any):
        """Fold ``i``'s training and held-out queries and its ``(training data, held-out
        validation, binned features)``, made once per ``cache`` (``_fit``'s ``sets``)."""
        k = int(self.folds)
        fold = cache["of"][2]
        train_q, held_q = (
            np.flatnonzero(fold[i // k] != i % k),
            np.flatnonzero(fold[i // k] == i % k),
        )
        if i not in cache:
            cache[i] = (data.subset(train_q), data.subset(held_q) if validation is None
                        else validation.subset(held_q), {})  # fmt: skip
        return train_q, held_q, cache[i]

    def fold_terms(self, i: int, data: RankingData, validation: Any,
                   shared: dict | None = None) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        """Fold ``i``'s held-out queries and their per-query scores by the leading shape.

        Parameters
        ----------
        i : int
            A fold already fitted by a selection fitted up to a later fold
            (``fit(..., until=k)``, ``i < k``).
        data, validation, shared
            Those of the fit.

        Returns
        -------
        held_q : numpy.ndarray
            The fold's held-out queries.
        terms : numpy.ndarray
            Their scores on ``validation`` by the leading shape (the best mean curve so
            far) at its best round.
        """
        if not self.partial:
            raise InputError("fold_terms needs a selection fitted up to a fold: fit(..., until=k)")
        run = self._run
        cache = _shared(shared, data, validation, run["fold"])
        lead = self._leader()
        curve = run["per_fold"][lead, : len(run["models"][lead])].mean(axis=0)
        _train_q, held_q, (_sub, val, _sets) = self._fold(cache, i, data, validation)
        rounds = int(np.argmax(curve)) + 1
        return held_q, _held_terms(run["models"][lead][i], val, rounds, int(self.eval_at))

    def _leader(self) -> int:
        """The grid entry, among those not raced out, with the best mean curve so far."""
        run = self._run
        done = {e: run["per_fold"][e, : len(run["models"][e])].mean(axis=0) for e in run["alive"]}
        return max(run["alive"], key=lambda e: done[e].max())

    def _racing(self, validation: ClickValidation | None) -> bool:
        """Race the shapes: a confidence is set, there is more than one shape, and the
        scores are held-out clicks (labelled NDCG, for baselines and tests, is not raced)."""
        return self.racing is not None and len(self.grid) > 1 and validation is not None

    def predict(self, X: np.ndarray | RankingData) -> np.ndarray:
        """Scores of the final model (refitted, or the fold models' average)."""
        check_is_fitted(self, "model_")
        return self.model_.predict(X)

    def summary(self) -> str:
        """The selection table and the final model."""
        check_is_fitted(self, "model_")
        lines = [
            f"LambdaMARTCV: {len(self.grid)} tree shapes x {self.folds} folds by query, "
            f"up to {self.n_estimators} trees (patience {self.early_stopping_rounds}), "
            f"validation metric {self.metric_}"
            + ("" if self.refit else "; the model: the mean of the chosen shape's fold models"),
            f"  {'tree shape':<34} {'trees':>5} {'score':>10} {'+- SE':>9}",
        ]
        for r in self.cv_results_.iter_rows(named=True):
            mark = (
                " <"
                if json.loads(r["params"])
                == {k: v for k, v in self.best_params_.items() if k != "n_estimators"}
                else ""
            )
            raced = (f"  (raced out after {r['folds_fitted']} folds)"
                     if r["folds_fitted"] < self.folds * self.repeats else "")  # fmt: skip
            lines.append(f"  {r['params']:<34} {r['n_estimators']:>5} {r['score']:>10.4g} "
                         f"{r['se']:>9.2g}{mark}{raced}")  # fmt: skip
        lines.append(self.model_.summary())
        return "\n".join(lines)

    def save(self, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
        """Save the final model (:meth:`LambdaMART.save`) plus ``selection.json``."""
        from ._core._io import atomic_write_json

        check_is_fitted(self, "model_")
        out = self.model_.save(path, overwrite=overwrite)
        atomic_write_json(out / "selection.json", {
            "metric": self.metric_, "best_params": self.best_params_,
            "params": self.get_params(), "cv_results": self.cv_results_.to_dicts(),
        })  # fmt: skip
        return out
