"""The click learners of LightGBM and XGBoost, trained on the same session lists (benchmarks only).

* LightGBM ``lambdarank`` with the ``position`` field (position-bias factors
  learned jointly, LightGBM >= 4.1; ``lambdarank_position_bias_regularization``).
* XGBoost ``rank:ndcg`` with ``lambdarank_unbiased=True`` (Unbiased LambdaMART of
  Hu et al. (2019); the position is the row order within a session).

Both train on every session with at least one click (sessions without a click
produce no pairs, hence no gradient, in both libraries); the features of a
document are repeated for each of its impressions. ``trees`` is a dict with
``n_estimators``, ``learning_rate``, ``num_leaves``, ``max_depth``
(``-1``: none) and ``min_data_in_leaf``. xgboost is the optional ``bench`` extra.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from clickrank.datasets import RankingData


def session_rows(train: RankingData, log: pl.DataFrame, context: str | None = None):
    """Rows, clicks, group sizes, 0-based positions and session ids of every clicked session;
    with a ``context`` column the positions are ``context index * K + rank - 1`` (K the
    deepest rank), one id per (context value, rank)."""
    keys = pl.DataFrame(
        {"query": train.qid[train.query_index], "doc": train.doc, "row": np.arange(train.n_docs)}
    )
    log = log.with_columns(
        pl.col("query").cast(keys.schema["query"]), pl.col("doc").cast(keys.schema["doc"])
    )
    clicked = log.group_by("session").agg(pl.col("click").any().alias("any")).filter("any")
    s = (
        log.join(clicked.select("session"), on="session")
        .join(keys, on=["query", "doc"])
        .sort("session", "position")
    )
    groups = s.group_by("session", maintain_order=True).len()["len"].to_numpy()
    pos = s["position"].cast(pl.Int32).to_numpy() - 1
    if context is not None:
        index = s[context].cast(pl.String).rank("dense").cast(pl.Int32).to_numpy() - 1
        pos = index * (int(pos.max()) + 1) + pos
    return (
        s["row"].to_numpy(),
        s["click"].cast(pl.Int32).to_numpy(),
        groups,
        pos,
        s["session"].to_numpy(),
    )


def lightgbm_position(
    train: RankingData,
    log: pl.DataFrame,
    trees: dict[str, Any],
    *,
    seed: int = 0,
    threads: int = 1,
    reg: float = 0.0,
    context: str | None = None,
) -> Callable[[np.ndarray], np.ndarray]:
    """LightGBM lambdarank with position-bias factors; returns ``predict(X)``. With a
    ``context`` column each (context value, rank) is its own position id, so LightGBM
    learns one bias per device and rank."""
    import lightgbm as lgb

    rows, y, groups, pos, _ = session_rows(train, log, context)
    params = {
        "objective": "lambdarank", "learning_rate": trees["learning_rate"],
        "num_leaves": trees["num_leaves"], "min_data_in_leaf": trees["min_data_in_leaf"],
        "max_depth": trees["max_depth"], "lambdarank_position_bias_regularization": reg,
        "seed": seed, "deterministic": True, "force_row_wise": True, "num_threads": threads,
        "verbosity": -1,
    }  # fmt: skip
    dset = lgb.Dataset(train.X[rows], y, group=groups, position=pos)
    return lgb.train(params, dset, trees["n_estimators"]).predict


def xgboost_unbiased(
    train: RankingData,
    log: pl.DataFrame,
    trees: dict[str, Any],
    *,
    seed: int = 0,
    threads: int = 1,
) -> Callable[[np.ndarray], np.ndarray]:
    """XGBoost rank:ndcg with lambdarank_unbiased=True; returns ``predict(X)``."""
    import xgboost as xgb

    rows, y, _, _, session = session_rows(train, log)
    dm = xgb.DMatrix(train.X[rows], label=y, qid=session)
    params = {
        "objective": "rank:ndcg", "lambdarank_unbiased": True, "eta": trees["learning_rate"],
        "tree_method": "hist", "grow_policy": "lossguide",
        "max_depth": max(trees["max_depth"], 0), "max_leaves": trees["num_leaves"],
        "min_child_weight": 1e-3, "seed": seed, "nthread": threads,
    }  # fmt: skip
    booster = xgb.train(params, dm, trees["n_estimators"])
    return lambda X: booster.predict(xgb.DMatrix(X))
