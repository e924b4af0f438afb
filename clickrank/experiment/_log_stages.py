"""Stages data, production, simulate and propensity: from the data to the click log."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from .._core._io import atomic_write_json, clear_owned
from .._core._validation import InputError
from ._config import _derive
from ._files import _clean, _fingerprint, _read_json, _save_npy


class _LogStages:
    """The data, production ranker, click model and simulation, and propensity stages.

    Mixed into :class:`~clickrank.experiment._runner._Context`, which sets ``cfg``,
    ``out`` and ``run`` and calls the stages in order (``go``).
    """

    # -- data -----------------------------------------------------------------------------
    def _fingerprints(self) -> dict:
        d = self.cfg["data"]
        return {k: _fingerprint(d.get(k)) for k in ("path", "test_path", "valid_path")}

    def _load_parts(self) -> dict:
        from ..datasets import load_letor, split_queries, synthetic

        d, seed = self.cfg["data"], self.cfg.seed("data")
        if d["source"] == "synthetic":
            full = synthetic(
                d["n_queries"], d["docs_per_query"], d["n_features"], noise=d["noise"], seed=seed
            )
        else:
            full = load_letor(d["path"])
        if d.get("test_path") is not None:
            parts = {"train": full, "test": load_letor(d["test_path"])}
            if d.get("valid_path") is not None:
                parts["valid"] = load_letor(d["valid_path"])
        else:
            names = [k for k in ("train", "valid", "test") if d[k] > 0]
            split = split_queries(full, [d[k] for k in names], seed=_derive(seed, 1))
            parts = dict(zip(names, split, strict=True))
        for name, part in parts.items():
            if part.y is None:
                raise InputError(f"the {name} data ({part.name}) has no relevance labels")
            if part.n_queries == 0:
                raise InputError(f"the {name} part of the data has no queries")
        train, test = parts["train"], parts["test"]
        if train.n_features != test.n_features:
            raise InputError(f"train has {train.n_features} features, test {test.n_features}")
        return parts

    def _data(self) -> tuple[dict, list[str]]:
        parts = self._load_parts()
        self.parts = parts
        info = {
            "name": parts["train"].name.split("/")[0] if parts["train"].name else "",
            "source": self.cfg["data"]["source"],
            "n_features": parts["train"].n_features,
            "parts": {
                k: {
                    "queries": p.n_queries,
                    "docs": p.n_docs,
                    "labels": {
                        str(lab): int(c)
                        for lab, c in zip(*np.unique(p.y, return_counts=True), strict=True)
                    },
                }
                for k, p in parts.items()
            },
        }
        split = {
            "format": "clickrank.experiment.split",
            **info,
            "qid": {k: np.asarray(p.qid).tolist() for k, p in parts.items()},
        }
        atomic_write_json(self.out / "data" / "split.json", _clean(split))
        return info, ["data/split.json"]

    def _data_load(self) -> dict:  # pragma: no cover - the data stage is never cached
        raise AssertionError("the data stage is always recomputed")

    @staticmethod
    def _production_detail(meta: dict) -> str:
        from ..policies.production import describe_quality

        q = meta.get("quality")
        return f"{meta['policy']} policy" + (f"; {describe_quality(q)}" if q else "")

    @staticmethod
    def _data_detail(info: dict) -> str:
        p = info["parts"]
        return " / ".join(f"{v['queries']} {k}" for k, v in p.items()) + " queries"

    # -- production ranker ----------------------------------------------------------------
    def _production(self) -> tuple[dict, list[str]]:
        from ..policies.production import production_ranker

        pc, seed = self.cfg["production"], self.cfg.seed("production")
        train, test = self.parts["train"], self.parts["test"]
        policy = pc["policy"]
        quality = None
        if policy in ("production", "plackett-luce"):
            ranker = production_ranker(
                train, pc["fraction"], seed=seed, min_queries=pc["min_queries"]
            )
            s_train, s_test = ranker.predict(train.X), ranker.predict(test.X)
            trained_on = int(len(ranker.train_queries_))
            quality = ranker.quality(train)  # NDCG@10 on the training queries it did not see
        elif policy == "oracle":
            s_train, s_test = np.asarray(train.y, float), np.asarray(test.y, float)
            trained_on = 0
        else:  # random: a uniform shuffle when logging; random scores when evaluated
            rng = np.random.default_rng(seed)
            s_train, s_test = np.zeros(train.n_docs), rng.random(test.n_docs)
            trained_on = 0
        _save_npy(self.out / "production/scores_train.npy", s_train)
        _save_npy(self.out / "production/scores_test.npy", s_test)
        meta = {
            "policy": policy,
            "fraction": pc["fraction"],
            "min_queries": pc["min_queries"],
            "trained_on_queries": trained_on,
            "quality": quality,
            "temperature": pc["temperature"] if policy == "plackett-luce" else None,
        }
        atomic_write_json(self.out / "production/meta.json", _clean(meta))
        self.scores = {"train": s_train, "test": s_test}
        return meta, [
            "production/scores_train.npy",
            "production/scores_test.npy",
            "production/meta.json",
        ]

    def _production_load(self) -> dict:
        self.scores = {
            k: np.load(self.out / f"production/scores_{k}.npy") for k in ("train", "test")
        }
        return _read_json(self.out / "production/meta.json")

    def _policy(self):
        from ..specs import policy_from_scores

        kind = self.prod["policy"]
        return policy_from_scores(kind, self.scores["train"], temperature=self.prod["temperature"])

    # -- click model and simulation ---------------------------------------------------------
    def click_model(self):
        from ..specs import make_click_model

        if not hasattr(self, "_cm"):
            labels = [f(p.y) for p in self.parts.values() for f in (np.min, np.max)]
            self._cm, self.relevance_line = make_click_model(self.cfg["click_model"], labels)
            self.run.log(f"        {self.relevance_line}")
        return self._cm

    def context(self):
        """The ``[context]`` of the simulation (a :class:`~clickrank.simulation.Context` whose
        values click by [click_model] at their own η, each query with shares of its own
        around ``shares`` with ``concentration``), or None."""
        from ..simulation import Context
        from ..specs import make_click_model

        ctx = self.cfg.values.get("context", {})
        if ctx.get("column") is None:
            return None
        labels = [f(p.y) for p in self.parts.values() for f in (np.min, np.max)]
        models = {v: make_click_model({**self.cfg["click_model"], "eta": e}, labels)[0]
                  for v, e in ctx["eta"].items()}  # fmt: skip
        return Context(ctx["column"], dict(ctx["shares"]), models,
                       query_concentration=ctx.get("concentration"))  # fmt: skip

    def context_column(self) -> str | None:
        return self.cfg.values.get("context", {}).get("column")

    def true_theta(self) -> np.ndarray | None:
        """The examination curve of the click model (None without one, or with a context:
        each value has its own, :meth:`true_curves`)."""
        cm = self.click_model()
        if not hasattr(cm, "propensities") or self.context_column() is not None:
            return None
        return np.asarray(cm.propensities(self.cfg["simulation"]["top_k"]), dtype=np.float64)

    def true_curves(self) -> dict[str, list[float]] | None:
        """Each context value's true examination curve (None without a context)."""
        ctx = self.context()
        if ctx is None:
            return None
        k = self.cfg["simulation"]["top_k"]
        return {v: np.asarray(m.propensities(k), dtype=float).tolist()
                for v, m in ctx.click_models.items()}  # fmt: skip

    @property
    def log_path(self) -> Path:
        return self.out / "log.parquet"

    def log(self):
        from ..clicklog import read_log

        return read_log(self.log_path, validate=False)

    def _simulate(self) -> tuple[dict, list[str]]:
        from ..simulation import simulate
        from ..specs import make_interventions

        sim = self.cfg["simulation"]
        policy, cm = self._policy(), self.click_model()
        meta = {"relevance": self.relevance_line}
        if self.prod.get("quality"):
            meta["logger_quality"] = {policy.name: self.prod["quality"]}
        simulate(
            self.parts["train"],
            policy=policy,
            click_model=cm,
            n_sessions=sim["sessions"],
            interventions=make_interventions(self.cfg["interventions"]),
            top_k=sim["top_k"],
            seed=self.cfg.seed("simulation"),
            chunk_size=sim["chunk_size"],
            out=self.log_path,
            overwrite=True,
            progress=self.run.progress and sys.stderr.isatty(),
            check_space=self.run.check_space,
            metadata=meta,
            context=self.context(),
        )
        stats = _clean(self._log_stats())
        atomic_write_json(self.out / "log_stats.json", stats)
        return stats, ["log.parquet", "log_stats.json"]

    def _log_stats(self) -> dict:
        """The log's :class:`~clickrank.clicklog.LogStats` as a dict (``log_stats.json``)."""
        from ..clicklog import LogStats
        from ..clickmodels import evaluate_map

        cm = self.click_model()
        rel = getattr(cm, "attractiveness", getattr(cm, "relevance", None))
        return LogStats.from_log(
            self.log(),
            values=None if rel is None else lambda y: evaluate_map(rel, y, name="relevance"),
            true_theta=self.true_theta(),
            click_model=repr(cm),
            relevance=self.relevance_line,
            path="log.parquet",
        ).to_dict()

    # -- propensities ---------------------------------------------------------------------
    def _estimate(self, method: str, log: Any):
        from ..propensity import bootstrap, estimate_propensities

        p = self.cfg["propensity"]
        B, seed = p["bootstrap"], self.cfg.seed("propensity")
        ctx = {"context": self.context_column()} if self.context_column() else {}
        if method == "em":
            return estimate_propensities(log, method="em", n_boot=B or 100, seed=seed, **ctx)
        if method in ("regression-em", "auto"):  # they read the training documents' features
            return estimate_propensities(log, method=method, data=self.parts["train"],
                                         seed=seed, **({"n_boot": B} if B else {}),
                                         **ctx)  # fmt: skip
        if B > 0 and not ctx:
            return bootstrap(method, log, n=B, seed=seed)
        return estimate_propensities(log, method=method, **ctx)

    def _propensity(self) -> tuple[dict, list[str]]:
        p = self.cfg["propensity"]
        files, estimates = [], {}
        folder = self.out / "propensities"
        clear_owned(folder)  # clickrank's old files; anything else stays
        for m in p["methods"]:
            est = self._estimate(m, self.log())
            est.save(folder / f"{m}.json", alpha=p["alpha"])
            files.append(f"propensities/{m}.json")
            estimates[m] = est
        theta, curves = self.true_theta(), self.true_curves()
        truth = None
        if theta is not None or curves is not None:
            truth = {
                "theta": None if theta is None else theta.tolist(),
                "source": "click model",
                "click_model": repr(self.click_model()),
                **({} if curves is None else {"contexts": curves}),
            }
        atomic_write_json(folder / "truth.json", {"truth": truth})
        files.append("propensities/truth.json")
        self.estimates = estimates
        return self._propensity_summary(truth), files

    def _propensity_load(self) -> dict:
        from ..propensity import Propensities

        p = self.cfg["propensity"]
        self.estimates = {
            m: Propensities.load(self.out / f"propensities/{m}.json") for m in p["methods"]
        }
        truth = _read_json(self.out / "propensities/truth.json")["truth"]
        return self._propensity_summary(truth)

    def _propensity_summary(self, truth: dict | None) -> dict:
        p = self.cfg["propensity"]
        use = p.get("use") or (p["methods"][0] if p["methods"] else None)
        curves = None if truth is None else truth.get("contexts")
        return _clean(
            {
                "use": use,
                "alpha": p["alpha"],
                "truth": None if truth is None else truth["theta"],
                **({} if curves is None else {"truth_contexts": curves}),  # only with a context
                "estimates": {m: e.to_dict(p["alpha"]) for m, e in self.estimates.items()},
            }
        )
