"""The spec layer: one place that turns a dict or TOML section into an object.

Run configs (:mod:`clickrank.experiment`), the CLI and the simulation studies
describe click models, interventions, logging policies, LambdaMART and targets
by name and parameters; this package holds the allowed names (defined once, in
:mod:`.names`), the builders (``make_*``, in ``_build``) and the TOML writer
(:func:`dumps_toml`). It sits above the training layer (it can build any of
those objects) and below evaluation, report, experiment and the CLI.

The names and :func:`dumps_toml` load nothing heavy; the builders are imported
on first use (PEP 562), so a config is checked before numba or LightGBM load.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._toml import dumps_toml
from .names import (
    CANDIDATE_SETS,
    CLICK_MODELS,
    CLICK_RANKER_SELECTION,
    CURVE_MODELS,
    EMPTY_CONVENTIONS,
    ETA_MODELS,
    INTERLEAVING_METHODS,
    INTERVENTION_FRACTIONS,
    LAMBDAMART_SELECTION,
    LAMBDAMART_SHAPE,
    MODEL_AWARE,
    NAIVE_KINDS,
    NEEDS_THETA,
    NORMALIZATIONS,
    ONE_TARGET_SELECTION,
    POLICY_KINDS,
    POPULATION_MODELS,
    PROPENSITY_DESIGN,
    PROPENSITY_METHODS,
    RELEVANCE_MAPS,
    RUN_TARGETS,
    TARGET_NAMES,
    TRAIN_TARGETS,
    VALIDATION_ESTIMATES,
)

_BUILDERS = (
    "click_model_params",
    "make_click_model",
    "make_interventions",
    "make_policy",
    "policy_from_scores",
    "lambdamart_params",
    "make_lambdamart",
    "make_target",
    "make_learner",
    "selection_params",
    "SELECTION_KEYS",
)

__all__ = [
    "CANDIDATE_SETS",
    "CLICK_MODELS",
    "CURVE_MODELS",
    "EMPTY_CONVENTIONS",
    "ETA_MODELS",
    "INTERLEAVING_METHODS",
    "INTERVENTION_FRACTIONS",
    "LAMBDAMART_SELECTION",
    "CLICK_RANKER_SELECTION",
    "ONE_TARGET_SELECTION",
    "LAMBDAMART_SHAPE",
    "MODEL_AWARE",
    "NAIVE_KINDS",
    "NEEDS_THETA",
    "NORMALIZATIONS",
    "POLICY_KINDS",
    "POPULATION_MODELS",
    "PROPENSITY_DESIGN",
    "PROPENSITY_METHODS",
    "RELEVANCE_MAPS",
    "RUN_TARGETS",
    "TARGET_NAMES",
    "TRAIN_TARGETS",
    "VALIDATION_ESTIMATES",
    "dumps_toml",
    *_BUILDERS,
]


def __getattr__(name: str) -> Any:
    if name in _BUILDERS:
        value = getattr(import_module("._build", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'clickrank.specs' has no attribute {name!r}")


if TYPE_CHECKING:
    from ._build import (  # noqa: F401
        SELECTION_KEYS,
        click_model_params,
        lambdamart_params,
        make_click_model,
        make_interventions,
        make_lambdamart,
        make_learner,
        make_policy,
        make_target,
        policy_from_scores,
        selection_params,
    )
