"""The report of a fitted default learner: the selection table, ``summary`` and ``to_dict``."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from .bounds import Comparison, paired_bound

__all__ = ["SelectionReport", "save_selection", "selection_table"]


def selection_table(candidates: list[str], terms: dict[str, np.ndarray],
                    every: dict[str, np.ndarray], shapes: dict[str, dict], best: str,
                    choice: str, excluded: dict[str, float], vs_safe: dict[str, Comparison],
                    n_sessions: float, confidence: float) -> pl.DataFrame:  # fmt: skip
    """One row per candidate: its score and SE, the paired gain over the best and over
    the safe ranker with its bound, the score over every document, its tree shape and
    number of trees, and whether it was chosen or excluded.

    ``shapes``: candidate -> its ``best_params_`` (at least ``n_estimators``).
    """
    rows = []
    for m in candidates:
        shape = shapes[m]
        vb = Comparison.of(m, best, terms[m], terms[best], n_sessions, confidence)
        vs = vs_safe.get(m)
        rows.append({
            "member": m, "score": terms[m].sum() / n_sessions,
            "se": paired_bound(terms[m], confidence, per=n_sessions).se,
            "vs_best": vb.gain, "vs_best_se": vb.se,
            "vs_safe": None if vs is None else vs.gain,
            "vs_safe_lower": None if vs is None else vs.lower,
            "score_all": float(every[m].sum() / n_sessions) if m in every else None,
            "num_leaves": shape.get("num_leaves"),
            "max_depth": shape.get("max_depth"),
            "trees": shape["n_estimators"],
            "chosen": m == choice,
            "excluded": m in excluded,
        })  # fmt: skip
    return pl.DataFrame(rows)


@dataclass(frozen=True)
class SelectionReport:
    """What a fitted :class:`~clickrank.training.learner.ClickRanker` chose and why.

    Built from the learner's attributes (:meth:`of`), so a learner pickled before the
    report existed reports too.

    Attributes
    ----------
    table : polars.DataFrame
        :func:`selection_table`.
    choice, selected, reason : str
        The offered candidate, the one the rule selected and the choice in one line.
    averaged : list of str
        The members in the average.
    raced, excluded : dict
        Members raced out after their first fold, and every member excluded, -> their
        relative loss.
    shape : dict or None
        The tree shape the later members fitted (``ClickRanker.shape_``).
    safety : dict
        The offered candidate's comparisons (:class:`~clickrank.training.safety.SafetyCheck`
        ``record``).
    source : PropensitySource
        Where the propensities came from.
    theta : array-like or None
        The propensities.
    validation : ClickValidation
        The estimate the candidates were compared on.
    members : dict
        Member -> its fitted :class:`~clickrank.selection.LambdaMARTCV`.
    has_average : bool
        Whether the members' average was a candidate.
    cost : dict
        ``fits`` and ``rounds``.
    params : dict
        The learner's parameters.
    model : ranker
        The offered ranker.
    """

    table: pl.DataFrame
    choice: str
    selected: str
    reason: str
    averaged: list[str]
    raced: dict[str, float]
    excluded: dict[str, float]
    shape: dict[str, Any] | None
    safety: dict[str, Any]
    source: Any
    theta: Any
    validation: Any
    members: dict[str, Any]
    has_average: bool
    cost: dict[str, int]
    params: dict[str, Any]
    model: Any

    @classmethod
    def of(cls, ranker: Any) -> SelectionReport:
        """The report of a fitted learner."""
        return cls(
            table=ranker.table_, choice=ranker.choice_, selected=ranker.selected_,
            reason=ranker.reason_, averaged=list(ranker.averaged_), raced=dict(ranker.raced_),
            excluded=dict(ranker.excluded_), shape=ranker.shape_,
            safety=ranker.safety_,
            source=ranker.propensity_source_, theta=ranker.propensities_,
            validation=ranker.validation_, members=ranker.members_,
            has_average=ranker.average_ is not None, cost=dict(ranker.cost_),
            params=ranker.get_params(), model=ranker.model_,
        )  # fmt: skip

    @property
    def k(self) -> int:
        """The cut-off of the estimate."""
        return int(self.params["eval_at"])

    def _heading(self) -> list[str]:
        val, first = self.validation, next(iter(self.members.values()))
        reps = first.repeats
        return [
            f"ClickRanker: {len(self.table) - self.has_average} targets"
            + (" and their average" if self.has_average else "")
            + f" x {self.params['folds']}-fold CV by query"
            + (f" x {reps} repeats" if reps > 1 else "")
            + ("" if first.refit else ", fold models averaged")
            + f", each scored on {val.metric_name(self.k)} of its out-of-fold rankings "
            f"({val.data.n_queries} queries, {val.n_sessions:,.0f} sessions)",
            f"  {'target':<20} {'score':>9} {'± SE':>8} {'− best':>9} {'± SE':>8} "
            f"{'− ' + self.safety['safe']:>10} {'lower':>9} {'shape':>8} {'trees':>5}",
        ]

    def _row(self, r: dict[str, Any]) -> str:
        vs = "" if r["vs_safe"] is None else f"{r['vs_safe']:+.4f}"
        lo = "" if r["vs_safe_lower"] is None else f"{r['vs_safe_lower']:+.4f}"
        shape = "" if r["num_leaves"] is None else f"{r['num_leaves']}/{r['max_depth']}"
        mark = "  <- chosen" if r["chosen"] else (
            "  (selected)" if r["member"] == self.selected else "")  # fmt: skip
        if r["excluded"]:
            loss = self.excluded[r["member"]]
            mark += f"  (excluded: {loss:.0%} below the best over all documents)"
        return (f"  {r['member']:<20} {r['score']:>9.4f} {r['se']:>8.4f} "
                f"{r['vs_best']:>+9.4f} {r['vs_best_se']:>8.4f} {vs:>10} {lo:>9} {shape:>8} "
                f"{r['trees']:>5}{mark}")  # fmt: skip

    def summary(self) -> str:
        """The selection table, the safety check and the choice."""
        lines = self._heading() + [self._row(r) for r in self.table.iter_rows(named=True)]
        for m, loss in self.raced.items():
            lines.append(f"  {m:<20} raced out after its first fold: {loss:.0%} below the "
                         "best member over all documents there (excluded)")  # fmt: skip
        if self.shape is not None:
            lines.append(f"  one tree shape ({self.shape['num_leaves']} leaves, depth "
                         f"{self.shape['max_depth']}) for the later members: the best of the "
                         "first corrected member's first fold")  # fmt: skip
        lines.append(f"  safety ({self.params['confidence']:.0%} one-sided, queries as the unit):")
        for key in ("vs_safe", "vs_logged", "vs_naive"):
            c = self.safety.get(key)
            if c is not None and not (key == "vs_naive" and self.safety["safe"] == "naive"):
                lines.append(f"    {c.line()}")  # naive as the safe ranker: said once
        lines.append(f"  {self.source.line()}")
        lines.append(f"  cost: {self.cost['fits']} LightGBM fits, {self.cost['rounds']:,} "
                     "boosting rounds (one fit of 100 trees: 100)")  # fmt: skip
        lines.append(f"  choice: {self.choice} ({self.reason})")
        if hasattr(self.model, "summary"):
            lines.append(self.model.summary())
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The selection and safety record (``selection.json``)."""
        return {
            "format": "clickrank-clickranker", "version": 1,
            "choice": self.choice, "selected": self.selected, "reason": self.reason,
            "averaged": list(self.averaged), "raced": dict(self.raced), "shape": self.shape,
            "propensities": {**self.source.to_dict(),
                             "theta": None if self.theta is None
                             else np.asarray(self.theta, dtype=float).tolist()},
            "metric": self.validation.metric_name(self.k),
            "cost": dict(self.cost),
            "table": self.table.to_dicts(),
            "safety": {k: (v.to_dict() if isinstance(v, Comparison) else v)
                       for k, v in self.safety.items()},
            "members": {m: {"best_params": cv.best_params_, "refit": bool(cv.refit),
                            "cv_results": cv.cv_results_.to_dicts()}
                        for m, cv in self.members.items()},
            "params": dict(self.params),
        }  # fmt: skip


def save_selection(model: Any, record: dict[str, Any], path: str | os.PathLike, *,
                   overwrite: bool = False) -> Path:  # fmt: skip
    """Save the offered ``model`` and the selection ``record`` as ``selection.json``.

    When the logging ranker is kept, its model is written (if it can save itself, as a
    :class:`~clickrank.lambdamart.LambdaMART` can), so the folder always holds the ranker
    to deploy; ``selection.json`` says which. Returns the folder.
    """
    from .._core._io import atomic_write_json

    out = Path(path)
    if hasattr(model, "save"):  # a member, or a logging LambdaMART that was kept
        out = model.save(out, overwrite=overwrite)
    else:
        out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / "selection.json", json.loads(json.dumps(record, default=float)))
    return out
