r"""One click learner: the target, candidate set and tree size chosen from clicks, deployed safely.

:class:`ClickRanker` is clickrank's default way from a click log to a ranker,
what ``clickrank train``, ``clickrank run`` and ``benchmarks/debiasing_real.py``
call. It owns the whole default:

1. **A small family of click targets** (:data:`FAMILY`): naive click counts,
   IPS gains on the candidate sets ``shown``, ``hybrid`` and ``all``, doubly
   robust gains and Unbiased LambdaMART. No member wins on every data set
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
   member. On the issue-18 suite (docs/lambdamart.md, "The robustness suite", 188 runs)
   the average scored 0.7288 NDCG@10 on average, the best-scoring member 0.7230, the
   members alone 0.7181-0.7240. ``combine="select"``: the member with the best mean is
   kept only when it beats the members earlier in :data:`FAMILY`'s order (the simpler,
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

import json
import multiprocessing
import os
import pickle
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl
from scipy import stats as st

from ._params import Params
from ._threads import share_cores
from ._validation import EstimationError, InputError, check_is_fitted, check_jobs
from .datasets import RankingData
from .deployment import risk_weight
from .selection import DEFAULT_GRID, ClickValidation, LambdaMARTCV
from .specs._names import CLICK_RANKER_SELECTION

__all__ = ["ClickRanker", "FAMILY", "DEFAULT_FAMILY", "Comparison"]

#: Members of the family: name -> (target name, make_target options). The order is
#: the safety order of the one-SE rule: earlier members are simpler or closer to what
#: a user runs today (naive clicks), later ones correct more and vary more.
FAMILY: dict[str, tuple[str, dict[str, Any]]] = {  # names: specs._names.CLICK_FAMILY
    "naive": ("naive", {}),
    "ips-shown": ("ips", {"candidates": "shown"}),
    "ips-hybrid": ("ips", {"candidates": "hybrid"}),
    "ips-all": ("ips", {"candidates": "all"}),
    "dr": ("dr", {}),
    "unbiased-lambdamart": ("unbiased-lambdamart", {}),
}
#: The members tried by default.
DEFAULT_FAMILY: tuple[str, ...] = tuple(FAMILY)
#: Name of the members' average (``combine="average"``).
AVERAGE = "average"
#: Documents from which ``ClickRanker(n_jobs > 1)`` fits its members in processes, several
#: at once; below, one after the other here, each on ``n_jobs`` threads (the same models):
#: starting the processes costs more than they save there (two cores, MQ2008 Fold1 with
#: 2·10⁴ sessions: 7.0 s in processes, 3.4 s here, 4.7 s on one thread; 10⁴ synthetic
#: documents 3.8, 2.3 and 3.1 s; at 10⁵ both 18.5-18.9 s; /work/notes/s37/inproc.py).
PROCESSES_FROM = 200_000
#: Documents from which ``refit="auto"`` keeps each member's fold models, averaged, instead
#: of refitting it on all rows (:class:`~clickrank.selection.LambdaMARTCV` ``refit``).
BAGGING_FROM = 200_000
#: Documents the average's weights are measured on, about: above them, each member's spread
#: is that of every k-th query's documents (k = ceil(n_docs / SPREAD_DOCS)). At 10^6
#: documents predicting every averaged member on every row took 32 of the fit's 613 s; every
#: fifth query's rows took 6.7 s and moved the weights by under 0.1 % (docs/lambdamart.md,
#: "Fold models instead of refits").
SPREAD_DOCS = 200_000
#: Documents from which the members race on their first fold (:meth:`ClickRanker._race`):
#: one a paired bound shows beyond the unseen guard there fits no more folds. At 10^6
#: documents dr's last folds were the fit's last two minutes, excluded by the guard anyway.
RACE_FROM = 200_000
#: Members that need propensities.
_NEEDS_THETA = ("ips-shown", "ips-hybrid", "ips-all", "dr")


@dataclass(frozen=True)
class Comparison:
    """A paired counterfactual comparison of two rankers over the same queries.

    ``gain`` is the mean difference of counterfactual DCG@k per session
    (``a`` minus ``b``), ``se`` its standard error with queries as the unit,
    ``lower`` the one-sided lower bound at ``confidence`` (t quantile).
    """

    a: str
    b: str
    gain: float
    se: float
    lower: float
    confidence: float
    n_queries: int

    @classmethod
    def of(cls, a: str, b: str, ta: np.ndarray, tb: np.ndarray, n_sessions: float,
           confidence: float) -> Comparison:  # fmt: skip
        d = np.asarray(ta, dtype=np.float64) - np.asarray(tb, dtype=np.float64)
        n = d.size
        gain = float(d.sum() / n_sessions)
        se = float(np.sqrt(n) * d.std(ddof=1) / n_sessions) if n > 1 else float("inf")
        q = float(st.t.ppf(confidence, max(n - 1, 1)))
        lower = gain - q * se if se > 0 else gain
        return cls(a, b, gain, se, float(lower), confidence, n)

    @property
    def relative(self) -> str:
        return f"{self.gain:+.4g} ± {self.se:.2g}"

    def line(self) -> str:
        sure = "above" if self.lower > 0 else "not above"
        return (f"{self.a} over {self.b}: {self.gain:+.4g} (SE {self.se:.2g}); "
                f"{self.confidence:.0%} lower bound {self.lower:+.4g}, {sure} 0")  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _spread(scores: np.ndarray, qptr: np.ndarray) -> float:
    """Root mean square of scores around their query's mean: the scale that ranks.

    (1 for constant scores, which rank nothing whatever their weight.)"""
    from ._segments import lengths, segment_ids

    q = segment_ids(qptr)
    mean = np.bincount(q, weights=scores, minlength=qptr.size - 1) / np.maximum(lengths(qptr), 1)
    spread = float(np.sqrt(np.mean((scores - mean[q]) ** 2)))
    return spread if spread > 0 else 1.0


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


class ClickRanker(Params):
    r"""The default click learner: chooses target, candidate set and tree size from clicks.

    Parameters
    ----------
    family : sequence of str
        Members of :data:`FAMILY` to try, in safety order (default all of
        :data:`DEFAULT_FAMILY`; members needing propensities are dropped when
        there are none).
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
        chosen. From :data:`RACE_FROM` documents a member whose first fold already
        shows it beyond that line (a paired ``confidence`` bound) fits no more folds
        (``raced_``). None: no guard.
    safe : bool
        Offer a member only if its one-sided ``confidence`` lower bound of gain
        over the safe ranker is above zero; else keep the safe ranker.
    fallback : {"crm", "proximal", "safe"}
        What ``safe`` offers when no member is shown to beat the logging
        ranker: ``"crm"`` (default) the selected member (for the average, every
        averaged member, then their average) retrained with exposure-based
        counterfactual risk minimisation around the logging ranker's rankings
        (:class:`~clickrank.lambdamart.LambdaMART` ``risk`` =
        :func:`~clickrank.deployment.risk_weight` of the log's sessions at
        ``confidence``: a pull towards the logger's exposures that fades with more
        data); ``"proximal"`` retrained with PRPO's clipping ``fallback_eps``
        around them (``proximal``: each document's exposure stays within a factor
        ``1 + fallback_eps`` of the logger's, whatever the amount of data);
        ``"safe"`` the logging ranker itself (GENSPEC's choice). Without a logging
        model the naive member is kept either way. Measured on 41 runs at 2,000
        sessions of the robustness suite where the check failed
        (docs/lambdamart.md): CRM +0.0098 [+0.0066, +0.0130] NDCG@10 over PRPO,
        never below the logger (PRPO once, -0.0067); keeping the logger -0.032
        below naive clicks there.
    fallback_eps : float
        The PRPO clipping of the fallback (0.2).
    confidence : float
        Level of that one-sided bound (0.95).
    folds : int
        K of the K-fold cross-validation by query (3; see below).
    repeats : int or "auto"
        Repetitions of that cross-validation with fresh splits (``"auto"``: 1 from 400
        queries on, 2 from 150, else 3).
    refit : bool or "auto"
        Whether each member's chosen tree shape and number of trees are fitted again on all
        queries (:class:`~clickrank.selection.LambdaMARTCV` ``refit``), or its fold models,
        averaged, are the member's model (cross-validation bagging). ``"auto"``: refit below
        :data:`BAGGING_FROM` documents, average from there: the refits were a fifth of the
        rounds at 10^6 documents, and the average scored as well or better than them at
        2·10^5 (docs/lambdamart.md, "Fold models instead of refits"); it holds ``folds x
        repeats`` times the trees to score.
    grid, n_estimators, learning_rate, early_stopping_rounds, eval_at, racing
        :class:`~clickrank.selection.LambdaMARTCV` settings of every member (``racing``:
        a tree shape shown worse than the member's best after a fold is not fitted on the
        remaining folds).
    early_stopping_fraction : float
        The members' patience grows to this fraction of their best round where that is
        longer than ``early_stopping_rounds`` (:class:`~clickrank.lambdamart.LambdaMART`).

        Five defaults differ from LambdaMARTCV's
        (:data:`~clickrank.specs.CLICK_RANKER_SELECTION`): patience 20 rather than 50,
        growing to a quarter of the best round, racing at 0.5 rather than 0.99 (only
        the first fold's best tree shape runs the other folds), a learning rate of 0.3
        rather than 0.1 and 3 folds rather than 5. The
        members are averaged, so a member stopped a little early or with a shape within
        noise of the best costs the average little, and most members on real data keep
        10-60 trees, where the last 50 rounds were half of the fit; members that keep
        hundreds of trees keep a long patience (with a fixed 20 they lost 0.002-0.007
        NDCG@10 on long synthetic lists). At 0.1 many members on 10^5 documents stopped
        at the cap of 500 trees; 0.2 on three folds took 16-51 % fewer rounds at the same
        or a better test NDCG@10, and 0.3 with racing at 0.5 another 34-48 % for about
        0.001 NDCG@10 on MQ2008. Measured in docs/lambdamart.md, "What the default
        learner's fit costs". The CRM fallback keeps each member's tree shape and
        chooses only its number of trees again.
    clip : float, "auto" or None
        Propensity clipping of the IPS targets and the validation.
    propensity_method : str or None
        Estimator used when ``fit`` gets no propensities
        (:func:`clickrank.propensity.estimate_propensities`): ``"auto"`` (default)
        picks it from what the log holds (randomized interventions, else documents
        shown at several positions (EM), else regression EM on ``data``'s features,
        else none: :func:`clickrank.propensity.choose_source`), point estimates
        only; None: never estimate.
    proximal : float, optional
        Train every member with PRPO's clipping :math:`\epsilon` around the
        logging ranker's rankings (:class:`~clickrank.lambdamart.LambdaMART`
        ``proximal``; needs ``logging_model``): safe by construction, at the
        price of staying close to the logger.
    seed : int
    n_jobs : int
        Cores (the same models as with 1): below :data:`PROCESSES_FROM` documents, or
        with one member, each member's threads; from there, members fitted at once, each
        in its own process, a fit taking more threads once fewer members are left than
        cores.
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
        Members raced out after their first fold (from :data:`RACE_FROM` documents) ->
        their relative loss to the best member over all documents on that fold.
    excluded_ : dict
        Members the unseen guard excluded (the raced ones too) -> their relative loss.
    members_engine_ : str
        Where they were fitted: ``"local"`` or ``"spark"``.
    table_ : polars.DataFrame
        One row per member: counterfactual score, SE, trees, shape, the paired
        gain over the selected member and over the safe ranker with its bound.
    safety_ : dict
        :class:`Comparison` of the chosen member against the logging ranking,
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
        refit: bool | str = "auto",
        grid: tuple[dict[str, Any], ...] | list[dict[str, Any]] = DEFAULT_GRID,
        n_estimators: int = 500,
        learning_rate: float = CLICK_RANKER_SELECTION["learning_rate"],
        early_stopping_rounds: int = CLICK_RANKER_SELECTION["early_stopping_rounds"],
        early_stopping_fraction: float = CLICK_RANKER_SELECTION["early_stopping_fraction"],
        eval_at: int = 10,
        racing: float | None = CLICK_RANKER_SELECTION["racing"],
        clip: float | str | None = "auto",
        propensity_method: str | None = "auto",
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
        self.clip = clip
        self.propensity_method = propensity_method
        self.proximal = proximal
        self.seed = seed
        self.n_jobs = n_jobs
        self.engine = engine
        self.params = params

    # -- checks ---------------------------------------------------------------------------
    def _check(self, data: RankingData) -> None:
        unknown = [m for m in self.family if m not in FAMILY]
        if unknown or not self.family:
            raise InputError(f"family must name members of {list(FAMILY)}, got {list(self.family)}")
        if self.validation not in ("ips", "dr", "clicks"):
            raise InputError(f"validation must be 'ips', 'dr' or 'clicks', got {self.validation!r}")
        if self.combine not in ("average", "select"):
            raise InputError(f"combine must be 'average' or 'select', got {self.combine!r}")
        if self.fallback not in ("crm", "proximal", "safe"):
            raise InputError(f"fallback must be 'crm', 'proximal' or 'safe', got {self.fallback!r}")
        if not 0.5 <= float(self.confidence) < 1:
            raise InputError(f"confidence must be in [0.5, 1), got {self.confidence}")
        if float(self.tolerance) < 0:
            raise InputError(f"tolerance must be >= 0, got {self.tolerance}")
        if not isinstance(data, RankingData):
            raise InputError(f"data must be a RankingData, got {type(data).__name__}")
        if self.refit not in ("auto", True, False):
            raise InputError(f"refit must be 'auto', True or False, got {self.refit!r}")
        if self.engine not in ("auto", "local", "spark"):
            raise InputError(f"engine must be 'auto', 'local' or 'spark', got {self.engine!r}")
        check_jobs(self.n_jobs)

    def _spark_session(self, log: Any) -> Any:
        """The Spark session the members are fitted on, or None (locally)."""
        from .engine import is_spark

        if self.engine == "spark" and not is_spark(log):
            raise InputError("engine='spark' fits the members as Spark tasks: the log must be a "
                             "Spark DataFrame (clickrank train --engine spark)")  # fmt: skip
        if self.engine == "local" or not is_spark(log):
            return None
        return log.sparkSession

    def _repeats(self, n_queries: int) -> int:
        if self.repeats != "auto":
            return int(self.repeats)
        return 1 if n_queries >= 400 else 2 if n_queries >= 150 else 3

    def _plan(self, data: RankingData) -> dict[str, Any]:
        """The members' ``repeats`` and ``refit`` for ``data`` (``"auto"`` resolved)."""
        refit = self.refit if self.refit != "auto" else data.n_docs < BAGGING_FROM
        return {"repeats": self._repeats(data.n_queries), "refit": bool(refit)}

    def _propensities(self, data: RankingData, log: Any, propensities: Any, say) -> Any:
        """The propensities given, or estimated from what the log holds
        (``propensity_method``, by default ``"auto"``), or None; sets ``propensity_source_``
        and says it in one line."""
        from .propensity import Propensities, PropensitySource, estimate_propensities

        method = self.propensity_method
        theta = propensities
        if propensities is not None:
            src = (PropensitySource.of(propensities, "passed to fit")
                   if isinstance(propensities, Propensities)
                   else PropensitySource("given", None, "passed to fit"))  # fmt: skip
        elif method is None:
            src = PropensitySource("none", None, "none given and propensity_method=None")
        else:
            # the learner uses point estimates: no bootstrap of EM or regression EM, and no
            # second smoothing of regression EM's relevance model (it widens intervals only)
            kw = {"n_boot": 0} if method == "em" else {}
            if method in ("auto", "regression-em"):
                kw = {"n_boot": 0, "seed": self.seed, "data": data, "sensitivity": 0}
            try:
                theta = estimate_propensities(log, method=method, **kw)
                src = PropensitySource.of(theta, f"estimated from the log ({method})")
            except EstimationError as err:
                if method != "auto":
                    raise
                why = str(err).removeprefix("auto: no propensity source: ")
                src = PropensitySource("none", None, why)
        self.propensity_source_ = src
        say(src.line())
        return theta

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
            ``train_qid_`` attribute (as :class:`~clickrank.production.ProductionRanker`),
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
        from . import targets as T

        self._check(data)
        say = progress if progress is not None else (lambda _m: None)
        self._spark = self._spark_session(log)
        self.members_engine_ = "local" if self._spark is None else "spark"
        theta = self._propensities(data, log, propensities, say)
        if targets is None:
            family = [m for m in self.family if theta is not None or m not in _NEEDS_THETA]
            if not family:
                raise InputError("no member of the family can train without propensities")
        else:
            family = list(targets)
        self.propensities_ = theta
        stats = T.click_stats(data, log, theta, clip=self.clip if theta is not None else None)
        self.stats_ = stats
        val, cmp_val = self._validations(data, log, theta, stats, say)
        reference = None
        if logging_model is not None:
            from .ranking import ranker_scores

            reference = ranker_scores(logging_model, data)
        if self.proximal is not None and reference is None:
            raise InputError("proximal (PRPO) needs the logging_model to stay close to")
        plan = self._plan(data)
        self.members_, oof, every = {}, {}, {}
        self.targets_ = {}
        self._shared: dict[Any, Any] = {}  # the folds and binned features, for every member
        for name in family:
            self.targets_[name] = (targets[name] if targets is not None
                                   else self._target(name, data, log, theta, stats))  # fmt: skip
        self.raced_, self._raced_cost = {}, (0, 0)
        fitted = self._fit_members(self.targets_, data, val, reference, plan, say=say)
        family = [m for m in family if m in fitted]  # not those raced out on their first fold
        for name in family:
            cv = self.members_[name] = fitted[name]
            oof[name] = np.mean([cmp_val.per_query(s, int(self.eval_at)) for s in cv.oof_], axis=0)
            every[name] = np.mean([val.per_query(s, int(self.eval_at)) for s in cv.oof_], axis=0)
            say(f"  {name}: {cmp_val.metric_name(int(self.eval_at))} "
                f"{oof[name].sum() / val.n_sessions:.4g}, {cv.best_params_}")  # fmt: skip
        self.validation_ = cmp_val
        self.terms_ = oof
        self.terms_all_ = every  # the same rankings scored over every document (diagnostic)
        self.average_, self.averaged_, self.fallback_average_ = None, [], None
        candidates = list(family)
        if self.combine == "average":
            names = [m for m in family if m not in self._unseen_guard(family)]
            if len(names) > 1:
                oof[AVERAGE], every[AVERAGE], self.average_ = self._average(
                    {m: self.members_[m] for m in names}, data, val, cmp_val)  # fmt: skip
                self.averaged_ = names
                candidates.append(AVERAGE)
                say(f"  {AVERAGE} of {', '.join(names)}: {cmp_val.metric_name(int(self.eval_at))} "
                    f"{oof[AVERAGE].sum() / val.n_sessions:.4g}")  # fmt: skip
        logged = cmp_val.per_query(logged_ranking(stats), int(self.eval_at))
        self.terms_["logged"] = logged
        safe_name, safe_terms = "naive", oof.get("naive")
        self.checked_ = np.ones(data.n_queries, dtype=bool)
        if logging_model is not None:
            safe_name = "logging"
            safe_terms = cmp_val.per_query(reference, int(self.eval_at))
            self.terms_["logging"] = safe_terms
            # a ranker scored on its own training queries looks better than it is: when the
            # logging model says which queries it was trained on, they are left out of the check
            own = getattr(logging_model, "train_qid_", None)
            if own is not None:
                self.checked_ = ~np.isin(np.asarray(data.qid), np.asarray(own))
        self._choose(candidates, oof, safe_name, safe_terms, logged, val.n_sessions,
                     prefer=AVERAGE if AVERAGE in candidates else None)  # fmt: skip
        self.model_ = logging_model if self.choice_ == "logging" else self.candidate(self.choice_)
        if self.choice_ == "logging" and self.fallback != "safe":
            self._retrained_fallback(data, val, reference, plan, say)
        del self._shared, self._spark  # the binned features, the session: not kept
        self.cost_ = {"fits": sum(cv.fits_ for cv in self.members_.values())
                      + self._raced_cost[0],
                      "rounds": sum(cv.rounds_ for cv in self.members_.values())
                      + self._raced_cost[1]}  # fmt: skip
        if self.propensity_source_.weak:  # the check's estimate rests on the same θ
            self.reason_ += (
                "; the check's estimate uses θ identified only by a relevance "
                "model (regression EM), a weaker guarantee than randomization"
            )
        return self

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

    def _average(self, named, data, val, cmp_val):
        """The average of fitted selections ``named`` (name -> LambdaMARTCV): its
        out-of-fold terms on ``cmp_val``
        and on ``val`` (each repetition's out-of-fold scores averaged, each member's
        divided by its spread) and one model of the members' models
        (:meth:`LambdaMART.average`, the same weights on those models' spreads over the
        training rows, or, above :data:`SPREAD_DOCS` documents, over every k-th query's:
        a scale, which a fifth of 10^6 rows measures to 0.1 %)."""
        from .lambdamart import LambdaMART

        k, cvs = int(self.eval_at), list(named.values())
        runs = [np.mean([cv.oof_[r] / _spread(cv.oof_[r], data.qptr) for cv in cvs], axis=0)
                for r in range(len(cvs[0].oof_))]  # fmt: skip
        models = [cv.model_ for cv in cvs]
        step = -(-data.n_docs // SPREAD_DOCS)  # every query up to SPREAD_DOCS documents
        sample = data if step == 1 else data.subset(np.arange(0, data.n_queries, step))
        weights = [1 / (len(models) * _spread(m.predict(sample.X), sample.qptr)) for m in models]
        return (np.mean([cmp_val.per_query(s, k) for s in runs], axis=0),
                np.mean([val.per_query(s, k) for s in runs], axis=0),
                LambdaMART.average(models, weights, list(named)))  # fmt: skip

    def _retrained_fallback(self, data, val, reference, plan, say) -> None:
        """No candidate is sure to beat the logger: the selected member (for the average,
        every averaged member, then their average), retrained near the logger's rankings
        with PRPO's clipping (Gupta et al. (2024)) or CRM's penalty (Gupta et al.
        (2023)), is offered instead."""
        if self.fallback == "proximal":
            tag, how = "prpo", {"proximal": float(self.fallback_eps)}
            said = (f"PRPO (eps {self.fallback_eps:g}) around the logging ranker: its "
                    "exposures stay within that factor of the logger's")  # fmt: skip
        else:
            alpha = risk_weight(val.n_sessions, float(self.confidence))
            tag, how = "crm", {"risk": alpha}
            said = (f"exposure-based CRM (alpha {alpha:.3g} for {val.n_sessions:g} sessions "
                    f"at {self.confidence:.0%}) around the logging ranker: its exposures "
                    "are pulled towards the logger's as far as the clicks cannot vouch "
                    "for them")  # fmt: skip
        member = self.selected_
        members = self.averaged_ if member == AVERAGE else [member]
        retrained = {}
        # each member keeps its tree shape: the penalty moves the trees, not what the data
        # can carry, so only the number of trees is chosen again (a third of the refits)
        shapes = {m: {k: v for k, v in self.members_[m].best_params_.items()
                      if k != "n_estimators"} for m in members}  # fmt: skip
        fitted = self._fit_members({m: self.targets_[m] for m in members}, data, val, reference,
                                   plan, shapes, say=say, **how)  # fmt: skip
        for m in members:
            cv = self.members_[f"{m}+{tag}"] = retrained[f"{m}+{tag}"] = fitted[m]
            say(f"  {m}+{tag}: the fallback, {cv.best_params_}")
        name = f"{member}+{tag}"
        k = int(self.eval_at)
        if member == AVERAGE:
            terms, self.terms_all_[name], self.model_ = self._average(retrained, data, val,
                                                                      self.validation_)  # fmt: skip
            self.fallback_average_ = self.model_
        else:
            (cv,) = retrained.values()
            terms = np.mean([self.validation_.per_query(s, k) for s in cv.oof_], axis=0)
            self.model_ = cv.model_
        self.choice_ = name
        self.terms_[name] = terms
        keep, logging = self.checked_, self.terms_["logging"]
        self.safety_["vs_safe"] = Comparison.of(name, "logging", terms[keep], logging[keep],
                                                self.validation_.n_sessions,
                                                float(self.confidence))  # fmt: skip
        what = f"the {AVERAGE} of its members" if member == AVERAGE else member
        self.reason_ += f"; offering {what} retrained with {said}"

    def _validations(self, data, log, theta, stats, say):
        """The estimate trees are chosen on (every document, as LambdaMARTCV always has)
        and the one targets are compared and checked on (``restrict``: the shown ones)."""
        est = self.validation if theta is not None else "clicks"
        if est == "clicks":
            say("note: the selection scores held-out clicks as they are (no propensities; "
                "biased towards the logger)")  # fmt: skip
        val = ClickValidation.from_log(data, log, theta, estimator=est, stats=stats,
                                       seed=self.seed)  # fmt: skip
        if not self.restrict:
            return val, val
        gains = val.gains
        if est == "ips":  # policy-aware: N_q C(d)/E(d), the IPS sum where d is always shown
            gains = stats.sessions * stats.ratio()
        return val, ClickValidation(data, gains, val.n_sessions, val.estimator, stats.shown)

    def _target(self, name, data, log, theta, stats):
        """The target of family member ``name``."""
        from . import targets as T

        tname, opts = FAMILY[name]
        stats_arg = stats if tname in ("ips", "dr", "naive") else None
        if tname == "dr":  # its relevance model on every core: the same model as on one
            threads, seed = {"num_threads": int(self.n_jobs)}, self.seed

            def relevance(d, s):
                return T.relevance_model(d, s, seed=seed, params=threads)

            opts = {**opts, "relevance": relevance}
        return T.make_target(tname, data, log, theta, clip=self.clip, seed=self.seed,
                             stats=stats_arg, **opts)  # fmt: skip

    def _fit_members(self, targets, data, val, reference, plan, shapes=None, say=None,
                     **safe) -> dict[str, Any]:  # fmt: skip
        """Each member's :class:`LambdaMARTCV` (name -> fitted), on ``n_jobs`` processes;
        ``shapes``: name -> the one tree shape a member tries (default: the grid); ``say``:
        called with a line after each fold of a member fitted here (its selection's
        progress), or after each member fitted in a process.

        From :data:`RACE_FROM` documents the members race (:meth:`_race`): every member
        fits its first fold, then only those not raced out fit the rest; they are left
        out of what this returns, and ``raced_`` says why.

        The members are independent, so with ``n_jobs > 1`` and at least
        :data:`PROCESSES_FROM` documents they fit at once, each in its own process (below,
        one after the other here on ``n_jobs`` threads): the models are those of
        ``n_jobs=1`` to the bit. Processes, not
        threads: LightGBM keeps its thread count in a process-wide variable, and two fits
        on threads of one process crashed it (a segfault in ``lib_lightgbm.so``, once in
        eight fits of MQ2008 with the CRM fallback). Each fit takes its share of the cores
        when it starts (:func:`~clickrank._threads.fit_threads`): one thread while the
        members left keep every core busy, all of them for the last one, whose trees and
        lambdas then run on every core with the bits of one. The members with session
        lists (Unbiased LambdaMART, whose session pass adds to every round) are sent first. At 10^6
        documents x 136 features on two cores, the last member had fitted alone on one
        thread for a third of the fit. The processes are started by ``spawn`` (a
        fork of a process that ran OpenMP can hang); what they need is sent and
        unpickled once in each, and its members share their folds and binned features.
        With a Spark log (``engine`` "auto" or "spark") each member is a Spark task
        instead (:func:`_spark_members`).
        """
        say = say if say is not None else (lambda _m: None)
        race = (shapes is None and self.unseen_guard is not None and len(targets) > 1
                and data.n_docs >= RACE_FROM)  # fmt: skip
        job = (self.get_params(), data, val, reference, plan, shapes, safe, targets)
        with self._members(job, say) as fit:
            if not race:
                return fit(dict.fromkeys(targets))
            first = fit(dict.fromkeys(targets), until=1)
            self.raced_ = self._race(first)
            for m, loss in self.raced_.items():
                say(f"  {m}: raced out after its first fold ({loss:.0%} below the best "
                    "member over all documents there: the unseen guard)")  # fmt: skip
            self._raced_cost = (sum(first[m].fits_ for m in self.raced_),
                                sum(first[m].rounds_ for m in self.raced_))  # fmt: skip
            return fit({m: cv for m, cv in first.items() if m not in self.raced_})

    @contextmanager
    def _members(self, job: tuple, say) -> Iterator[Any]:
        """A function fitting members: ``{name: None, or its selection fitted so far}`` ->
        ``{name: LambdaMARTCV}``, fitted up to fold ``until`` (None: to the end), here,
        in the member processes (kept open between calls) or as Spark tasks."""
        targets, data = job[-1], job[1]
        spark = getattr(self, "_spark", None)
        if spark is not None:
            with _spark_members(spark, job) as fit:
                yield fit
        elif min(int(self.n_jobs), len(targets)) <= 1 or data.n_docs < PROCESSES_FROM:

            def here(jobs: dict, until: int | None = None) -> dict[str, Any]:
                return {m: _fit_member(job, m, self._shared, cv, until, threads=self.n_jobs,
                                       progress=lambda line, m=m: _fold_line(say, m, line))
                        for m, cv in jobs.items()}  # fmt: skip

            yield here  # on n_jobs threads each
        else:
            with self._pool(job, say) as fit:
                yield fit

    @contextmanager
    def _pool(self, job: tuple, say) -> Iterator[Any]:
        """:meth:`_members` on ``n_jobs`` processes sharing the cores."""
        cores, targets = int(self.n_jobs), job[-1]
        workers = min(cores, len(targets))
        context = multiprocessing.get_context("spawn")
        left = context.Value("i", len(targets))  # members not yet fitted, queued ones too
        with (
            _main_not_rerun(),
            ProcessPoolExecutor(workers, mp_context=context, initializer=_receive,
                                initargs=(pickle.dumps(job), cores, left)) as pool,
        ):  # fmt: skip

            def fit(jobs: dict, until: int | None = None) -> dict[str, Any]:
                with left.get_lock():
                    left.value = len(jobs)
                first = sorted(jobs, key=lambda m: targets[m].sessions is None)  # session lists
                sent = {pool.submit(_member_of_payload, m, pickle.dumps(jobs[m]), until): m
                        for m in first}  # fmt: skip
                blobs = {}
                for done in as_completed(sent):  # said as they finish; kept in the family's order
                    blobs[sent[done]] = done.result()
                    say(f"  {sent[done]}: fitted{'' if until is None else f' up to fold {until}'}"
                        f" ({len(blobs)} of {len(sent)} members, {workers} processes)")  # fmt: skip
                return {m: pickle.loads(blobs[m]) for m in jobs}

            yield fit

    def _race(self, first: dict[str, LambdaMARTCV]) -> dict[str, float]:
        r"""The members shown by their first fold to give away more than ``unseen_guard`` of
        the best member's all-documents score: name -> their relative loss on that fold.

        The unseen guard would exclude them at the end (:meth:`_unseen_guard`); this
        says so after one fold, when a paired bound over that fold's queries (one-sided
        ``confidence``, Student's t, as the tree shapes' race) puts
        :math:`(1 - \text{guard})\, t_q(\text{best}) - t_q(m)` above zero. A member
        near the line fits every fold and meets the guard at the end."""
        terms = {m: cv.held_terms_ for m, cv in first.items()}
        total = {m: float(v.sum()) for m, v in terms.items()}
        top = max(total, key=lambda m: total[m])
        n = terms[top].size
        if total[top] <= 0 or n < 3:
            return {}
        t = st.t.ppf(float(self.confidence), n - 1)
        out = {}
        for m, v in terms.items():
            d = (1 - float(self.unseen_guard)) * terms[top] - v
            if d.mean() - t * d.std(ddof=1) / np.sqrt(n) > 0:
                out[m] = 1 - total[m] / total[top]
        return out

    def _cv(self, plan: dict[str, Any], n_jobs: int | None = None, shape: dict | None = None,
            **safe: float) -> LambdaMARTCV:  # fmt: skip
        """Every member's selection: the same grid, folds and seed (so the same splits);
        ``plan``: its ``repeats`` and ``refit`` (:meth:`_plan`); ``n_jobs``: its threads
        (default ``self.n_jobs``); ``shape``: the one grid entry tried instead of the grid;
        ``safe``: ``proximal`` or ``risk`` of a fallback."""
        extra = safe or ({} if self.proximal is None else {"proximal": float(self.proximal)})
        return LambdaMARTCV(
            grid=self.grid if shape is None else (shape,), folds=self.folds, **plan,
            n_estimators=self.n_estimators, learning_rate=self.learning_rate,
            early_stopping_rounds=self.early_stopping_rounds, eval_at=self.eval_at,
            racing=self.racing, seed=self.seed,
            early_stopping_fraction=self.early_stopping_fraction,
            n_jobs=self.n_jobs if n_jobs is None else n_jobs, **self.params, **extra,
        )  # fmt: skip

    def _unseen_guard(self, family) -> dict[str, float]:
        """Members that give more than ``unseen_guard`` of the best member's all-documents
        score to documents the log never showed: name -> their relative loss."""
        every = getattr(self, "terms_all_", {})
        if self.unseen_guard is None or not all(m in every for m in family):
            return {}
        total = {m: float(every[m].sum()) for m in family}
        top = max(total.values())
        if top <= 0:
            return {}
        return {m: 1 - v / top for m, v in total.items() if v < (1 - self.unseen_guard) * top}

    def _choose(self, family, oof, safe_name, safe_terms, logged, n_sessions,
                prefer: str | None = None) -> None:  # fmt: skip
        """The candidate ``prefer`` (the average) or the one-SE selection, then the safety
        check (sets choice_, table_, safety_, reason_)."""
        conf, tol = float(self.confidence), float(self.tolerance)
        scores = {m: oof[m].sum() / n_sessions for m in family}
        self.excluded_ = {**getattr(self, "raced_", {}), **self._unseen_guard(family)}
        eligible = [m for m in family if m not in self.excluded_] or list(family)
        best = max(eligible, key=lambda m: scores[m])
        # what combine="select" takes at tolerance 0 (recorded: the benchmark compares it)
        self.best_member_ = max((m for m in eligible if m != prefer), key=lambda m: scores[m],
                                default=best)  # fmt: skip
        selected = prefer if prefer in eligible else best
        for m in eligible if selected == best else ():  # the first (safest) member the best
            if m == best:  # does not clearly beat
                break
            c = Comparison.of(best, m, oof[best], oof[m], n_sessions, conf)
            if c.gain <= tol * c.se:
                selected = m
                break
        self.selected_ = selected
        vs_safe = {}
        keep = getattr(self, "checked_", None)
        if keep is None or safe_name != "logging" or keep.size != safe_terms.size:
            keep = slice(None)
        if safe_terms is not None:
            vs_safe = {m: Comparison.of(m, safe_name, oof[m][keep], safe_terms[keep], n_sessions,
                                        conf)
                       for m in family if m != safe_name}  # fmt: skip
        if len(family) == 1:
            why = f"{selected}: the one target asked for"
        elif selected == prefer:
            why = f"the {AVERAGE} of {', '.join(self.averaged_)}" + (
                f" ({', '.join(self.excluded_)} excluded by the unseen guard)"
                if self.excluded_ else "")  # fmt: skip
        elif selected == best:
            why = f"{selected} has the best counterfactual score" + (
                f" ({', '.join(self.excluded_)} excluded by the unseen guard)"
                if self.excluded_ else "")  # fmt: skip
        else:
            why = f"{selected}: within {tol:g} SE of the best ({best}), and safer"
        choice = selected
        if self.safe and selected in vs_safe and vs_safe[selected].lower <= 0:
            # the members whose gain over the safe ranker is sure, best of them by the same rule
            # (the average is the one candidate tested: switching to whichever member clears
            # the bound would be the best of several tests, optimistic by the winner's curse)
            sure = [] if selected == prefer else [
                m for m in eligible if m in vs_safe and vs_safe[m].lower > 0]  # fmt: skip
            if sure:
                choice = max(sure, key=lambda m: scores[m])
                why = (f"{selected} is not shown to beat {safe_name} at {conf:.0%}; "
                       f"{choice} is (bound {vs_safe[choice].lower:+.3g})")  # fmt: skip
            else:
                choice = safe_name
                why = (f"no candidate is shown to beat {safe_name} at {conf:.0%} "
                       f"(best bound {max(c.lower for c in vs_safe.values()):+.3g}): "
                       f"{safe_name} kept")  # fmt: skip
        self.choice_, self.reason_ = choice, why
        offered = oof.get(choice, safe_terms if choice == safe_name else None)
        self.safety_ = {
            "safe": safe_name,
            "vs_logged": Comparison.of(choice, "logged ranking", offered, logged, n_sessions,
                                       conf),
            "vs_naive": (Comparison.of(choice, "naive", offered, oof["naive"], n_sessions, conf)
                         if "naive" in oof and choice != "naive" else None),
            "vs_safe": (Comparison.of(choice, safe_name, offered[keep], safe_terms[keep],
                                      n_sessions, conf)
                        if safe_terms is not None and choice != safe_name else None),
        }  # fmt: skip
        rows = []
        every = getattr(self, "terms_all_", {})
        for m in family:
            cv = self.members_.get(m)
            shape = cv.best_params_ if cv is not None else {
                "n_estimators": self.average_.best_iteration_}  # fmt: skip
            vb = Comparison.of(m, best, oof[m], oof[best], n_sessions, conf)
            vs = vs_safe.get(m)
            rows.append({
                "member": m, "score": scores[m],
                "se": float(np.sqrt(oof[m].size) * oof[m].std(ddof=1) / n_sessions),
                "vs_best": vb.gain, "vs_best_se": vb.se,
                "vs_safe": None if vs is None else vs.gain,
                "vs_safe_lower": None if vs is None else vs.lower,
                "score_all": float(every[m].sum() / n_sessions) if m in every else None,
                "num_leaves": shape.get("num_leaves"),
                "max_depth": shape.get("max_depth"),
                "trees": shape["n_estimators"],
                "chosen": m == choice,
                "excluded": m in self.excluded_,
            })  # fmt: skip
        self.table_ = pl.DataFrame(rows)

    # -- use ------------------------------------------------------------------------------
    def predict(self, X: np.ndarray | RankingData) -> np.ndarray:
        """Scores of the offered ranker."""
        from .ranking import ranker_scores

        check_is_fitted(self, "model_")
        if isinstance(X, RankingData):
            return ranker_scores(self.model_, X)
        return np.asarray(self.model_.predict(X), dtype=np.float64)

    def summary(self) -> str:
        """The selection table, the safety check and the choice in one line."""
        check_is_fitted(self, "model_")
        val = self.validation_
        k = int(self.eval_at)
        reps = next(iter(self.members_.values())).repeats
        lines = [
            f"ClickRanker: {len(self.table_) - (self.average_ is not None)} targets"
            + (" and their average" if self.average_ is not None else "")
            + f" x {self.folds}-fold CV by query"
            + (f" x {reps} repeats" if reps > 1 else "")
            + ("" if next(iter(self.members_.values())).refit else ", fold models averaged")
            + f", each scored on {val.metric_name(k)} of its out-of-fold rankings "
            f"({val.data.n_queries} queries, {val.n_sessions:,.0f} sessions)",
            f"  {'target':<20} {'score':>9} {'± SE':>8} {'− best':>9} {'± SE':>8} "
            f"{'− ' + self.safety_['safe']:>10} {'lower':>9} {'shape':>8} {'trees':>5}",
        ]
        for r in self.table_.iter_rows(named=True):
            vs = "" if r["vs_safe"] is None else f"{r['vs_safe']:+.4f}"
            lo = "" if r["vs_safe_lower"] is None else f"{r['vs_safe_lower']:+.4f}"
            shape = "" if r["num_leaves"] is None else f"{r['num_leaves']}/{r['max_depth']}"
            mark = "  <- chosen" if r["chosen"] else (
                "  (selected)" if r["member"] == self.selected_ else "")  # fmt: skip
            if r["excluded"]:
                loss = self.excluded_[r["member"]]
                mark += f"  (excluded: {loss:.0%} below the best over all documents)"
            lines.append(
                f"  {r['member']:<20} {r['score']:>9.4f} {r['se']:>8.4f} {r['vs_best']:>+9.4f} "
                f"{r['vs_best_se']:>8.4f} {vs:>10} {lo:>9} {shape:>8} {r['trees']:>5}{mark}"
            )
        for m, loss in self.raced_.items():
            lines.append(f"  {m:<20} raced out after its first fold: {loss:.0%} below the "
                         "best member over all documents there (excluded)")  # fmt: skip
        lines.append(f"  safety ({self.confidence:.0%} one-sided, queries as the unit):")
        for key in ("vs_safe", "vs_logged", "vs_naive"):
            c = self.safety_.get(key)
            if c is not None and not (key == "vs_naive" and self.safety_["safe"] == "naive"):
                lines.append(f"    {c.line()}")  # naive as the safe ranker: said once
        lines.append(f"  {self.propensity_source_.line()}")
        lines.append(f"  cost: {self.cost_['fits']} LightGBM fits, {self.cost_['rounds']:,} "
                     "boosting rounds (one fit of 100 trees: 100)")  # fmt: skip
        lines.append(f"  choice: {self.choice_} ({self.reason_})")
        if hasattr(self.model_, "summary"):
            lines.append(self.model_.summary())
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The selection and safety record (what :meth:`save` writes as ``selection.json``)."""
        check_is_fitted(self, "model_")
        return {
            "format": "clickrank-clickranker", "version": 1,
            "choice": self.choice_, "selected": self.selected_, "reason": self.reason_,
            "averaged": list(self.averaged_), "raced": dict(self.raced_),
            "propensities": {**self.propensity_source_.to_dict(),
                             "theta": None if self.propensities_ is None
                             else np.asarray(self.propensities_, dtype=float).tolist()},
            "metric": self.validation_.metric_name(int(self.eval_at)),
            "cost": dict(self.cost_),
            "table": self.table_.to_dicts(),
            "safety": {k: (v.to_dict() if isinstance(v, Comparison) else v)
                       for k, v in self.safety_.items()},
            "members": {m: {"best_params": cv.best_params_, "refit": bool(cv.refit),
                            "cv_results": cv.cv_results_.to_dicts()}
                        for m, cv in self.members_.items()},
            "params": self.get_params(),
        }  # fmt: skip

    def save(self, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
        """Save the offered model (:meth:`LambdaMART.save`) and ``selection.json``.

        When the logging ranker is kept, its model is written (if it can save
        itself, as a :class:`~clickrank.lambdamart.LambdaMART` can), so the
        folder always holds the ranker to deploy; ``selection.json`` says which.
        """
        from ._io import atomic_write_json

        check_is_fitted(self, "model_")
        out = Path(path)
        if hasattr(self.model_, "save"):  # a member, or a logging LambdaMART that was kept
            out = self.model_.save(out, overwrite=overwrite)
        else:
            out.mkdir(parents=True, exist_ok=True)
        atomic_write_json(
            out / "selection.json", json.loads(json.dumps(self.to_dict(), default=float))
        )
        return out


def _fold_line(say, member: str, line: str) -> None:
    """A member's selection line said after each fold (its per-shape lines are summed up by
    the member's own line after the fit)."""
    if line.lstrip().startswith("fold"):
        say(f"  {member}: {line.strip()}")


@contextmanager
def _spark_members(spark, job: tuple) -> Iterator[Any]:
    """The members' selections as Spark tasks, one per member and call: what they need is
    broadcast once, each task fits its member as :meth:`ClickRanker._fit_members` does on
    one thread and sends the fitted :class:`LambdaMARTCV` back (its model and out-of-fold
    scores; the fold models stay on the executor, or come back averaged as the model
    without refit; fitted up to a fold, its fold models come back to be sent on)."""
    sc = spark.sparkContext
    payload = sc.broadcast(pickle.dumps(job))

    def fit(jobs: dict, until: int | None = None) -> dict[str, Any]:
        sent = [(m, pickle.dumps(cv)) for m, cv in jobs.items()]
        out = (sc.parallelize(sent, len(sent))
               .map(lambda mj: _member_task(payload.value, mj[0], mj[1], until))
               .collect())  # fmt: skip
        return {m: pickle.loads(blob) for (m, _), blob in zip(sent, out, strict=True)}

    try:
        yield fit
    finally:
        payload.destroy()


@contextmanager
def _main_not_rerun() -> Iterator[None]:
    """While member processes start: hide the caller's main module from ``spawn``.

    ``spawn`` runs the parent's main script again in every child, so a user's script
    without the ``if __name__ == "__main__":`` guard would fit again there (Python stops
    it with a RuntimeError). The members need nothing from that module (their payload
    holds clickrank objects only), so its path and spec are hidden from
    ``multiprocessing`` meanwhile and restored after.
    """
    main = sys.modules.get("__main__")
    saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if k in main.__dict__}
    try:
        main.__dict__.pop("__file__", None)
        main.__dict__["__spec__"] = None
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)


#: What a member process received (:func:`_receive`), unpickled once, and the folds and
#: binned features its members share (:meth:`LambdaMARTCV.fit` ``shared``).
_PAYLOAD: dict[str, Any] = {}


def _receive(payload: bytes, cores: int, left: Any) -> None:
    """A member process's start: unpickle what every member needs, once; its fits share
    ``cores`` with the other processes (``left``: the members not yet fitted)."""
    _PAYLOAD["job"], _PAYLOAD["shared"], _PAYLOAD["left"] = pickle.loads(payload), {}, left
    share_cores(cores, left)


def _member_of_payload(name: str, partial: bytes, until: int | None) -> bytes:
    """One member's selection in a member process (:meth:`ClickRanker._fit_members`)."""
    try:
        cv = _fit_member(_PAYLOAD["job"], name, _PAYLOAD["shared"], pickle.loads(partial), until)
        return pickle.dumps(cv)
    finally:
        with _PAYLOAD["left"].get_lock():  # its core goes to the members still fitting
            _PAYLOAD["left"].value -= 1


def _member_task(payload: bytes, name: str, partial: bytes, until: int | None) -> bytes:
    """One member's selection in a Spark task."""
    folds: dict = {}  # the task's folds, for its fit and for _fold_terms
    return pickle.dumps(_fit_member(pickle.loads(payload), name, folds, pickle.loads(partial),
                                    until))  # fmt: skip


def _fit_member(
    job: tuple,
    name: str,
    shared: dict | None,
    cv: Any = None,
    until: int | None = None,
    threads: int = 1,
    progress: Any = None,
) -> Any:
    """Member ``name``'s :class:`LambdaMARTCV`, started (``cv`` None) or went on with, fitted
    up to fold ``until`` (then with ``held_terms_``: its first fold's per-query scores,
    what the members race on) or to the end."""
    params, data, val, reference, plan, shapes, safe, targets = job
    if cv is None:
        cv = ClickRanker(**params)._cv(plan, n_jobs=threads, shape=(shapes or {}).get(name),
                                       **safe)  # fmt: skip
    cv._fit_folds(data, targets[name], validation=val, reference=reference, shared=shared,
                  progress=progress, until=until)  # fmt: skip
    if until is not None:
        cv.held_terms_ = cv._fold_terms(0, data, val, shared)[1]
    return cv
