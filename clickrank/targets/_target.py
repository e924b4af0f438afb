"""The :class:`Target` result type: gains or preference pairs aligned to a data set's rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import InputError
from ..datasets import RankingData

__all__ = ["Target"]

@dataclass(frozen=True, eq=False)  # array fields: identity equality
class Target:
    """What LambdaMART fits: gains or preference pairs aligned to a data set's rows.

    Attributes
    ----------
    name : str
        ``"oracle"``, ``"naive"``, ``"ips"``, ``"skip-above"`` or a custom name.
    gains : numpy.ndarray or None
        float64 ``[n_docs]`` non-negative per-document gains (listwise
        targets); None for pairwise targets.
    candidates : numpy.ndarray or None
        bool ``[n_docs]``: documents that take part in their query's list.
        None means every document.
    pairs : numpy.ndarray or None
        int64 ``[n_pairs, 2]`` global row indices ``(preferred, other)`` of one
        query each (pairwise targets).
    pair_weights : numpy.ndarray or None
        float64 ``[n_pairs]`` non-negative weights (aggregated counts).
    doc_weights : numpy.ndarray or None
        float64 ``[n_docs]`` non-negative per-document weights of a gains
        target: a LambdaRank pair counts :math:`m_i m_j` times (never-shown
        documents as weak negatives, ``candidates="hybrid"``). None: all 1.
    metadata : dict
        How the target was built (log size, clipping, ...), for reports.
    """

    name: str
    gains: np.ndarray | None = None
    candidates: np.ndarray | None = None
    pairs: np.ndarray | None = None
    pair_weights: np.ndarray | None = None
    doc_weights: np.ndarray | None = None
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if (self.gains is None) == (self.pairs is None):
            raise InputError("a Target holds either gains or preference pairs (exactly one)")
        if self.gains is not None:
            g = np.ascontiguousarray(self.gains, dtype=np.float64)
            if g.ndim != 1:
                raise InputError(f"gains must be 1-d, got shape {g.shape}")
            if not np.all(np.isfinite(g)) or np.any(g < 0):
                raise InputError("gains must be finite and non-negative")
            object.__setattr__(self, "gains", g)
        if self.pairs is not None:
            p = np.asarray(self.pairs)
            p = p.reshape(0, 2) if p.size == 0 else p
            if p.ndim != 2 or p.shape[1] != 2:
                raise InputError(f"pairs must have shape [n_pairs, 2], got {p.shape}")
            object.__setattr__(self, "pairs", p.astype(np.int64))
            w = (
                np.ones(len(p))
                if self.pair_weights is None
                else np.asarray(self.pair_weights, float)
            )
            if w.shape != (len(p),) or not np.all(np.isfinite(w)) or np.any(w < 0):
                raise InputError("pair_weights must be finite, non-negative, one per pair")
            object.__setattr__(self, "pair_weights", w)
        if self.candidates is not None:
            c = np.asarray(self.candidates)
            if c.dtype != bool or c.ndim != 1:
                raise InputError("candidates must be a 1-d boolean mask")
        if self.doc_weights is not None:
            if self.gains is None:
                raise InputError("doc_weights apply to gain targets only")
            w = np.ascontiguousarray(self.doc_weights, dtype=np.float64)
            if w.shape != self.gains.shape or not np.all(np.isfinite(w)) or np.any(w < 0):
                raise InputError("doc_weights must be finite, non-negative, one per document")
            object.__setattr__(self, "doc_weights", w)

    @property
    def kind(self) -> str:
        """``"gains"`` (listwise) or ``"pairs"`` (pairwise)."""
        return "gains" if self.gains is not None else "pairs"

    @property
    def n_candidates(self) -> int | None:
        """Number of candidate documents (None if every document is a candidate)."""
        return None if self.candidates is None else int(self.candidates.sum())

    def check_aligned(self, data: RankingData) -> None:
        """Raise :class:`InputError` unless the target fits ``data``'s rows."""
        n = data.n_docs
        if self.gains is not None and self.gains.shape[0] != n:
            raise InputError(
                f"target {self.name!r} has {self.gains.shape[0]} gains, data has {n} rows"
            )
        if self.candidates is not None and self.candidates.shape[0] != n:
            raise InputError(
                f"target {self.name!r} candidate mask has {self.candidates.shape[0]} rows, data {n}"
            )
        if self.pairs is not None and self.pairs.size:
            if self.pairs.min() < 0 or self.pairs.max() >= n:
                raise InputError(
                    f"target {self.name!r} pairs index rows outside the data (0..{n - 1})"
                )
            q = data.query_index
            if np.any(q[self.pairs[:, 0]] != q[self.pairs[:, 1]]):
                raise InputError(f"target {self.name!r} has pairs across queries")

    def summary(self) -> str:
        """A short readable description."""
        lines = [f"Target {self.name!r} ({self.kind})"]
        if self.gains is not None:
            g = self.gains if self.candidates is None else self.gains[self.candidates]
            mean, top = (g.mean(), g.max()) if g.size else (float("nan"), float("nan"))
            lines.append(
                f"  gains: {g.size} docs, {int((g > 0).sum())} with gain > 0, "
                f"mean {mean:.4g}, max {top:.4g}"
            )
        else:
            lines.append(f"  pairs: {len(self.pairs)} (total weight {self.pair_weights.sum():.4g})")
        cand = (
            "all documents" if self.candidates is None else f"{self.n_candidates} documents shown"
        )
        lines.append(f"  candidates: {cand}")
        for k, v in self.metadata.items():
            lines.append(f"  {k}: {v}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        size = (
            f"{self.gains.shape[0]} gains" if self.gains is not None else f"{len(self.pairs)} pairs"
        )
        return f"Target(name={self.name!r}, {size}, candidates={self.n_candidates})"
