"""clickrank: unbiased learning to rank from click logs.

Simulate position bias, estimate it, remove it, and prove the result. The flow
(DESIGN §1, ``docs/architecture.md``)::

    RankingData --simulate--> click log --estimate_propensities--> Propensities
    click log + Propensities --targets--> Target --LambdaMART.fit--> ranker
    ranker + RankingData --evaluate / interleaving--> results with CIs --plots--> report

Submodules hold the families (``metrics``, ``clickmodels``, ``policies``,
``simulation``, ``clicklog``, ``propensity``, ``targets``, ``lambdas``,
``lambdamart``, ``evaluation``, ``interleaving``, ``online``, ``publiclogs``);
``clickrank.plots`` is imported on demand because it loads matplotlib.
"""

from . import (
    clicklog,
    clickmodels,
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
    simulation,
    targets,
)
from ._validation import (
    ClickRankError,
    ConfigError,
    DataFormatError,
    EstimationError,
    InputError,
    LogSchemaError,
    NotFittedError,
)
from ._version import __version__
from .clicklog import read_log, validate_log, write_log
from .clickmodels import make_click_model
from .datasets import (
    RankingData,
    from_frame,
    load_letor,
    read_parquet,
    save_letor,
    save_parquet,
    split_queries,
    synthetic,
)
from .evaluation import compare, counterfactual, evaluate
from .experiment import load_config, run_experiment
from .lambdamart import LambdaMART
from .metrics import get_metric
from .policies import production_ranker
from .propensity import Propensities, estimate_propensities
from .simulation import Randomize, RandPair, Swap, simulate

__all__ = [
    "__version__",
    # errors
    "ClickRankError",
    "ConfigError",
    "DataFormatError",
    "EstimationError",
    "InputError",
    "LogSchemaError",
    "NotFittedError",
    # data
    "RankingData",
    "from_frame",
    "load_letor",
    "read_parquet",
    "save_letor",
    "save_parquet",
    "split_queries",
    "synthetic",
    # clicks
    "make_click_model",
    "production_ranker",
    "simulate",
    "Swap",
    "RandPair",
    "FairPairs",
    "Randomize",
    "read_log",
    "validate_log",
    "write_log",
    # propensities, training, evaluation
    "Propensities",
    "estimate_propensities",
    "LambdaMART",
    "get_metric",
    "evaluate",
    "compare",
    "counterfactual",
    "load_config",
    "run_experiment",
    # submodules
    "clicklog",
    "clickmodels",
    "evaluation",
    "experiment",
    "interleaving",
    "lambdamart",
    "lambdas",
    "metrics",
    "online",
    "policies",
    "propensity",
    "publiclogs",
    "simulation",
    "targets",
]
