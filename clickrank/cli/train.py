"""``clickrank train``: fit a (debiased) LambdaMART ranker from a click log.

The learner's parameters are its constructor's own (``--set KEY=VALUE``, ``--config
FILE``; :mod:`._train_params`), passed on unchanged and checked by the estimator:

* no ``--target`` (``auto``): :class:`clickrank.ClickRanker` (and the LambdaMART
  parameters it passes on);
* ``--target NAME``: the target built by :func:`clickrank.targets.make_target` (its
  keys ``candidates``, ``clip``, ``normalize``, ``naive_kind``, ``click_model``) and
  selected as one ClickRanker member (:data:`~clickrank.specs.ONE_TARGET_SELECTION`);
  ``oracle`` by :class:`~clickrank.selection.LambdaMARTCV`;
* ``--no-select`` or ``--valid``: one :class:`~clickrank.lambdamart.LambdaMART`;
* ``--distributed``: :class:`clickrank.training.distributed.SparkRanker` on a Spark cluster.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import click

from .._core._validation import InputError
from ..engine.cli import check_log_source, engine_options, local_path, open_log
from ..specs.names import (
    LAMBDAMART_SELECTION,
    LAMBDAMART_SHAPE,
    NEEDS_THETA,
    ONE_TARGET_SELECTION,
    TARGET_NAMES,
    TRAIN_TARGETS,
)
from ._root import cli, out_option
from ._train_params import (
    SHAPE_KEYS,
    GroupedCommand,
    check_keys,
    check_types,
    constructor_keys,
    legacy_options,
    legacy_params,
    parse_settings,
    read_config,
)

#: How ``clickrank train --help`` groups its options.
GROUPS = {
    "Inputs": ("data_path", "log_path", "theta_path", "logging_path", "valid_path"),
    "Learner": ("target", "select", "settings", "config_path", "seed", "jobs"),
    "Output": ("out_dir", "force"),
    "Where it runs": ("engine", "spark_master", "distributed"),
}

#: The selection's defaults (LambdaMARTCV's) and the tree shape of one fixed LambdaMART
#: (its own), read without LightGBM; tests check they agree with the library.
SELECTION = LAMBDAMART_SELECTION
FIXED = LAMBDAMART_SHAPE
#: What a learner without selection grows: the selection's most trees (LambdaMART's own
#: default, 100, is for a model fitted in code).
FIXED_TREES = SELECTION["n_estimators"]


class TargetChoice(click.Choice):
    """``--target``: one of :data:`TRAIN_TARGETS`, ``skip-above-ips`` or ``pairs:STRATEGY``
    (the strategy is checked by :func:`clickrank.targets.make_target`)."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, str) and (value.startswith("pairs:") or value in TARGET_NAMES):
            return value
        return super().convert(value, param, ctx)


