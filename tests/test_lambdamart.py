"""Tests of clickrank.LambdaMART: LightGBM parity, Newton direction, targets, persistence."""

from __future__ import annotations

import json

import lightgbm as lgb
import numpy as np
import polars as pl
import pytest

from clickrank import DataFormatError, InputError, NotFittedError, RankingData
from clickrank.datasets import split_queries, synthetic
from clickrank.lambdamart import LambdaMART
from clickrank.metrics import ndcg
from clickrank.targets import ips, naive, oracle, skip_above

SMALL = dict(
    n_estimators=30, learning_rate=0.1, num_leaves=8, max_depth=3, min_data_in_leaf=20, seed=0
)


@pytest.fixture(scope="module")
def split():
    return split_queries(synthetic(500, 20, seed=4), [150, 150, 200], seed=1)


def _builtin(train: RankingData, n_trees: int, **extra) -> lgb.Booster:
    params = {
        "objective": "lambdarank", "learning_rate": 0.1, "num_leaves": 8, "max_depth": 3,
        "min_data_in_leaf": 20, "seed": 0, "deterministic": True, "force_row_wise": True,
        "num_threads": 1, "verbosity": -1, **extra,
    }  # fmt: skip
    return lgb.train(params, lgb.Dataset(train.X, train.y, group=np.diff(train.qptr)), n_trees)


def test_one_tree_equals_lightgbm_builtin_lambdarank(split):
    train, _, test = split
    ours = LambdaMART(**{**SMALL, "n_estimators": 1}).fit(train).predict(test)
    theirs = _builtin(train, 1).predict(test.X)
    # same gradients up to float32 rounding and LightGBM's sigmoid lookup table
    np.testing.assert_allclose(ours, theirs, atol=1e-5)


def test_one_tree_equals_builtin_with_truncation_and_without_norm(split):
    train, _, test = split
    ours = LambdaMART(**{**SMALL, "n_estimators": 1}, truncation_level=5, normalize=False).fit(
        train
    )
    theirs = _builtin(train, 1, lambdarank_truncation_level=5, lambdarank_norm=False)
    np.testing.assert_allclose(ours.predict(test), theirs.predict(test.X), atol=1e-5)


def test_oracle_quality_matches_lightgbm_builtin(split):
    train, _, test = split
    ours = LambdaMART(**SMALL).fit(train)
    theirs = _builtin(train, SMALL["n_estimators"])
    a = float(ndcg(ours.predict(test), test.y, test.qptr, k=5))
    b = float(ndcg(theirs.predict(test.X), test.y, test.qptr, k=5))
    assert abs(a - b) < 0.005
    assert a > 0.6  # far above a random ranking (about 0.2 on this data)


def test_one_newton_step_moves_document_one_up():
    """DESIGN §4: labels (3, 1, 2, 2) at scores 0, forces (+1.5, -1.5, 0, 0)."""
    d = RankingData(np.eye(4, dtype=np.float32), np.array([3.0, 1.0, 2.0, 2.0]), np.array([0, 4]))
    m = LambdaMART(
        n_estimators=1, learning_rate=1.0, num_leaves=2, min_data_in_leaf=1, weighting="none",
        normalize=False, truncation_level=None,
        lightgbm_params={"min_sum_hessian_in_leaf": 0.0, "min_data_in_bin": 1},
    ).fit(d)  # fmt: skip
    s = m.predict(d)
    assert s[0] > 0 and s[0] == s.max()
    # the leaf of document 1 alone holds G/H = 1.5 / 0.75
    assert s[0] == pytest.approx(1.5 / 0.75)


def test_same_seed_gives_identical_models(split):
    train, _, test = split
    kw = {
        **SMALL,
        "lightgbm_params": {"feature_fraction": 0.7, "bagging_fraction": 0.7, "bagging_freq": 1},
    }
    a = LambdaMART(**kw).fit(train)
    b = LambdaMART(**kw).fit(train)
    c = LambdaMART(**{**kw, "seed": 1}).fit(train)
    assert a.predict(test).tobytes() == b.predict(test).tobytes()
    assert a.booster_.model_to_string() == b.booster_.model_to_string()
    assert a.predict(test).tobytes() != c.predict(test).tobytes()


