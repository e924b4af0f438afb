r"""Position curves: examination probabilities and other per-position parameters.

A curve is a small frozen object; calling it with ``K`` returns the values for
positions ``1..K`` as a float64 array. Models store curves rather than arrays
so that one model serves lists of any length.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core._validation import InputError, check_non_negative, check_positive, check_probability
from .base import check_probability_array

__all__ = [
    "EYE_TRACKING_THETA",
    "PowerLaw",
    "EyeTracking",
    "Linear",
    "Explicit",
    "Constant",
    "power_law",
    "eye_tracking",
    "as_curve",
]

#: Examination probabilities of ranks 1..10 from eye-tracking studies, as used
#: by ULTRA's ``PositionBiasedModel`` (Ai et al. (2018); Joachims et al. (2005)).
EYE_TRACKING_THETA = (0.68, 0.61, 0.48, 0.34, 0.28, 0.20, 0.11, 0.10, 0.08, 0.06)


def _check_k(K: Any) -> int:
    return int(check_positive(K, name="K", integer=True))


def _finish(values: np.ndarray, what: str) -> np.ndarray:
    bad = ~((values >= 0.0) & (values <= 1.0))
    if bad.any():
        p = int(np.flatnonzero(bad)[0]) + 1
        raise InputError(
            f"{what} gives {float(values[p - 1]):g} at position {p}, outside [0, 1]; "
            "use fewer positions or other parameters"
        )
    return values


@dataclass(frozen=True)
class PowerLaw:
    r"""Power-law curve :math:`\theta_p = c \, (1/p)^{\eta}` (Joachims et al. (2017), §6).

    Parameters
    ----------
    eta : float, default 1.0
        Severity :math:`\eta \ge 0` (0 = no position bias).
    scale : float, default 1.0
        Value :math:`c` at position 1, in [0, 1].
    """

    eta: float = 1.0
    scale: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "eta", float(check_non_negative(self.eta, name="eta")))
        s = check_non_negative(self.scale, name="scale")
        if s > 1:
            raise InputError(f"scale must be in [0, 1], got {self.scale!r}")
        object.__setattr__(self, "scale", float(s))

    def __call__(self, K: int) -> np.ndarray:
        p = np.arange(1, _check_k(K) + 1, dtype=np.float64)
        return self.scale * p ** (-self.eta)


@dataclass(frozen=True)
class EyeTracking:
    r"""Eye-tracking curve :math:`\theta_p = \theta^{\mathrm{eye}}_p{}^{\eta}`, ranks 1..10.

    :math:`\theta^{\mathrm{eye}} = (.68, .61, .48, .34, .28, .20, .11, .10, .08, .06)`,
    the raw (not normalized) values ULTRA raises to the power :math:`\eta`
    (Ai et al. (2018), "Unbiased Learning to Rank with Unbiased Propensity
    Estimation"; ULTRA's ``PositionBiasedModel``). Position 1 is therefore
    examined with probability :math:`0.68^\eta`, not 1.

    .. note:: The curve was measured for ten ranks only. Asking for ``K > 10``
       raises :class:`~clickrank.InputError` instead of inventing values (ULTRA
       silently repeats 0.06); use :class:`PowerLaw` or :class:`Explicit`.
    """

    eta: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "eta", float(check_non_negative(self.eta, name="eta")))

    def __call__(self, K: int) -> np.ndarray:
        K = _check_k(K)
        if K > len(EYE_TRACKING_THETA):
            raise InputError(
                f"the eye-tracking curve covers ranks 1..{len(EYE_TRACKING_THETA)}, "
                f"but {K} positions were requested; use a power law or an explicit curve"
            )
        return np.asarray(EYE_TRACKING_THETA[:K], dtype=np.float64) ** self.eta


@dataclass(frozen=True)
class Linear:
    r"""Linear curve :math:`v_p = a + b\,p`, validated in [0, 1] at every requested position.

    Vardasbi et al. (2020b) simulate trust bias with :math:`\epsilon^+_p = 1 - (p + 1)/100`,
    which is ``Linear(0.99, -0.01)``.
    """

    intercept: float
    slope: float

    def __post_init__(self) -> None:
        for name in ("intercept", "slope"):
            v = getattr(self, name)
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise InputError(f"{name} must be a number, got {v!r}") from None
            if not np.isfinite(v):
                raise InputError(f"{name} must be finite, got {v!r}")
            object.__setattr__(self, name, v)

    def __call__(self, K: int) -> np.ndarray:
        p = np.arange(1, _check_k(K) + 1, dtype=np.float64)
        return _finish(self.intercept + self.slope * p, repr(self))


@dataclass(frozen=True)
class Explicit:
    """Explicit values for positions ``1..len(values)``, each in [0, 1]."""

    values: tuple[float, ...]

    def __post_init__(self) -> None:
        arr = check_probability_array(self.values, name="curve values")
        if arr.ndim != 1:
            raise InputError(f"curve values must be 1-d, got shape {arr.shape}")
        object.__setattr__(self, "values", tuple(float(v) for v in arr))

    def __call__(self, K: int) -> np.ndarray:
        K = _check_k(K)
        if K > len(self.values):
            raise InputError(f"the curve has {len(self.values)} positions, but {K} were requested")
        return np.asarray(self.values[:K], dtype=np.float64)


@dataclass(frozen=True)
class Constant:
    """The same probability at every position."""

    value: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", check_probability(self.value, name="value"))

    def __call__(self, K: int) -> np.ndarray:
        return np.full(_check_k(K), self.value)


Curve = PowerLaw | EyeTracking | Linear | Explicit | Constant | Callable[[int], np.ndarray]


def power_law(K: int, eta: float = 1.0) -> np.ndarray:
    r""":math:`\theta_p = (1/p)^\eta` for :math:`p = 1..K` (see :class:`PowerLaw`)."""
    return PowerLaw(eta)(K)


def eye_tracking(K: int, eta: float = 1.0) -> np.ndarray:
    r""":math:`\theta_p = \theta^{\mathrm{eye}}_p{}^\eta` for :math:`p = 1..K \le 10` (see
    :class:`EyeTracking`)."""
    return EyeTracking(eta)(K)


def as_curve(value: Any, *, name: str) -> Any:
    """Accept a curve object, a callable ``K -> array`` or explicit values."""
    if isinstance(value, PowerLaw | EyeTracking | Linear | Explicit | Constant):
        return value
    if np.ndim(value) == 0 and not isinstance(value, str) and not callable(value):
        try:
            return Constant(value)
        except InputError as exc:
            raise InputError(f"{name}: {exc}") from None
    if callable(value):
        return value
    if isinstance(value, str):
        raise InputError(f"{name} must be a curve or a list of probabilities, got {value!r}")
    try:
        return Explicit(value)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None
    except (TypeError, ValueError):
        raise InputError(
            f"{name} must be a curve or a list of probabilities, got {value!r}"
        ) from None


def evaluate_curve(curve: Any, K: int, *, name: str) -> np.ndarray:
    """Values of ``curve`` at positions 1..K, checked to be K probabilities."""
    values = np.asarray(curve(K), dtype=np.float64)
    if values.shape != (K,):
        raise InputError(f"{name} returned shape {values.shape} for K={K}; expected ({K},)")
    return _finish(values, name)
