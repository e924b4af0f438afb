r"""The propensity source chosen from what a log holds (``method="auto"``).

A log identifies position bias in one of three ways, in decreasing strength of
the guarantee (docs/logs.md says what each assumes):

1. **Randomized interventions** (``swap``, ``randpair``, ``randomized``): the
   randomization alone identifies :math:`\theta` (design-based).
2. **Documents at several positions** without randomization (a stochastic
   logger, a history of several rankers, FairPairs): EM of the PBM
   (:func:`.em`; Wang et al. (2018), the likelihood of intervention harvesting,
   Agarwal et al. (2019a)) identifies the positions connected to position 1
   through shared (query, doc) pairs, assuming a document's relevance did not
   change between the rankers.
3. **One position per document** (a single deterministic ranker): only a model
   of relevance on the features identifies :math:`\theta`, regression EM
   (:func:`.regression_em`), under the assumption that relevance is a function
   of the features that the model can learn: the weakest guarantee, flagged so.

Otherwise (no features given, or every estimator fails) there is no source, and
the caller trains without propensities.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import polars as pl

from .._core._validation import EstimationError, InputError
from ..engine import is_spark, log_schema
from ._registry import ESTIMATORS
from ._result import Propensities
from ._stats import UNCLICKED, as_lazy, identified

__all__ = [
    "PropensitySource",
    "choose_source",
    "source_and_cells",
    "auto",
    "RANDOMIZED",
    "MIN_SHARE",
]

#: Randomized designs in the order they are tried: (intervention label, estimator).
RANDOMIZED: tuple[tuple[str, str], ...] = (
    ("swap", "swap"),
    ("randpair", "randpair"),
    ("randomized", "randomized"),
)
#: Least share of the impressions on (query, doc) pairs shown at two or more positions
#: for EM to be chosen over regression EM: below it, the few pairs that moved would carry
#: the whole estimate.
MIN_SHARE = 0.05

#: How strong each kind of source is, for the one line that reports it.
GUARANTEE = {
    "randomized": "identified by randomization (design-based)",
    "harvested": "identified by documents shown at several positions, assuming their "
    "relevance did not change between rankers",
    "model": "identified only through a model of relevance on the features: a weaker "
    "guarantee than randomized interventions",
    "given": "given by the user",
    "none": "none: no target that needs propensities is trained",
}


#: The kind of evidence behind each estimator.
KIND = {"swap": "randomized", "randpair": "randomized", "randomized": "randomized",
        "harvest-allpairs": "harvested", "harvest-pivot": "harvested",
        "harvest-adjacent": "harvested", "em": "harvested", "regression-em": "model"}  # fmt: skip


@dataclass(frozen=True)
class PropensitySource:
    """Where the propensities of a fit came from, and why.

    Attributes
    ----------
    kind : {"randomized", "harvested", "model", "given", "none"}
        The kind of evidence (see the module docstring).
    method : str or None
        The estimator (:func:`~clickrank.propensity.estimate_propensities` name).
    reason : str
        What the log holds and what identifies θ, in one line.
    """

    kind: str
    method: str | None
    reason: str

    @property
    def weak(self) -> bool:
        """True when θ is identified only by a model (a weaker guarantee)."""
        return self.kind == "model"

    def line(self) -> str:
        what = self.method or ("θ given" if self.kind == "given" else "no propensities")
        return f"propensities: {what} ({self.reason}; {GUARANTEE[self.kind]})"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "guarantee": GUARANTEE[self.kind]}

    @classmethod
    def of(cls, result: Propensities, reason: str) -> PropensitySource:
        """The source recorded in ``result.info`` (by ``auto``), else its method's kind."""
        got = result.info.get("source")
        if isinstance(got, dict) and got.get("kind") in GUARANTEE:
            return cls(got["kind"], got.get("method"), got.get("reason", reason))
        method = result.method.removesuffix("+bootstrap")
        return cls(KIND.get(method, "given"), method, reason)


def _log_summary(lf: Any) -> tuple[dict[str, int], np.ndarray]:
    """Rows per intervention label and the log's clicks by position ``1..deepest shown``,
    in one aggregation of the log."""
    has = "intervention" in log_schema(lf).names()
    if is_spark(lf):
        from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

        keys = ["intervention", "position"] if has else ["position"]
        rows = (lf.groupBy(*keys).agg(F.count(F.lit(1)).alias("n"),
                                      F.sum(F.col("click").cast("double")).alias("c"))
                .collect())  # fmt: skip
        label = [str(r["intervention"]) for r in rows] if has else []
        pos = np.array([int(r["position"]) for r in rows], dtype=np.int64)
        n = np.array([int(r["n"]) for r in rows], dtype=np.int64)
        c = np.array([float(r["c"] or 0) for r in rows])
    else:
        keys = [pl.col("intervention").cast(pl.String), "position"] if has else ["position"]
        got = (lf.group_by(keys).agg(pl.len().alias("n"),
                                     pl.col("click").cast(pl.Float64).sum().alias("c"))
               .collect(engine="streaming"))  # fmt: skip
        label = got["intervention"].to_list() if has else []
        pos, n, c = got["position"].to_numpy(), got["n"].to_numpy(), got["c"].to_numpy()
    labels: dict[str, int] = {}
    for lab, k in zip(label, n.tolist(), strict=False):  # no labels without the column
        labels[lab] = labels.get(lab, 0) + k
    return labels, _by_position(pos, c)


