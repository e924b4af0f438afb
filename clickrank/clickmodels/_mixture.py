r"""Heterogeneous users: a mixture of click models, one user type per session.

Real search traffic mixes users who behave very differently on the same
result page: navigational users who click the target and leave, "economic"
scanners who look at the top two or three results, "exhaustive" scanners who
read far down the list, and users who rarely click at all (Broder (2002);
Aula et al. (2005); Dumais et al. (2010)). A single click
model makes every session statistically identical; :class:`UserMixture`
instead draws one user type per session and lets that type's model click.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from .._core._validation import InputError, check_non_negative, check_positive, check_probability
from ._cascade import DCM, Cascade
from ._curves import EyeTracking, PowerLaw
from ._position import PBM
from ._relevance import Graded
from .base import check_labels, check_uniforms

__all__ = ["UserMixture", "pbm_population", "web_search_population"]


@dataclass(frozen=True, eq=False)
class UserMixture:
    r"""Population of user types: each session is one user of one type.

    Session :math:`s` draws a type :math:`T_s \sim \mathrm{Categorical}(w)`
    and clicks by component model :math:`M_{T_s}`, so the exact marginal is
    the weight-averaged marginal of the components,

    .. math::
        P(C_j = 1) = \sum_c w_c \, P_{M_c}(C_j = 1),

    while clicks *within* a session stay correlated through the shared type
    (a finite mixture / latent-class click model; cf. the user-heterogeneity
    findings of Aula et al. (2005) and Dumais et al. (2010)).

    Uniforms: ``n_uniforms = 1 + max(component n_uniforms)``. The type is the
    inverse CDF of ``w`` at ``u[:, 0, -1]`` (the last slot of position 1);
    component :math:`c` gets ``u[..., :n_c]``, which never includes that
    slot, so type and clicks are independent and the result is deterministic
    given ``(labels, u)``. Sessions are grouped by type with boolean masks
    (one vectorized ``sample`` call per component, no loop over sessions).

    Parameters
    ----------
    components : sequence of click models
        Each follows the :class:`~clickrank.clickmodels.ClickModel` protocol.
    weights : sequence of float, optional
        Non-negative type frequencies, normalized to sum to 1; default equal.
    names : sequence of str, optional
        A label per type (for summaries); default ``type0, type1, ...``.

    Examples
    --------
    >>> from clickrank.clickmodels import PBM, Cascade, PowerLaw
    >>> mix = UserMixture([PBM(PowerLaw(2.0)), Cascade()], [0.7, 0.3])
    >>> mix.n_uniforms
    2
    """

    components: Sequence[Any]
    weights: Any = None
    names: Sequence[str] | None = None
    n_uniforms: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        comps = tuple(self.components) if isinstance(self.components, Sequence) else None
        if not comps:
            raise InputError("a UserMixture needs a non-empty sequence of click models")
        for i, m in enumerate(comps):
            nu = getattr(m, "n_uniforms", None)
            if not (
                callable(getattr(m, "sample", None))
                and callable(getattr(m, "click_probabilities", None))
                and isinstance(nu, (int, np.integer))
                and nu >= 1
            ):
                raise InputError(
                    f"component {i} is not a click model (needs n_uniforms >= 1, "
                    f"click_probabilities and sample); got {m!r}"
                )
        C = len(comps)
        if self.weights is None:
            w = np.full(C, 1.0 / C)
        else:
            try:
                w = np.asarray(self.weights, dtype=np.float64).reshape(-1)
            except (TypeError, ValueError):
                raise InputError(f"weights must be numbers, got {self.weights!r}") from None
            if w.size != C:
                raise InputError(f"got {C} components but {w.size} weights")
            if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
                raise InputError(f"weights must be finite, >= 0 and not all 0; got {w.tolist()}")
            w = w / w.sum()
        w.flags.writeable = False
        names = (
            tuple(f"type{i}" for i in range(C))
            if self.names is None
            else tuple(str(n) for n in self.names)
        )
        if len(names) != C:
            raise InputError(f"got {C} components but {len(names)} names")
        object.__setattr__(self, "components", comps)
        object.__setattr__(self, "weights", w)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "n_uniforms", 1 + max(int(m.n_uniforms) for m in comps))

    # ------------------------------------------------------------------ protocol

    def user_types(self, u: np.ndarray) -> np.ndarray:
        """Type index of each session, int ``[S]``, from ``u[:, 0, -1]`` (inverse CDF of w)."""
        u = np.asarray(u)
        if u.ndim != 3 or u.shape[2] != self.n_uniforms or u.shape[1] < 1:
            raise InputError(
                f"u must have shape [sessions, positions, {self.n_uniforms}], got {u.shape}"
            )
        cdf = np.cumsum(self.weights)
        t = np.searchsorted(cdf, u[:, 0, -1], side="right")
        return np.minimum(t, len(self.components) - 1)  # guards cdf[-1] = 1 - 1e-16

    def click_probabilities(self, labels: np.ndarray) -> np.ndarray:
        labels = check_labels(labels)
        p = np.zeros(labels.shape)
        for w, m in zip(self.weights, self.components, strict=True):  # loop over types only
            if w > 0:
                p += w * m.click_probabilities(labels)
        return p

    def component_probabilities(self, labels: np.ndarray) -> np.ndarray:
        """Exact marginals of every type, float64 ``[C, S, K]``."""
        labels = check_labels(labels)
        return np.stack([m.click_probabilities(labels) for m in self.components])

    def sample(self, labels: np.ndarray, u: np.ndarray) -> np.ndarray:
        labels = check_labels(labels)
        u = check_uniforms(u, labels, self.n_uniforms)
        types = self.user_types(u)
        out = np.zeros(labels.shape, dtype=np.bool_)
        for c, m in enumerate(self.components):  # loop over types only
            mask = types == c
            if mask.any():
                out[mask] = m.sample(labels[mask], u[mask][:, :, : m.n_uniforms])
        return out

    # ------------------------------------------------------------------ extras

    def propensities(self, K: int, *, normalize: bool = False) -> np.ndarray:
        r"""Examination probabilities of a mixture of PBMs with one attractiveness map.

        Then :math:`P(C_j = 1) = (\sum_c w_c \theta_{c,j})\,\alpha(d)`: the
        population is itself a PBM with the averaged curve, the propensities
        an IPS estimator needs. For any other mixture no position-only
        propensity exists and :class:`~clickrank.InputError` is raised.
        """
        if not all(isinstance(m, PBM) for m in self.components):
            raise InputError(
                "propensities exist only for a mixture of PBMs "
                "(other user types do not factor into position x document)"
            )
        first = self.components[0].attractiveness
        if any(m.attractiveness != first for m in self.components):
            raise InputError(
                "propensities exist only if all PBM types share one attractiveness map"
            )
        theta = sum(
            w * m.propensities(K) for w, m in zip(self.weights, self.components, strict=True)
        )
        if normalize:
            if theta[0] <= 0:
                raise InputError("cannot normalize propensities: position 1 has probability 0")
            return theta / theta[0]
        return theta

    def summary(self) -> str:
        lines = [f"UserMixture of {len(self.components)} user types"]
        for n, w, m in zip(self.names, self.weights, self.components, strict=True):
            lines.append(f"  {w:6.3f}  {n:<18} {m!r}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        body = ", ".join(f"{n}={w:.3g}" for n, w in zip(self.names, self.weights, strict=True))
        return f"UserMixture({body}; n_uniforms={self.n_uniforms})"


def pbm_population(
    eta_mean: float = 1.0,
    eta_spread: float = 0.5,
    n_types: int = 5,
    *,
    noise: float | Sequence[float] = 0.1,
    max_label: float = 4.0,
    curve: str = "power_law",
) -> UserMixture:
    r"""Continuous heterogeneity in patience (and click noise) as a grid of PBMs.

    Each user has her own severity of position bias,
    :math:`\log \eta \sim N(\log \eta_{\text{mean}}, \eta_{\text{spread}}^2)`
    (a log-normal with median ``eta_mean``), discretized at the ``n_types``
    mid-quantiles :math:`\Phi^{-1}((i + 1/2)/n)`, each with weight
    :math:`1/n`. If ``noise`` is a sequence, each η type is crossed with each
    click-noise level :math:`\epsilon` of graded attractiveness (equal weights),
    so the population has ``n_types * len(noise)`` types.

    Parameters
    ----------
    eta_mean : float
        Median η (> 0). η = 1 is the usual PBM severity (Joachims et al. (2017)).
    eta_spread : float
        Standard deviation of :math:`\log \eta` (0 = homogeneous).
    n_types : int
        Grid size of the η distribution.
    noise : float or sequence of float
        Click noise ε of :class:`Graded` attractiveness, one type per level.
    max_label : float
        Top label of the data (for :class:`Graded`).
    curve : {"power_law", "eye_tracking"}
        Examination curve family :math:`\theta_p = p^{-\eta}` or :math:`e_p^{\eta}`.
    """
    eta_mean = check_positive(eta_mean, name="eta_mean")
    eta_spread = check_non_negative(eta_spread, name="eta_spread")
    n_types = int(check_positive(n_types, name="n_types", integer=True))
    if curve not in ("power_law", "eye_tracking"):
        raise InputError(f"curve must be 'power_law' or 'eye_tracking', got {curve!r}")
    levels = [noise] if np.ndim(noise) == 0 else list(noise)
    if not levels:
        raise InputError("noise must be a probability or a non-empty sequence of them")
    levels = [check_probability(e, name="noise") for e in levels]
    z = stats.norm.ppf((np.arange(n_types) + 0.5) / n_types)
    etas = eta_mean * np.exp(eta_spread * z)
    make = PowerLaw if curve == "power_law" else EyeTracking
    comps, names = [], []
    for eta in etas:
        for eps in levels:
            comps.append(PBM(make(float(eta)), Graded(eps=eps, max_label=max_label)))
            names.append(f"eta={eta:.2f},eps={eps:g}")
    return UserMixture(comps, None, names)


#: Type frequencies of :func:`web_search_population`.
WEB_SEARCH_WEIGHTS = {
    "navigational": 0.20,
    "economic": 0.40,
    "exhaustive": 0.30,
    "low-engagement": 0.10,
}


def web_search_population(max_label: float = 4.0, *, weights: dict | None = None) -> UserMixture:
    r"""A web-search user population built from published behaviour studies.

    ==============  ======  =====================================================
    type            weight  click model
    ==============  ======  =====================================================
    navigational    0.20    :class:`Cascade`, graded ε = 0.05: scans down, clicks
                            the first attractive result and leaves
    economic        0.40    :class:`PBM`, :math:`\theta_p = p^{-2}`: looks at the
                            top two or three results only
    exhaustive      0.30    :class:`DCM`, continuation 0.8: reads the whole page,
                            several clicks
    low-engagement  0.10    :class:`PBM`, :math:`\theta_p = 0.3/p`: mostly no click
    ==============  ======  =====================================================

    Sources for the *shares*: navigational queries are about a fifth of web
    search (Broder (2002): 20–25 % by survey and
    log); eye tracking splits searchers into economic and exhaustive
    evaluators (Aula et al. (2005): 46 % / 54 %; Dumais et al.
    (2010): 39 % economic on results, 32 % exhaustive, 29 % mostly on
    ads, which we count as low engagement with the organic results, shrunk
    to 10 % after carving out the navigational share). Many no-click queries
    are answered on the result page (good abandonment; Li et al.
    (2009)). The per-type *parameters* are our illustrative choices, not
    estimates; all types use graded attractiveness with ε = 0.1 unless stated.

    Parameters
    ----------
    max_label : float
        Top label of the data.
    weights : dict, optional
        Override some type weights (keys as in :data:`WEB_SEARCH_WEIGHTS`).
    """
    w = dict(WEB_SEARCH_WEIGHTS)
    if weights:
        unknown = sorted(set(weights) - set(w))
        if unknown:
            raise InputError(f"unknown user type(s) {unknown}; expected some of {list(w)}")
        w.update(weights)
    g = Graded(eps=0.1, max_label=max_label)
    comps = {
        "navigational": Cascade(Graded(eps=0.05, max_label=max_label)),
        "economic": PBM(PowerLaw(2.0), g),
        "exhaustive": DCM(g, continuation=0.8),
        "low-engagement": PBM(PowerLaw(1.0, scale=0.3), g),
    }
    return UserMixture(list(comps.values()), [w[k] for k in comps], list(comps))
