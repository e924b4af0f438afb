r"""The paired one-sided bound every comparison of the learner uses.

Two rankers scored on the same queries give per-query differences :math:`d_q`; their
mean has a one-sided lower bound at ``confidence`` from Student's :math:`t` with the
queries as the unit. :class:`~clickrank.training.report.Comparison` (a member against the
safe ranker), the members' first-fold race and the tree shapes' race
(:class:`clickrank.selection.LambdaMARTCV` ``racing``) all call :func:`paired_bound`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as st

__all__ = ["Comparison", "PairedBound", "paired_bound"]


@dataclass(frozen=True)
class PairedBound:
    """A paired mean with its standard error and one-sided lower bound.

    Attributes
    ----------
    gain : float
        The mean difference (per query, or per session with ``per``).
    se : float
        Its standard error.
    lower : float
        ``gain`` less the ``confidence`` quantile of :math:`t_{n-1}` times ``se``.
    n : int
        The queries (the number of differences).
    """

    gain: float
    se: float
    lower: float
    n: int


def paired_bound(d: np.ndarray, confidence: float, per: float | None = None) -> PairedBound:
    r"""One-sided ``confidence`` lower bound of the mean of the paired differences ``d``.

    Parameters
    ----------
    d : array-like
        Per-query differences of two rankers' scores on the same queries.
    confidence : float
        Level of the one-sided bound (Student's :math:`t` with ``n - 1`` degrees of
        freedom, at least one).
    per : float, optional
        Divide the sum by this (sessions: a gain per session, its standard error that of
        a sum, :math:`\sqrt n\, s / N`) instead of taking the mean per query (the races).

    Returns
    -------
    PairedBound
        With ``per``: one query gives an infinite standard error, and a zero standard
        error a bound equal to the gain.
    """
    d = np.asarray(d, dtype=np.float64)
    n = d.size
    q = float(st.t.ppf(confidence, max(n - 1, 1)))
    if per is None:
        gain, sd = d.mean(), d.std(ddof=1)
        return PairedBound(float(gain), float(sd / np.sqrt(n)),
                           float(gain - q * sd / np.sqrt(n)), n)  # fmt: skip
    gain = float(d.sum() / per)
    se = float(np.sqrt(n) * d.std(ddof=1) / per) if n > 1 else float("inf")
    lower = gain - q * se if se > 0 else gain
    return PairedBound(gain, se, float(lower), n)


@dataclass(frozen=True)
class Comparison:
    """A paired counterfactual comparison of two rankers over the same queries.

    ``gain`` is the mean difference of counterfactual DCG@k per session
    (``a`` minus ``b``), ``se`` its standard error with queries as the unit,
    ``lower`` the one-sided lower bound at ``confidence`` (t quantile):
    :func:`paired_bound` with ``per`` the sessions.
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
        """Ranker ``a`` (per-query terms ``ta``) against ``b`` (``tb``)."""
        d = np.asarray(ta, dtype=np.float64) - np.asarray(tb, dtype=np.float64)
        bound = paired_bound(d, confidence, per=n_sessions)
        return cls(a, b, bound.gain, bound.se, bound.lower, confidence, bound.n)

    @property
    def relative(self) -> str:
        """The gain and its standard error in a few characters."""
        return f"{self.gain:+.4g} ± {self.se:.2g}"

    def line(self) -> str:
        """The comparison in one line."""
        sure = "above" if self.lower > 0 else "not above"
        return (f"{self.a} over {self.b}: {self.gain:+.4g} (SE {self.se:.2g}); "
                f"{self.confidence:.0%} lower bound {self.lower:+.4g}, {sure} 0")  # fmt: skip

    def to_dict(self) -> dict:
        """The fields, as a dict."""
        return dict(self.__dict__)
