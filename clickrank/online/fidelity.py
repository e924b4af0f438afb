"""Do interleaving winners agree with offline NDCG differences? :class:`FidelityResult`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from .._core._result import Result
from .._core._validation import InputError, check_alpha, check_positive
from ..datasets import RankingData
from ..interleaving.experiment import InterleavingResult, interleaving_experiment
from .traffic import _click_model, _scores, _wilson, expected_clicks

# --------------------------------------------------------------------------- fidelity


@dataclass(frozen=True, eq=False)
class FidelityResult(Result):
    """Agreement of interleaving winners with offline NDCG@k differences over ranker pairs.

    ``table`` has one row per pair: a, b (ranker ids), ndcg_a, ndcg_b, diff
    (NDCG@k A − B), clicks_a, clicks_b (exact expected clicks per impression
    of each ranker's own list under the click model, :func:`expected_clicks`),
    delta, p_value, agree (Δ has the sign of diff), agree_clicks (Δ has the
    sign of clicks_a − clicks_b).
    """

    table: pl.DataFrame
    method: str
    n_impressions: int
    min_difference: float
    alpha: float
    k: int = 10

    FORMAT = "clickrank.fidelity"

    def to_dict(self) -> dict:
        """The fields (``table`` as a list of rows), then the agreement shares (derived)."""
        frac_sig, agree_sig = self.significant_agreement
        return {
            "table": self.table.to_dicts(),
            "method": self.method,
            "n_impressions": self.n_impressions,
            "min_difference": self.min_difference,
            "alpha": self.alpha,
            "k": self.k,
            "agreement": self.agreement,
            "significant_share": frac_sig,
            "significant_agreement": agree_sig,
            "click_agreement": self.click_agreement[1],
        }

    @classmethod
    def from_dict(cls, d: dict) -> FidelityResult:
        f = cls._fields_in(d)
        rows = f.pop("table")
        table = (
            pl.DataFrame(rows, schema=_FIDELITY_SCHEMA)
            if rows
            else pl.DataFrame(schema=_FIDELITY_SCHEMA)
        )
        return cls(table=table, **f)

    def conf_int(self, alpha: float | None = None) -> pl.DataFrame:
        """Wilson intervals of the agreement shares over the eligible pairs.

        Rows ``statistic``: "agreement" (sign agreement with ΔNDCG), "significant"
        (share of pairs significant at the result's ``alpha``), "significant
        agreement" (share of those agreeing); columns ``estimate``, ``lower``,
        ``upper``, ``n`` (pairs the share is over), ``alpha``.
        """
        a = self.alpha if alpha is None else check_alpha(alpha)
        e = self._eligible()
        sig = e.filter(pl.col("p_value") < self.alpha)
        counts = np.array([e["agree"].sum(), sig.height, sig["agree"].sum()], dtype=np.float64)
        n = np.array([e.height, e.height, sig.height], dtype=np.float64)
        lo, hi = _wilson(counts, n, a)
        with np.errstate(divide="ignore", invalid="ignore"):
            est = counts / n
        return pl.DataFrame(
            {
                "statistic": ["agreement", "significant", "significant agreement"],
                "estimate": est,
                "lower": lo,
                "upper": hi,
                "n": n.astype(np.int64),
                "alpha": [a] * 3,
            }
        )

    def _eligible(self) -> pl.DataFrame:
        return self.table.filter(pl.col("diff").abs() >= self.min_difference)

    @property
    def agreement(self) -> float:
        """Share of eligible pairs whose Δ has the sign of the NDCG difference (ties count 0)."""
        e = self._eligible()
        return float(e["agree"].mean()) if e.height else math.nan

    @property
    def significant_agreement(self) -> tuple[float, float]:
        """(share of eligible pairs significant at alpha, share of those that agree)."""
        e = self._eligible()
        s = e.filter(pl.col("p_value") < self.alpha)
        return (
            s.height / e.height if e.height else math.nan,
            float(s["agree"].mean()) if s.height else math.nan,
        )

    @property
    def click_agreement(self) -> tuple[float, float]:
        """Over eligible pairs significant at alpha: (share agreeing with NDCG, share
        agreeing with the expected-clicks difference under the click model)."""
        s = self._eligible().filter(pl.col("p_value") < self.alpha)
        if not s.height:
            return (math.nan, math.nan)
        return float(s["agree"].mean()), float(s["agree_clicks"].mean())

    def summary(self) -> str:
        e = self._eligible()
        frac_sig, agree_sig = self.significant_agreement
        _, agree_clicks = self.click_agreement
        return "\n".join(
            [
                f"Fidelity of {self.method} interleaving vs offline NDCG@{self.k} "
                f"({self.n_impressions} impressions per pair)",
                f"  pairs {self.table.height}; with |ΔNDCG| >= {self.min_difference}: {e.height}",
                f"  sign agreement                  {self.agreement:.3f}",
                f"  significant at {self.alpha}: {frac_sig:.3f} of pairs; of those agreeing: "
                f"{agree_sig:.3f}",
                f"  significant pairs agreeing with the expected-clicks difference under the "
                f"click model: {agree_clicks:.3f}",
            ]
        )


def _ranker_pairs(data: RankingData, rankers, n_pairs: int, noise, rng) -> tuple[list, np.ndarray]:
    """Scores of the rankers and the pairs ``[P, 2]`` to compare (see :func:`fidelity_study`)."""
    if rankers is None:
        sig = rng.uniform(noise[0], noise[1], size=(n_pairs, 2))
        scores = [
            data.y + sig[i // 2, i % 2] * rng.standard_normal(data.n_docs)
            for i in range(2 * n_pairs)
        ]
        return scores, np.arange(2 * n_pairs).reshape(n_pairs, 2)
    scores = [_scores(r, data, f"rankers[{i}]") for i, r in enumerate(rankers)]
    if len(scores) < 2:
        raise InputError("fidelity_study needs at least two rankers")
    ii, jj = np.triu_indices(len(scores), k=1)
    pairs = np.column_stack([ii, jj])
    if len(pairs) > n_pairs:
        pairs = pairs[np.sort(rng.choice(len(pairs), n_pairs, replace=False))]
    return scores, pairs


def _pair_row(ia: int, ib: int, nd: dict, ec: dict, r: InterleavingResult) -> dict:
    """One row of the fidelity table: offline values of both rankers and the experiment."""
    diff = nd[ia] - nd[ib]
    return {
        "a": ia,
        "b": ib,
        "ndcg_a": nd[ia],
        "ndcg_b": nd[ib],
        "diff": diff,
        "clicks_a": ec[ia],
        "clicks_b": ec[ib],
        "delta": r.delta,
        "p_value": r.p_value,
        "agree": float(np.sign(r.delta) == np.sign(diff) and r.delta != 0),
        "agree_clicks": float(np.sign(r.delta) == np.sign(ec[ia] - ec[ib]) and r.delta != 0),
    }


def fidelity_study(
    data: RankingData,
    *,
    n_pairs: int = 100,
    method: str = "team-draft",
    click_model: Any = None,
    n_impressions: int = 20_000,
    noise: tuple[float, float] = (0.5, 3.0),
    min_difference: float = 0.01,
    k: int = 10,
    alpha: float = 0.05,
    seed: int = 0,
    rankers: Sequence[Any] | None = None,
) -> FidelityResult:
    """Does the interleaving winner agree with the offline NDCG@k winner?

    Without ``rankers``, rankers are the true labels plus Gaussian noise whose
    standard deviation is drawn uniformly from ``noise`` per ranker (so ranker
    quality varies), two fresh rankers per pair. With ``rankers`` (trained
    models with ``predict(X)`` or score arrays, e.g. LambdaMART models of
    different quality), the pairs are all unordered pairs ``i < j`` of them,
    or ``n_pairs`` of those drawn without replacement (seeded) if there are
    more. For each pair the offline NDCG@k difference and an interleaving
    experiment of ``n_impressions`` impressions are computed (independent
    seeds). Agreement is reported over pairs whose NDCG@k differs by at least
    ``min_difference``. ``table`` columns: a, b (ranker ids), ndcg_a, ndcg_b,
    diff, clicks_a, clicks_b, delta, p_value, agree, agree_clicks (see
    :class:`FidelityResult`).
    """
    from ..metrics import ndcg

    n_pairs = check_positive(n_pairs, name="n_pairs", integer=True)
    if not isinstance(data, RankingData):
        raise InputError(f"data must be a RankingData, got {type(data).__name__}")
    if data.y is None:
        raise InputError("fidelity_study needs true labels; data.y is None")
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(8,)))
    model = _click_model(click_model)
    scores, pairs = _ranker_pairs(data, rankers, n_pairs, noise, rng)
    nd: dict[int, float] = {}
    ec: dict[int, float] = {}
    rows = []
    for p, (ia, ib) in enumerate(pairs):  # each pair is a vectorized experiment
        for i in (ia, ib):
            if i not in nd:
                nd[i] = float(ndcg(scores[i], data.y, data.qptr, k=k))
                ec[i] = expected_clicks(data, scores[i], click_model=model, k=k)
        r = interleaving_experiment(
            data,
            scores[ia],
            scores[ib],
            method=method,
            click_model=model,
            n_impressions=n_impressions,
            k=k,
            alpha=alpha,
            seed=seed * 100_003 + p + 1,
        )
        rows.append(_pair_row(int(ia), int(ib), nd, ec, r))
    return FidelityResult(pl.DataFrame(rows), method, n_impressions, min_difference, alpha, k)


_FIDELITY_SCHEMA = {
    "a": pl.Int64,
    "b": pl.Int64,
    "ndcg_a": pl.Float64,
    "ndcg_b": pl.Float64,
    "diff": pl.Float64,
    "clicks_a": pl.Float64,
    "clicks_b": pl.Float64,
    "delta": pl.Float64,
    "p_value": pl.Float64,
    "agree": pl.Float64,
    "agree_clicks": pl.Float64,
}
