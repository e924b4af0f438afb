"""Build a click model from a name and plain parameters (for configs and the CLI)."""

from __future__ import annotations

from typing import Any

from .._core._validation import InputError, check_choice
from ._cascade import DBN, DCM, SDBN, Cascade
from ._curves import EyeTracking, PowerLaw
from ._mixture import UserMixture, pbm_population, web_search_population
from ._position import PBM, ClickMatrix, TrustBias, load_click_matrix
from ._ubm import UBM

__all__ = ["make_click_model", "CLICK_MODELS"]

_EXAM = ("eta", "curve", "examination")
_PARAMS: dict[str, tuple[str, ...]] = {
    "pbm": (*_EXAM, "attractiveness"),
    "trust": (*_EXAM, "relevance", "eps_plus", "eps_minus"),
    "cascade": ("attractiveness",),
    "dcm": ("attractiveness", "continuation"),
    "dbn": ("attractiveness", "satisfaction", "gamma"),
    "sdbn": ("attractiveness", "satisfaction"),
    "ubm": ("gamma", "attractiveness", "eta"),
    "matrix": ("path", "matrix"),
    "mixture": ("components", "weights", "names"),
    "pbm-population": ("eta_mean", "eta_spread", "n_types", "noise", "max_label", "curve"),
    "web-population": ("max_label", "weights"),
}

#: Names accepted by :func:`make_click_model`.
CLICK_MODELS = tuple(_PARAMS)


def _examination(params: dict[str, Any]) -> dict[str, Any]:
    if "examination" in params and ({"eta", "curve"} & set(params)):
        raise InputError("give either explicit examination probabilities or eta/curve, not both")
    eta = params.pop("eta", 1.0)
    curve = params.pop("curve", "power_law")
    explicit = params.pop("examination", None)
    check_choice(curve, ("power_law", "eye_tracking"), name="curve")
    if explicit is not None:
        return {"examination": explicit}
    return {"examination": PowerLaw(eta) if curve == "power_law" else EyeTracking(eta)}


def make_click_model(name: str, **params: Any) -> Any:
    """Click model by name with keyword parameters.

    Parameters
    ----------
    name : {"pbm", "trust", "cascade", "dcm", "dbn", "sdbn", "ubm", "matrix", "mixture", \
"pbm-population", "web-population"}
    **params
        The model's constructor arguments. Relevance maps (``attractiveness``,
        ``satisfaction``, ``relevance``) may be given as a name (``"graded"``,
        ``"binarized"``, ``"err"``) or a dict such as
        ``{"kind": "binarized", "threshold": 1}``. PBM and trust take the
        examination curve as ``eta`` plus ``curve`` (``"power_law"``, default,
        or ``"eye_tracking"``), or as explicit ``examination`` probabilities.
        ``"matrix"`` takes ``path`` (ULTRA JSON) or ``matrix``. ``"mixture"``
        (:class:`UserMixture`) takes ``components``, a list of click models or
        of dicts ``{"name": ..., **params}`` built by this factory, plus
        ``weights`` and ``names``; ``"pbm-population"`` and
        ``"web-population"`` take the arguments of :func:`pbm_population` and
        :func:`web_search_population`.

    Raises
    ------
    InputError
        For an unknown name, an unknown parameter or a bad value.

    Examples
    --------
    >>> make_click_model("pbm", eta=2.0, attractiveness={"kind": "binarized", "threshold": 1})
    PBM(examination=PowerLaw(eta=2.0, scale=1.0), attractiveness=Binarized(threshold=1.0, \
eps_plus=1.0, eps_minus=0.1), n_uniforms=1)
    """
    key = str(name).lower()
    check_choice(key, CLICK_MODELS, name="click model")
    unknown = sorted(set(params) - set(_PARAMS[key]))
    if unknown:
        raise InputError(
            f"unknown parameter(s) {', '.join(map(repr, unknown))} for click model {key!r}; "
            f"expected some of {', '.join(_PARAMS[key])}"
        )
    params = dict(params)
    if key == "pbm":
        return PBM(**_examination(params), **params)
    if key == "trust":
        return TrustBias(**_examination(params), **params)
    if key == "cascade":
        return Cascade(**params)
    if key == "dcm":
        return DCM(**params)
    if key == "dbn":
        return DBN(**params)
    if key == "sdbn":
        return SDBN(**params)
    if key == "ubm":
        return UBM(**params)
    if key == "mixture":
        return _mixture(**params)
    if key == "pbm-population":
        return pbm_population(**params)
    if key == "web-population":
        return web_search_population(**params)
    if ("path" in params) == ("matrix" in params):
        raise InputError("click model 'matrix' needs exactly one of path= or matrix=")
    return load_click_matrix(params["path"]) if "path" in params else ClickMatrix(params["matrix"])


def _mixture(components: Any = None, weights: Any = None, names: Any = None) -> UserMixture:
    if not isinstance(components, (list, tuple)) or not components:
        raise InputError("click model 'mixture' needs components=[model or {'name': ..., ...}]")
    built = []
    for i, c in enumerate(components):
        if isinstance(c, dict):
            spec = dict(c)
            if "name" not in spec:
                raise InputError(f"mixture component {i} is a dict without 'name'")
            built.append(make_click_model(spec.pop("name"), **spec))
        else:
            built.append(c)
    return UserMixture(built, weights, names)