def test_save_load_roundtrip_gives_identical_predictions(split, tmp_path):
    train, valid, test = split
    m = LambdaMART(**SMALL, early_stopping_rounds=5).fit(train, valid=valid)
    m.save(tmp_path / "model")
    assert (
        json.loads((tmp_path / "model" / "meta.json").read_text())["format"]
        == "clickrank-lambdamart"
    )
    back = LambdaMART.load(tmp_path / "model")
    assert back.predict(test).tobytes() == m.predict(test).tobytes()
    assert back.best_iteration_ == m.best_iteration_
    assert back.get_params() == m.get_params()
    with pytest.raises(InputError, match="overwrite"):
        m.save(tmp_path / "model")
    m.save(tmp_path / "model", overwrite=True)
    assert not [p for p in (tmp_path / "model").iterdir() if p.name.endswith(".tmp")]


def test_load_rejects_a_folder_without_a_model(tmp_path):
    with pytest.raises(DataFormatError, match="missing"):
        LambdaMART.load(tmp_path)


def test_early_stopping_keeps_the_best_validation_iteration(split):
    train, valid, _ = split
    m = LambdaMART(
        **{**SMALL, "n_estimators": 200, "learning_rate": 0.5}, early_stopping_rounds=3, eval_at=5
    )
    m.fit(train, valid=valid)
    curve = m.evals_result_["valid"]["ndcg@5"]
    assert m.best_iteration_ == int(np.argmax(curve)) + 1
    assert len(curve) < 200  # it stopped
    assert float(ndcg(m.predict(valid), valid.y, valid.qptr, k=5)) == pytest.approx(max(curve))


def test_a_growing_patience_waits_a_fraction_of_the_best_round(split):
    """early_stopping_fraction f: the fit stops max(P, int(f * best round)) rounds after
    its best (unless the budget ends first); f = 0 is LightGBM's fixed patience."""
    train, valid, _ = split
    waited = {}
    for f in (0.0, 0.5, 1.0):
        m = LambdaMART(**{**SMALL, "n_estimators": 400, "learning_rate": 0.5},
                       early_stopping_rounds=3, early_stopping_fraction=f, eval_at=5)  # fmt: skip
        m.fit(train, valid=valid)
        curve = m.evals_result_["valid"]["ndcg@5"]
        best = int(np.argmax(curve)) + 1  # the first best, as LightGBM's strict improvement
        assert m.best_iteration_ == best
        waited[f] = len(curve) - best
        if len(curve) < 400:
            assert waited[f] == max(3, int(f * best)), (f, best, len(curve))
    assert waited[0.0] == 3 and waited[1.0] > waited[0.0]
    with pytest.raises(InputError, match="early_stopping_fraction"):
        LambdaMART(early_stopping_rounds=3, early_stopping_fraction=-0.1).fit(train, valid=valid)


def _pbm_log(data: RankingData, n_sessions: int, seed: int, top_k: int = 5) -> pl.DataFrame:
    """Random top-k lists, PBM clicks theta_p = 1/p, click prob gamma = y/4 (numpy only)."""
    rng = np.random.default_rng(seed)
    q = rng.integers(0, data.n_queries, size=n_sessions)
    m = int(data.lengths.max())
    order = np.argsort(rng.random((n_sessions, m)), axis=1)[:, :top_k]
    rows = (data.qptr[q][:, None] + order).ravel()
    pos = np.tile(np.arange(1, top_k + 1), n_sessions)
    click = rng.random(rows.size) < (1.0 / pos) * data.y[rows] / 4.0
    return pl.DataFrame(
        {"session": np.repeat(np.arange(n_sessions), top_k), "query": data.qid[q].repeat(top_k),
         "position": pos, "doc": data.doc[rows], "click": click}
    )  # fmt: skip