def _by_position(pos: np.ndarray, clicks: np.ndarray) -> np.ndarray:
    """Clicks summed by 1-based position, ``[deepest]``."""
    pos = np.asarray(pos, dtype=np.int64)
    deepest = int(pos.max()) if pos.size else 0
    return np.bincount(pos - 1, weights=clicks, minlength=deepest)[:deepest] if deepest else (
        np.zeros(0))  # fmt: skip


def _multi_position_share(cells: dict[str, np.ndarray]) -> float:
    """Share of impressions on (query, doc) pairs seen at two or more positions."""
    g, n = cells["g"], cells["n"]
    if g.size == 0:
        return 0.0
    per = np.bincount(g)
    return float(n[per[g] >= 2].sum() / max(n.sum(), 1e-12))


def _randomized(labels: dict[str, int]) -> list[PropensitySource]:
    """The randomized sources the log's intervention labels offer, in :data:`RANDOMIZED` order."""
    return [PropensitySource("randomized", method,
                             f"the log has {labels[label]:,} rows of '{label}' interventions")
            for label, method in RANDOMIZED if labels.get(label, 0) > 0]  # fmt: skip


def _passive(cells: dict[str, np.ndarray], data: Any, K: int | None, harvest: bool = True,
             none: str = "no randomized interventions") -> PropensitySource:  # fmt: skip
    """The source of a log without (usable) randomization: EM when documents moved enough
    to connect every position to position 1 (``harvest``), else regression EM with
    ``data``, else none; ``none`` says why randomization is not the source."""
    from ._em import identified_positions

    deepest = int(cells["position"].max()) if cells["position"].size else 0
    K = deepest if K is None else min(int(K), deepest)
    share = _multi_position_share(cells)
    ident = identified_positions(cells, K) if K else np.zeros(0, dtype=bool)
    if harvest and K >= 2 and ident.all() and share >= MIN_SHARE:
        return PropensitySource("harvested", "em",
                                f"{none}; {share:.0%} of the impressions "
                                f"are of documents shown at several positions, connecting "
                                f"positions 1-{K}")  # fmt: skip
    loose = np.flatnonzero(~ident) + 1
    moved = f"{share:.1%} of the impressions are of documents shown at several positions" + (
        "" if loose.size == 0 else ", no position connected to position 1"
        if loose.size >= K - 1 else f", positions {', '.join(map(str, loose))} not connected "
        "to position 1")  # fmt: skip
    if data is not None and K >= 2:
        return PropensitySource("model", "regression-em", f"{none} and {moved}")
    why = "no features given for regression EM" if data is None else "one position shown"
    return PropensitySource("none", None, f"{none}, {moved}; {why}")


def choose_source(log: Any, data: Any = None, *, K: int | None = None) -> PropensitySource:
    """The strongest source of propensities the log supports (see the module docstring).

    Parameters
    ----------
    log : polars DataFrame, LazyFrame, parquet path or Spark DataFrame
    data : RankingData, optional
        The documents' features; without them regression EM is not possible.
    K : int, optional
        Positions that must be identified (default: every position in the log).
    """
    return source_and_cells(as_lazy(log), data, K)[0]


def source_and_cells(lf: Any, data: Any, K: int | None) -> tuple[PropensitySource, Any]:
    """:func:`choose_source` and the log's cell statistics it read (None when randomized
    interventions decided it): ``clickrank propensity`` passes them on to :func:`auto`, so
    the log is aggregated once."""
    from ._harvest import cell_statistics

    randomized = _randomized(_log_summary(lf)[0])
    if randomized:
        return randomized[0], None
    cells = cell_statistics(lf)
    return _passive(cells, data, K), cells


