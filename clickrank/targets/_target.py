"""The :class:`Target` result type: gains, preference pairs or session lists aligned to a data
set's rows, and :class:`SessionLists`, the logged sessions of session-level pairwise targets."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .._core._segments import gather, segment_ids
from .._core._validation import InputError, check_choice
from ..datasets import RankingData

__all__ = ["Target", "SessionLists"]


def _array(values: Any, dtype: Any, name: str) -> np.ndarray:
    arr = np.ascontiguousarray(values, dtype=dtype)
    if arr.ndim != 1:
        raise InputError(f"{name} must be 1-d, got shape {arr.shape}")
    return arr


@dataclass(frozen=True, eq=False)  # array fields: identity equality
class SessionLists:
    r"""Distinct logged sessions as lists of data rows in logged order, with a count each.

    Session ``u`` holds entries ``sptr[u]:sptr[u + 1]``: the data row shown,
    its 1-based logged position and whether it was clicked; ``counts[u]``
    logged sessions had exactly this list and these clicks. This is what the
    session-level pairwise loss of Unbiased LambdaMART
    (:func:`clickrank.targets.unbiased_lambdamart`,
    :func:`clickrank.lambdas.session_lambdas`) reads.

    Attributes
    ----------
    rows : numpy.ndarray
        int64 ``[n]``: data row of every entry (rows of one query per session).
    sptr : numpy.ndarray
        int64 ``[n_sessions + 1]``: session offsets into the entries.
    positions : numpy.ndarray
        int32 ``[n]``: 1-based logged position of every entry.
    clicks : numpy.ndarray
        bool ``[n]``.
    counts : numpy.ndarray
        float64 ``[n_sessions]``: multiplicity (> 0) of every distinct session.
    n_positions : int
        Number of positions ``K`` whose biases :math:`t^+_k, t^-_k` are
        estimated; pairs with an entry at a position beyond ``K`` get
        unscaled gradients and do not update the biases.
    bias_norm : float
        The :math:`p` of the :math:`L_p` regularisation of the biases
        (XGBoost's ``lambdarank_bias_norm``): :math:`t_k = (l_k/l_1)^{1/(1+p)}`.
    cost : {"ranknet", "xgboost"}
        Pair cost accumulated for the bias update: the paper's RankNet loss
        :math:`\log(1 + e^{-\sigma(s_i - s_j)})` (default) or XGBoost's
        :math:`\log(1 + e^{s_i - s_j})` (for comparison only).
    context_block : int, optional
        With biases per context: the ranks per context. An entry of context :math:`c`
        at rank :math:`k` has position :math:`c \cdot` ``context_block`` :math:`+ k`,
        and each context's biases are relative to its own first rank.
    """

    rows: np.ndarray
    sptr: np.ndarray
    positions: np.ndarray
    clicks: np.ndarray
    counts: np.ndarray
    n_positions: int
    bias_norm: float = 1.0
    cost: str = "ranknet"
    context_block: int | None = None

    def __post_init__(self) -> None:
        rows = _array(self.rows, np.int64, "rows")
        sptr = _array(self.sptr, np.int64, "sptr")
        pos = _array(self.positions, np.int32, "positions")
        clicks = np.asarray(self.clicks)
        if clicks.dtype != bool or clicks.ndim != 1:
            raise InputError("clicks must be a 1-d boolean array")
        counts = _array(self.counts, np.float64, "counts")
        n = rows.shape[0]
        if sptr.size < 1 or sptr[0] != 0 or sptr[-1] != n or np.any(np.diff(sptr) < 1):
            raise InputError(
                f"sptr must run from 0 to {n} (the number of entries), "
                "increasing (no empty session)"
            )
        if pos.shape[0] != n or clicks.shape[0] != n:
            raise InputError(f"positions and clicks need one value per entry ({n})")
        if counts.shape[0] != sptr.size - 1:
            raise InputError(
                f"counts needs one value per session ({sptr.size - 1}), got {counts.shape[0]}"
            )
        if n and (rows.min() < 0 or pos.min() < 1):
            raise InputError("rows must be >= 0 and positions 1-based (>= 1)")
        if not np.all(np.isfinite(counts)) or np.any(counts <= 0):
            raise InputError("counts must be finite and > 0")
        if isinstance(self.n_positions, bool) or int(self.n_positions) < 1:
            raise InputError(f"n_positions must be an integer >= 1, got {self.n_positions!r}")
        if not np.isfinite(self.bias_norm) or float(self.bias_norm) < 0:
            raise InputError(f"bias_norm must be finite and >= 0, got {self.bias_norm!r}")
        check_choice(self.cost, ("ranknet", "xgboost"), name="cost")
        block = self.context_block
        if block is not None and (
            isinstance(block, bool) or int(block) < 1 or int(self.n_positions) % int(block)
        ):
            raise InputError(
                f"context_block must be a positive divisor of n_positions "
                f"({self.n_positions}), got {block!r}"
            )
        for name, value in (("rows", rows), ("sptr", sptr), ("positions", pos), ("counts", counts)):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "n_positions", int(self.n_positions))
        object.__setattr__(self, "bias_norm", float(self.bias_norm))

    @property
    def n_sessions(self) -> int:
        """Number of distinct sessions."""
        return int(self.sptr.shape[0] - 1)

    @property
    def n_logged(self) -> float:
        """Number of logged sessions they stand for (the sum of the counts)."""
        return float(self.counts.sum())

    def remap(self, new_row: np.ndarray) -> SessionLists:
        """Entries with rows mapped by ``new_row[old_row]``; entries mapped to -1 are dropped.

        Sessions left without an entry are dropped with their counts. Used to
        align the sessions to a subset of a data set's rows.
        """
        mapped = np.asarray(new_row, dtype=np.int64)[self.rows]
        keep = mapped >= 0
        owner = segment_ids(self.sptr)[keep]
        per = np.bincount(owner, minlength=self.n_sessions)
        alive = per > 0
        sptr = np.concatenate([[0], np.cumsum(per[alive])]).astype(np.int64)
        return replace(
            self,
            rows=mapped[keep],
            sptr=sptr,
            positions=self.positions[keep],
            clicks=self.clicks[keep],
            counts=self.counts[alive],
        )


@dataclass(frozen=True, eq=False)  # array fields: identity equality
class Target:
    """What LambdaMART fits: gains, preference pairs or session lists aligned to a data set's rows.

    Attributes
    ----------
    name : str
        ``"oracle"``, ``"naive"``, ``"ips"``, ``"skip-above"``,
        ``"unbiased-lambdamart"``, ``"prs-pairs"``, ``"ips-pairs"`` or a custom name.
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
    sessions : SessionLists or None
        The logged sessions (session-level pairwise targets such as
        :func:`~clickrank.targets.unbiased_lambdamart`, whose pairs and
        weights change with the model during training).
    metadata : dict
        How the target was built (log size, clipping, ...), for reports.
    """

    name: str
    gains: np.ndarray | None = None
    candidates: np.ndarray | None = None
    pairs: np.ndarray | None = None
    pair_weights: np.ndarray | None = None
    doc_weights: np.ndarray | None = None
    sessions: SessionLists | None = None
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        held = [x is not None for x in (self.gains, self.pairs, self.sessions)]
        if sum(held) != 1:
            raise InputError(
                "a Target holds gains, preference pairs or session lists (exactly one)"
            )
        if self.sessions is not None and not isinstance(self.sessions, SessionLists):
            raise InputError(f"sessions must be a SessionLists, got {type(self.sessions).__name__}")
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
        """``"gains"`` (listwise), ``"pairs"`` (pairwise) or ``"sessions"`` (session lists)."""
        if self.gains is not None:
            return "gains"
        return "pairs" if self.pairs is not None else "sessions"

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
        s = self.sessions
        if s is not None and s.rows.size:
            if s.rows.max() >= n:
                raise InputError(
                    f"target {self.name!r} sessions index rows outside the data (0..{n - 1})"
                )
            q = data.query_index[s.rows]
            if np.any(q != q[s.sptr[:-1]][segment_ids(s.sptr)]):
                raise InputError(f"target {self.name!r} has a session across queries")

    def subset(self, data: RankingData, queries: Any) -> Target:
        """The target restricted to some queries, aligned to ``data.subset(queries)``.

        Parameters
        ----------
        data : RankingData
            The data the target is aligned to.
        queries : array of int
            Distinct query indices (0-based positions, not ids), in the order
            ``data.subset`` will use.

        Returns
        -------
        Target
            Gains and candidates gathered, pairs and sessions of the other
            queries dropped and the rest renumbered to the subset's rows; the
            same name and metadata (plus ``subset_queries``).
        """
        self.check_aligned(data)
        q = np.asarray(queries).reshape(-1)
        if q.size and q.dtype.kind not in "iu":
            raise InputError(f"queries must be integer query indices, got dtype {q.dtype}")
        q = q.astype(np.int64)
        if q.size and (q.min() < 0 or q.max() >= data.n_queries):
            raise InputError(f"queries must lie in [0, {data.n_queries}), got {q.min()}..{q.max()}")
        if np.unique(q).size != q.size:
            raise InputError(
                "queries must be distinct (a repeated query would repeat its pairs and sessions)"
            )
        rows, _ = gather(data.qptr, q)
        new_row = np.full(data.n_docs, -1, dtype=np.int64)
        new_row[rows] = np.arange(rows.size)
        pairs = weights = None
        if self.pairs is not None:
            mapped = new_row[self.pairs]
            keep = mapped[:, 0] >= 0  # both rows of a pair belong to one query
            pairs, weights = mapped[keep], self.pair_weights[keep]
            order = np.lexsort((pairs[:, 1], pairs[:, 0]))
            pairs, weights = pairs[order], weights[order]
        return replace(
            self,
            gains=None if self.gains is None else self.gains[rows],
            candidates=None if self.candidates is None else self.candidates[rows],
            pairs=pairs,
            pair_weights=weights,
            sessions=None if self.sessions is None else self.sessions.remap(new_row),
            doc_weights=None if self.doc_weights is None else self.doc_weights[rows],
            metadata={**self.metadata, "subset_queries": int(q.size)},
        )

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
        elif self.pairs is not None:
            lines.append(f"  pairs: {len(self.pairs)} (total weight {self.pair_weights.sum():.4g})")
        else:
            s = self.sessions
            lines.append(
                f"  sessions: {s.n_sessions} distinct lists standing for "
                f"{s.n_logged:.0f} logged sessions, {s.rows.size} entries, "
                f"{s.n_positions} positions with biases"
            )
        meta = dict(self.metadata)
        rule = meta.pop("candidates_rule", None)
        named = meta.pop("candidates", None)
        n = "all documents" if self.candidates is None else f"{self.n_candidates} documents"
        lines.append(f"  candidates: {n}" + (f" ({named})" if named else "")
                     + (f"; {rule}" if rule else ""))  # fmt: skip
        for k, v in meta.items():
            lines.append(f"  {k}: {v:.4g}" if isinstance(v, float) else f"  {k}: {v}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        if self.gains is not None:
            size = f"{self.gains.shape[0]} gains"
        elif self.pairs is not None:
            size = f"{len(self.pairs)} pairs"
        else:
            size = f"{self.sessions.n_sessions} sessions"
        return f"Target(name={self.name!r}, {size}, candidates={self.n_candidates})"
