"""Tests of clickrank.selection: counterfactual validation and LambdaMARTCV."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from clickrank import InputError
from clickrank.clickmodels import make_click_model
from clickrank.datasets import split_queries, synthetic
from clickrank.evaluation import counterfactual
from clickrank.lambdamart import LambdaMART
from clickrank.policies import DeterministicPolicy
from clickrank.policies.production import production_ranker
from clickrank.selection import DEFAULT_GRID, ClickValidation, LambdaMARTCV
from clickrank.simulation import Swap, simulate
from clickrank.targets import Target, ips, oracle, skip_above


@pytest.fixture(scope="module")
def setup():
    data = synthetic(260, 20, seed=5)
    train, test = split_queries(data, [160, 100], seed=5)
    prod = production_ranker(train, 0.1, seed=5)
    cm = make_click_model("pbm", eta=1.0, attractiveness="graded")
    log = simulate(
        train,
        policy=DeterministicPolicy(prod),
        click_model=cm,
        n_sessions=40_000,
        interventions=[Swap(0.1)],
        top_k=10,
        seed=5,
    )
    return train, test, log, cm.propensities(10)


def test_click_validation_equals_the_counterfactual_estimate(setup):
    """Two implementations of the IPS estimate of DCG@k per session agree."""
    train, _, log, theta = setup
    val = ClickValidation.from_log(train, log, theta)
    scores = np.random.default_rng(0).random(train.n_docs)
    ref = counterfactual(log, train, scores, theta, utility="dcg", k=10)
    assert val.score(scores, k=10) == pytest.approx(ref.estimate, rel=1e-10)
    est, se = val.score_se(scores, k=10)
    assert est == pytest.approx(ref.estimate) and 0 < se < est
    assert val.metric_name(10) == "ips-dcg@10"


@pytest.mark.parametrize("k", [1, 10, 40])
def test_click_validation_scores_are_dcg_to_the_bit(k):
    """The validation's top-k pass gives the numbers of metrics.dcg itself: ties, -inf
    scores, never-shown documents, lists shorter than k and dcg's blocks of rows."""
    from clickrank.datasets import RankingData
    from clickrank.metrics import dcg

    rng = np.random.default_rng(k)
    for lens in (rng.integers(1, 30, 200), rng.integers(200, 1500, 300)):  # > 2^18 rows
        qptr = np.concatenate([[0], np.cumsum(lens)])
        n = int(qptr[-1])
        data = RankingData(np.zeros((n, 1), np.float32), None, qptr)
        gains = rng.random(n) * (rng.random(n) < 0.3)
        scores = np.round(rng.normal(size=n), 1)  # ties
        scores[rng.random(n) < 0.05] = -np.inf
        shown = rng.random(n) < 0.7
        for mask in (None, shown):
            v = ClickValidation(data, gains, 100.0, shown=mask)
            s = scores if mask is None else np.where(mask, scores, -np.inf)
            want = np.nan_to_num(dcg(s, gains, qptr, k=k, gain="linear").values)
            np.testing.assert_array_equal(v.per_query(scores, k), want)
    with pytest.raises(InputError, match="one value per row"):
        v.per_query(scores[:-1])


def test_click_validation_prefers_the_better_ranking(setup):
    """The true labels' ranking beats a reversed one on held-out clicks."""
    train, _, log, theta = setup
    val = ClickValidation.from_log(train, log, theta)
    assert val.score(train.y) > val.score(-train.y) + 5 * val.score_se(train.y)[1]


def test_click_validation_checks_its_input(setup):
    train, _, log, theta = setup
    with pytest.raises(InputError, match="needs propensities"):
        ClickValidation.from_log(train, log, None)
    with pytest.raises(InputError, match="one per row"):
        ClickValidation(train, np.ones(3), 10.0)
    with pytest.raises(InputError, match="estimator"):
        ClickValidation.from_log(train, log, theta, estimator="snips")
    assert ClickValidation.from_log(train, log, None, estimator="clicks").estimator == "clicks"


