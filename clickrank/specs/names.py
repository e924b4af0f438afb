"""Every allowed name of a spec, defined once.

The CLI (``click.Choice``), the run-config checks and the library's own
dispatchers import these tuples; nothing else retypes them. This module
imports nothing, so any layer may read it (the layer test files it, with
:mod:`._toml`, under the data layer).
"""

from __future__ import annotations

__all__ = [
    "POLICY_KINDS",
    "CLICK_MODELS",
    "POPULATION_MODELS",
    "ETA_MODELS",
    "CURVE_MODELS",
    "RELEVANCE_MAPS",
    "INTERVENTION_FRACTIONS",
    "PROPENSITY_DESIGN",
    "TARGET_NAMES",
    "RUN_TARGETS",
    "NEEDS_THETA",
    "MODEL_AWARE",
    "LAMBDAMART_SELECTION",
    "LAMBDAMART_SHAPE",
    "PROPENSITY_METHODS",
    "INTERLEAVING_METHODS",
    "EMPTY_CONVENTIONS",
    "CANDIDATE_SETS",
    "NORMALIZATIONS",
    "NAIVE_KINDS",
    "VALIDATION_ESTIMATES",
    "TRAIN_TARGETS",
    "CLICK_FAMILY",
    "CLICK_RANKER_SELECTION",
    "ONE_TARGET_SELECTION",
]

#: Logging policies by name (:func:`clickrank.specs.make_policy`).
POLICY_KINDS = ("production", "plackett-luce", "oracle", "random")

#: Click models a log is simulated with (``clickrank simulate``, ``[click_model] name``).
CLICK_MODELS = ("pbm", "trust", "cascade", "dcm", "dbn", "sdbn", "ubm")
#: Populations of heterogeneous users (``clickrank interleave`` also takes these).
POPULATION_MODELS = ("pbm-population", "web-population")
#: Click models with a position-bias severity ``eta``: θ_p = (1/p)^η.
ETA_MODELS = ("pbm", "trust", "ubm")
#: Click models whose examination curve can be named (``curve``).
CURVE_MODELS = ("pbm", "trust")
#: Label -> click-probability maps (:func:`clickrank.clickmodels.relevance_for_labels`).
RELEVANCE_MAPS = ("graded", "binarized")

#: Interventions by the key of their share of sessions, in the order they are applied.
INTERVENTION_FRACTIONS = (
    "swap_fraction",
    "randpair_fraction",
    "randomize_fraction",
    "fairpairs_fraction",
)
#: Propensity estimators that need an intervention, and the fraction that provides it.
PROPENSITY_DESIGN = {
    "swap": "swap_fraction",
    "randpair": "randpair_fraction",
    "randomized": "randomize_fraction",
}

#: Training targets of :func:`clickrank.targets.make_target` (plus ``"pairs:<strategy>"``).
TARGET_NAMES = (
    "naive",
    "ips",
    "dr",
    "unbiased-lambdamart",
    "ips-pairs",
    "prs-pairs",
    "affine",
    "cascade-ips",
    "fitted-relevance",
    "skip-above",
    "skip-above-ips",
    "oracle",
)
#: Targets a run config can name (``[targets] names``): ``default`` (clickrank.ClickRanker,
#: the target chosen among its family), the targets above and ``ips-true`` (IPS with the
#: simulator's true θ), in the order the config errors list them.
RUN_TARGETS = (
    "default",
    "naive",
    "ips",
    "ips-true",
    "dr",
    "skip-above",
    "skip-above-ips",
    "oracle",
    "unbiased-lambdamart",
    "prs-pairs",
    "ips-pairs",
    "affine",
    "cascade-ips",
    "fitted-relevance",
)
#: Targets built with the estimated propensities.
NEEDS_THETA = ("ips", "dr", "skip-above-ips", "prs-pairs", "ips-pairs")
#: The click model each model-aware target fits to the log (clickmodels.fit_click_model).
MODEL_AWARE = {"affine": "trust", "cascade-ips": "dbn", "fitted-relevance": "dbn"}

