"""Spec -> object: click models, interventions, logging policies, LambdaMART parameters.

Each builder takes a dict (a TOML section of a run config, the options of a CLI
command, a study's table) and returns the object, so the translation is
written once. Targets are built by :func:`clickrank.targets.make_target`
(re-exported here as :func:`make_target`).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from .._core._validation import InputError, check_choice, free_cpus
from ..clickmodels import make_click_model as _click_model_by_name
from ..clickmodels import relevance_for_labels
from ..datasets import RankingData
from ..lambdamart import LambdaMART
from ..policies import DeterministicPolicy, LoggingPolicy, PlackettLuce, UniformRandom
from ..policies.production import production_ranker
from ..simulation import FairPairs, Intervention, Randomize, RandPair, Swap
from ..targets import make_target
from .names import CURVE_MODELS, ETA_MODELS, LAMBDAMART_SELECTION, POLICY_KINDS

__all__ = [
    "click_model_params",
    "make_click_model",
    "make_interventions",
    "make_policy",
    "policy_from_scores",
    "lambdamart_params",
    "make_lambdamart",
    "make_learner",
    "make_target",
    "SELECTION_KEYS",
]

_RELEVANCE_KEYS = ("relevance", "eps", "max_label", "threshold")


def click_model_params(
    spec: Mapping[str, Any],
    labels: Any,
    *,
    names: tuple[str, str] = ("[click_model] max_label", "[click_model] threshold"),
) -> tuple[dict[str, Any], str]:
    """Parameters of :func:`clickrank.clickmodels.make_click_model` from a click-model spec.

    Parameters
    ----------
    spec : mapping
        ``name``, and optionally ``relevance`` ("graded"), ``eps`` (0.1),
        ``max_label``, ``threshold``, ``eta`` (for :data:`ETA_MODELS`), ``curve``
        (for :data:`CURVE_MODELS`) and ``params`` (a table passed on as is).
    labels : array-like
        The labels of the data (or their min and max): the relevance maps
        follow their range unless ``max_label`` / ``threshold`` are set
        (:func:`clickrank.clickmodels.relevance_for_labels`).
    names : (str, str)
        How errors name ``max_label`` and ``threshold``.

    Returns
    -------
    (dict, str)
        The parameters, and the line that says which relevance map was chosen and why.
    """
    name = spec["name"]
    params, line = relevance_for_labels(
        name,
        labels,
        relevance=spec.get("relevance", "graded"),
        eps=spec.get("eps", 0.1),
        max_label=spec.get("max_label"),
        threshold=spec.get("threshold"),
        names=names,
    )
    if name in ETA_MODELS and spec.get("eta") is not None:
        params["eta"] = spec["eta"]
    if name in CURVE_MODELS and spec.get("curve") is not None:
        params["curve"] = spec["curve"]
    params.update(spec.get("params") or {})
    return params, line


def make_click_model(
    spec: Mapping[str, Any], labels: Any = None, **kw: Any
) -> tuple[Any, str | None]:
    """A click model from a spec: ``(model, relevance line)``.

    With ``labels``, the spec is read as by :func:`click_model_params` (relevance
    maps from the label range; the line says which). Without, every key but
    ``name`` is a parameter of :func:`clickrank.clickmodels.make_click_model`
    (a study's ``{name = "pbm", eta = 1.0}``) and the line is None.

    Examples
    --------
    >>> model, line = make_click_model({"name": "pbm", "eta": 2.0})
    >>> round(float(model.propensities(3)[2]), 4), line
    (0.1111, None)
    """
    if labels is None:
        params = {k: v for k, v in spec.items() if k != "name"}
        return _click_model_by_name(spec["name"], **params), None
    params, line = click_model_params(spec, labels, **kw)
    return _click_model_by_name(spec["name"], **params), line


def make_interventions(spec: Mapping[str, Any]) -> list[Intervention]:
    """Interventions from their shares of sessions (``[interventions]``; 0 or absent = none).

    Keys: ``swap_fraction`` (and ``swap_k``), ``randpair_fraction``,
    ``randomize_fraction`` (and ``randomize_k``), ``fairpairs_fraction``;
    applied in that order.

    Examples
    --------
    >>> items = make_interventions({"swap_fraction": 0.1, "fairpairs_fraction": 0.2})
    >>> [type(i).__name__ for i in items]
    ['Swap', 'FairPairs']
    """
    items: list[Intervention] = []
    if spec.get("swap_fraction", 0) > 0:
        items.append(Swap(spec["swap_fraction"], k=spec.get("swap_k")))
    if spec.get("randpair_fraction", 0) > 0:
        items.append(RandPair(spec["randpair_fraction"]))
    if spec.get("randomize_fraction", 0) > 0:
        items.append(Randomize(spec["randomize_fraction"], k=spec.get("randomize_k")))
    if spec.get("fairpairs_fraction", 0) > 0:
        items.append(FairPairs(spec["fairpairs_fraction"]))
    return items


def policy_from_scores(kind: str, scores: Any, *, temperature: float = 1.0) -> LoggingPolicy:
    """The logging policy ``kind`` over given scores (or a ranker with ``predict``).

    ``random`` ignores the scores; ``plackett-luce`` samples with ``temperature``;
    ``production`` and ``oracle`` rank deterministically, named after ``kind``.
    """
    check_choice(kind, POLICY_KINDS, name="policy")
    if kind == "random":
        return UniformRandom(name="random")
    if kind == "plackett-luce":
        return PlackettLuce(scores, temperature=temperature, name="plackett-luce")
    return DeterministicPolicy(scores, name=kind)


def make_policy(
    kind: str,
    data: RankingData,
    *,
    fraction: float = 0.01,
    min_queries: int = 20,
    temperature: float = 1.0,
    seed: int = 0,
) -> LoggingPolicy:
    """A named logging policy for ``data`` (used by the CLI and run configs).

    ``production``: deterministic ranking by
    :func:`~clickrank.policies.production.production_ranker`
    (trained on ``fraction`` of the queries, at least ``min_queries``);
    ``plackett-luce``: Plackett–Luce over the production ranker's scores with
    ``temperature``; ``oracle``: deterministic ranking by the true labels;
    ``random``: :class:`~clickrank.policies.UniformRandom`.
    """
    check_choice(kind, POLICY_KINDS, name="policy")
    if kind == "random":
        return policy_from_scores(kind, None)
    if kind == "oracle":
        if data.y is None:
            raise InputError("the oracle policy needs labelled data")
        return policy_from_scores(kind, data.y)
    ranker = production_ranker(data, fraction, seed=seed, min_queries=min_queries)
    return policy_from_scores(kind, ranker, temperature=temperature)


#: Keys of a ``[lambdamart]`` spec that configure the model selection, not LambdaMART.
SELECTION_KEYS = ("select", "folds", "validation", "grid")


def lambdamart_params(spec: Mapping[str, Any], **overrides: Any) -> dict[str, Any]:
    """Keyword arguments of :class:`~clickrank.lambdamart.LambdaMART` from a spec.

    Every key of ``spec`` but :data:`SELECTION_KEYS` must be a parameter of
    LambdaMART; a key left out keeps LambdaMART's default (the one set of
    defaults: ``LambdaMART()``, ``clickrank train`` and ``[lambdamart]`` agree,
    tested). ``truncation_level = 0`` means all pairs (None); ``overrides`` win.

    Raises
    ------
    InputError
        For a key that is not a LambdaMART parameter.
    """
    allowed = set(inspect.signature(LambdaMART).parameters)
    out: dict[str, Any] = {}
    for key, value in {**spec, **overrides}.items():
        if key in SELECTION_KEYS:
            continue
        if key not in allowed:
            raise InputError(
                f"lambdamart: {key!r} is not a LambdaMART parameter; choose from "
                f"{', '.join(sorted(allowed))}"
            )
        out[key] = value
    if out.get("truncation_level") == 0:
        out["truncation_level"] = None
    return out


def make_lambdamart(spec: Mapping[str, Any] | None = None, **overrides: Any) -> LambdaMART:
    """An unfitted :class:`~clickrank.lambdamart.LambdaMART` from a spec.

    The spec is read by :func:`lambdamart_params`.

    Examples
    --------
    >>> make_lambdamart({"num_leaves": 4, "select": True}, seed=3)
    LambdaMART(num_leaves=4, seed=3)
    """
    return LambdaMART(**lambdamart_params(spec or {}, **overrides))


_SHARED = ("learning_rate", "min_data_in_leaf", "truncation_level", "eval_at", "seed", "n_jobs")


def _common(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The LambdaMART parameters every learner of a spec shares (truncation 0: all pairs)."""
    common = {k: spec[k] for k in _SHARED if k in spec}
    if common.get("truncation_level") == 0:
        common["truncation_level"] = None
    if common.get("n_jobs") == "auto":
        common["n_jobs"] = free_cpus()
    return common