def test_subset_target_matches_a_target_built_on_the_subset(setup):
    train, _, log, theta = setup
    q = np.array([5, 0, 17, 3])
    sub = train.subset(q)
    sub_log = log.filter(pl.col("query").is_in(sub.qid.tolist()))
    t = ips(train, log, theta, clip=None, candidates="shown").subset(train, q)
    direct = ips(sub, sub_log, theta, clip=None, candidates="shown")
    np.testing.assert_allclose(t.gains, direct.gains)
    np.testing.assert_array_equal(t.candidates, direct.candidates)
    pairs = skip_above(train, log).subset(train, q)
    ref = skip_above(sub, sub_log)
    key = lambda p, w: sorted(zip(map(tuple, p.tolist()), w.tolist(), strict=True))  # noqa: E731
    assert key(pairs.pairs, pairs.pair_weights) == key(ref.pairs, ref.pair_weights)


def test_lambdamartcv_chooses_and_refits(setup, tmp_path):
    train, test, log, theta = setup
    val = ClickValidation.from_log(train, log, theta)
    target = ips(train, log, theta)
    cv = LambdaMARTCV(folds=3, n_estimators=120, early_stopping_rounds=20, seed=1)
    cv.fit(train, target, validation=val)
    assert cv.cv_results_.height == len(DEFAULT_GRID)
    full = cv.cv_results_.filter(pl.col("folds_fitted") == 3)  # the shapes raced to the end
    best = full.sort("score", descending=True).row(0, named=True)
    assert cv.best_params_["n_estimators"] == best["n_estimators"] <= 120
    assert cv.model_.best_iteration_ == cv.best_params_["n_estimators"]
    assert cv.model_.num_leaves == json.loads(best["params"])["num_leaves"]
    again = LambdaMARTCV(folds=3, n_estimators=120, early_stopping_rounds=20, seed=1)
    np.testing.assert_array_equal(
        again.fit(train, target, validation=val).predict(test), cv.predict(test)
    )
    assert "ips-dcg@10" in cv.summary()
    out = cv.save(tmp_path / "m")
    meta = json.loads((out / "selection.json").read_text())
    assert meta["best_params"] == cv.best_params_ and LambdaMART.load(out).best_iteration_ > 0


def test_lambdamartcv_without_refit_is_the_mean_of_its_fold_models(setup, monkeypatch):
    """refit=False: the same choice and out-of-fold scores, one fit fewer, and a model that
    scores the mean of the chosen shape's fold models at the chosen number of trees."""
    import clickrank.selection as S

    train, test, log, theta = setup
    val = ClickValidation.from_log(train, log, theta)
    target = ips(train, log, theta)
    kw = {"folds": 3, "repeats": 2, "n_estimators": 120, "early_stopping_rounds": 20, "seed": 1}
    seen = []
    real = S._out_of_fold
    monkeypatch.setattr(S, "_out_of_fold", lambda d, f, models, trees: (
        seen.append((models, trees)) or real(d, f, models, trees)))  # fmt: skip
    refit = LambdaMARTCV(**kw).fit(train, target, validation=val)
    bag = LambdaMARTCV(refit=False, **kw).fit(train, target, validation=val)
    assert bag.best_params_ == refit.best_params_
    np.testing.assert_array_equal(bag.oof_, refit.oof_)
    assert bag.fits_ == refit.fits_ - 1
    assert bag.rounds_ == refit.rounds_ - refit.model_.booster_.current_iteration()
    models, trees = seen[-1]
    assert len(models) == 6 and trees == bag.best_params_["n_estimators"]
    want = np.mean([m.booster_.predict(test.X, num_iteration=trees) for m in models], axis=0)
    np.testing.assert_allclose(bag.predict(test), want, rtol=1e-10, atol=1e-12)
    assert bag.model_.n_train_queries_ == train.n_queries
    assert "mean of the chosen shape's fold models" in bag.summary()
    assert not np.array_equal(bag.predict(test), refit.predict(test))


def _count_datasets(monkeypatch) -> list[bool]:
    """Every ``lightgbm.Dataset`` built from now on: True for a training set (binned from its
    own rows), False for one binned with a reference's bins."""
    import lightgbm as lgb

    built: list[bool] = []
    init = lgb.Dataset.__init__

    def counted(self, *args, **kwargs):
        built.append(kwargs.get("reference") is None)
        init(self, *args, **kwargs)

    monkeypatch.setattr(lgb.Dataset, "__init__", counted)
    return built