def _check_data(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--data: a LETOR file; with --distributed, also a parquet folder, URI or table:db.name."""
    if value is None or not ctx.params.get("distributed"):
        return click.Path(exists=True, dir_okay=False).convert(value, param, ctx)
    return check_log_source(ctx, param, value)


@cli.command(cls=GroupedCommand, groups=GROUPS)
@click.option(
    "--data",
    "data_path",
    callback=_check_data,
    required=True,
    help="Training documents: a LETOR/SVMlight file (a parquet table with --distributed).",
)
@click.option(
    "--log",
    "log_path",
    callback=check_log_source,
    default=None,
    help="Click log: parquet file or folder, CSV, or with Spark a URI or table:db.name.",
)
@click.option(
    "--propensities",
    "theta_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help='Examination propensities, JSON ({"theta": [...]} or a list); estimated from the '
    "log when not given and the target allows.",
)
@click.option(
    "--logging-model",
    "logging_path",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="The model folder that logged the clicks: the default learner's safe ranker.",
)
@click.option(
    "--valid",
    "valid_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Labelled LETOR file: one target's trees stop early on its NDCG.",
)
@click.option(
    "--target",
    type=TargetChoice(TRAIN_TARGETS),
    default="auto",
    metavar="NAME",
    help="What to learn: auto (the default learner chooses among click targets), one "
    f"target ({', '.join(t for t in TRAIN_TARGETS if t not in ('auto', 'pairs', 'oracle'))}, "
    "pairs:STRATEGY) or oracle (the labels of the data).",
)
@click.option(
    "--select/--no-select",
    default=True,
    help="Choose the tree shape and number of trees by cross-validation on held-out "
    "clicks; --no-select grows one LambdaMART as set.",
)
@click.option(
    "--set",
    "settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="A parameter of the learner (clickrank.ClickRanker's by default), the value as "
    "in TOML: learning_rate=0.2, family=[naive,dr]. Repeatable.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="TOML file of the learner's parameters (overridden by --set).",
)
@click.option("--seed", type=int, default=None, help="Seed of the learner's randomness [0].")
@click.option("--jobs", type=int, default=None, help="Threads of the learner [1].")
@out_option(
    "out_dir",
    type=click.Path(file_okay=False),
    required=True,
    help="Folder for the model (model.txt + meta.json).",
)
@click.option(
    "-f",
    "--force",
    is_flag=True,
    help="Replace a model clickrank wrote in the output folder (never other files).",
)
@engine_options
@click.option(
    "--distributed",
    is_flag=True,
    is_eager=True,  # --data reads it
    help="Train with XGBoost on the Spark cluster, the features never collected here "
    "(targets naive, ips, dr; docs/scale.md).",
)
@legacy_options
def train(data_path, log_path, theta_path, logging_path, valid_path, target, select, settings,
          config_path, seed, jobs, out_dir, force, engine, spark_master,
          distributed):  # fmt: skip
    """Train a ranker on DATA from a click log (or the labels), choosing it from clicks.

    By default clickrank.ClickRanker fits a family of click targets, each with
    its tree shape and number of trees chosen by cross-validation on held-out
    clicks, averages them and offers the average only if its gain over the safe
    ranker is sure at 95% (docs/lambdamart.md, "The default click learner").
    Its parameters, or those of one --target, are set with --set KEY=VALUE or a
    --config file (docs/cli.md, "Training parameters").
    """
    ctx = click.get_current_context()
    old, old_sources, special = legacy_params(ctx)
    target = _target(target, special)
    mode = _mode(target, select, valid_path, distributed)
    _check_inputs(mode, target, engine, log_path, theta_path, logging_path, valid_path)
    layers = [
        (read_config(config_path), f"--config {config_path}"),
        (old, old_sources),
        (_shape(special, mode), "--leaves/--max-depth"),
        ({} if seed is None else {"seed": seed}, "--seed"),
        ({} if jobs is None else {"n_jobs": jobs}, "--jobs"),
        (parse_settings(settings), "--set"),
    ]
    given: dict[str, Any] = {}
    sources = {}
    for params, where in layers:  # a later layer wins
        given.update(params)
        sources.update(where if isinstance(where, dict) else dict.fromkeys(params, where))
    learner, target_kw = _learner(mode, target, given, sources, valid_path is not None)
    _check_trees(learner)
    inputs = [local_path(data_path), local_path(log_path), theta_path, valid_path, config_path]
    _check_model_folder(Path(out_dir), force, inputs)
    if mode == "distributed":
        return _distributed(data_path, log_path, theta_path, target, learner, target_kw,
                            out_dir, force, spark_master)  # fmt: skip
    model = _fit(mode, target, learner, target_kw, data_path, log_path, theta_path,
                 logging_path, valid_path, engine, spark_master)  # fmt: skip
    path = model.save(out_dir, overwrite=force)
    click.echo(model.summary())
    click.echo(f"model written to {path}")


def _target(target: str, special: dict[str, Any]) -> str:
    """``--target`` with the old ``--strategy`` and ``--ips-weighted`` folded in."""
    strategy, weighted = special.get("strategy"), special.get("ips_weighted")
    if strategy is not None:
        if target != "pairs":
            raise InputError(f"--strategy is now --target pairs:{strategy}")
        target = f"pairs:{strategy}"
    if weighted:
        if target != "skip-above":
            raise InputError("--ips-weighted is now --target skip-above-ips")
        target = "skip-above-ips"
    return "pairs:skip-above" if target == "pairs" else target


def _mode(target: str, select: bool, valid_path: Any, distributed: bool) -> str:
    """Which learner trains: ``default``, ``target``, ``oracle``, ``fixed`` or ``distributed``."""
    if distributed:
        return "distributed"
    if valid_path is not None or not select:
        return "fixed"
    return {"auto": "default", "oracle": "oracle"}.get(target, "target")


def _check_inputs(mode, target, engine, log_path, theta_path, logging_path, valid_path) -> None:
    """The option combinations no estimator sees (one line each), before anything is read."""
    if mode == "distributed":
        from ..training.distributed import DISTRIBUTED_TARGETS

        if engine != "spark":
            raise click.UsageError("--distributed trains on a Spark cluster: add --engine spark")
        if target not in DISTRIBUTED_TARGETS:
            why = {"auto": "auto's selection among targets runs on one machine"}.get(
                target, "it has no per-document gains")  # fmt: skip
            supported = " or ".join(DISTRIBUTED_TARGETS)
            raise click.UsageError(
                f"--distributed supports --target {supported}, not {target} ({why})"
            )
        for name, value in (("--valid", valid_path), ("--logging-model", logging_path)):
            if value is not None:
                raise click.UsageError(f"{name} is not supported with --distributed")
    if target == "auto" and mode == "fixed":
        raise click.UsageError("--no-select and --valid train one target: add --target NAME")
    if target != "oracle" and log_path is None:
        raise click.UsageError(f"--target {target} needs --log")
    if target in NEEDS_THETA and theta_path is None:
        raise click.UsageError(f"--propensities is required by --target {target}")
    if target == "oracle" and log_path is not None:
        raise click.UsageError("--target oracle uses the labels of --data; drop --log")
    if logging_path is not None and mode != "default":
        raise click.UsageError(f"--logging-model is the default learner's safe ranker; "
                               f"--target {target} does not use it (leave it out)")  # fmt: skip


def _shape(special: dict[str, Any], mode: str) -> dict[str, Any]:
    """The old ``--leaves``/``--max-depth``: the whole grid of a selection (no depth limit
    unless given), the tree shape of one fixed model."""
    shape = {k: special[k] for k in SHAPE_KEYS if k in special}
    if not shape or mode in ("fixed", "distributed"):
        return shape
    return {"grid": [{**shape, "max_depth": shape.get("max_depth", -1)}]}


def _learner(mode: str, target: str, given: dict[str, Any], sources: dict[str, str],
             valid: bool) -> tuple[Any, dict[str, Any]]:  # fmt: skip
    """The unfitted learner of ``mode`` from the given parameters, and the target's keys.

    Its keys are those of its constructor (an unknown one is one line naming the valid
    ones); the values go to it unchanged, checked by its own checks before any data is
    read (those that need the data, when it fits).
    """
    from ..lambdamart import LambdaMART

    lambdamart = constructor_keys(LambdaMART)
    if mode == "distributed":
        from ..training.distributed import SparkRanker, spark_target

        learner_keys = constructor_keys(SparkRanker)
        target_keys = constructor_keys(spark_target, leave=("seed", "num_workers", "folds",
                                                           "source"))  # fmt: skip
        what, cls = "SparkRanker (clickrank train --distributed)", SparkRanker
    elif mode in ("default", "target"):
        from ..clickranker import ClickRanker
        from ..targets import make_target

        own = ("family", "safe", "propensity_method") if mode == "target" else ()
        learner_keys = {**lambdamart, **constructor_keys(ClickRanker, leave=own)}
        target_keys = {} if mode == "default" else _target_keys(make_target, target)
        what = ("clickrank.ClickRanker (clickrank train)" if mode == "default"
                else f"one target's ClickRanker (clickrank train --target {target})")  # fmt: skip
        cls = ClickRanker
    elif mode == "oracle":
        from ..selection import LambdaMARTCV

        learner_keys = {**lambdamart, **constructor_keys(LambdaMARTCV)}
        target_keys, cls = {}, LambdaMARTCV
        what = "LambdaMARTCV (clickrank train --target oracle)"
    else:
        from ..targets import make_target

        learner_keys, cls = lambdamart, LambdaMART
        target_keys = {} if target == "oracle" else _target_keys(make_target, target)
        what = "LambdaMART (clickrank train --no-select or --valid)"
    keys = {**learner_keys, **target_keys}
    check_keys(given, keys, what, sources)
    check_types(given, keys, sources)
    seed = given.get("seed")
    if isinstance(seed, int) and seed < 0:  # LambdaMART and ClickRanker leave it to numpy
        raise InputError(f"seed must be an integer >= 0, got {seed} ({sources['seed']})")
    params = {k: v for k, v in given.items() if k in learner_keys}
    if mode == "target":
        params = {**ONE_TARGET_SELECTION, **params, "safe": False, "propensity_method": None}
    if mode == "fixed":
        params = {"n_estimators": FIXED_TREES, **params}
        if valid:  # the patience of a selection when labels say when to stop
            patience = SELECTION["early_stopping_rounds"]
            params.setdefault("early_stopping_rounds", patience)
    learner = cls(**params)
    _preflight(learner, {k: v for k, v in params.items() if k in lambdamart}, mode)
    shared = {"clip": getattr(learner, "clip", None)} if mode == "target" else {}
    target_kw = {**shared, **{k: v for k, v in given.items() if k in target_keys}}
    return learner, target_kw


def _target_keys(make_target: Any, target: str) -> dict[str, inspect.Parameter]:
    """The keys of :func:`clickrank.targets.make_target` a user sets (``click_model`` only for a
    model-aware target: the others fit no click model)."""
    from ..specs.names import MODEL_AWARE

    leave = ("seed", "stats", "relevance") + (() if target in MODEL_AWARE else ("click_model",))
    return constructor_keys(make_target, leave=leave)


def _preflight(learner: Any, lambdamart: dict[str, Any], mode: str) -> None:
    """The estimator's own checks that need no data, before the data is read: LambdaMART's
    on its parameters (every learner passes them on), SparkRanker's on its own."""
    from ..specs import make_lambdamart

    if mode == "distributed":
        learner._check()
    else:
        make_lambdamart(lambdamart)._validate()


def _fit(mode, target, learner, target_kw, data_path, log_path, theta_path, logging_path,
         valid_path, engine, spark_master) -> Any:  # fmt: skip
    """Read the inputs and fit ``learner`` (a target built first for one target)."""
    from ..clicklog import read_log, warn_thin_log
    from ..datasets import load_letor

    warn_thin_log(local_path(log_path))  # no clicks or a handful of sessions: say so
    data = load_letor(data_path)
    logging_model = _logging_model(logging_path, data)
    theta = _read_propensities(theta_path) if theta_path is not None else None
    if log_path is None:
        log = None
    else:
        log = open_log(log_path, spark_master) if engine == "spark" else read_log(log_path)
    if mode == "default":
        if not learner.context and not learner.context_features and engine != "spark":
            _say_described_context(log_path, theta)
        return learner.fit(data, log, theta, logging_model=logging_model, progress=_progress)
    tgt = _make_target(target, data, log, theta, target_kw, seed=learner.seed)
    if mode == "oracle":
        return learner.fit(data, tgt, progress=_progress)
    if mode == "fixed":
        valid = load_letor(valid_path) if valid_path is not None else None
        return learner.fit(data, tgt, valid=valid)
    return learner.fit(data, log, theta, targets={target: tgt}, progress=_progress)


def _read_propensities(path) -> Any:
    """A propensity file's curve, and its curves per context when it holds them (as
    ``clickrank propensity --context`` writes them)."""
    from .. import targets as T
    from .._core._io import read_json

    theta = T.read_theta(path)  # the checks of a user's curve, for every file
    obj = read_json(Path(path))
    if isinstance(obj, dict) and obj.get("contexts"):
        from ..propensity import Propensities

        return Propensities.load(path)
    return theta


def _say_described_context(log_path, theta) -> None:
    """One line when the log's description (a log simulated with a context) or the
    propensity file names context columns that the fit pools: how to correct per context."""
    from ..clicklog import read_log_metadata

    try:
        meta = read_log_metadata(local_path(log_path)) or {}
    except (OSError, ValueError):
        meta = {}
    cols = [c["name"] for c in meta.get("context", [])
            if isinstance(c, dict) and c.get("click_models")]  # fmt: skip
    curves = getattr(theta, "contexts", None)
    if not cols and getattr(curves, "model", None) == "log-linear":
        names = json.dumps(list(curves.columns))
        click.echo(f"context features {', '.join(curves.columns)}: the propensity file models "
                   "examination in them; the default corrects with one curve (--set "
                   f"'context_features={names}' corrects each impression by the model's curve "
                   "at its context; docs/contextual-bias.md)", err=True)  # fmt: skip
        return
    cols = cols or ([] if curves is None else list(curves.columns))
    if cols:
        names = ",".join(cols)
        click.echo(f"context {', '.join(cols)}: the log's examination differs by it; the "
                   f"default corrects with one curve (--set context={names} corrects each "
                   "impression by its context's curve; docs/contextual-bias.md)",
                   err=True)  # fmt: skip


def _make_target(name, data, log, theta, target_kw, *, seed) -> Any:
    """The target ``name`` (:func:`clickrank.targets.make_target`), its summary on stderr."""
    from .. import targets as T

    stats = None
    if log is not None:
        clip = target_kw.get("clip", "auto")
        stats = T.click_stats(data, log, theta, clip=clip if theta is not None else None)
        _say_candidates(stats)
    same_stats = name in ("ips", "dr", "naive")  # naive reads clicks and impressions only
    tgt = T.make_target(name, data, log, theta, seed=seed, stats=stats if same_stats else None,
                        **target_kw)  # fmt: skip
    click.echo(tgt.summary(), err=True)
    return tgt


def _distributed(data_path, log_path, theta_path, target, model, target_kw, out_dir, force,
                 master):  # fmt: skip
    """--distributed: clickrank's target from the keys, XGBoost's trees on the cluster."""
    import logging

    from .. import targets as T
    from ..engine import spark_session
    from ..training.distributed import read_spark_data, spark_target

    logging.getLogger("XGBoost-PySpark").setLevel(logging.WARNING)
    spark = spark_session(master)
    features = read_spark_data(data_path, spark)
    log = open_log(log_path, master)
    theta = T.read_theta(theta_path) if theta_path is not None else None
    table, tgt = spark_target(features, log, target, theta, source=str(data_path),
                              seed=model.seed, num_workers=model.num_workers,
                              **target_kw)  # fmt: skip
    click.echo(tgt.summary(), err=True)
    model.fit(features, table, target_name=target)
    path = model.save(out_dir, overwrite=force)
    click.echo(model.summary())
    click.echo(f"trees chosen: {model.best_iteration_}")
    click.echo(f"model written to {path}")


def _progress(message: str) -> None:
    click.echo(message, err=True)


def _logging_model(logging_path, data):
    """--logging-model loaded (digest, tree structure) and scored on DATA (feature count)
    before the work; None without the option."""
    if logging_path is None:
        return None
    from ..lambdamart import load_model
    from ..ranking import ranker_scores

    model = load_model(logging_path)
    ranker_scores(model, data, name=f"--logging-model {logging_path}")
    return model


def _say_candidates(stats) -> None:
    """A warning when the log shows few of the documents (the target summary says the rest)."""
    share = stats.shown_fraction
    if share < 0.2:
        click.echo(
            f"warning: the log shows only {share:.1%} of the training documents; never-shown "
            "documents carry no click evidence (see docs/lambdamart.md, 'Candidate sets')",
            err=True,
        )


#: Rough size of one tree node held by LightGBM and in the saved model text, the most
#: nodes of a tree (2 x 31 leaves), and the least time per tree (small data, 2 cores).
_NODE_BYTES = 128
_TREE_NODES = 61
_TREE_SECONDS = 1e-3


def _check_trees(learner: Any) -> None:
    """n_estimators: memory of the model and time of the boosting, before the work (one
    line); a selection fits every fold, then refits."""
    from .._core._budget import check_budget

    trees = learner.n_estimators
    if isinstance(trees, bool) or not isinstance(trees, int):
        return  # the learner's own check says what it takes
    fits = 1 + (learner.folds if isinstance(getattr(learner, "folds", None), int) else 0)
    note = check_budget(
        "n_estimators",
        trees,
        memory=trees * _TREE_NODES * _NODE_BYTES,
        seconds=trees * fits * _TREE_SECONDS,
    )
    if note:
        click.echo(note, err=True)


def _check_model_folder(out_dir, force: bool, inputs: list) -> None:
    """``--out`` is a folder whose model files clickrank may replace (with ``--force``)."""
    from .._core._io import check_folder_output, check_output

    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"--out {out_dir} is a file; expected a folder for the model")
    files = [out_dir / name for name in ("model.txt", "meta.json", "selection.json", "model.json")]
    check_folder_output(out_dir, what="--out")
    for f in files:  # files clickrank did not write are refused, even with --force
        check_output(f, force=True, what="--out", inputs=[i for i in inputs if i is not None])
    if any(f.exists() for f in files[:2]) and not force:
        raise InputError(
            f"--out {out_dir} already holds a model (written by clickrank); pass "
            "--force to replace it"
        )