#: The defaults of :class:`~clickrank.selection.LambdaMARTCV` (the model selection of
#: ``clickrank train`` and ``[lambdamart] select = true``), readable without LightGBM.
LAMBDAMART_SELECTION = {
    "folds": 5,
    "n_estimators": 500,
    "learning_rate": 0.1,
    "early_stopping_rounds": 50,
    "racing": 0.99,
    "grid": (
        {"num_leaves": 4, "max_depth": 2},
        {"num_leaves": 8, "max_depth": 3},
        {"num_leaves": 31, "max_depth": -1},
    ),
}
#: What :class:`clickrank.ClickRanker`'s members select with where it differs from
#: :data:`LAMBDAMART_SELECTION`: a shorter patience and a looser race. Its members are
#: averaged, so one member stopped a little early costs the average little, and the
#: patience was half its rounds (docs/default-learner.md, "What keeps the fit affordable").
#: One target's selection (``clickrank train --target T``, a run's targets other than
#: ``default``) keeps :data:`LAMBDAMART_SELECTION`'s (:data:`ONE_TARGET_SELECTION`).
#: The patience grows to a quarter of the best round where that is longer
#: (``early_stopping_fraction``): members that keep hundreds of trees (long synthetic
#: lists) lost 0.002-0.007 NDCG@10 with a fixed 20.
#: Its members learn faster, on three folds: at 10^5 documents a rate of 0.1 held
#: many of them at the cap of 500 trees, and three folds at 0.2 cut the default's rounds by
#: 16-51 % at the same or a better test NDCG@10 (MQ2008, synthetic-150, large synthetic
#: sets; docs/default-cost.md).
#: Racing at 0.5, so only the first fold's best tree shape runs the other folds (the
#: members are averaged, and the shapes the race at 95 % kept were within noise of each
#: other), and a learning rate of 0.5: each member is the average of its fold models
#: (bagging), which takes out much of what a faster rate adds in variance. From 0.3 to
#: 0.5 with the fold models, the default's rounds fell by half at 10^4-10^5 documents at
#: the same test NDCG@10 on MQ2008, the LightGBM example set and synthetic-150
#: (docs/default-cost.md).
CLICK_RANKER_SELECTION = {"early_stopping_rounds": 20, "early_stopping_fraction": 0.25,
                          "racing": 0.5, "learning_rate": 0.5, "folds": 3,
                          "refit": False, "shared_shape": True}  # fmt: skip
#: The settings of one target's selection through ClickRanker: those of LambdaMARTCV (and
#: LambdaMART's fixed patience, and its refit on all queries).
ONE_TARGET_SELECTION = {
    "refit": True,
    "early_stopping_rounds": LAMBDAMART_SELECTION["early_stopping_rounds"],
    "early_stopping_fraction": 0.0,
    "racing": LAMBDAMART_SELECTION["racing"],
    "learning_rate": LAMBDAMART_SELECTION["learning_rate"],
    "folds": LAMBDAMART_SELECTION["folds"],
}
#: The tree shape of :class:`~clickrank.lambdamart.LambdaMART` without selection.
LAMBDAMART_SHAPE = {"num_leaves": 8, "max_depth": 3}

#: Propensity estimators by name (:func:`clickrank.propensity.estimate_propensities`).
PROPENSITY_METHODS = (
    "swap",
    "randpair",
    "randomized",
    "harvest-allpairs",
    "harvest-pivot",
    "harvest-adjacent",
    "em",
    "regression-em",
    "auto",
)
#: Interleaving methods of a simulated comparison (:mod:`clickrank.interleaving`).
INTERLEAVING_METHODS = ("team-draft", "balanced", "probabilistic", "optimized")
#: What a query without a relevant document scores (:mod:`clickrank.metrics`).
EMPTY_CONVENTIONS = ("skip", "zero", "one")
#: Documents in each training list of a click-based gain target (:mod:`clickrank.targets`).
CANDIDATE_SETS = ("auto", "shown", "all", "hybrid")
#: Normalisations of IPS gains.
NORMALIZATIONS = ("none", "exposure", "query")
#: The naive target's gains: click counts or click-through rates.
NAIVE_KINDS = ("clicks", "ctr")
#: The click estimate of DCG@k a model selection maximises
#: (:class:`~clickrank.selection.ClickValidation`).
VALIDATION_ESTIMATES = ("ips", "dr", "clicks")
#: ``clickrank train --target``: ``auto`` (:class:`clickrank.ClickRanker` chooses among its
#: family), then the targets above, ``skip-above-ips`` (skip-above preferences weighted by
#: inverse propensities) and ``pairs`` (``pairs:STRATEGY``: the preferences of a strategy).
#: Members of :class:`clickrank.ClickRanker`'s family (``clickrank train --set family=[...]``).
CLICK_FAMILY = ("naive", "ips-shown", "ips-hybrid", "ips-all", "dr", "unbiased-lambdamart")
TRAIN_TARGETS = (
    "auto",
    "ips",
    *(n for n in TARGET_NAMES if n not in ("ips", "skip-above-ips", "oracle")),
    "pairs",
    "oracle",
)