def test_tree_shapes_share_a_folds_binned_data_and_fit_the_same_models(setup, monkeypatch):
    """Binning once per fold instead of once per fit changes no model: the curves, the
    out-of-fold scores and the refit are those of fits that each bin afresh. A grid
    entry with another ``min_data_in_leaf`` (it enters LightGBM's binning) bins afresh."""
    train, test, log, theta = setup
    val = ClickValidation.from_log(train, log, theta)
    target = ips(train, log, theta, candidates="all")
    grid = [{"num_leaves": 4, "max_depth": 2}, {"num_leaves": 8, "max_depth": 3},
            {"num_leaves": 8, "max_depth": 3, "min_data_in_leaf": 5}]  # fmt: skip
    built = _count_datasets(monkeypatch)

    def cv():
        return LambdaMARTCV(grid=grid, folds=3, n_estimators=60, early_stopping_rounds=10,
                            racing=None, seed=2).fit(train, target, validation=val)  # fmt: skip

    shared = cv()
    # per fold: one training and one validation set for the first two shapes, one each
    # for the third; then the refit's training set
    assert built.count(True) == 3 * 2 + 1 and built.count(False) == 3 * 2
    fit = LambdaMART._fit
    monkeypatch.setattr(LambdaMART, "_fit", lambda self, *a, sets=None, **kw: fit(self, *a, **kw))
    built.clear()
    fresh = cv()
    assert built.count(True) == 3 * 3 + 1 and built.count(False) == 3 * 3
    for e in range(len(grid)):
        np.testing.assert_array_equal(shared.curves_[e], fresh.curves_[e])
    np.testing.assert_array_equal(shared.oof_, fresh.oof_)
    np.testing.assert_array_equal(shared.predict(test), fresh.predict(test))


def test_targets_share_the_folds_binned_features_through_shared(setup, monkeypatch):
    """What ClickRanker does for its members: a second target on the same folds and the same
    candidate rows bins no features, one on other rows bins its own (as it would alone), and
    either fits the models it fits alone."""
    train, test, log, theta = setup
    val = ClickValidation.from_log(train, log, theta)
    grid = [{"num_leaves": 4, "max_depth": 2}]
    binned = _count_datasets(monkeypatch)

    def cv(target, shared=None):
        return LambdaMARTCV(grid=grid, folds=3, n_estimators=40, early_stopping_rounds=10,
                            seed=2).fit(train, target, validation=val, shared=shared)  # fmt: skip

    shared: dict = {}
    cv(ips(train, log, theta, candidates="all"), shared)
    assert binned.count(True) == 3 + 1 and binned.count(False) == 3
    binned.clear()
    together = cv(ips(train, log, theta, candidates="all", clip=None), shared)
    assert binned == []  # the same rows: nothing binned
    shown = cv(ips(train, log, theta, candidates="shown"), shared)
    assert binned.count(True) == 3 + 1 and binned.count(False) == 3  # its own rows
    binned.clear()
    alone = cv(ips(train, log, theta, candidates="all", clip=None))
    assert binned.count(True) == 3 + 1
    np.testing.assert_array_equal(together.oof_, alone.oof_)
    np.testing.assert_array_equal(together.predict(test), alone.predict(test))
    np.testing.assert_array_equal(
        shown.predict(test), cv(ips(train, log, theta, candidates="shown")).predict(test)
    )
    # another validation (or data, or folds) empties the dict: nothing stale is reused
    other = ClickValidation.from_log(train, log, theta)
    LambdaMARTCV(grid=grid, folds=3, n_estimators=5, seed=2).fit(
        train, ips(train, log, theta, candidates="all"), validation=other, shared=shared
    )
    assert shared["of"][1] is other


