r"""Relevance maps: from a graded label to a per-document probability.

A relevance map is a small frozen object; calling it on a label array returns
an array of probabilities of the same shape. Click models use maps for the
attractiveness :math:`\alpha(d)` (probability of a click once examined), the
satisfaction :math:`\sigma(d)` of DBN and the probability of relevance
:math:`P(R = 1 \mid d)` of the trust-bias model. NaN labels (empty slots) map
to probability 0, so empty slots are never clicked and never satisfy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core._validation import (
    InputError,
    check_choice,
    check_non_negative,
    check_positive,
    check_probability,
)

__all__ = [
    "Binarized",
    "Graded",
    "ERRSatisfaction",
    "Table",
    "binarized",
    "graded",
    "err_satisfaction",
    "table",
    "as_relevance_map",
    "default_threshold",
    "relevance_for_labels",
]


def _zero_empty(p: np.ndarray, labels: np.ndarray) -> np.ndarray:
    nan = np.isnan(labels)
    if nan.any():
        p[nan] = 0.0
    return p


def _check_range(labels: np.ndarray, max_label: float, what: str) -> None:
    if labels.size == 0:
        return
    lo, hi = np.nanmin(labels, initial=np.inf), np.nanmax(labels, initial=-np.inf)
    if np.isfinite(lo) and (lo < 0 or hi > max_label):
        raise InputError(
            f"{what} needs labels in [0, {max_label:g}]; found labels in [{lo:g}, {hi:g}] "
            "(set max_label to the top grade of your data)"
        )


@dataclass(frozen=True)
class Binarized:
    r"""Binarized relevance with click noise (Joachims et al. (2017), §6).

    .. math::
        \alpha(y) = \begin{cases} \epsilon^+ & y \ge t \\ \epsilon^- & y < t \end{cases}

    where :math:`t` is ``threshold``. Joachims et al. use :math:`\epsilon^+ = 1`
    and :math:`\epsilon^- = 0.1`.

    .. note:: The default ``threshold = 3`` suits 0..4 labels (the synthetic
       data, Yahoo!, MSLR): grades 3 and 4 are relevant, as in Joachims et al.
       (2017) and ULTRA (labels > 2). For LETOR 4.0 / MQ2008 (labels 0..2) use
       ``threshold = 1``.
    """

    threshold: float = 3.0
    eps_plus: float = 1.0
    eps_minus: float = 0.1

    def __post_init__(self) -> None:
        t = self.threshold
        try:
            t = float(t)
        except (TypeError, ValueError):
            raise InputError(f"threshold must be a number, got {self.threshold!r}") from None
        if not np.isfinite(t):
            raise InputError(f"threshold must be finite, got {self.threshold!r}")
        object.__setattr__(self, "threshold", t)
        object.__setattr__(self, "eps_plus", check_probability(self.eps_plus, name="eps_plus"))
        object.__setattr__(self, "eps_minus", check_probability(self.eps_minus, name="eps_minus"))

    def __call__(self, labels: np.ndarray) -> np.ndarray:
        labels = np.asarray(labels, dtype=np.float64)
        p = np.where(labels >= self.threshold, self.eps_plus, self.eps_minus)
        return _zero_empty(p, labels)


@dataclass(frozen=True)
class Graded:
    r"""Graded relevance with click noise (Ai et al. (2018); ULTRA; Chapelle et al. (2009)).

    .. math::
        \alpha(y) = \epsilon + (1 - \epsilon) \frac{2^{y} - 1}{2^{y_{\max}} - 1}

    with :math:`\epsilon` = ``eps`` (default 0.1) and :math:`y_{\max}` =
    ``max_label`` (default 4). Labels must lie in :math:`[0, y_{\max}]`.
    """

    eps: float = 0.1
    max_label: float = 4.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps", check_probability(self.eps, name="eps"))
        object.__setattr__(
            self, "max_label", float(check_positive(self.max_label, name="max_label"))
        )

    def __call__(self, labels: np.ndarray) -> np.ndarray:
        labels = np.asarray(labels, dtype=np.float64)
        _check_range(labels, self.max_label, "graded relevance")
        scale = (1.0 - self.eps) / (2.0**self.max_label - 1.0)
        p = np.exp2(labels)
        p -= 1.0
        p *= scale
        p += self.eps
        return _zero_empty(p, labels)


@dataclass(frozen=True)
class ERRSatisfaction:
    r"""Satisfaction probability of the ERR metric (Chapelle et al. (2009)).

    .. math::
        \sigma(y) = \frac{2^{y} - 1}{2^{y_{\max}}}

    The default satisfaction map of :class:`~clickrank.clickmodels.DBN`: a
    perfect document satisfies 15 users in 16 (``max_label = 4``); a label-0
    document never does.
    """

    max_label: float = 4.0

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "max_label", float(check_non_negative(self.max_label, name="max_label"))
        )

    def __call__(self, labels: np.ndarray) -> np.ndarray:
        labels = np.asarray(labels, dtype=np.float64)
        _check_range(labels, self.max_label, "ERR satisfaction")
        p = np.exp2(labels)
        p -= 1.0
        p *= 2.0 ** (-self.max_label)
        return _zero_empty(p, labels)


@dataclass(frozen=True)
class Table:
    """User-supplied probability per label value, ``{label: probability}``.

    Every label that occurs must be a key; others raise :class:`~clickrank.InputError`.
    """

    labels: tuple[float, ...]
    probabilities: tuple[float, ...]

    def __post_init__(self) -> None:
        keys = np.asarray(self.labels, dtype=np.float64)
        if keys.ndim != 1 or keys.size == 0 or len(self.probabilities) != keys.size:
            raise InputError("a relevance table needs one probability per label, at least one")
        if not np.isfinite(keys).all():
            raise InputError("relevance-table labels must be finite numbers")
        if np.unique(keys).size != keys.size:
            raise InputError("relevance-table labels must be distinct")
        probs = [
            check_probability(p, name=f"probability of label {k:g}")
            for k, p in zip(keys, self.probabilities, strict=True)
        ]
        order = np.argsort(keys)
        object.__setattr__(self, "labels", tuple(float(keys[i]) for i in order))
        object.__setattr__(self, "probabilities", tuple(probs[i] for i in order))

    def __call__(self, labels: np.ndarray) -> np.ndarray:
        labels = np.asarray(labels, dtype=np.float64)
        keys = np.asarray(self.labels)
        values = np.append(np.asarray(self.probabilities), 0.0)
        idx = np.searchsorted(keys, labels)
        idx_c = np.minimum(idx, keys.size - 1)
        nan = np.isnan(labels)
        known = keys[idx_c] == labels
        unknown = ~(known | nan)
        if unknown.any():
            missing = np.unique(labels[unknown])[:5]
            raise InputError(
                f"labels {', '.join(f'{v:g}' for v in missing)} are not in the relevance "
                f"table (keys {', '.join(f'{v:g}' for v in keys)})"
            )
        idx_c[nan] = keys.size
        return values[idx_c]


RelevanceMap = Binarized | Graded | ERRSatisfaction | Table | Callable[[np.ndarray], np.ndarray]


def binarized(threshold: float = 3.0, eps_plus: float = 1.0, eps_minus: float = 0.1) -> Binarized:
    """Binarized relevance map (see :class:`Binarized`)."""
    return Binarized(threshold, eps_plus, eps_minus)


def graded(eps: float = 0.1, max_label: float = 4.0) -> Graded:
    """Graded relevance map (see :class:`Graded`)."""
    return Graded(eps, max_label)


def err_satisfaction(max_label: float = 4.0) -> ERRSatisfaction:
    """ERR satisfaction map (see :class:`ERRSatisfaction`)."""
    return ERRSatisfaction(max_label)


def table(mapping: Mapping[Any, float]) -> Table:
    """Relevance map from a ``{label: probability}`` mapping (see :class:`Table`)."""
    if not isinstance(mapping, Mapping):
        raise InputError(f"table() needs a mapping {{label: probability}}, got {mapping!r}")
    try:
        keys = tuple(float(k) for k in mapping)
    except (TypeError, ValueError):
        raise InputError(f"relevance-table labels must be numbers, got {list(mapping)!r}") from None
    return Table(keys, tuple(mapping.values()))


_MAPS = {"binarized": Binarized, "graded": Graded, "err": ERRSatisfaction, "table": table}


def as_relevance_map(value: Any, *, name: str) -> Any:
    """Accept a map object, a callable, a name (``"graded"``...) or ``{"kind": name, **params}``."""
    if isinstance(value, Binarized | Graded | ERRSatisfaction | Table):
        return value
    if isinstance(value, str):
        value = {"kind": value}
    if isinstance(value, Mapping):
        params = dict(value)
        kind = params.pop("kind", None)
        if kind not in _MAPS:
            raise InputError(
                f"{name}: kind must be one of {', '.join(map(repr, _MAPS))}; got {kind!r}"
            )
        if kind == "table":
            if set(params) != {"mapping"}:
                raise InputError(f"{name}: a table needs exactly one key 'mapping'")
            return table(params["mapping"])
        try:
            return _MAPS[kind](**params)
        except TypeError as exc:
            raise InputError(f"{name}: bad parameters for {kind!r}: {exc}") from None
    if callable(value):
        return value
    raise InputError(f"{name} must be a relevance map, a name or a dict; got {value!r}")


def evaluate_map(rel: Any, labels: np.ndarray, *, name: str) -> np.ndarray:
    """Apply a relevance map; custom callables are checked for shape and range."""
    if isinstance(rel, Binarized | Graded | ERRSatisfaction | Table):
        return rel(labels)
    p = np.asarray(rel(labels), dtype=np.float64)
    if p.shape != labels.shape:
        raise InputError(f"{name} returned shape {p.shape} for labels of shape {labels.shape}")
    p = np.where(np.isnan(labels), 0.0, p)
    if not ((p >= 0) & (p <= 1)).all():
        raise InputError(f"{name} returned values outside [0, 1]")
    return p


# -- defaults that follow the data -------------------------------------------------------------


def default_threshold(max_label: float) -> float:
    """The default binarization threshold for labels ``0..max_label``: relevant iff label >= it.

    ``max(1, max_label - 1)``: the two top grades of a five-grade scale (0..4:
    Yahoo! LTR, MSLR-WEB, Istella; labels 3 and 4 are relevant, as in
    Joachims et al. (2017), §6, Agarwal et al. 2019 and
    ULTRA), and every relevant grade of a three-grade scale (0..2: LETOR 4.0
    MQ2007/MQ2008; labels 1 and 2, as the ULTR studies on those sets do).
    Binary labels (0..1) give 1.

    Examples
    --------
    >>> default_threshold(4), default_threshold(2), default_threshold(1)
    (3.0, 1.0, 1.0)
    """
    return max(1.0, float(max_label) - 1.0)


_ATTRACTIVENESS = {
    "pbm": "attractiveness",
    "trust": "relevance",
    "cascade": "attractiveness",
    "dcm": "attractiveness",
    "dbn": "attractiveness",
    "sdbn": "attractiveness",
    "ubm": "attractiveness",
}


def _relevance_line(
    relevance: str,
    y: np.ndarray,
    top: float,
    eps: float,
    threshold: float | None,
    max_label: float | None,
    names: tuple[str, str],
) -> tuple[dict[str, Any], str]:
    """Attractiveness map and its line: the relevance step of :func:`relevance_for_labels`."""
    lo, hi = float(y.min()), float(y.max())
    span = f"labels {lo:g}..{hi:g}"
    if relevance == "graded":
        rel = {"kind": "graded", "eps": eps, "max_label": top}
        why = f"{names[0]} given" if max_label is not None else "the top grade is the largest label"
        line = (
            f"relevance: graded, P(click | examined) from {eps:g} at label 0 to 1 at label "
            f"{top:g} ({span}; {why})"
        )
    else:
        t = float(threshold) if threshold is not None else default_threshold(hi)
        rel = {"kind": "binarized", "threshold": t, "eps_minus": eps}
        why = (
            f"{names[1]} given"
            if threshold is not None
            else "the default: 1 for labels up to 2, else the top label - 1"
        )
        line = f"relevance: binarized at label >= {t:g} ({span}; {why})"
        if not (y >= t).any():
            line += "; no document reaches it, so every click is noise"
    return rel, line


def relevance_for_labels(
    model: str,
    labels: Any,
    *,
    relevance: str = "graded",
    eps: float = 0.1,
    max_label: float | None = None,
    threshold: float | None = None,
    names: tuple[str, str] = ("max_label", "threshold"),
) -> tuple[dict[str, Any], str]:
    r"""Relevance maps of a click model for data with these labels, and one line saying why.

    The defaults follow the data's label range instead of assuming 0..4:

    * graded: :class:`Graded` with :math:`y_{\max}` = the largest label
      (at least 1), so the top grade of the data is clicked with probability 1
      once examined, whether the labels are 0..2 or 0..4;
    * binarized: :class:`Binarized` at :func:`default_threshold` of the
      largest label (label >= 1 for 0..2, >= 3 for 0..4);
    * DBN and SDBN: satisfaction :class:`ERRSatisfaction` with the same top
      grade (``max_label`` if given, else the largest label), not a fixed 4.

    Parameters
    ----------
    model : {"pbm", "trust", "cascade", "dcm", "dbn", "sdbn", "ubm"}
    labels : array-like
        The labels the clicks will be simulated from (only their range is used).
    relevance : {"graded", "binarized"}
    eps : float
        Graded: :math:`\epsilon`; binarized: :math:`\epsilon^-`.
    max_label, threshold : float, optional
        Explicit values; None takes the data's defaults above.
    names : (str, str)
        How the caller spells ``max_label`` and ``threshold`` (e.g.
        ``("--max-label", "--threshold")``), for the line.

    Returns
    -------
    params : dict
        Keyword arguments of :func:`~clickrank.clickmodels.make_click_model`:
        ``attractiveness`` (``relevance`` for trust) and, for dbn/sdbn,
        ``satisfaction``.
    line : str
        E.g. ``"relevance: binarized at label >= 1 (labels 0..2; the default: 1 for
        labels up to 2, else the top label - 1)"``.

    Examples
    --------
    >>> params, line = relevance_for_labels("pbm", [0, 1, 2], relevance="binarized")
    >>> params
    {'attractiveness': {'kind': 'binarized', 'threshold': 1.0, 'eps_minus': 0.1}}
    >>> _, line = relevance_for_labels("dbn", [0, 1, 2], relevance="binarized", threshold=2)
    >>> print(line)  # doctest: +NORMALIZE_WHITESPACE
    relevance: binarized at label >= 2 (labels 0..2; threshold given);
    satisfaction (2^y - 1)/2^2 (ERR)
    """
    key = check_choice(str(model).lower(), tuple(_ATTRACTIVENESS), name="click model")
    check_choice(relevance, ("graded", "binarized"), name="relevance")
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    y = y[~np.isnan(y)]
    if y.size == 0:
        raise InputError("the data have no labels to simulate clicks from")
    top = float(max_label) if max_label is not None else max(float(y.max()), 1.0)
    rel, line = _relevance_line(relevance, y, top, eps, threshold, max_label, names)
    params: dict[str, Any] = {_ATTRACTIVENESS[key]: rel}
    if key in ("dbn", "sdbn"):
        params["satisfaction"] = {"kind": "err", "max_label": top}
        line += f"; satisfaction (2^y - 1)/2^{top:g} (ERR)"
    return params, line
