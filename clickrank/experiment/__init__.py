r"""One command from data to a bias-analysis report: run configs and the staged experiment.

A run is described by a TOML file (:func:`load_config`). The embedded default
(``clickrank/configs/default.toml``, :func:`default_config_text`) holds every
default; a user file overrides only the keys it sets. The configuration is
validated completely, with one-line :class:`~clickrank.ConfigError` messages
naming the section and key, *before* anything is written.

:func:`run_experiment` then runs the stages of DESIGN §1, each a call into the
library::

    data -> production -> simulate -> propensity -> train -> evaluate
         -> interleaving -> learning_curve -> figures -> report

and writes a results folder::

    results/NAME/
      config.toml            the effective configuration (rerun it with `clickrank run`)
      manifest.json          stage -> hash of its inputs, files written, seconds
      data/split.json        query ids of the train / valid / test parts
      production/            logging-ranker scores (train, test) and meta.json
      log.parquet            the simulated click log (DESIGN §2 schema)
      log_stats.json         CTR per position, label means, skip-above pair counts
                             (LogStats.to_dict, clickrank.clicklog)
      propensities/          <method>.json (Propensities.save), truth.json
      models/<target>/       LambdaMART.save (model.txt, meta.json); targets.json
      evaluation.json        metrics with CIs, paired tests (+ per-query values)
      interleaving.json      interleaving (and A/B) results
      learning_curve.json    headline metric vs log prefix
      figures/*.png          the bias-analysis figures (clickrank.plots)
      report.md, summary.json

Reruns
------
Every stage's inputs (its configuration sections, resolved seeds, the hash of
the stage before it and the clickrank version) are hashed. When the hash in
``manifest.json`` matches and the stage's files exist, the stage is loaded
instead of recomputed; ``force=True`` recomputes everything. Seeds are derived
from the master ``seed`` with :class:`numpy.random.SeedSequence`, so a rerun with
the same configuration gives the same numbers (``summary.json`` is identical
apart from its ``timings``).
"""

from __future__ import annotations

from ..specs import dumps_toml
from ._config import FULL, ExperimentConfig, default_config_text, load_config
from ._runner import ExperimentResult, run_experiment
from ._schema import PRODUCTION, SCHEMA, STAGES, TARGETS  # noqa: F401 (PRODUCTION: as before)

__all__ = [
    "FULL",
    "ExperimentConfig",
    "ExperimentResult",
    "load_config",
    "default_config_text",
    "run_experiment",
    "SCHEMA",
    "STAGES",
    "TARGETS",
    "dumps_toml",
]