def test_racing_drops_a_dominated_shape_and_keeps_the_choice(setup):
    """A shape that cannot learn (a huge L2 penalty keeps every leaf near 0) is shown worse
    after the first folds and not fitted on the rest; the shapes within noise run every fold,
    and the choice and refit are those of the race-free cross-validation."""
    train, test, log, theta = setup
    val = ClickValidation.from_log(train, log, theta)
    target = ips(train, log, theta, candidates="all")
    grid = [{"num_leaves": 2, "max_depth": 1, "lambda_l2": 1e9},
            {"num_leaves": 4, "max_depth": 2}, {"num_leaves": 8, "max_depth": 3}]  # fmt: skip

    def cv(racing):
        return LambdaMARTCV(grid=grid, folds=5, n_estimators=60, early_stopping_rounds=10,
                            racing=racing, seed=2).fit(train, target, validation=val)  # fmt: skip

    raced, full = cv(0.99), cv(None)
    fitted = dict(zip(raced.cv_results_["entry"], raced.cv_results_["folds_fitted"],
                      strict=True))  # fmt: skip
    assert fitted[0] < 5 and full.cv_results_["folds_fitted"].to_list() == [5, 5, 5]
    assert raced.best_params_ == full.best_params_
    np.testing.assert_array_equal(raced.predict(test), full.predict(test))
    assert "raced out after" in raced.summary() and "raced out" not in full.summary()
    with pytest.raises(InputError, match="racing"):
        LambdaMARTCV(racing=1.0).fit(train, target, validation=val)


def test_racing_at_one_half_runs_only_the_first_folds_leader(setup):
    """The default learner's race (0.5): the one-sided bound is the paired mean itself, so
    after the first fold only its leader is fitted on the other folds, and that shape is
    the one chosen, its trees from every fold."""
    train, _, log, theta = setup
    val = ClickValidation.from_log(train, log, theta)
    target = ips(train, log, theta, candidates="all")
    grid = [{"num_leaves": 2, "max_depth": 1}, {"num_leaves": 4, "max_depth": 2},
            {"num_leaves": 8, "max_depth": 3}]  # fmt: skip
    kw = {"grid": grid, "folds": 3, "n_estimators": 60, "early_stopping_rounds": 10, "seed": 2}
    half = LambdaMARTCV(racing=0.5, **kw).fit(train, target, validation=val)
    fitted = half.cv_results_["folds_fitted"].to_list()
    assert sorted(fitted) == [1, 1, 3]
    lead = half.cv_results_.filter(pl.col("folds_fitted") == 3)
    assert half.best_params_["num_leaves"] == lead["num_leaves"][0]
    assert half.fits_ == 1 + 3 + 2  # three shapes in fold 1, the leader in two more, the refit


def test_lambdamartcv_stops_early_on_a_target_without_signal(setup):
    """Random gains carry nothing the validation rewards: few trees are kept."""
    train, _, log, theta = setup
    val = ClickValidation.from_log(train, log, theta)
    noise = Target("noise", gains=np.random.default_rng(3).random(train.n_docs))
    cv = LambdaMARTCV(
        grid=[{"num_leaves": 8, "max_depth": 3}],
        folds=3,
        n_estimators=200,
        early_stopping_rounds=30,
        seed=0,
    ).fit(train, noise, validation=val)
    signal = LambdaMARTCV(
        grid=[{"num_leaves": 8, "max_depth": 3}],
        folds=3,
        n_estimators=200,
        early_stopping_rounds=30,
        seed=0,
    ).fit(train, oracle(train), validation=val)
    assert cv.cv_results_["score"][0] < signal.cv_results_["score"][0]
    assert cv.best_params_["n_estimators"] < signal.best_params_["n_estimators"]


def test_lambdamartcv_with_labels_and_bad_arguments(setup):
    train, _, _, _ = setup
    cv = LambdaMARTCV(
        grid=[{"num_leaves": 4, "max_depth": 2}], folds=2, n_estimators=30, early_stopping_rounds=10
    ).fit(train)
    assert cv.metric_ == "ndcg@10"
    with pytest.raises(InputError, match="folds"):
        LambdaMARTCV(folds=1).fit(train)
    with pytest.raises(InputError, match="may not set"):
        LambdaMARTCV(grid=[{"n_estimators": 5}]).fit(train)
    with pytest.raises(InputError, match="ClickValidation"):
        LambdaMARTCV(folds=2).fit(train.with_labels(None), oracle(train))


