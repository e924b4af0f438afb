r"""Click models whose examination depends on the position only: PBM, trust bias, click matrix."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._core._io import read_json
from .._core._validation import DataFormatError, InputError
from ._curves import Linear, PowerLaw, as_curve, evaluate_curve
from ._relevance import Graded, as_relevance_map, evaluate_map
from .base import check_labels, check_probability_array, check_uniforms


class _IndependentClicks:
    """Models whose clicks are independent Bernoulli draws given the shown labels.

    A subclass defines ``_probabilities(labels)``; a click at a cell happens
    when its first uniform falls below that probability. ``independent_clicks``
    lets the simulator draw these clicks without materializing the uniforms.
    """

    independent_clicks = True  # sample(labels, u) == u[..., 0] < click_probabilities

    def click_probabilities(self, labels: np.ndarray) -> np.ndarray:
        return self._probabilities(check_labels(labels))

    def sample(self, labels: np.ndarray, u: np.ndarray) -> np.ndarray:
        labels = check_labels(labels)
        u = check_uniforms(u, labels, self.n_uniforms)
        return u[..., 0] < self._probabilities(labels)


__all__ = ["PBM", "TrustBias", "ClickMatrix", "load_click_matrix"]


@dataclass(frozen=True)
class PBM(_IndependentClicks):
    r"""Position-based model (Richardson et al. (2007); Craswell et al. (2008)).

    Joachims et al. (2017), §5.1, use it to simulate position-biased clicks.

    A document is clicked iff its position is examined and it is attractive;
    the two events are independent:

    .. math::
        P(C = 1 \mid d, p) = \theta_p \, \alpha(d)

    where :math:`\theta_p` is ``examination`` evaluated at position :math:`p`
    and :math:`\alpha(d)` is ``attractiveness`` applied to the label of
    :math:`d`. One uniform per position: click iff :math:`u < \theta_p \alpha(d)`.

    Parameters
    ----------
    examination : curve or array-like, default ``PowerLaw(1.0)``
        :math:`\theta_p` for positions 1..K (a :class:`PowerLaw`,
        :class:`EyeTracking`, explicit probabilities, or a callable ``K -> array``).
    attractiveness : relevance map, default ``Graded(eps=0.1, max_label=4)``
        :math:`\alpha(y)` from the label.
    """

    examination: Any = field(default_factory=PowerLaw)
    attractiveness: Any = field(default_factory=Graded)
    n_uniforms: int = field(default=1, init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "examination", as_curve(self.examination, name="examination"))
        object.__setattr__(
            self, "attractiveness", as_relevance_map(self.attractiveness, name="attractiveness")
        )

    def propensities(self, K: int, *, normalize: bool = False) -> np.ndarray:
        r"""Examination probabilities :math:`\theta_1..\theta_K` (divided by :math:`\theta_1`
        if ``normalize``). Under PBM these are exactly the IPS propensities."""
        theta = evaluate_curve(self.examination, K, name="examination")
        return _normalized(theta) if normalize else theta

    def _probabilities(self, labels: np.ndarray) -> np.ndarray:
        p = evaluate_map(self.attractiveness, labels, name="attractiveness")
        p *= self.propensities(labels.shape[1])
        return p


def _normalized(theta: np.ndarray) -> np.ndarray:
    if theta[0] <= 0:
        raise InputError("cannot normalize propensities: position 1 has probability 0")
    return theta / theta[0]


@dataclass(frozen=True)
class TrustBias(_IndependentClicks):
    r"""Trust-bias model (Agarwal et al. (2019b); Vardasbi et al. (2020b)).

    A document is examined with probability :math:`\theta_p`; it is relevant
    (:math:`R = 1`) with probability :math:`\rho(d)` independently; an examined
    document is clicked with a probability that depends on its relevance *and*
    its position (users trust higher positions):

    .. math::
        P(C = 1 \mid E = 1, R = 1, p) = \epsilon^+_p, \qquad
        P(C = 1 \mid E = 1, R = 0, p) = \epsilon^-_p,

    so :math:`P(C = 1 \mid d, p) = \alpha_p \rho(d) + \beta_p` with the affine
    parameters :math:`\alpha_p = \theta_p(\epsilon^+_p - \epsilon^-_p)` and
    :math:`\beta_p = \theta_p \epsilon^-_p` (Vardasbi et al. (2020b), Eq. 9).

    Parameters
    ----------
    examination : curve or array-like, default ``PowerLaw(1.0)``
        :math:`\theta_p`.
    relevance : relevance map, default ``Graded(eps=0.1, max_label=4)``
        :math:`\rho(y) = P(R = 1 \mid y)`, as in Vardasbi et al. (2020b) and ULTRA.
    eps_plus : curve or array-like, default ``Linear(0.99, -0.01)``
        :math:`\epsilon^+_p = 1 - (p + 1)/100` (Vardasbi et al. (2020b), §6; valid to p = 99).
    eps_minus : curve or array-like, default ``PowerLaw(1.0, scale=0.65)``
        :math:`\epsilon^-_p = 0.65 / p` (same source).
    """

    examination: Any = field(default_factory=PowerLaw)
    relevance: Any = field(default_factory=Graded)
    eps_plus: Any = field(default_factory=lambda: Linear(0.99, -0.01))
    eps_minus: Any = field(default_factory=lambda: PowerLaw(1.0, scale=0.65))
    n_uniforms: int = field(default=1, init=False)

    def __post_init__(self) -> None:
        for name in ("examination", "eps_plus", "eps_minus"):
            object.__setattr__(self, name, as_curve(getattr(self, name), name=name))
        object.__setattr__(self, "relevance", as_relevance_map(self.relevance, name="relevance"))

    def propensities(self, K: int, *, normalize: bool = False) -> np.ndarray:
        r"""Examination probabilities :math:`\theta_1..\theta_K`.

        .. note:: Under trust bias dividing clicks by :math:`\theta_p` is *not*
           unbiased; use :meth:`affine_parameters` (Vardasbi et al. (2020b)).
        """
        theta = evaluate_curve(self.examination, K, name="examination")
        return _normalized(theta) if normalize else theta

    def affine_parameters(self, K: int) -> tuple[np.ndarray, np.ndarray]:
        r"""Affine parameters ``(alpha, beta)``, each ``[K]``.

        :math:`P(C = 1 \mid d, p) = \alpha_p \rho(d) + \beta_p` with
        :math:`\alpha_p = \theta_p(\epsilon^+_p - \epsilon^-_p)`,
        :math:`\beta_p = \theta_p \epsilon^-_p`.
        """
        theta = self.propensities(K)
        plus = evaluate_curve(self.eps_plus, K, name="eps_plus")
        minus = evaluate_curve(self.eps_minus, K, name="eps_minus")
        return theta * (plus - minus), theta * minus

    def _probabilities(self, labels: np.ndarray) -> np.ndarray:
        rho = evaluate_map(self.relevance, labels, name="relevance")
        alpha, beta = self.affine_parameters(labels.shape[1])
        p = rho * alpha
        p += beta
        nan = np.isnan(labels)
        if nan.any():
            p[nan] = 0.0
        return p


@dataclass(frozen=True, eq=False)
class ClickMatrix(_IndependentClicks):
    r"""Click probabilities read from a table :math:`P(C = 1 \mid y, p) = M_{y, p}`.

    ULTRA's ``ClickMatrixModel`` (Chen et al. (2022)) uses
    the matrix estimated on TianGong-ST (Chen et al. (2019)); load it with
    :func:`load_click_matrix`. Labels must be whole grades ``0..n_grades-1``
    (negative labels count as grade 0, as in ULTRA); positions beyond the
    matrix raise :class:`~clickrank.InputError`. The model has no separate
    examination curve, so no position-only propensity.

    Parameters
    ----------
    matrix : array-like ``[n_grades, n_positions]``
        :math:`M_{y, p}` in [0, 1]; row = grade, column = position - 1.
    """

    matrix: Any
    n_uniforms: int = field(default=1, init=False)

    def __post_init__(self) -> None:
        m = check_probability_array(self.matrix, name="click matrix")
        if m.ndim != 2:
            raise InputError(f"click matrix must be 2-d [grades, positions], got shape {m.shape}")
        m = m.copy()
        m.flags.writeable = False
        object.__setattr__(self, "matrix", m)

    def _probabilities(self, labels: np.ndarray) -> np.ndarray:
        n_grades, n_pos = self.matrix.shape
        K = labels.shape[1]
        if K > n_pos:
            raise InputError(f"the click matrix covers {n_pos} positions, the lists have {K}")
        nan = np.isnan(labels)
        grade = np.where(nan, 0.0, np.maximum(labels, 0.0))
        if np.any(grade != np.floor(grade)) or (grade.size and grade.max() > n_grades - 1):
            raise InputError(
                f"the click matrix needs whole labels in 0..{n_grades - 1}; "
                f"found labels in [{np.nanmin(labels):g}, {np.nanmax(labels):g}]"
            )
        p = self.matrix[grade.astype(np.intp), np.arange(K)]
        p[nan] = 0.0
        return p


def load_click_matrix(path: str | Path) -> ClickMatrix:
    """Read a click matrix in ULTRA's JSON format (``{"click_prob": [[...], ...]}``).

    ``click_prob[y][k]`` is P(click | grade y, rank k + 1), e.g. ULTRA's
    ``click_matrix_tiangong.json``.

    Raises
    ------
    DataFormatError
        If the file is not JSON or lacks a rectangular ``click_prob`` of probabilities.
    """
    path = Path(path)
    desc = read_json(path)  # UTF-8 JSON; errors name the file, line and encoding
    if not isinstance(desc, dict) or "click_prob" not in desc:
        raise DataFormatError("expected a JSON object with key 'click_prob'", path=path)
    rows = desc["click_prob"]
    if (
        not isinstance(rows, list)
        or not rows
        or not all(isinstance(r, list) and len(r) == len(rows[0]) > 0 for r in rows)
    ):
        raise DataFormatError(
            "'click_prob' must be a non-empty list of equally long lists",
            path=path,
            column="click_prob",
        )
    try:
        return ClickMatrix(rows)
    except InputError as exc:
        raise DataFormatError(str(exc), path=path, column="click_prob") from None
