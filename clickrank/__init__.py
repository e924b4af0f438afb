"""clickrank: unbiased learning to rank from click logs.

Simulate position bias, estimate it, remove it, and prove the result. The flow
(DESIGN §1, ``docs/architecture.md``)::

    RankingData --simulate--> click log --estimate_propensities--> Propensities
    click log (+ Propensities) --ClickRanker.fit--> ranker
        (targets, candidate set and tree size chosen on held-out clicks, safety-checked)
    ranker + RankingData --evaluate / interleaving--> results with CIs --plots--> report

Submodules hold the families (``metrics``, ``clickmodels``, ``policies``,
``simulation``, ``clicklog``, ``propensity``, ``targets``, ``lambdas``,
``lambdamart``, ``selection``, ``training``, ``clickranker``, ``evaluation``, ``interleaving``,
``online``, ``publiclogs``, ``experiment``, ``plots``); every public name is imported on
first use.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._core._validation import (
    ClickRankError,
    ConfigError,
    DataFormatError,
    EstimationError,
    InputError,
    LogSchemaError,
    NotFittedError,
)
from ._version import __version__

# Public names and the module that defines them. They are imported on first
# use (PEP 562), so `import clickrank` and the CLI start fast: a bad config or
# argument is reported before numba, LightGBM or scipy.stats are loaded.
_LAZY = {
    "RankingData": "datasets",
    "from_frame": "datasets",
    "load_letor": "datasets",
    "read_parquet": "datasets",
    "save_letor": "datasets",
    "save_parquet": "datasets",
    "split_queries": "datasets",
    "synthetic": "datasets",
    "make_click_model": "clickmodels",
    "fit_click_model": "clickmodels",
    "compare_click_models": "clickmodels",
    "production_ranker": "policies.production",
    "simulate": "simulation",
    "Swap": "simulation",
    "RandPair": "simulation",
    "Randomize": "simulation",
    "FairPairs": "simulation",
    "read_log": "clicklog",
    "read_log_metadata": "clicklog",
    "validate_log": "clicklog",
    "write_log": "clicklog",
    "Propensities": "propensity",
    "estimate_propensities": "propensity",
    "LambdaMART": "lambdamart",
    "LambdaMARTCV": "selection",
    "ClickValidation": "selection",
    "ClickRanker": "clickranker",
    "get_metric": "metrics",
    "evaluate": "evaluation",
    "compare": "evaluation",
    "counterfactual": "evaluation",
    "load_config": "experiment",
    "run_experiment": "experiment",
}
_SUBMODULES = (
    "clicklog",
    "clickranker",
    "clickmodels",
    "datasets",
    "evaluation",
    "experiment",
    "interleaving",
    "lambdamart",
    "lambdas",
    "metrics",
    "online",
    "plots",
    "policies",
    "production",
    "propensity",
    "publiclogs",
    "ranking",
    "report",
    "selection",
    "simulation",
    "specs",
    "targets",
    "training",
)
#: Old paths kept for their users (they warn); dir() leaves them out.
_DEPRECATED = ("production",)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'clickrank' has no attribute {name!r}")
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted((set(globals()) | set(_LAZY) | set(_SUBMODULES)) - set(_DEPRECATED))


if TYPE_CHECKING:  # static analysers and IDEs see the eager imports
    from . import (  # noqa: F401
        clicklog,
        clickmodels,
        clickranker,
        datasets,
        evaluation,
        experiment,
        interleaving,
        lambdamart,
        lambdas,
        metrics,
        online,
        policies,
        propensity,
        publiclogs,
        ranking,
        simulation,
        specs,
        targets,
        training,
    )
    from .clicklog import read_log, read_log_metadata, validate_log, write_log  # noqa: F401
    from .clickmodels import (  # noqa: F401
        compare_click_models,
        fit_click_model,
        make_click_model,
    )
    from .clickranker import ClickRanker  # noqa: F401
    from .datasets import (  # noqa: F401
        RankingData,
        from_frame,
        load_letor,
        read_parquet,
        save_letor,
        save_parquet,
        split_queries,
        synthetic,
    )
    from .evaluation import compare, counterfactual, evaluate  # noqa: F401
    from .experiment import load_config, run_experiment  # noqa: F401
    from .lambdamart import LambdaMART  # noqa: F401
    from .metrics import get_metric  # noqa: F401
    from .policies import production  # noqa: F401
    from .policies.production import production_ranker  # noqa: F401
    from .propensity import Propensities, estimate_propensities  # noqa: F401
    from .simulation import FairPairs, Randomize, RandPair, Swap, simulate  # noqa: F401

__all__ = [
    "__version__",
    "ClickRankError",
    "ConfigError",
    "DataFormatError",
    "EstimationError",
    "InputError",
    "LogSchemaError",
    "NotFittedError",
    *_LAZY,
    *_SUBMODULES,
]
