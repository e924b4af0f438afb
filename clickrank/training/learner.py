r"""One click learner: the target, candidate set and tree size chosen from clicks, deployed safely.

:class:`ClickRanker` is clickrank's default way from a click log to a ranker,
what ``clickrank train``, ``clickrank run`` and ``benchmarks/debiasing_real.py``
call. It owns the whole default:

1. **A small family of click targets** (:data:`~clickrank.training.members.FAMILY`):
   naive click counts, IPS gains on the candidate sets ``shown``, ``hybrid`` and
   ``all``, doubly robust gains and Unbiased LambdaMART. No member wins on every data set
   (docs/lambdamart.md, "Debiasing on real data"), so the choice is made per log.
2. **Cross-validated counterfactual selection.** Every member is fitted by
   :class:`~clickrank.selection.LambdaMARTCV` on the *same* folds of the
   queries (its tree-size grid, early stopping on the held-out clicks), and
   scored on the *same* estimate: the counterfactual DCG@k of its out-of-fold
   rankings, one term per query. Member :math:`a` against :math:`b` is a paired
   comparison over queries, :math:`\bar d \pm \mathrm{SE}` with
   :math:`d_q = t_q(a) - t_q(b)`.
3. **The average of the members, not the pick of one** (``combine="average"``, the
   default). The members' counterfactual scores are usually within a standard error of
   each other, so picking the best one picks noise (the winner's curse); averaging their
   scores keeps what they agree on and cancels much of what each gets wrong (model
   averaging as in Breiman's (1996) argument for bagging unstable predictors). Each
   member is scaled by the spread of its scores within a query, so each has the same
   say; members the unseen guard rejects are left out. The average is one LightGBM model
   (:meth:`~clickrank.lambdamart.LambdaMART.average`), scored out of fold like any
   member. On the robustness suite (docs/lambdamart.md, "The robustness suite", 188 runs)
   the average scored 0.7288 NDCG@10 on average, the best-scoring member 0.7230, the
   members alone 0.7181-0.7240. ``combine="select"``: the member with the best mean is
   kept only when it beats the members earlier in the family's order (the simpler,
   safer ones) by more than ``tolerance`` paired standard errors; otherwise the first
   member within that margin is taken (the one-standard-error rule of Hastie et al.
   (2009), §7.10, towards the safer end).
4. **A high-confidence safety check** (as GENSPEC, Oosterhuis & de Rijke (2021)):
   the counterfactual gain of the chosen ranker over the *safe* ranker (the
   logging ranker when it is given as a model, else the naive member), with a
   one-sided ``confidence`` lower bound over queries. With ``safe=True`` the
   average (or the selected member) is offered only if its bound is above zero;
   otherwise, with a logging model, the same members retrained with exposure-based
   CRM near it (``fallback="crm"``), with PRPO near it (``"proximal"``) or the
   logging ranker itself (``"safe"``), else
   the naive member; the summary says which and why. The gain over the ranking in the
   log (the logger's mean positions) and over naive is reported either way.

The bound uses out-of-fold scores, so no query scores a model trained on it;
it is still optimistic by the selection among a handful of members (the
winner's curse), which the one-SE rule and the ``safe`` fallback counter.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from .._core._params import Params
from .._core._validation import InputError, check_is_fitted, check_jobs
from ..datasets import RankingData
from ..selection import DEFAULT_GRID, ClickValidation
from ..specs.names import CLICK_RANKER_SELECTION
from .backends import MemberJob, open_backend, spark_session
from .combine import average, member_terms, select, selection_reason
from .fallback import retrained_fallback
from .members import (
    AVERAGE,
    DEFAULT_FAMILY,
    check_family,
    member_target,
    shape_lead,
    trainable,
)
from .propensities import check_log_context, context_line, resolve_propensities
from .report import SelectionReport, save_selection, selection_table
from .safety import check_safety, unseen_guard
from .search import MemberSearch, RacedMemberSearch, SearchResult

__all__ = ["ClickRanker", "logged_ranking", "repeats_for"]


def logged_ranking(stats: Any) -> np.ndarray:
    """Scores that order each query's documents as the log shows them: by mean position.

    Documents never shown come last (score ``-inf`` ties, kept in row order).
    For a deterministic logger this is its ranking; for a stochastic one, the
    ranking by expected position.
    """
    rows, pos, _, n = stats.cells
    shown = np.bincount(rows, weights=n, minlength=stats.impressions.size)
    at = np.bincount(rows, weights=n * pos, minlength=stats.impressions.size)
    mean = np.divide(at, shown, out=np.full(shown.size, np.inf), where=shown > 0)
    return -mean


@dataclass
class _Fit:
    """What one call of :meth:`ClickRanker.fit` hands its steps (not kept after it)."""

    data: RankingData
    val: ClickValidation
    cmp_val: ClickValidation
    reference: np.ndarray | None
    plan: dict[str, Any]
    spark: Any
    say: Any
    shared: dict = field(default_factory=dict)  # the folds and binned features, for every member


class ClickRanker(Params):
    r"""The default click learner: chooses target, candidate set and tree size from clicks.

    Parameters
    ----------
    family : sequence of str
        Members of :data:`~clickrank.training.members.FAMILY` to try, in safety order
        (default all of :data:`~clickrank.training.members.DEFAULT_FAMILY`; members needing
        propensities are dropped when there are none).
    validation : {"ips", "dr", "clicks"}
        The counterfactual DCG@k estimate every member is scored on (held-out
        clicks; ``"dr"`` adds a cross-fitted relevance model). ``"clicks"``, and
        any choice without propensities, scores the raw clicks (biased towards
        the logger).
    restrict : bool
        Compare the targets (and check safety) on each ranking restricted to
        the documents the log shows (:class:`~clickrank.selection.ClickValidation`
        ``shown``), with policy-aware relevance estimates :math:`N_q C(d)/E(d)`
        (Oosterhuis & de Rijke (2020): a document a stochastic logger shows in few
        sessions is not taken for an irrelevant one; for a deterministic logger
        this is the IPS sum): the estimate is unbiased there, while counting
        never-shown documents as irrelevant favours rankers that copy the
        logger's cut-off (measured: it picks naive clicks on MQ2008, the worst
        member there). Each member's trees are still chosen on all documents.
    combine : {"average", "select"}
        Offer the average of the eligible members (default) or select one of
        them by the one-SE rule below (see the module notes).
    tolerance : float
        ``combine="select"``'s one-SE rule: the best member must beat every safer member by
        more than ``tolerance`` paired standard errors (0, the default: the best paired
        mean; measured, 1 costs 0.009 NDCG@10 on average over 16 MQ2008 setups (whole folds
        and folds cut to 14 documents per query), because naive clicks, the safe end of the
        order, is the worst member there).
    unseen_guard : float or None
        The restricted score cannot see documents the log never showed, so a
        member may flood the top with them unseen (doubly robust gains on 150
        documents per query, 7 % shown: test NDCG@10 0.65 against 0.84). Scored
        over *all* documents (never-shown ones as irrelevant, a pessimistic
        estimate) such a member falls far below the others (there: -30 %; on
        MQ2008 Fold1 every member is within 4 % of the best). Members more than
        ``unseen_guard`` (relative) below the best all-documents score are not
        chosen. A member whose first fold already shows it beyond that line (a paired
        ``confidence`` bound) fits no more folds (``raced_``). None: no guard.
    safe : bool
        Offer a member only if its one-sided ``confidence`` lower bound of gain
        over the safe ranker is above zero; else keep the safe ranker.
    fallback : {"crm", "proximal", "safe"}
        What ``safe`` offers when no member is shown to beat the logging
        ranker: ``"crm"`` (default) the selected member (for the average, every
        averaged member, then their average) retrained with exposure-based
        counterfactual risk minimisation around the logging ranker's rankings
        (:class:`~clickrank.lambdamart.LambdaMART` ``risk`` =
        :func:`~clickrank.training.deployment.risk_weight` of the log's sessions at
        ``confidence``: a pull towards the logger's exposures that fades with more
        data); ``"proximal"`` retrained with PRPO's clipping ``fallback_eps``
        around them (``proximal``: each document's exposure stays within a factor
        ``1 + fallback_eps`` of the logger's, whatever the amount of data);
        ``"safe"`` the logging ranker itself (GENSPEC's choice). Without a logging
        model the naive member is kept either way. Where the check failed in the
        robustness suite, CRM beat PRPO by 0.0098 NDCG@10 and never fell below the
        logger (docs/lambdamart.md).
    fallback_eps : float
        The PRPO clipping of the fallback (0.2).
    confidence : float
        Level of that one-sided bound (0.95).
    folds : int
        K of the K-fold cross-validation by query (3; see below).
    repeats : int or "auto"
        Repetitions of that cross-validation with fresh splits (``"auto"``: 1 from 400
        queries on, 2 from 150, else 3).
    refit : bool
        Whether each member's chosen tree shape and number of trees are fitted again on all
        queries (:class:`~clickrank.selection.LambdaMARTCV` ``refit``), or (False, the
        default; ``"auto"`` is the same) its fold models, averaged, are the member's model
        (cross-validation bagging): one fit fewer per member, and as good on the robustness
        suite (docs/robustness.md, "The current settings against those of the tables"). It holds
        ``folds x repeats`` times the trees to score.
    grid, n_estimators, learning_rate, early_stopping_rounds, eval_at, racing
        :class:`~clickrank.selection.LambdaMARTCV` settings of every member (``racing``:
        a tree shape shown worse than the member's best after a fold is not fitted on the
        remaining folds).
    shared_shape : bool
        Choose the tree shape once (True, the default): the members up to the first that
        corrects for position bias (:func:`~clickrank.training.members.shape_lead`: naive
        clicks and IPS on the shown documents, by default) race ``grid`` on their first
        folds, and every later member fits only the shape leading that one's (``shape_``).
        False: every member races ``grid`` on its own first fold. Each shape a member
        tries costs a fit of its first fold; on the robustness suite's 242 runs one shape
        for the later members was +0.0003 [-0.0004, +0.0009] NDCG@10 against a race in
        every member (docs/robustness.md).
    early_stopping_fraction : float
        The members' patience grows to this fraction of their best round where that is
        longer than ``early_stopping_rounds`` (:class:`~clickrank.lambdamart.LambdaMART`).

        Six defaults differ from LambdaMARTCV's
        (:data:`~clickrank.specs.CLICK_RANKER_SELECTION`): patience 20 rather than 50,
        growing to a quarter of the best round, racing at 0.5 rather than 0.99 (only
        the first fold's best tree shape runs the other folds), a learning rate of 0.5
        rather than 0.1, 3 folds rather than 5, and the fold models' average rather than
        a refit: the members are averaged, and each member is the average of its fold
        models, so a member stopped a little early, with a shape within noise of the best
        or grown at a fast rate costs the average little (docs/default-learner.md, "What
        keeps the fit affordable"; measured in docs/benchmarks.md, "The default learner's
        fit").
    clip : float, "auto" or None
        Propensity clipping of the IPS targets and the validation.
    propensity_method : str or None
        Estimator used when ``fit`` gets no propensities
        (:func:`clickrank.propensity.estimate_propensities`): ``"auto"`` (default)
        picks it from what the log holds (randomized interventions, else documents
        shown at several positions (EM), else regression EM on ``data``'s features,
        else none: :func:`clickrank.propensity.choose_source`), point estimates
        only; None: never estimate.
    context : str or list of str, optional
        Context columns of the log (``"device"``) where examination differs by context:
        θ is estimated per context (``estimate_propensities(..., context=)``, each curve
        shrunk toward the common one), every IPS and doubly robust target and the
        validation weigh an impression by its context's curve, and Unbiased LambdaMART
        learns biases per context. None (default) or ``[]``: one curve for the whole log,
        the pooled curve of propensities given per context. One curve is the default
        because it measured as well or better: on the robustness suite's context cells
        correcting per context did not beat it, not even with the true curves
        (docs/contextual-bias.md).
    context_features : str or list of str, optional
        Numeric columns of the log describing a context with too many values for a
        curve each: θ is modelled as log-linear in them, its level the propensities the
        fit uses without them (``estimate_propensities(..., context_features=)``: EM's
        joint fit, or the pooled curve and the slopes within documents), and every IPS
        and doubly robust target and the validation weigh an impression by the model's
        curve at its context; Unbiased LambdaMART learns one set of biases. Not with
        ``context``.
    proximal : float, optional
        Train every member with PRPO's clipping :math:`\epsilon` around the
        logging ranker's rankings (:class:`~clickrank.lambdamart.LambdaMART`
        ``proximal``; needs ``logging_model``): safe by construction, at the
        price of staying close to the logger.
    seed : int
    n_jobs : int
        Cores (the same models as with 1): below
        :data:`~clickrank.training.thresholds.PROCESSES_FROM` documents, or with one
        member, each member's threads; from there, members fitted at once, each in its
        own process, a fit taking more threads once fewer members are left than cores.
        A fit never takes more threads than other processes leave cores free
        (:func:`~clickrank._core._validation.free_cpus`).
    engine : {"auto", "local", "spark"}
        Where the members are fitted: ``"auto"`` as Spark tasks when the log is a Spark
        DataFrame (one task per member on the session's executors, the data broadcast
        once; the models of a local fit to the bit), else locally; ``"local"`` always
        here; ``"spark"`` requires a Spark log.
    **params
        Further :class:`~clickrank.lambdamart.LambdaMART` parameters.

    Attributes
    ----------
    model_ : LambdaMART or ranker
        The offered ranker (a member's model, their average, or the safe ranker).
    choice_ : str
        Name of the offered ranker (``"logging"`` when the logging ranker is kept).
    selected_ : str
        The candidate the rule selected (before the safety check): ``"average"``
        with ``combine="average"``, else a member.
    average_ : LambdaMART or None
        The members' average as one model (``combine="average"``).
    averaged_ : list of str
        The members in the average (the unseen guard's survivors).
    fallback_average_ : LambdaMART or None
        The retrained average offered by the fallback (``"average+prpo"`` or
        ``"average+crm"``), when it was.
    best_member_ : str
        The member with the best counterfactual score among the eligible ones
        (what ``combine="select"`` takes at ``tolerance=0``).
    members_ : dict
        Fitted :class:`~clickrank.selection.LambdaMARTCV` of each member (but those raced
        out).
    raced_ : dict
        Members raced out after their first fold -> their relative loss to the best member
        over all documents on that fold.
    shape_ : dict or None
        The tree shape the members after the shape's lead fitted (``shared_shape``), else
        None.
    excluded_ : dict
        Members the unseen guard excluded (the raced ones too) -> their relative loss.
    members_engine_ : str
        Where they were fitted: ``"local"`` or ``"spark"``.
    table_ : polars.DataFrame
        One row per member: counterfactual score, SE, trees, shape, the paired
        gain over the selected member and over the safe ranker with its bound.
    safety_ : dict
        :class:`~clickrank.training.bounds.Comparison` of the chosen member against the logging
        ranking,
        naive and the safe ranker.
    reason_ : str
        The choice in one line.
    cost_ : dict
        ``fits`` and ``rounds``: the LightGBM trainings and boosting rounds of every
        member's selection and refit (and the fallback's), what the fit's time follows.
    propensity_source_ : clickrank.propensity.PropensitySource
        Where the propensities came from (given, randomized, harvested, a relevance
        model or none) and why; :meth:`summary` and ``selection.json`` say it.
    """

    #: ``predict`` takes a RankingData (read by :func:`clickrank.ranking.ranker_scores`).
    accepts_ranking_data: ClassVar[bool] = True

    def __init__(
        self,
        *,
        family: tuple[str, ...] | list[str] = DEFAULT_FAMILY,
        validation: str = "ips",
        combine: str = "average",
        restrict: bool = True,
        tolerance: float = 0.0,
        unseen_guard: float | None = 0.1,
        safe: bool = True,
        fallback: str = "crm",
        fallback_eps: float = 0.2,
        confidence: float = 0.95,
        folds: int = CLICK_RANKER_SELECTION["folds"],
        repeats: int | str = "auto",
        refit: bool | str = CLICK_RANKER_SELECTION["refit"],
        grid: tuple[dict[str, Any], ...] | list[dict[str, Any]] = DEFAULT_GRID,
        n_estimators: int = 500,
        learning_rate: float = CLICK_RANKER_SELECTION["learning_rate"],
        early_stopping_rounds: int = CLICK_RANKER_SELECTION["early_stopping_rounds"],
        early_stopping_fraction: float = CLICK_RANKER_SELECTION["early_stopping_fraction"],
        eval_at: int = 10,
        racing: float | None = CLICK_RANKER_SELECTION["racing"],
        shared_shape: bool = CLICK_RANKER_SELECTION["shared_shape"],
        clip: float | str | None = "auto",
        propensity_method: str | None = "auto",
        context: str | list[str] | None = None,
        context_features: str | list[str] | None = None,
        proximal: float | None = None,
        seed: int = 0,
        n_jobs: int = 1,
        engine: str = "auto",
        **params: Any,
    ) -> None:
        self.family = family
        self.validation = validation
        self.combine = combine
        self.restrict = restrict
        self.tolerance = tolerance
        self.unseen_guard = unseen_guard
        self.safe = safe
        self.fallback = fallback
        self.fallback_eps = fallback_eps
        self.confidence = confidence
        self.folds = folds
        self.repeats = repeats
        self.refit = refit
        self.grid = grid
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.early_stopping_rounds = early_stopping_rounds
        self.early_stopping_fraction = early_stopping_fraction
        self.eval_at = eval_at
        self.racing = racing
        self.shared_shape = shared_shape
        self.clip = clip
        self.propensity_method = propensity_method
        self.context = context
        self.context_features = context_features
        self.proximal = proximal
        self.seed = seed
        self.n_jobs = n_jobs
        self.engine = engine
        self.params = params

    # -- fitting --------------------------------------------------------------------------
    def fit(
        self,
        data: RankingData,
        log: Any,
        propensities: Any = None,
        *,
        logging_model: Any = None,
        targets: dict[str, Any] | None = None,
        progress: Any = None,
    ) -> ClickRanker:
        r"""Fit every member, select one, check it against the safe ranker.

        Parameters
        ----------
        data : RankingData
            The training queries (labels, if any, are never read).
        log : polars DataFrame or LazyFrame (or Spark DataFrame)
            The click log (DESIGN §2) over ``data``'s documents.
        propensities : array-like or Propensities, optional
            :math:`\theta_p`; when None they are estimated (``propensity_method``);
            when nothing identifies them, only the members that need none
            (naive clicks, Unbiased LambdaMART) are tried.
        logging_model : ranker, optional
            The ranker that logged the clicks (anything
            :func:`clickrank.ranking.ranker_scores` takes). It becomes the safe
            ranker: kept when no member is shown to beat it. If it has a
            ``train_qid_`` attribute (as :class:`~clickrank.policies.production.ProductionRanker`),
            those queries are left out of the comparison with it: a ranker
            scored on its own training queries looks better than it is.
        targets : dict, optional
            Name -> :class:`~clickrank.targets.Target` to use instead of the
            family (an explicit target: ``clickrank train --target``); they go
            through the same validation, selection and safety check.
        progress : callable, optional
            Called with one-line messages: the propensities' source, then while the
            members fit a line after each fold of each member (``"naive: fold 3 of 5: 2
            tree shapes fitted"``; with ``n_jobs > 1``, after each member), then each
            member's score and choice.
        """
        from .. import targets as T
        from ..ranking import ranker_scores

        _check(self, data)
        say = progress if progress is not None else (lambda _m: None)
        spark = spark_session(self.engine, log)
        self.members_engine_ = "local" if spark is None else "spark"
        context, features, propensities = check_log_context(
            log, self.context, propensities, self.context_features)  # fmt: skip
        theta, self.propensity_source_ = resolve_propensities(
            data, log, propensities, self.propensity_method, self.seed, context, features
        )
        say(self.propensity_source_.line())
        if context is not None or features is not None:
            say(context_line(theta, context or features, features=features is not None))
        family = trainable(self.family, theta) if targets is None else list(targets)
        self.propensities_ = theta
        clip = self.clip if theta is not None else None
        stats = self.stats_ = T.click_stats(data, log, theta, clip=clip)
        val, cmp_val = _validations(self, data, log, theta, stats, say)
        reference = None if logging_model is None else ranker_scores(logging_model, data)
        if self.proximal is not None and reference is None:
            raise InputError("proximal (PRPO) needs the logging_model to stay close to")
        run = _Fit(data, val, cmp_val, reference, _plan(self, data), spark, say)
        self.targets_ = {name: targets[name] if targets is not None else member_target(
            name, data, log, theta, stats, clip=self.clip, seed=self.seed, n_jobs=self.n_jobs,
            context=context) for name in family}  # fmt: skip
        candidates, raced_cost = _search(self, family, run)
        _check_against_safe(self, run, stats, logging_model, candidates)
        if self.choice_ == "logging" and self.fallback != "safe":
            _fallback(self, run)
        self.cost_ = {"fits": sum(cv.fits_ for cv in self.members_.values()) + raced_cost[0],
                      "rounds": sum(cv.rounds_ for cv in self.members_.values())
                      + raced_cost[1]}  # fmt: skip
        if self.propensity_source_.weak:  # the check's estimate rests on the same θ
            self.reason_ += (
                "; the check's estimate uses θ identified only by a relevance "
                "model (regression EM), a weaker guarantee than randomization"
            )
        return self

    def _choose(self, family, oof, safe_name, safe_terms, logged, n_sessions,
                prefer: str | None = None, *, every: dict | None = None,
                raced: dict | None = None, averaged: list[str] = (),
                checked: np.ndarray | None = None) -> None:  # fmt: skip
        """The candidate ``prefer`` (the average) or the one-SE selection
        (:func:`~clickrank.training.combine.select`), then the safety check
        (:func:`~clickrank.training.safety.check_safety`) and the table; ``every``: the
        candidates' terms over every document (the unseen guard), ``raced``: the members
        raced out, ``averaged``: the average's members, ``checked``: the queries of the
        comparison with the logging ranker."""
        conf, every = float(self.confidence), {} if every is None else every
        self.excluded_ = {**(raced or {}), **unseen_guard(every, family, self.unseen_guard)}
        eligible = [m for m in family if m not in self.excluded_] or list(family)
        selected, best, self.best_member_ = select(eligible, oof, n_sessions,
                                                   float(self.tolerance), conf, prefer)  # fmt: skip
        self.selected_ = selected
        why = selection_reason(family, selected, best, prefer, list(averaged), self.excluded_,
                               float(self.tolerance))  # fmt: skip
        check = check_safety(family, eligible, oof, selected, why, safe_name, safe_terms, logged,
                             n_sessions, confidence=conf, safe=self.safe, prefer=prefer,
                             keep=checked)  # fmt: skip
        self.choice_, self.reason_, self.safety_ = check.choice, check.reason, check.record
        shapes = {m: self.members_[m].best_params_ if m in self.members_
                  else {"n_estimators": self.average_.best_iteration_} for m in family}  # fmt: skip
        self.table_ = selection_table(family, oof, every, shapes, best, check.choice,
                                      self.excluded_, check.vs_safe, n_sessions, conf)  # fmt: skip

    # -- use ------------------------------------------------------------------------------
    def candidate(self, name: str) -> Any:
        """The fitted model of a member, of ``"average"`` or of a retrained fallback
        (``"average+prpo"``, ``"ips-shown+crm"``, ...), by name."""
        check_is_fitted(self, "members_")
        if name == AVERAGE and self.average_ is not None:
            return self.average_
        if name == self.choice_ and name.startswith(f"{AVERAGE}+"):
            return self.fallback_average_
        if name not in self.members_:
            raise InputError(f"no candidate {name!r}; fitted: {[*self.members_, AVERAGE]}")
        return self.members_[name].model_

    def predict(self, X: np.ndarray | RankingData) -> np.ndarray:
        """Scores of the offered ranker."""
        from ..ranking import ranker_scores

        check_is_fitted(self, "model_")
        if isinstance(X, RankingData):
            return ranker_scores(self.model_, X)
        return np.asarray(self.model_.predict(X), dtype=np.float64)

    def report(self) -> SelectionReport:
        """The selection and safety record as an object
        (:class:`~clickrank.training.report.SelectionReport`)."""
        check_is_fitted(self, "model_")
        return SelectionReport.of(self)

    def summary(self) -> str:
        """The selection table, the safety check and the choice in one line."""
        return self.report().summary()

    def to_dict(self) -> dict[str, Any]:
        """The selection and safety record (what :meth:`save` writes as ``selection.json``)."""
        return self.report().to_dict()

    def save(self, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
        """Save the offered model (:meth:`LambdaMART.save`) and ``selection.json``
        (:func:`~clickrank.training.report.save_selection`)."""
        check_is_fitted(self, "model_")
        return save_selection(self.model_, self.to_dict(), path, overwrite=overwrite)


def _check(est: ClickRanker, data: RankingData) -> None:
    """Raise :class:`~clickrank._core._validation.InputError` for a parameter out of range."""
    check_family(est.family)
    for name, value, allowed in (
        ("validation", est.validation, ("ips", "dr", "clicks")),
        ("combine", est.combine, ("average", "select")),
        ("fallback", est.fallback, ("crm", "proximal", "safe")),
    ):
        if value not in allowed:
            said = ", ".join(repr(a) for a in allowed[:-1]) + f" or {allowed[-1]!r}"
            raise InputError(f"{name} must be {said}, got {value!r}")
    if not 0.5 <= float(est.confidence) < 1:
        raise InputError(f"confidence must be in [0.5, 1), got {est.confidence}")
    if float(est.tolerance) < 0:
        raise InputError(f"tolerance must be >= 0, got {est.tolerance}")
    if not isinstance(data, RankingData):
        raise InputError(f"data must be a RankingData, got {type(data).__name__}")
    if not isinstance(est.shared_shape, bool):
        raise InputError(f"shared_shape must be True or False, got {est.shared_shape!r}")
    if est.refit not in ("auto", True, False):
        raise InputError(f"refit must be True, False or 'auto', got {est.refit!r}")
    if est.engine not in ("auto", "local", "spark"):
        raise InputError(f"engine must be 'auto', 'local' or 'spark', got {est.engine!r}")
    check_jobs(est.n_jobs)


def repeats_for(repeats: int | str, n_queries: int) -> int:
    """The repetitions of the members' cross-validation: ``repeats``, or for ``"auto"`` 1
    from 400 queries on, 2 from 150, else 3 (steadier choices where queries are few)."""
    if repeats != "auto":
        return int(repeats)
    return 1 if n_queries >= 400 else 2 if n_queries >= 150 else 3


def _plan(est: ClickRanker, data: RankingData) -> dict[str, Any]:
    """The members' ``repeats`` and ``refit`` for ``data`` (``"auto"`` resolved)."""
    return {"repeats": repeats_for(est.repeats, data.n_queries), "refit": est.refit is True}


def _validations(est: ClickRanker, data, log, theta, stats, say):
    """The estimate trees are chosen on (every document, as LambdaMARTCV always has)
    and the one targets are compared and checked on (``restrict``: the shown ones)."""
    kind = est.validation if theta is not None else "clicks"
    if kind == "clicks":
        say("note: the selection scores held-out clicks as they are (no propensities; "
            "biased towards the logger)")  # fmt: skip
    val = ClickValidation.from_log(data, log, theta, estimator=kind, stats=stats,
                                   seed=est.seed)  # fmt: skip
    if not est.restrict:
        return val, val
    gains = val.gains
    if kind == "ips":  # policy-aware: N_q C(d)/E(d), the IPS sum where d is always shown
        gains = stats.sessions * stats.ratio()
    return val, ClickValidation(data, gains, val.n_sessions, val.estimator, stats.shown)


def _selection_settings(est: ClickRanker, plan: dict[str, Any],
                        safe: dict[str, float]) -> dict[str, Any]:  # fmt: skip
    """Every member's :class:`~clickrank.selection.LambdaMARTCV` parameters but ``grid`` and
    ``n_jobs``: the same folds and seed (so the same splits); ``plan``: ``repeats`` and
    ``refit``; ``safe``: ``proximal`` or ``risk`` of a fallback."""
    extra = safe or ({} if est.proximal is None else {"proximal": float(est.proximal)})
    return {
        "folds": est.folds, **plan, "n_estimators": est.n_estimators,
        "learning_rate": est.learning_rate,
        "early_stopping_rounds": est.early_stopping_rounds, "eval_at": est.eval_at,
        "racing": est.racing, "seed": est.seed,
        "early_stopping_fraction": est.early_stopping_fraction, **est.params, **extra,
    }  # fmt: skip


def _fit_members(est: ClickRanker, targets: dict[str, Any], run: _Fit,
                 shapes: dict | None = None, race: bool = False,
                 **safe: float) -> SearchResult:  # fmt: skip
    """Each member's :class:`~clickrank.selection.LambdaMARTCV` on the backend
    :func:`~clickrank.training.backends.open_backend` picks, by the member search
    (:mod:`~clickrank.training.search`); ``shapes``: name -> the one tree shape a
    member tries; ``safe``: ``proximal`` or ``risk`` of a fallback."""
    settings = _selection_settings(est, run.plan, safe)
    job = MemberJob(run.data, run.val, run.reference, targets, est.grid, settings, shapes)
    share = est.shared_shape and shapes is None and len(est.grid) > 1  # the fallback: fixed
    lead = shape_lead(list(targets)) if share else None
    search = (RacedMemberSearch(list(targets), est.unseen_guard, est.confidence, run.say,
                                shape_from=lead)
              if race else MemberSearch(list(targets), run.say, shape_from=lead))  # fmt: skip
    with open_backend(job, spark=run.spark, n_jobs=est.n_jobs, shared=run.shared,
                      say=run.say) as backend:  # fmt: skip
        return search.run(backend)


def _search(est: ClickRanker, family: list[str],
            run: _Fit) -> tuple[list[str], tuple[int, int]]:  # fmt: skip
    """Fit the members (raced on their first fold) and their average; their out-of-fold
    terms. Returns the candidates and the raced members' cost."""
    k, val, cmp_val = int(est.eval_at), run.val, run.cmp_val
    race = est.unseen_guard is not None and len(est.targets_) > 1
    result = _fit_members(est, est.targets_, run, race=race)
    est.raced_, est.shape_ = result.raced, result.shape
    est.members_, est.terms_, est.terms_all_ = {}, {}, {}
    oof, every = est.terms_, est.terms_all_  # every: over every document (diagnostic)
    candidates = [m for m in family if m in result.fitted]  # not those raced out
    for name in candidates:
        cv = est.members_[name] = result.fitted[name]
        oof[name], every[name] = member_terms(cv, cmp_val, k), member_terms(cv, val, k)
        run.say(f"  {name}: {cmp_val.metric_name(k)} "
                f"{oof[name].sum() / val.n_sessions:.4g}, {cv.best_params_}")  # fmt: skip
    est.validation_ = cmp_val
    est.average_, est.averaged_, est.fallback_average_ = None, [], None
    if est.combine == "average":
        names = [m for m in candidates
                 if m not in unseen_guard(every, candidates, est.unseen_guard)]  # fmt: skip
        if len(names) > 1:
            oof[AVERAGE], every[AVERAGE], est.average_ = average(
                {m: est.members_[m] for m in names}, run.data, val, cmp_val, k)  # fmt: skip
            est.averaged_ = names
            candidates.append(AVERAGE)
            run.say(f"  {AVERAGE} of {', '.join(names)}: {cmp_val.metric_name(k)} "
                    f"{oof[AVERAGE].sum() / val.n_sessions:.4g}")  # fmt: skip
    return candidates, result.raced_cost


def _check_against_safe(est: ClickRanker, run: _Fit, stats: Any, logging_model: Any,
                        candidates: list[str]) -> None:  # fmt: skip
    """The safe ranker (the logging model, its own training queries left out, else
    naive), the choice among the candidates and the check against it."""
    k, cmp_val, oof = int(est.eval_at), run.cmp_val, est.terms_
    logged = oof["logged"] = cmp_val.per_query(logged_ranking(stats), k)
    safe_name, safe_terms = "naive", oof.get("naive")
    est.checked_ = np.ones(run.data.n_queries, dtype=bool)
    if logging_model is not None:
        safe_name = "logging"
        safe_terms = oof["logging"] = cmp_val.per_query(run.reference, k)
        own = getattr(logging_model, "train_qid_", None)
        if own is not None:
            est.checked_ = ~np.isin(np.asarray(run.data.qid), np.asarray(own))
    est._choose(candidates, oof, safe_name, safe_terms, logged, run.val.n_sessions,
                prefer=AVERAGE if AVERAGE in candidates else None, every=est.terms_all_,
                raced=est.raced_, averaged=est.averaged_, checked=est.checked_)  # fmt: skip
    est.model_ = logging_model if est.choice_ == "logging" else est.candidate(est.choice_)


def _fallback(est: ClickRanker, run: _Fit) -> None:
    """No candidate is sure to beat the logger: the selected one retrained near the
    logger's rankings (:func:`~clickrank.training.fallback.retrained_fallback`)."""

    def fit(names, shapes, **how):
        targets = {m: est.targets_[m] for m in names}
        return _fit_members(est, targets, run, shapes, **how).fitted

    fb = retrained_fallback(est.selected_, est.averaged_, est.members_, fit, run.data,
                            run.val, est.validation_, kind=est.fallback,
                            eps=est.fallback_eps, confidence=est.confidence,
                            k=int(est.eval_at), keep=est.checked_,
                            logging_terms=est.terms_["logging"], say=run.say)  # fmt: skip
    est.members_.update(fb.selections)
    if fb.terms_all is not None:
        est.terms_all_[fb.name], est.fallback_average_ = fb.terms_all, fb.model
    est.model_, est.choice_, est.terms_[fb.name] = fb.model, fb.name, fb.terms
    est.safety_["vs_safe"] = fb.vs_safe
    est.reason_ += fb.reason