def selection_params(spec: Mapping[str, Any], **overrides: Any) -> dict[str, Any]:
    """Keyword arguments of a selection from a ``[lambdamart]`` spec: ``folds``,
    ``n_estimators``, ``early_stopping_rounds`` (and ``early_stopping_fraction``, passed on
    to LambdaMART), ``grid`` and the shared LambdaMART
    parameters (what :class:`~clickrank.selection.LambdaMARTCV` and
    :class:`~clickrank.clickranker.ClickRanker` take)."""
    spec = {k: v for k, v in {**spec, **overrides}.items() if v is not None}
    keys = ("folds", "n_estimators", "early_stopping_rounds", "early_stopping_fraction")
    sel = {k: spec[k] for k in keys if k in spec}
    if "grid" in spec:
        sel["grid"] = [dict(g) for g in spec["grid"]]
    return {**sel, **_common(spec)}


def make_learner(
    spec: Mapping[str, Any], *, select: bool, early_stopping: bool = True, **overrides: Any
) -> Any:
    """The learner of a ``[lambdamart]`` spec: LambdaMARTCV (``select``) or a fixed LambdaMART.

    With ``select``, :class:`~clickrank.selection.LambdaMARTCV` chooses the tree
    shape among ``grid`` and the number of trees (at most ``n_estimators``,
    patience ``early_stopping_rounds``) by ``folds``-fold cross-validation.
    Without, LambdaMART grows ``n_estimators`` trees of ``num_leaves`` /
    ``max_depth``, stopping early only when ``early_stopping`` (the caller has
    validation queries). Keys not in ``spec`` keep the library's defaults;
    ``overrides`` (e.g. ``seed``, ``eval_at``) win over ``spec``.
    """
    from ..selection import LambdaMARTCV

    if select:
        return LambdaMARTCV(**selection_params(spec, **overrides))
    spec = {k: v for k, v in {**spec, **overrides}.items() if v is not None}
    common = _common(spec)
    fixed = {k: spec[k] for k in ("n_estimators", "num_leaves", "max_depth") if k in spec}
    if early_stopping:
        fixed["early_stopping_rounds"] = spec.get(
            "early_stopping_rounds", LAMBDAMART_SELECTION["early_stopping_rounds"]
        )
        if "early_stopping_fraction" in spec:
            fixed["early_stopping_fraction"] = spec["early_stopping_fraction"]
    return LambdaMART(**fixed, **common)