def test_cli_defaults_agree_with_the_library():
    from clickrank.cli.train import FIXED, SELECTION

    cv = LambdaMARTCV()
    assert {
        k: getattr(cv, k)
        for k in ("folds", "n_estimators", "learning_rate", "early_stopping_rounds", "racing")
    } == {k: v for k, v in SELECTION.items() if k != "grid"}
    from clickrank import ClickRanker
    from clickrank.specs import CLICK_RANKER_SELECTION, ONE_TARGET_SELECTION

    ranker = ClickRanker()  # the default learner's own patience and racing
    assert {k: getattr(ranker, k) for k in CLICK_RANKER_SELECTION} == CLICK_RANKER_SELECTION
    lm = LambdaMART()  # one target keeps LambdaMARTCV's settings and LambdaMART's patience
    assert ONE_TARGET_SELECTION == {
        k: getattr(cv, k) if hasattr(cv, k) else getattr(lm, k) for k in ONE_TARGET_SELECTION
    }  # (one target has no later members to share a tree shape with)
    assert set(CLICK_RANKER_SELECTION) - set(ONE_TARGET_SELECTION) == {"shared_shape"}
    assert tuple(SELECTION["grid"]) == tuple(DEFAULT_GRID)
    lm = LambdaMART()
    assert (lm.num_leaves, lm.max_depth) == (FIXED["num_leaves"], FIXED["max_depth"])
    from clickrank.experiment import load_config

    cfg = load_config(None)["lambdamart"]
    # folds and learning rate unset: each learner's own (the default target's differ)
    assert "folds" not in cfg and "learning_rate" not in cfg
    assert cfg["n_estimators"] == cv.n_estimators
    assert [dict(g) for g in cfg["grid"]] == [dict(g) for g in DEFAULT_GRID]
    assert (cfg["num_leaves"], cfg["max_depth"]) == (lm.num_leaves, lm.max_depth)


def test_a_selection_fitted_in_two_calls_is_the_selection_of_one(setup):
    """``fit(until=1)`` fits the first fold (every shape) and stops; pickled and sent on
    (what the default learner's member race does between processes), the call that fits
    the rest (``resume``) gives the selection, out-of-fold scores and model of one ``fit``,
    to the bit.
    Between the two, ``fold_terms`` scores the first fold's held-out queries by the leading
    shape at its best round."""
    import pickle

    train, test, log, theta = setup
    val = ClickValidation.from_log(train, log, theta)
    target = ips(train, log, theta, candidates="all")
    kw = {"grid": DEFAULT_GRID, "folds": 3, "n_estimators": 40, "early_stopping_rounds": 10,
          "racing": 0.5, "refit": False, "seed": 1}  # fmt: skip
    one = LambdaMARTCV(**kw).fit(train, target, validation=val)
    part = LambdaMARTCV(**kw).fit(train, target, validation=val, until=1)
    assert part.fits_ == len(DEFAULT_GRID) and not hasattr(part, "model_")
    held_q, terms = part.fold_terms(0, train, val)
    np.testing.assert_array_equal(part.held_terms_, terms)  # set by the partial fit itself
    lead = int(np.argmax([part._run["per_fold"][e, 0].max() for e in range(3)]))
    curve = part._run["per_fold"][lead, 0]
    rounds = int(np.argmax(curve)) + 1
    # the leader's best held-out score, summed over its queries as the curve's metric is
    assert terms.size == held_q.size and terms.sum() / val.subset(held_q).n_sessions == (
        pytest.approx(curve[rounds - 1], rel=1e-9)
    )
    rest = pickle.loads(pickle.dumps(part)).resume(train, target, validation=val)
    assert rest.best_params_ == one.best_params_ and rest.fits_ == one.fits_
    assert rest.cv_results_.equals(one.cv_results_)
    np.testing.assert_array_equal(rest.oof_, one.oof_)
    np.testing.assert_array_equal(rest.predict(test), one.predict(test))
    assert rest._run is None  # the fold models are not kept