def auto(log: Any, *, data: Any = None, K: int | None = None, n_boot: int | None = None,
         seed: int = 0, progress: Any = None, cells: Any = None,
         sensitivity: int | None = None, context: Any = None) -> Propensities:  # fmt: skip
    """Propensities from the strongest source the log supports (:func:`choose_source`).

    A source whose estimator fails (e.g. swaps at too few ranks) gives way to the
    next one, and the reason says so. ``n_boot`` sets the bootstrap replicates of
    EM and regression EM (their defaults when None; 0: point estimates only),
    ``progress`` is called with 1 after each of them. ``cells``: the log's
    :func:`~clickrank.propensity.cell_statistics` when the caller has them
    (:func:`source_and_cells`), so that the log is not aggregated again. ``sensitivity``:
    regression EM's (:func:`~clickrank.propensity.regression_em`; None: its default).
    The result's ``info["source"]`` holds :meth:`PropensitySource.to_dict`.
    ``context``: context columns; the result also holds each context's curve from the
    chosen source (:func:`~clickrank.propensity.estimate_propensities`). The source is
    chosen on the whole log.

    Raises
    ------
    EstimationError
        When the log supports no source (the message says what it holds).
    """
    from ._em import em, em_from_cells
    from ._harvest import cell_statistics
    from ._regression_em import regression_em

    lf = as_lazy(log)
    if context is not None:
        from ._context import PAIR_DESIGNS, by_context, check_context

        check_context(lf, context)  # a missing column is one line before any estimate

    def with_contexts(result: Propensities, method: str, **kw: Any) -> Propensities:
        """``result`` with the contexts' curves of ``method`` (``kw``: its arguments)."""
        if context is None:
            return result
        pooled = None if method in PAIR_DESIGNS else result
        return by_context(lf, context, design=method, pooled=pooled, **kw)

    failed: list[str] = []
    labels, clicks = _log_summary(lf)
    randomized = _randomized(labels)
    need = K if K is not None else clicks.size
    for src in randomized:
        try:  # a design the log holds too little of (swaps at a few ranks) gives way
            result = ESTIMATORS[src.method].function(lf, K=K)
        except (EstimationError, InputError) as err:
            failed.append(f"{src.method} failed: {err}")
            continue
        gap = _unidentified(result, need, clicks)
        if gap is None:
            return _with_source(with_contexts(result, src.method, K=K), src, failed)
        failed.append(f"{src.method} left {gap}")
    boot = {"progress": progress, **({} if n_boot is None else {"n_boot": n_boot})}
    cells = cell_statistics(lf) if cells is None else cells
    none = "the randomized interventions do not identify every position" if failed else (
        "no randomized interventions")  # fmt: skip
    src = _passive(cells, data, K, none=none)
    if src.kind == "harvested":
        try:
            result = em_from_cells(cells, K=K) if n_boot == 0 else em(lf, K=K, seed=seed, **boot)
            gap = _unidentified(result, 0, clicks)
            if gap is None:
                fit = {"K": K, "seed": seed, **boot}
                return _with_source(with_contexts(result, "em", **fit), src, failed)
            failed.append(f"em left {gap}")
        except EstimationError as err:
            failed.append(f"em failed: {err}")
        src = _passive(cells, data, K, harvest=False, none=none)
    if src.kind == "model":
        try:
            rem = {} if sensitivity is None else {"sensitivity": sensitivity}
            result = regression_em(lf, data, K=K, seed=seed, **boot, **rem)
            gap = _unidentified(result, 0, clicks)
            if gap is None:
                fit = {"data": data, "K": K, "seed": seed, **boot, **rem}
                return _with_source(with_contexts(result, "regression-em", **fit), src, failed)
            failed.append(f"regression-em left {gap}")
        except EstimationError as err:
            failed.append(f"regression-em failed: {err}")
    raise EstimationError("auto: no propensity source: " + "; ".join([*failed, src.reason]))


def _unidentified(result: Propensities, need: int, clicks: np.ndarray) -> str | None:
    """Which of the positions ``1..max(need, K)`` an estimate leaves unidentified (None:
    every one is identified, as :func:`~clickrank.propensity.identified` defines it, with
    ``clicks`` the log's clicks by position). ``need``: the positions the log shows (or
    ``K``), which a randomized design may cover only in part (swaps with rank 2 alone)."""
    parts = []
    bad = np.flatnonzero(~identified(result.theta, clicks)) + 1
    if bad.size:
        unclicked = [p for p in bad if p > len(clicks) or clicks[p - 1] == 0]
        why = f" ({UNCLICKED})" if len(unclicked) == bad.size else ""
        parts.append(f"position(s) {', '.join(map(str, bad))} unidentified{why}")
    if result.K < need:
        span = f"{result.K + 1}" if need == result.K + 1 else f"{result.K + 1}-{need}"
        parts.append(f"position(s) {span} uncovered (it estimates 1-{result.K})")
    return " and ".join(parts) or None


def _with_source(result: Propensities, src: PropensitySource, failed: list[str]) -> Propensities:
    from dataclasses import replace

    if failed:
        src = PropensitySource(src.kind, src.method, f"{src.reason} ({'; '.join(failed)})")
    return replace(result, info={**result.info, "source": src.to_dict()})
