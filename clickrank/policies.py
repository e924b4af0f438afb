"""Logging policies: which documents a simulated search engine shows, in which order.

A logging policy turns a batch of sessions (query indices and session ids)
into the displayed top-``K`` lists, ``rows[S, K]`` (row indices into the
:class:`~clickrank.datasets.RankingData`, ``-1`` for empty slots when a query
has fewer than ``K`` documents), and the name of the ranker that produced each
list (the log's ``ranker`` column, which intervention harvesting needs).

Policies
--------
:class:`DeterministicPolicy`
    Rank by fixed scores (an array, or any object with ``predict(X)``);
    ties keep the row order (stable sort, DESIGN §2).
:class:`PlackettLuce`
    Stochastic ranking, :math:`P(\\pi) = \\prod_i \\exp(s_{\\pi_i}/\tau) /
    \\sum_{j \\ge i} \\exp(s_{\\pi_j}/\tau)`, sampled with the Gumbel-top-k trick.
:class:`UniformRandom`
    Every order equally likely (Plackett–Luce with equal scores).
:class:`MixturePolicy`
    Each session picks one of several policies (e.g. several production
    rankers, the setting of intervention harvesting, Agarwal et al. WSDM 2019).

:func:`production_ranker` trains the standard "production ranker" of the
unbiased learning-to-rank literature: a ranker fitted on about 1 % of the
labelled training queries (Joachims, Swaminathan & Schnabel, WSDM 2017 §6;
Ai et al., ULTRA 2021), and on at least ``min_queries`` (20) of them, so that
the logger is a weak ranker rather than a random one on small data sets.
:meth:`ProductionRanker.quality` measures it: NDCG@10 on the queries it was
not trained on, the honest figure, and on all of them.

All randomness goes through :mod:`clickrank._random`, so a session's list
depends only on the seed and the session index, never on the batch size.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import numba as nb
import numpy as np

from ._random import STREAM_POLICY, session_state, session_uniforms, stream_key, uniform_at
from ._segments import rank_order, to_padded
from ._validation import InputError, check_choice, check_is_fitted, check_positive
from .datasets import RankingData

__all__ = [
    "LoggingPolicy",
    "PreparedPolicy",
    "DeterministicPolicy",
    "PlackettLuce",
    "UniformRandom",
    "MixturePolicy",
    "ProductionRanker",
    "production_ranker",
    "describe_quality",
    "make_policy",
    "policy_scores",
]


def policy_scores(ranker: Any, data: RankingData, *, name: str = "ranker") -> np.ndarray:
    """Scores of every row of ``data``: ``ranker`` itself (an array) or ``ranker.predict(X)``.

    Raises
    ------
    InputError
        If the scores do not have one finite value per document.
    """
    if hasattr(ranker, "predict") and not isinstance(ranker, np.ndarray):
        from .lambdamart import LambdaMART  # takes the data itself, to name it in errors

        scores = ranker.predict(data if isinstance(ranker, LambdaMART) else data.X)
    elif isinstance(ranker, (np.ndarray, Sequence)):
        scores = ranker
    else:
        raise InputError(
            f"{name} must be an array of scores or an object with predict(X); got "
            f"{type(ranker).__name__}"
        )
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    if s.shape != (data.n_docs,):
        raise InputError(f"{name} gives {s.size} scores but the data has {data.n_docs} documents")
    if not np.all(np.isfinite(s)):
        bad = int(np.flatnonzero(~np.isfinite(s))[0])
        raise InputError(f"{name} gives a non-finite score ({s[bad]}) for row {bad}")
    return s


class PreparedPolicy(ABC):
    """A policy bound to one dataset and cut-off, ready to rank sessions."""

    names: tuple[str, ...]
    top_k: int

    @abstractmethod
    def rank(
        self, queries: np.ndarray, sessions: np.ndarray, seed: int, stream: int = STREAM_POLICY
    ) -> tuple[np.ndarray, np.ndarray]:
        """Displayed rows ``int64 [S, K]`` (-1 = empty) and ranker codes ``int16 [S]``."""


class LoggingPolicy(ABC):
    """A logging policy; :meth:`prepare` binds it to data (precomputing what it can)."""

    @property
    @abstractmethod
    def names(self) -> tuple[str, ...]:
        """Ranker names this policy can record, indexed by the codes of ``rank``."""

    @abstractmethod
    def prepare(self, data: RankingData, top_k: int) -> PreparedPolicy:
        """Bind to ``data`` and cut-off ``top_k``."""


# -- deterministic -------------------------------------------------------------


class _PreparedDeterministic(PreparedPolicy):
    def __init__(self, top: np.ndarray, names: tuple[str, ...]) -> None:
        self.top = top
        self.names = names
        self.top_k = top.shape[1]

    def rank(self, queries, sessions, seed, stream=STREAM_POLICY):
        return np.take(self.top, queries, axis=0), np.zeros(len(queries), dtype=np.int16)


class DeterministicPolicy(LoggingPolicy):
    """Show every query's documents sorted by a fixed score (ties: row order).

    Parameters
    ----------
    ranker : array ``[n_docs]`` or object with ``predict(X)``
        Scores, higher ranks higher.
    name : str
        Recorded in the log's ``ranker`` column.
    """

    def __init__(self, ranker: Any, *, name: str = "production") -> None:
        self.ranker = ranker
        self.name = name

    @property
    def names(self) -> tuple[str, ...]:
        return (str(self.name),)

    def prepare(self, data: RankingData, top_k: int) -> PreparedPolicy:
        scores = policy_scores(self.ranker, data, name=f"ranker {self.name!r}")
        order = rank_order(scores, data.qptr)
        top, _ = to_padded(order, data.qptr, fill=-1, width=int(top_k))
        return _PreparedDeterministic(top.astype(np.int64), self.names)


# -- Plackett-Luce ---------------------------------------------------------------


@nb.njit(cache=True)
def _gumbel_top_k(
    logits: np.ndarray,
    qptr: np.ndarray,
    queries: np.ndarray,
    sessions: np.ndarray,
    key: np.uint64,
    k: int,
) -> np.ndarray:
    """Top-``k`` of ``logits + Gumbel noise`` per session (Gumbel-top-k trick).

    The noise of document ``j`` (0-based within its query) in session ``s``
    is the ``j``-th counter-based uniform of the session, so the list does
    not depend on the batch. Ties keep the row order.
    """
    n = queries.shape[0]
    out = np.full((n, k), -1, dtype=np.int64)
    best = np.empty(k, dtype=np.float64)
    for i in range(n):
        q = queries[i]
        a = qptr[q]
        m = qptr[q + 1] - a
        st = session_state(key, sessions[i])
        filled = 0
        for j in range(m):
            u = uniform_at(st, j)
            if u > 0.0:
                v = logits[a + j] - np.log(-np.log(u))
            else:
                v = -np.inf
            # insertion into the sorted (descending) buffer; strict > keeps row order on ties
            if filled < k:
                pos = filled
                filled += 1
            elif v > best[k - 1]:
                pos = k - 1
            else:
                continue
            while pos > 0 and v > best[pos - 1]:
                best[pos] = best[pos - 1]
                out[i, pos] = out[i, pos - 1]
                pos -= 1
            best[pos] = v
            out[i, pos] = a + j
    return out


class _PreparedPL(PreparedPolicy):
    def __init__(self, logits: np.ndarray, qptr: np.ndarray, top_k: int, names) -> None:
        self.logits = logits
        self.qptr = qptr
        self.top_k = top_k
        self.names = names

    def rank(self, queries, sessions, seed, stream=STREAM_POLICY):
        key = stream_key(seed, stream)
        rows = _gumbel_top_k(
            self.logits,
            self.qptr,
            np.ascontiguousarray(queries, dtype=np.int64),
            np.ascontiguousarray(sessions, dtype=np.uint64),
            key,
            self.top_k,
        )
        return rows, np.zeros(len(queries), dtype=np.int16)


class PlackettLuce(LoggingPolicy):
    r"""Stochastic ranking by the Plackett–Luce model with temperature.

    .. math::
        P(\pi \mid q) = \prod_{i=1}^{K}
            \frac{\exp(s_{\pi_i} / \tau)}{\sum_{j \ge i} \exp(s_{\pi_j} / \tau)}

    (Plackett 1975; Luce 1959). Sampled exactly by perturbing each logit
    :math:`s_d/\tau` with independent Gumbel noise and keeping the ``K``
    largest (the Gumbel-top-k trick; Yellott 1977, Kool et al. ICML 2019).
    :math:`\tau \to 0` approaches the deterministic ranking, large
    :math:`\tau` a uniform shuffle.

    Parameters
    ----------
    ranker : array ``[n_docs]`` or object with ``predict(X)``
    temperature : float
        :math:`\tau > 0`.
    name : str
    """

    def __init__(self, ranker: Any, *, temperature: float = 1.0, name: str = "plackett-luce"):
        self.ranker = ranker
        self.temperature = temperature
        self.name = name

    @property
    def names(self) -> tuple[str, ...]:
        return (str(self.name),)

    def prepare(self, data: RankingData, top_k: int) -> PreparedPolicy:
        tau = check_positive(self.temperature, name="temperature")
        scores = policy_scores(self.ranker, data, name=f"ranker {self.name!r}")
        return _PreparedPL(scores / tau, data.qptr, int(top_k), self.names)


class UniformRandom(LoggingPolicy):
    """Every ordering of a query's documents equally likely (a uniform shuffle)."""

    def __init__(self, *, name: str = "random") -> None:
        self.name = name

    @property
    def names(self) -> tuple[str, ...]:
        return (str(self.name),)

    def prepare(self, data: RankingData, top_k: int) -> PreparedPolicy:
        return _PreparedPL(np.zeros(data.n_docs), data.qptr, int(top_k), self.names)


