"""clickrank.specs: names defined once, one builder per spec, one set of LambdaMART defaults."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from clickrank import InputError, specs
from clickrank._core._validation import available_cpus, free_cpus
from clickrank.clickmodels import make_click_model as by_name
from clickrank.clickmodels import relevance_for_labels
from clickrank.datasets import synthetic
from clickrank.lambdamart import LambdaMART
from clickrank.selection import DEFAULT_GRID, LambdaMARTCV

ROOT = Path(__file__).resolve().parents[1]


def _choices(command, option):
    from clickrank.cli import cli

    (param,) = [p for p in cli.commands[command].params if option in p.opts]
    return tuple(param.type.choices)


def test_the_cli_offers_the_names_of_the_spec_layer():
    assert _choices("simulate", "--click-model") == specs.CLICK_MODELS
    assert _choices("simulate", "--policy") == specs.POLICY_KINDS
    assert _choices("simulate", "--relevance") == specs.RELEVANCE_MAPS
    assert _choices("interleave", "--click-model") == specs.CLICK_MODELS + specs.POPULATION_MODELS


def test_the_run_config_and_the_targets_use_the_same_lists():
    from clickrank import experiment, targets

    assert experiment.TARGETS == specs.RUN_TARGETS
    assert targets.TARGET_NAMES == specs.TARGET_NAMES
    assert set(specs.RUN_TARGETS) == set(specs.TARGET_NAMES) | {"ips-true", "default"}
    assert all(
        targets.needs_propensities(n) == (n in specs.NEEDS_THETA) for n in specs.TARGET_NAMES
    )


def test_no_command_or_stage_builds_spec_objects_itself():
    """The constructors below are called only in clickrank/specs (and the library)."""
    built = {"Swap", "RandPair", "Randomize", "FairPairs", "PlackettLuce", "DeterministicPolicy",
             "UniformRandom", "LambdaMART", "LambdaMARTCV", "relevance_for_labels"}  # fmt: skip
    found = []
    for folder in ("cli", "experiment"):
        for path in sorted((ROOT / "clickrank" / folder).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                    if node.func.id in built:
                        found.append(f"{path.name}:{node.lineno} {node.func.id}")
    assert found == []


def test_a_click_model_spec_follows_the_label_range_like_relevance_for_labels():
    labels = np.array([0.0, 1.0, 2.0])
    model, line = specs.make_click_model({"name": "pbm", "eta": 2.0, "eps": 0.05}, labels)
    params, expected_line = relevance_for_labels("pbm", labels, eps=0.05)
    reference = by_name("pbm", eta=2.0, **params)
    grid = np.array([[0.0, 1.0, 2.0]])
    assert line == expected_line
    assert np.allclose(model.click_probabilities(grid), reference.click_probabilities(grid))
    # without labels the spec is the factory's parameters (the studies' tables)
    plain, none = specs.make_click_model({"name": "pbm", "eta": 2.0})
    assert none is None and np.allclose(
        plain.propensities(4), by_name("pbm", eta=2.0).propensities(4)
    )


def test_interventions_come_in_one_order_with_their_parameters():
    items = specs.make_interventions(
        {"fairpairs_fraction": 0.1, "randomize_fraction": 0.2, "randomize_k": 3,
         "randpair_fraction": 0.0, "swap_fraction": 0.3, "swap_k": 4}
    )  # fmt: skip
    assert [type(i).__name__ for i in items] == ["Swap", "Randomize", "FairPairs"]
    assert (items[0].fraction, items[0].k, items[1].k) == (0.3, 4, 3)
    assert specs.make_interventions({}) == []


def test_policies_by_name():
    data = synthetic(25, 5, seed=0)
    assert specs.policy_from_scores("random", None).names == ("random",)
    pl = specs.policy_from_scores("plackett-luce", data.y, temperature=0.5)
    assert (pl.names, pl.temperature) == (("plackett-luce",), 0.5)
    assert specs.make_policy("oracle", data).names == ("oracle",)
    with pytest.raises(InputError, match="policy"):
        specs.policy_from_scores("best", data.y)


def test_lambdamart_has_one_set_of_defaults():
    from clickrank.cli.train import FIXED, SELECTION
    from clickrank.experiment import load_config

    fixed = specs.make_learner({}, select=False, early_stopping=False)
    assert fixed.get_params() == LambdaMART().get_params()
    # with validation queries and no patience given: the selection's
    stopping = specs.make_learner({}, select=False)
    assert stopping.early_stopping_rounds == SELECTION["early_stopping_rounds"]
    cv = specs.make_learner({}, select=True)
    assert isinstance(cv, LambdaMARTCV) and list(cv.grid) == list(DEFAULT_GRID)
    assert SELECTION is specs.LAMBDAMART_SELECTION and FIXED is specs.LAMBDAMART_SHAPE
    run = load_config(None)["lambdamart"]
    from_run = specs.make_learner(run, select=False)
    same = {k: v for k, v in from_run.get_params().items() if k not in ("n_estimators",
            "early_stopping_rounds", "n_jobs")}  # fmt: skip
    assert same == {k: v for k, v in LambdaMART().get_params().items() if k in same}
    assert from_run.n_estimators == run["n_estimators"] == SELECTION["n_estimators"]
    # the run's threads: "auto", the CPUs this process may use that others leave free
    assert run["n_jobs"] == "auto" and from_run.n_jobs == free_cpus()
    assert 1 <= from_run.n_jobs <= available_cpus()


def test_lambdamart_params_name_a_key_that_is_not_lambdamarts():
    assert specs.lambdamart_params({"select": True, "truncation_level": 0}) == {
        "truncation_level": None
    }
    with pytest.raises(InputError, match="'num_trees' is not a LambdaMART parameter"):
        specs.make_lambdamart({"num_trees": 10})


def test_dumps_toml_lives_in_the_spec_layer_and_report_uses_it():
    from clickrank import experiment

    assert experiment.dumps_toml is specs.dumps_toml
    report = (ROOT / "clickrank" / "report" / "document.py").read_text()
    assert "from ..specs import dumps_toml" in report


def test_the_library_accepts_exactly_the_names_of_the_spec_layer():
    from clickrank import interleaving, metrics, propensity, targets
    from clickrank.targets import _gains

    assert propensity.METHODS == specs.PROPENSITY_METHODS
    assert set(interleaving.METHODS) == set(specs.INTERLEAVING_METHODS)
    assert metrics.EMPTY_CONVENTIONS == specs.EMPTY_CONVENTIONS
    assert targets.CANDIDATE_SETS == specs.CANDIDATE_SETS == _gains.CANDIDATE_SETS
    assert targets.NORMALIZATIONS == specs.NORMALIZATIONS
    assert set(specs.TRAIN_TARGETS) == (set(specs.TARGET_NAMES) - {"skip-above-ips"}) | {
        "pairs",
        "auto",
    }


def test_the_cli_reads_every_fixed_choice_from_the_spec_layer():
    assert _choices("train", "--target") == specs.TRAIN_TARGETS
    assert _choices("train", "--validation") == specs.VALIDATION_ESTIMATES
    assert _choices("train", "--candidates") == specs.CANDIDATE_SETS
    assert _choices("train", "--normalize") == specs.NORMALIZATIONS
    assert _choices("train", "--naive-kind") == specs.NAIVE_KINDS
    assert _choices("evaluate", "--empty") == specs.EMPTY_CONVENTIONS
    assert _choices("interleave", "--method") == specs.INTERLEAVING_METHODS
    assert _choices("propensity", "--method") == specs.PROPENSITY_METHODS
