"""Inputs shared by the online experiments: rankers -> rankings, labels, the click model,
the simulated traffic (queries and clicks per impression), and the statistics helpers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from .. import interleaving as il
from .._core._random import STREAM_CLICK, STREAM_QUERY, session_integers
from .._core._segments import to_padded
from .._core._validation import InputError, check_alpha, check_positive
from ..clickmodels import UserMixture
from ..datasets import RankingData
from ..simulation import sample_clicks

STREAM_INTERLEAVE = 220
STREAM_ARM = 221
STREAM_CLICK_B = 222  # second, independent click draw for the A/B pool (arm B)
# --------------------------------------------------------------------------- inputs


def _scores(ranker: Any, data: RankingData, name: str) -> np.ndarray:
    """Scores of a ranker or a score array (:func:`~clickrank.ranking.ranker_scores`)."""
    from ..ranking import ranker_scores

    return ranker_scores(ranker, data, name=name)


def _click_model(model: Any):
    if model is None or isinstance(model, str):
        from ..clickmodels import make_click_model

        return make_click_model("pbm" if model is None else model)
    if not (hasattr(model, "sample") and hasattr(model, "n_uniforms")):
        raise InputError(
            "click_model must be a click model (with sample() and n_uniforms) "
            f"or a name, got {model!r}"
        )
    return model


@dataclass(frozen=True, eq=False)
class TrafficSetup:
    ra: np.ndarray
    rb: np.ndarray
    labels: np.ndarray  # [Q, W] true labels by within-query index, NaN padded
    model: Any
    k: int
    sessions_per_user: int = 1

    @property
    def n_queries(self) -> int:
        return self.ra.shape[0]

    def shown_labels(self, lists: np.ndarray, query: np.ndarray) -> np.ndarray:
        lab = self.labels[query[:, None], np.maximum(lists, 0)]
        lab[lists < 0] = np.nan
        return lab

    def clicks(self, lists, query, sessions, seed, stream=STREAM_CLICK):
        """Clicks on the shown lists: simulation's sampler (users keep their type)."""
        users = sessions // self.sessions_per_user if self.sessions_per_user > 1 else None
        return sample_clicks(
            self.model,
            self.shown_labels(lists, query),
            sessions,
            seed,
            stream=stream,
            users=users,
        )


def setup_traffic(
    data: RankingData, a, b, click_model, k, sessions_per_user: int = 1
) -> TrafficSetup:
    if not isinstance(data, RankingData):
        raise InputError(f"data must be a RankingData, got {type(data).__name__}")
    if data.y is None:
        raise InputError("online simulation needs true labels; data.y is None")
    k = check_positive(k, name="k", integer=True)
    sa, sb = _scores(a, data, "a"), _scores(b, data, "b")
    labels, _ = to_padded(data.y, data.qptr, fill=np.nan)
    return TrafficSetup(
        il.rankings_from_scores(sa, data.qptr),
        il.rankings_from_scores(sb, data.qptr),
        labels.astype(np.float64),
        _click_model(click_model),
        k,
        sessions_per_user,
    )


def _top_lists(r: np.ndarray, k: int) -> np.ndarray:
    """First ``k`` columns of a ranking matrix, padded with -1 to width ``k``."""
    if r.shape[1] >= k:
        return r[:, :k]
    return np.pad(r, ((0, 0), (0, k - r.shape[1])), constant_values=-1)


def expected_clicks(
    data: RankingData, ranker: Any, *, click_model: Any = None, k: int = 10
) -> float:
    r"""Exact expected clicks per impression of a ranker's own top-``k`` lists.

    :math:`\frac{1}{Q}\sum_q \sum_{j \le k} P(C_j = 1 \mid \text{top-}k(q))`
    with the click model's exact marginals and queries weighted uniformly, as
    in the simulated traffic: the quantity the A/B metric "clicks per
    impression" estimates, and the offline utility a click-based comparison
    of two rankers can be checked against (:func:`fidelity_study`).
    """
    if not isinstance(data, RankingData):
        raise InputError(f"data must be a RankingData, got {type(data).__name__}")
    if data.y is None:
        raise InputError("expected_clicks needs true labels; data.y is None")
    k = check_positive(k, name="k", integer=True)
    labels, _ = to_padded(data.y, data.qptr, fill=np.nan)
    lists = _top_lists(il.rankings_from_scores(_scores(ranker, data, "ranker"), data.qptr), k)
    shown = labels.astype(np.float64)[np.arange(len(lists))[:, None], np.maximum(lists, 0)]
    shown[lists < 0] = np.nan
    return float(_click_model(click_model).click_probabilities(shown).sum(axis=1).mean())


def traffic_chunks(n: int, chunk_size: int):
    for start in range(0, n, chunk_size):
        yield np.arange(start, min(n, start + chunk_size), dtype=np.int64)


def impression_queries(seed: int, sessions: np.ndarray, n_queries: int) -> np.ndarray:
    return session_integers(seed, sessions, n_queries, STREAM_QUERY)[:, 0]


N_UNIFORMS: dict[str, Callable[[int], int]] = {
    "balanced": lambda k: 1,
    "team-draft": lambda k: k,
    "probabilistic": lambda k: 2 * k,
    "optimized": lambda k: 1,
}


# --------------------------------------------------------------------------- results


def sign_test(wins, losses) -> np.ndarray:
    """Two-sided exact binomial sign test on non-ties, vectorized (p = 1 if no non-ties)."""
    w = np.asarray(wins)
    m = w + np.asarray(losses)
    lo = np.minimum(w, m - w)
    p = 2.0 * stats.binom.cdf(lo, np.maximum(m, 1), 0.5)
    return np.where(m > 0, np.minimum(p, 1.0), 1.0)


def z_quantile(alpha: float) -> float:
    return float(stats.norm.isf(check_alpha(alpha) / 2))


def _wilson(successes: np.ndarray, n: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a proportion (Wilson (1927)), vectorized; NaN where ``n = 0``."""
    z = z_quantile(alpha)
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.asarray(successes, dtype=np.float64) / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def _model_name(model: Any) -> str:
    if isinstance(model, UserMixture):
        if len(model.names) > 4:
            return f"UserMixture({len(model.names)} user types)"
        return f"UserMixture({', '.join(model.names)})"
    return type(model).__name__