# -- mixtures ----------------------------------------------------------------------


class _PreparedMixture(PreparedPolicy):
    def __init__(self, parts, cum, names, top_k) -> None:
        self.parts = parts
        self.cum = cum
        self.names = names
        self.top_k = top_k

    def rank(self, queries, sessions, seed, stream=STREAM_POLICY):
        u = session_uniforms(seed, sessions, 1, stream * 64)[:, 0]
        choice = np.searchsorted(self.cum, u, side="right")
        choice = np.minimum(choice, len(self.parts) - 1)
        rows = np.full((len(queries), self.top_k), -1, dtype=np.int64)
        codes = np.zeros(len(queries), dtype=np.int16)
        offset = 0
        for c, part in enumerate(self.parts):  # loop over a few components, not sessions
            idx = np.flatnonzero(choice == c)
            if idx.size:
                r, k = part.rank(queries[idx], sessions[idx], seed, stream * 64 + 1 + c)
                rows[idx] = r
                codes[idx] = k + offset
            offset += len(part.names)
        return rows, codes


class MixturePolicy(LoggingPolicy):
    """Each session is served by one policy, chosen at random with ``weights``.

    The chosen component is recorded in the ``ranker`` column, so the same
    (query, document) is seen at different positions under different rankers:
    the data intervention harvesting needs (Agarwal et al., WSDM 2019).

    Parameters
    ----------
    policies : sequence of LoggingPolicy
        At most 63 components, with distinct ranker names.
    weights : sequence of float, optional
        Non-negative, normalized to sum 1; equal by default.
    """

    def __init__(
        self, policies: Sequence[LoggingPolicy], *, weights: Sequence[float] | None = None
    ) -> None:
        self.policies = policies
        self.weights = weights

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for p in self.policies for n in p.names)

    def _weights(self) -> np.ndarray:
        pols = list(self.policies)
        if not pols or not all(isinstance(p, LoggingPolicy) for p in pols):
            raise InputError("policies must be a non-empty sequence of LoggingPolicy objects")
        if len(pols) > 63:
            raise InputError(f"a mixture takes at most 63 policies, got {len(pols)}")
        names = self.names
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise InputError(f"ranker names in a mixture must be distinct; repeated: {dup}")
        if self.weights is None:
            return np.full(len(pols), 1.0 / len(pols))
        w = np.asarray(self.weights, dtype=np.float64)
        if w.shape != (len(pols),) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise InputError(
                f"weights must be {len(pols)} non-negative numbers with a positive sum, "
                f"got {self.weights!r}"
            )
        return w / w.sum()

    def prepare(self, data: RankingData, top_k: int) -> PreparedPolicy:
        w = self._weights()
        parts = [p.prepare(data, top_k) for p in self.policies]
        cum = np.cumsum(w)[:-1]
        return _PreparedMixture(parts, cum, self.names, int(top_k))


