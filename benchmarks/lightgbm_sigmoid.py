"""How close clickrank's lambdas are to LightGBM's built-in lambdarank, measured.

Run: ``python benchmarks/lightgbm_sigmoid.py [--trees 300]``

LightGBM evaluates the pair sigmoid through a lookup table (``sigmoid_table_size_``
= 2^20 bins over ``[-50/σ/2, 50/σ/2]``, ``rank_objective.hpp``) and stores gradients
as float32; clickrank computes the sigmoid exactly in float64. This script measures
what that changes:

(a) **Gradients.** At the same scores (``init_score`` = a model's scores after some
    trees, so that the pairs have different score gaps), LightGBM grows one tree
    with one leaf per document (``num_leaves`` = documents, ``min_data_in_leaf`` = 1,
    the row index as the only feature, learning rate 1, ``lambda_l2`` = 1). Each leaf
    value is then ``-g_i / (h_i + 1)``, so LightGBM's gradient is recovered as
    ``g_i = -(h_i + 1) v_i`` (with clickrank's hessian ``h_i``; the error this adds is
    ``|h_i - H_i| |v_i|``, far below the differences measured). The largest absolute
    difference to clickrank's ``-lambda_i`` is reported, with the largest gradient.
(b) **Models.** Oracle LambdaMART and LightGBM's lambdarank with the same trees,
    leaves, learning rate, truncation (30) and ``lambdarank_norm``, 300 trees, on
    MQ2008 Fold1 (NDCG@10 on test; the shared data folder) or, without it, on the
    synthetic data.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import lightgbm as lgb
import numpy as np

from clickrank.datasets import load_letor, split_queries, synthetic
from clickrank.lambdamart import LambdaMART
from clickrank.lambdas import lambdas
from clickrank.metrics import ndcg

PARAMS = {
    "objective": "lambdarank",
    "lambdarank_truncation_level": 30,
    "lambdarank_norm": True,
    "deterministic": True,
    "force_row_wise": True,
    "num_threads": 1,
    "verbosity": -1,
    "seed": 0,
}


def _shared_data() -> Path:
    env = os.environ.get("CLICKRANK_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


def gradient_difference(data, scores: np.ndarray) -> dict:
    """Max |g_clickrank - g_LightGBM| at ``scores`` (one two-leaf tree per document)."""
    gains = np.exp2(data.y) - 1  # LightGBM's default label_gain
    forces, hess = lambdas(scores, gains, data.qptr, truncation=30, normalize=True)
    ours = -forces
    n = data.n_docs
    params = {**PARAMS, "num_leaves": 2, "min_data_in_leaf": 1, "min_sum_hessian_in_leaf": 1e-12,
              "learning_rate": 1.0, "lambda_l2": 1.0, "max_depth": -1}  # fmt: skip
    theirs = np.full(n, np.nan)
    for i in range(n):  # the document alone on one side of the split
        x = np.zeros((n, 1))
        x[i] = 1.0
        dset = lgb.Dataset(x, data.y, group=np.diff(data.qptr), init_score=scores,
                           params={"verbosity": -1})  # fmt: skip
        booster = lgb.train(params, dset, 1)
        value = booster.predict(x[i : i + 1])[0]  # raw leaf value: init_score is not added
        leaves = booster.predict(x, pred_leaf=True).ravel()
        if np.sum(leaves == leaves[i]) == 1:
            theirs[i] = -(hess[i] + 1.0) * value
    used = ~np.isnan(theirs)
    diff = np.abs(ours - theirs)[used]
    return {"max_abs_diff": float(diff.max()), "max_abs_gradient": float(np.abs(ours).max()),
            "docs": int(used.sum()), "of": n}  # fmt: skip


def model_difference(train, test, k: int, trees: int, leaves: int) -> dict:
    cfg = {"n_estimators": trees, "learning_rate": 0.1, "num_leaves": leaves, "max_depth": -1,
           "min_data_in_leaf": 20, "truncation_level": 30}  # fmt: skip
    ours = LambdaMART(**cfg, seed=0, n_jobs=1).fit(train)
    params = {**PARAMS, "learning_rate": 0.1, "num_leaves": leaves, "max_depth": -1,
              "min_data_in_leaf": 20}  # fmt: skip
    booster = lgb.train(params, lgb.Dataset(train.X, train.y, group=train.lengths), trees)
    a = float(ndcg(ours.predict(test), test.y, test.qptr, k=k))
    b = float(ndcg(booster.predict(test.X), test.y, test.qptr, k=k))
    return {"ndcg_clickrank": a, "ndcg_lightgbm": b, "trees": trees, "k": k}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trees", type=int, default=300)
    args = ap.parse_args()
    print(f"lightgbm {lgb.__version__}")
    fold = _shared_data() / "letor4_mq2008" / "Fold1"
    if fold.is_dir():
        name = "MQ2008 Fold1"
        train, test, k, leaves = (
            load_letor(fold / "train.txt"),
            load_letor(fold / "test.txt"),
            10,
            31,
        )
    else:
        name = "synthetic(1300, 30) 300/1000"
        train, test = split_queries(synthetic(1300, 30), [300, 1000])
        k, leaves = 5, 8
    for n_trees in (10, 100, 300):
        varied = [q for q in range(train.n_queries)
                  if np.ptp(train.y[train.qptr[q]:train.qptr[q + 1]]) > 0]  # fmt: skip
        small = train.subset(np.asarray(varied[:10]))  # every document gets a gradient
        model = LambdaMART(n_estimators=n_trees, num_leaves=leaves, max_depth=-1, seed=0)
        scores = model.fit(train).predict(small)  # scores of a model of the whole training set
        g = gradient_difference(small, scores)
        print(f"(a) {name}, {small.n_queries} queries, {g['docs']} of {g['of']} documents "
              "alone in a leaf, scores "
              f"after {n_trees:>3} trees: max |g_ours - g_lgb| = {g['max_abs_diff']:.2e} "
              f"(largest |g| {g['max_abs_gradient']:.3f})")  # fmt: skip
    m = model_difference(train, test, k, args.trees, leaves)
    print(f"(b) {name}, {m['trees']} trees, {leaves} leaves: NDCG@{k} clickrank "
          f"{m['ndcg_clickrank']:.4f}, LightGBM {m['ndcg_lightgbm']:.4f}, difference "
          f"{m['ndcg_clickrank'] - m['ndcg_lightgbm']:+.4f}")  # fmt: skip


if __name__ == "__main__":
    main()