def test_click_targets_train_rankers_far_better_than_random(split):
    train, _, test = split
    log = _pbm_log(train, 20_000, seed=0)
    theta = 1.0 / np.arange(1, 6)
    rng = np.random.default_rng(0)
    rand = float(ndcg(rng.random(test.n_docs), test.y, test.qptr, k=5))
    for target in (naive(train, log), ips(train, log, theta), skip_above(train, log)):
        m = LambdaMART(**SMALL).fit(train, target)
        score = float(ndcg(m.predict(test), test.y, test.qptr, k=5))
        assert score > rand + 0.2, target.name
        assert m.target_name_ == target.name


def test_candidate_mask_restricts_the_training_lists(split):
    train, _, test = split
    t = oracle(train)
    mask = np.zeros(train.n_docs, dtype=bool)
    mask[train.qptr[:-1]] = True  # one document per query: no pairs, no gradient
    m = LambdaMART(**{**SMALL, "n_estimators": 3}).fit(
        train, type(t)("oracle", gains=t.gains, candidates=mask)
    )
    assert m.n_train_docs_ == train.n_queries
    np.testing.assert_array_equal(m.predict(test), 0.0)


def test_unfitted_and_bad_arguments(split):
    train, _, _ = split
    with pytest.raises(NotFittedError):
        LambdaMART().predict(train)
    with pytest.raises(InputError, match="num_leaves"):
        LambdaMART(num_leaves=1).fit(train)
    with pytest.raises(InputError, match="valid"):
        LambdaMART(early_stopping_rounds=3).fit(train)
    with pytest.raises(InputError, match="objective"):
        LambdaMART(lightgbm_params={"objective": "lambdarank"}).fit(train)
    with pytest.raises(InputError, match="gains"):
        LambdaMART().fit(train, oracle(synthetic(3, 4)))
    m = LambdaMART(**{**SMALL, "n_estimators": 2}).fit(train)
    with pytest.raises(InputError, match="trained on 6 features but X has 2 features"):
        m.predict(np.zeros((3, 2)))


def test_summary_and_importances(split):
    train, valid, _ = split
    m = LambdaMART(**SMALL).fit(train, valid=valid)
    text = m.summary()
    assert "oracle" in text and "valid ndcg@10" in text
    imp = m.feature_importances_
    assert imp.shape == (train.n_features,)
    # feature 4 carries no signal in the synthetic generator; x0 does
    assert imp[0] > imp[4]


def test_cli_train_writes_a_loadable_model(tmp_path, split):
    from click.testing import CliRunner

    from clickrank.cli import cli
    from clickrank.datasets import save_letor

    train, valid, test = split
    save_letor(train, tmp_path / "train.txt")
    save_letor(valid, tmp_path / "vali.txt")
    _pbm_log(train, 5_000, seed=1).write_parquet(tmp_path / "log.parquet")
    (tmp_path / "theta.json").write_text(json.dumps({"theta": list(1.0 / np.arange(1, 6))}))
    (tmp_path / "short.json").write_text(json.dumps([1.0, 0.5]))
    base = ["train", "--data", str(tmp_path / "train.txt"), "--log", str(tmp_path / "log.parquet")]
    run = CliRunner().invoke
    theta = str(tmp_path / "theta.json")
    res = run(cli, [*base, "--target", "ips", "--propensities", theta, "--out", str(tmp_path / "m"),
                    "--set", "n_estimators=5", "--valid", str(tmp_path / "vali.txt"),
                    "--set", "early_stopping_rounds=3"],
              obj={})  # fmt: skip
    assert res.exit_code == 0, res.output
    model = LambdaMART.load(tmp_path / "m")
    assert model.target_name_ == "ips" and model.predict(test).shape == (test.n_docs,)
    # refuses to overwrite; missing / short propensities are clear one-line errors
    res = run(cli, [*base, "--target", "naive", "--out", str(tmp_path / "m")], obj={})
    assert res.exit_code != 0 and "--force" in res.output
    res = run(cli, [*base, "--target", "ips", "--out", str(tmp_path / "m2")], obj={})
    assert res.exit_code == 2 and "--propensities" in res.output
    res = run(cli, [*base, "--target", "ips", "--propensities", str(tmp_path / "short.json"),
                    "--out", str(tmp_path / "m3")], obj={})  # fmt: skip
    assert res.exit_code == 1 and "1..2" in res.output and "Traceback" not in res.output