# -- the production ranker -------------------------------------------------------------


class ProductionRanker:
    """A small LambdaMART trained on the true labels of a few queries.

    This is the usual logging ranker of ULTR simulations (Joachims et al.
    WSDM 2017 §6; ULTRA: a ranker trained on 1 % of the training queries). It
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
        from .lambdamart import LambdaMART  # lambdamart imports metrics, not policies

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
        # leaf, and fails ("num_features() > 0") if none is left: a small sample is retried
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
        from .metrics import ndcg

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


POLICY_KINDS = ("production", "plackett-luce", "oracle", "random")


def make_policy(
    kind: str,
    data: RankingData,
    *,
    fraction: float = 0.01,
    min_queries: int = 20,
    temperature: float = 1.0,
    seed: int = 0,
) -> LoggingPolicy:
    """A named logging policy for ``data`` (used by the CLI and run configs).

    ``production``: deterministic ranking by :func:`production_ranker` (trained
    on ``fraction`` of the queries, at least ``min_queries``);
    ``plackett-luce``: Plackett–Luce over the production ranker's scores with
    ``temperature``; ``oracle``: deterministic ranking by the true labels;
    ``random``: :class:`UniformRandom`.
    """
    check_choice(kind, POLICY_KINDS, name="policy")
    if kind == "random":
        return UniformRandom()
    if kind == "oracle":
        if data.y is None:
            raise InputError("the oracle policy needs labelled data")
        return DeterministicPolicy(data.y, name="oracle")
    ranker = production_ranker(data, fraction, seed=seed, min_queries=min_queries)
    if kind == "production":
        return DeterministicPolicy(ranker, name="production")
    return PlackettLuce(ranker, temperature=temperature, name="plackett-luce")
