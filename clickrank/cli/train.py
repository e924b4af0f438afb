"""``clickrank train``: fit a (debiased) LambdaMART ranker from a click log."""

from __future__ import annotations

import math
from pathlib import Path

import click

from .._validation import InputError, check_jobs
from ..engine._cli import check_log_source, engine_options, local_path, open_log
from ..specs._names import (
    CANDIDATE_SETS,
    CLICK_FAMILY,
    CLICK_MODELS,
    CLICK_RANKER_SELECTION,
    LAMBDAMART_SELECTION,
    LAMBDAMART_SHAPE,
    MODEL_AWARE,
    NAIVE_KINDS,
    NORMALIZATIONS,
    ONE_TARGET_SELECTION,
    TRAIN_TARGETS,
    VALIDATION_ESTIMATES,
)
from ._root import cli, out_option

# the defaults of LambdaMARTCV and LambdaMART (defined once in clickrank.specs, which
# the CLI reads without importing LightGBM; tests check they agree with the library)
SELECTION = LAMBDAMART_SELECTION
FIXED = LAMBDAMART_SHAPE


def _check_data(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--data: a LETOR file; with --distributed, also a parquet folder, URI or table:db.name."""
    if value is None or not ctx.params.get("distributed"):
        return click.Path(exists=True, dir_okay=False).convert(value, param, ctx)
    return check_log_source(ctx, param, value)


#: --refit's choices, as ClickRanker's ``refit``.
_REFIT = {"auto": "auto", "always": True, "never": False}


@cli.command()
@click.option(
    "--distributed",
    is_flag=True,
    is_eager=True,  # --data reads it
    help="With --engine spark: train on the cluster (XGBoost's SparkXGBRanker), the features "
    "never collected to this machine; --data is then what Spark reads (a parquet file or "
    "folder with query, doc, f1..fK, a URI or table:db.name). Targets naive and ips; "
    "docs/scale.md, 'Distributed training'.",
)
@click.option(
    "--data",
    "data_path",
    callback=_check_data,
    required=True,
    help="Training documents: LETOR/SVMlight file (features, qid, docid comments); with "
    "--distributed, feature data Spark reads.",
)
@click.option(
    "--log",
    "log_path",
    callback=check_log_source,
    default=None,
    help="Click log (parquet file or folder, or CSV; with --engine spark, what Spark reads: "
    "a parquet folder, a URI or table:db.name); needed by every target but oracle.",
)
@click.option(
    "--target",
    type=click.Choice(TRAIN_TARGETS),
    default="auto",
    show_default=True,
    help="Training target built from the log (auto: clickrank's default, the target and "
    "candidate set chosen among --family by cross-validated counterfactual scores, with a "
    "safety check; dr: doubly robust gains; unbiased-lambdamart, "
    "ips-pairs, prs-pairs: debiased pairwise; affine, cascade-ips, fitted-relevance: "
    "model-aware, a trust-bias or DBN model fitted to the log (see clickrank fit-clicks); "
    "oracle: true labels; pairs: click preferences by --strategy).",
)
@click.option(
    "--propensities",
    "theta_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help='JSON propensities ({"theta": [...]} or a plain list); '
    "required by --target ips and dr and by --ips-weighted skip-above. With --target auto "
    "they are estimated from what the log holds when not given (randomized interventions, "
    "else EM, else regression EM on --data's features; docs/logs.md), and the source is "
    "printed.",
)
@click.option(
    "--click-model",
    default=None,
    help="Model-aware targets (affine, cascade-ips, fitted-relevance): the click model fitted "
    "to the log instead of the target's default (trust, dbn, dbn), e.g. ubm when "
    "clickrank fit-clicks found it fits best.",
)
@click.option(
    "--family",
    default=",".join(CLICK_FAMILY),
    show_default=True,
    help="--target auto: the targets to choose among, comma-separated, safest first.",
)
@click.option(
    "--logging-model",
    "logging_path",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="The model (clickrank model folder) that logged the clicks: the safe ranker of "
    "--target auto, kept (and written to --out) when no trained one is shown to beat it.",
)
@click.option(
    "--proximal",
    type=float,
    default=None,
    help="PRPO: clip each document's force once its exposure leaves [1/(1+EPS), 1+EPS] "
    "times its exposure under --logging-model's ranking (needs --logging-model).",
)
@click.option(
    "--combine",
    type=click.Choice(["average", "select"]),
    default="average",
    show_default=True,
    help="--target auto: offer the average of the --family members (one model; members the "
    "unseen guard rejects left out), or select one member by the one-SE rule.",
)
@click.option(
    "--fallback",
    type=click.Choice(["crm", "proximal", "safe"]),
    default="crm",
    show_default=True,
    help="--safe, when no trained ranker is shown to beat --logging-model: offer the selected "
    "one retrained with exposure-based risk minimisation around the logger (crm: a pull "
    "towards the logger's exposures that fades with more sessions), retrained with PRPO "
    "around it (proximal: exposures within a factor 1.2 of the logger's), or keep the "
    "logger itself (safe).",
)
@click.option(
    "--safe/--no-safe",
    default=True,
    show_default=True,
    help="Offer a trained ranker only if its counterfactual gain over the safe ranker "
    "(--logging-model, else naive) has a one-sided 95% lower bound above 0.",
)
@out_option(
    "out_dir",
    type=click.Path(file_okay=False),
    required=True,
    help="Folder for the model (model.txt + meta.json).",
)
@click.option(
    "--valid",
    "valid_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Labelled validation LETOR file: early stopping on its NDCG instead of the "
    "click-based selection (for experiments with labels).",
)
@click.option(
    "--select/--no-select",
    default=True,
    show_default=True,
    help="Choose the tree shape and the number of trees by cross-validation by query "
    "on held-out clicks (clickrank.selection.LambdaMARTCV); --no-select grows exactly "
    "--trees trees of shape --leaves/--max-depth.",
)
@click.option(
    "--folds",
    type=int,
    default=None,
    help="Folds of the queries for the selection (default: the learner's own, "
    f"{CLICK_RANKER_SELECTION['folds']} for --target auto, {SELECTION['folds']} otherwise).",
)
@click.option(
    "--validation",
    type=click.Choice(VALIDATION_ESTIMATES),
    default=None,
    help="Click estimate of DCG@k the selection maximises: ips (default with "
    "--propensities), dr (doubly robust), clicks (biased; default without).",
)
@click.option(
    "--trees",
    type=int,
    default=SELECTION["n_estimators"],
    show_default=True,
    help="Most trees (the selection stops earlier).",
)
@click.option(
    "--learning-rate",
    type=float,
    default=None,
    help="Shrinkage per tree (default: the learner's own, "
    f"{CLICK_RANKER_SELECTION['learning_rate']:g} for --target auto, "
    f"{SELECTION['learning_rate']:g} otherwise).",
)
@click.option(
    "--leaves",
    type=int,
    default=None,
    help="Leaves per tree: fixes the tree shape (default: chosen among "
    f"{', '.join(str(g['num_leaves']) for g in SELECTION['grid'])} by the selection; "
    f"{FIXED['num_leaves']} with --no-select).",
)
@click.option(
    "--max-depth",
    type=int,
    default=None,
    help=f"Tree depth, -1 for none (default: with --leaves; {FIXED['max_depth']} with "
    "--no-select).",
)
@click.option(
    "--min-data-in-leaf",
    type=int,
    default=20,
    show_default=True,
    help="Minimum documents per leaf.",
)
@click.option(
    "--truncation",
    type=int,
    default=30,
    show_default=True,
    help="Only pairs with a document in the current top TRUNCATION (0: all pairs).",
)
@click.option(
    "--early-stopping",
    type=int,
    default=None,
    help="Stop a model after this many rounds without improvement (selection or --valid) "
    f"[default: {CLICK_RANKER_SELECTION['early_stopping_rounds']} for the default learner's "
    "members (--target auto), growing to a quarter of the best round, else "
    f"{SELECTION['early_stopping_rounds']}].",
)
@click.option(
    "--early-stopping-fraction",
    type=float,
    default=None,
    help="Let the patience grow to this fraction of the best round where that is longer "
    f"[default: {CLICK_RANKER_SELECTION['early_stopping_fraction']} for the default learner's "
    "members (--target auto), else 0: a fixed patience].",
)
@click.option(
    "--eval-at", type=int, default=10, show_default=True, help="k of the validation DCG@k / NDCG@k."
)
@click.option(
    "--clip",
    default="auto",
    show_default=True,
    help="IPS propensity clipping: a minimum theta in (0, 1], 'auto' "
    "(min(10/sqrt(sessions), 1)) or 'none'.",
)
@click.option(
    "--normalize",
    type=click.Choice(NORMALIZATIONS),
    default="none",
    show_default=True,
    help="IPS gains: plain, per-exposure (policy-aware) or self-normalised per query.",
)
@click.option(
    "--candidates",
    type=click.Choice(CANDIDATE_SETS),
    default="auto",
    show_default=True,
    help="Documents in each training list: shown at least once, all (never-shown as gain 0), "
    "hybrid (never-shown as weak negatives); auto picks hybrid when under 20% were shown.",
)
@click.option(
    "--naive-kind",
    type=click.Choice(NAIVE_KINDS),
    default="clicks",
    help="Naive target gains: click counts or click-through rates.",
)
@click.option(
    "--strategy",
    default="skip-above",
    help="Preference strategy of --target pairs: skip-above, last-click-skip-above, "
    "skip-previous, skip-next, fairpairs, or a '+' combination (skip-above+skip-next).",
)
@click.option("--ips-weighted", is_flag=True, help="Weight preference pairs by 1/theta.")
@click.option("--seed", type=int, default=0, help="Seed of LightGBM's randomness.")
@click.option(
    "--workers",
    type=int,
    default=2,
    show_default=True,
    help="--distributed: XGBoost workers, one Spark task each.",
)
@click.option(
    "--valid-fraction",
    type=float,
    default=0.2,
    show_default=True,
    help="--distributed: share of the queries held out for early stopping on their clicks.",
)
@click.option(
    "--jobs",
    type=int,
    default=1,
    help="Threads (the models of one thread): the default learner's members each use them, "
    "several members at once in processes from 200,000 documents; one target's trees, "
    "lambdas and CRM penalty otherwise.",
)
@click.option(
    "--refit",
    type=click.Choice(list(_REFIT)),
    default="auto",
    show_default=True,
    help="Click learners: each member's chosen trees refitted on every query (always), "
    "or its fold models averaged (never: no last fit, folds x the trees to score); auto "
    "refits below 200,000 documents.",
)
@click.option(
    "-f",
    "--force",
    is_flag=True,
    help="Replace a model clickrank wrote in --out (never other files).",
)
@engine_options
def train(distributed, data_path, log_path, target, theta_path, click_model, family,
          logging_path, proximal, combine, fallback, safe, out_dir,
          valid_path, select, folds, validation, trees, learning_rate, leaves, max_depth,
          min_data_in_leaf, truncation, early_stopping, early_stopping_fraction, eval_at, clip,
          normalize, candidates, naive_kind, strategy, ips_weighted, seed, workers,
          valid_fraction, jobs, refit, force, engine, spark_master):  # fmt: skip
    """Train a ranker on DATA from a click log (or the labels), choosing it from clicks.

    By default (--target auto) clickrank.ClickRanker fits every target of
    --family, each with its tree shape and number of trees chosen by
    cross-validation by query on a counterfactual estimate of DCG@k from
    held-out clicks, averages them into one model (or, --combine select, picks
    one by a one-standard-error rule), and offers it only if its gain over the
    safe ranker is sure at 95%: no labels needed
    (docs/lambdamart.md, "The default click learner").
    """
    from .. import targets as T
    from ..clicklog import read_log, warn_thin_log
    from ..datasets import load_letor

    if distributed:
        _check_distributed(engine, target, valid_path, logging_path, leaves, workers,
                           valid_fraction, early_stopping_fraction, refit)  # fmt: skip
        clip_value = _clip(clip)
        _check_options(target, log_path, theta_path, None, False, False, folds=folds,
                       trees=trees, early_stopping=early_stopping, truncation=truncation,
                       seed=seed, family=family)  # fmt: skip
        _check_model_folder(Path(out_dir), force, [local_path(data_path), local_path(log_path),
                                                   theta_path])  # fmt: skip
        spec = dict(n_estimators=trees, learning_rate=(SELECTION["learning_rate"]
                                                       if learning_rate is None
                                                       else learning_rate),
                    max_depth=6 if max_depth is None else max_depth, num_workers=workers,
                    early_stopping_rounds=(SELECTION["early_stopping_rounds"]
                                           if early_stopping is None else early_stopping),
                    eval_at=eval_at,
                    valid_fraction=valid_fraction, seed=seed)  # fmt: skip
        options = dict(candidates=candidates, clip=clip_value, normalize=normalize,
                       naive_kind=naive_kind)  # fmt: skip
        return _distributed(data_path, log_path, theta_path, target, spec, options, out_dir,
                            force, spark_master)  # fmt: skip
    check_jobs(jobs, name="--jobs")
    members = _check_options(target, log_path, theta_path, validation, ips_weighted, select,
                             folds=folds, trees=trees, early_stopping=early_stopping,
                             truncation=truncation, seed=seed, family=family,
                             early_stopping_fraction=early_stopping_fraction)  # fmt: skip
    _check_proximal(proximal, logging_path)
    _check_logging_model(logging_path, target, select, valid_path)
    _check_refit(refit, target, select, valid_path)
    _check_click_model(click_model, target)
    clip_value = _clip(clip)
    _check_model_folder(
        Path(out_dir), force, [data_path, local_path(log_path), theta_path, valid_path]
    )
    warn_thin_log(local_path(log_path))  # no clicks or a handful of sessions: say so
    data = load_letor(data_path)
    logging_model = _logging_model(logging_path, data)
    theta = T.read_theta(theta_path) if theta_path is not None else None
    if log_path is None:
        log = None
    else:
        log = open_log(log_path, spark_master) if engine == "spark" else read_log(log_path)
    spec = dict(
        n_estimators=trees,
        early_stopping_rounds=early_stopping,
        early_stopping_fraction=early_stopping_fraction,
        learning_rate=learning_rate,
        min_data_in_leaf=min_data_in_leaf,
        truncation_level=truncation,
        eval_at=eval_at,
        seed=seed,
        n_jobs=jobs,
    )
    shape = {k: v for k, v in (("num_leaves", leaves), ("max_depth", max_depth)) if v is not None}
    if target == "auto" and select and valid_path is None:
        model = _click_ranker(data, log, theta, members, logging_model, safe, spec, shape,
                              folds=folds, validation=validation, clip=clip_value,
                              proximal=proximal, combine=combine, fallback=fallback,
                              refit=_REFIT[refit])  # fmt: skip
    else:
        model = _one_target(data, log, theta, target, spec, shape, valid_path, select,
                            folds=folds, validation=validation, clip=clip_value,
                            candidates=candidates, normalize=normalize, naive_kind=naive_kind,
                            strategy=strategy, ips_weighted=ips_weighted, seed=seed,
                            click_model=click_model, refit=_REFIT[refit])  # fmt: skip
    path = model.save(out_dir, overwrite=force)
    click.echo(model.summary())
    click.echo(f"model written to {path}")


def _check_distributed(engine, target, valid_path, logging_path, leaves, workers,
                       valid_fraction, early_stopping_fraction, refit) -> None:  # fmt: skip
    """The options of --distributed (one line each), before anything is read."""
    from ..distributed import DISTRIBUTED_TARGETS

    supported = " or ".join(DISTRIBUTED_TARGETS)
    if engine != "spark":
        raise click.UsageError("--distributed trains on a Spark cluster: add --engine spark")
    if target not in DISTRIBUTED_TARGETS:
        why = {"auto": "auto's selection among targets runs on one machine"}.get(
            target, "it has no per-document gains")  # fmt: skip
        raise click.UsageError(f"--distributed supports --target {supported}, not {target} ({why})")
    given = (("--valid", valid_path), ("--logging-model", logging_path),
             ("--leaves (XGBoost's trees are shaped by --max-depth)", leaves),
             ("--early-stopping-fraction", early_stopping_fraction),
             ("--refit", None if refit == "auto" else refit))  # fmt: skip
    for name, value in given:
        if value is not None:
            raise click.UsageError(f"{name} is not supported with --distributed")
    if workers < 1:
        raise click.UsageError(f"--workers must be >= 1, got {workers}")
    if not 0.0 < valid_fraction < 1.0:
        raise click.UsageError(f"--valid-fraction must be in (0, 1), got {valid_fraction}")


def _distributed(data_path, log_path, theta_path, target, spec, options, out_dir, force,
                 master):  # fmt: skip
    """--distributed: clickrank's target from the keys, XGBoost's trees on the cluster."""
    import logging

    from .. import targets as T
    from ..distributed import SparkRanker, read_spark_data, spark_target
    from ..engine import spark_session

    logging.getLogger("XGBoost-PySpark").setLevel(logging.WARNING)
    spark = spark_session(master)
    features = read_spark_data(data_path, spark)
    log = open_log(log_path, master)
    theta = T.read_theta(theta_path) if theta_path is not None else None
    table, tgt = spark_target(features, log, target, theta, source=str(data_path),
                              seed=spec["seed"], num_workers=spec["num_workers"],
                              **options)  # fmt: skip
    click.echo(tgt.summary(), err=True)
    model = SparkRanker(**spec).fit(features, table, target_name=target)
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


def _click_ranker(data, log, theta, members, logging_model, safe, spec, shape, *, folds,
                  validation, clip, proximal, combine, fallback, refit):  # fmt: skip
    """--target auto: clickrank.ClickRanker over ``members``."""
    from ..clickranker import ClickRanker

    if shape:  # a given shape is the whole grid (no depth limit unless given)
        spec["grid"] = [{**shape, "max_depth": shape.get("max_depth", -1)}]
    ranker = ClickRanker(family=members, validation=validation or "ips", safe=safe, clip=clip,
                         proximal=proximal, combine=combine, fallback=fallback, refit=refit,
                         **_given({**spec, "folds": folds}))  # fmt: skip
    return ranker.fit(data, log, theta, logging_model=logging_model, progress=_progress)


def _given(spec: dict) -> dict:
    """The options set (an option left unset, as --early-stopping, keeps the learner's own)."""
    return {k: v for k, v in spec.items() if v is not None}


def _one_target(data, log, theta, target, spec, shape, valid_path, select, *, folds,
                validation, clip, candidates, normalize, naive_kind, strategy, ips_weighted,
                seed, click_model, refit):  # fmt: skip
    """An explicit --target: its LambdaMART, cross-validated on clicks (or labels)."""
    from .. import targets as T
    from ..datasets import load_letor
    from ..specs import make_learner

    stats = None
    if log is not None:
        stats = T.click_stats(data, log, theta, clip=clip if theta is not None else None)
        _say_candidates(stats, candidates)
    name = {"pairs": f"pairs:{strategy}", "skip-above": "skip-above-ips" if ips_weighted
            else "skip-above"}.get(target, target)  # fmt: skip
    same_stats = target in ("ips", "dr", "naive")  # naive reads clicks and impressions only
    tgt = T.make_target(name, data, log, theta, candidates=candidates, clip=clip,
                        normalize=normalize, naive_kind=naive_kind, seed=seed,
                        stats=stats if same_stats else None, click_model=click_model)  # fmt: skip
    click.echo(tgt.summary(), err=True)
    if valid_path is not None or not select:
        valid = load_letor(valid_path) if valid_path is not None else None
        learner = make_learner({**spec, **shape}, select=False, early_stopping=valid is not None)
        return learner.fit(data, tgt, valid=valid)
    if target == "oracle":
        if shape:
            spec["grid"] = [{**shape, "max_depth": shape.get("max_depth", -1)}]
        return make_learner({**spec, "folds": folds}, select=True).fit(
            data, tgt, progress=_progress
        )
    from ..clickranker import ClickRanker

    if shape:
        spec["grid"] = [{**shape, "max_depth": shape.get("max_depth", -1)}]
    given = _given({**spec, "folds": folds})
    ranker = ClickRanker(validation=validation or "ips", safe=False, clip=clip, refit=refit,
                         propensity_method=None, **{**ONE_TARGET_SELECTION, **given})  # fmt: skip
    return ranker.fit(data, log, theta, targets={name: tgt}, progress=_progress)


def _clip(value: str) -> float | str | None:
    """--clip as a number in (0, 1], "auto" or None."""
    if value.lower() in ("auto", "none"):
        return None if value.lower() == "none" else "auto"
    try:
        out = float(value)
    except ValueError:
        raise click.UsageError(
            f"--clip must be a number in (0, 1], 'auto' or 'none', got {value!r}"
        ) from None
    if not 0.0 < out <= 1.0:
        raise click.UsageError(f"--clip must be in (0, 1], got {value}")
    return out


def _say_candidates(stats, candidates: str) -> None:
    """A warning when the log shows few of the documents (the target summary says the rest)."""
    share = stats.shown_fraction
    if share < 0.2:
        click.echo(
            f"warning: the log shows only {share:.1%} of the training documents; never-shown "
            "documents carry no click evidence (see docs/lambdamart.md, 'Candidate sets')",
            err=True,
        )


def _check_options(target, log_path, theta_path, validation, ips_weighted, select, *,
                   folds, trees, early_stopping, truncation, seed,
                   family, early_stopping_fraction=None) -> list[str]:  # fmt: skip
    """The option checks that need no file (one line each); returns the --family members."""
    members = [m.strip() for m in family.split(",") if m.strip()]
    unknown = [m for m in members if m not in CLICK_FAMILY]
    if unknown or not members:
        raise click.UsageError(
            f"--family takes members of {', '.join(CLICK_FAMILY)}; got {family!r}"
        )
    if target != "oracle" and log_path is None:
        raise click.UsageError(f"--target {target} needs --log")
    if target == "oracle" and log_path is not None:
        raise click.UsageError("--target oracle uses the labels of --data; drop --log")
    if (target in ("ips", "dr", "ips-pairs", "prs-pairs") or ips_weighted) and theta_path is None:
        raise click.UsageError(
            f"--propensities is required by --target {target}"
            + (" with --ips-weighted" if ips_weighted else "")
        )
    if validation in ("ips", "dr") and theta_path is None:
        raise click.UsageError(f"--validation {validation} needs --propensities")
    from ..metrics import MAX_K

    if not 0 <= truncation <= MAX_K:  # beyond any list: 0 (all pairs) says it
        raise InputError(f"--truncation must be in 0..{MAX_K} (0: all pairs), got {truncation}")
    for name, value in (
        ("--folds", folds),
        ("--trees", trees),
        ("--early-stopping", early_stopping),
    ):
        if value is not None and value < 1:
            raise click.UsageError(f"{name} must be >= 1, got {value}")
    if early_stopping_fraction is not None and not 0 <= early_stopping_fraction < math.inf:
        raise click.UsageError(
            f"--early-stopping-fraction must be finite and >= 0, got {early_stopping_fraction}"
        )
    if select and folds is not None and folds < 2:
        raise click.UsageError(f"--folds must be >= 2, got {folds}")
    if seed < 0:
        raise click.UsageError(f"--seed must be >= 0, got {seed}")
    if folds is None:  # the learner's own (the budget note's estimate of the fits)
        folds = (CLICK_RANKER_SELECTION if target == "auto" else SELECTION)["folds"]
    _check_trees(trees, folds if select else 0)
    return members


def _check_click_model(click_model, target) -> None:
    if click_model is None:
        return
    if target not in MODEL_AWARE:
        raise click.UsageError(
            f"--click-model goes with a model-aware --target ({', '.join(MODEL_AWARE)}), "
            f"not {target}"
        )
    if click_model not in CLICK_MODELS or click_model == "pbm":
        raise click.UsageError(
            f"--click-model must be one of {', '.join(m for m in CLICK_MODELS if m != 'pbm')}, "
            f"got {click_model!r}"
        )


def _check_logging_model(logging_path, target, select, valid_path) -> None:
    """--logging-model is the safe ranker of --target auto's selection; elsewhere unused."""
    if logging_path is None or (target == "auto" and select and valid_path is None):
        return
    where = f"--target {target}" if target != "auto" else "--valid" if valid_path else "--no-select"
    raise click.UsageError(
        f"--logging-model is the safe ranker of --target auto's selection; {where} does not "
        "use it (leave it out)"
    )


def _check_refit(refit, target, select, valid_path) -> None:
    """--refit ends a selection on clicks (--target auto or a click target); elsewhere unused."""
    if refit == "auto" or (select and valid_path is None and target != "oracle"):
        return
    where = "--target oracle" if target == "oracle" else "--valid" if valid_path else "--no-select"
    raise click.UsageError(
        f"--refit chooses how a selection on clicks ends; {where} does not select on clicks "
        "(leave it out)"
    )


def _check_proximal(proximal, logging_path) -> None:
    if proximal is not None and (proximal <= 0 or logging_path is None):
        raise click.UsageError("--proximal takes a positive EPS and needs --logging-model")


#: Rough size of one tree node held by LightGBM and in the saved model text, the most
#: nodes of a tree (2 x 31 leaves), and the least time per tree (small data, 2 cores).
_NODE_BYTES = 128
_TREE_NODES = 61
_TREE_SECONDS = 1e-3


def _check_trees(trees: int, folds: int) -> None:
    """--trees: memory of the model and time of the boosting, before the work (one line)."""
    from .._budget import check_budget

    fits = 1 + folds  # the selection fits every fold, then refits
    note = check_budget(
        "--trees",
        trees,
        memory=trees * _TREE_NODES * _NODE_BYTES,
        seconds=trees * fits * _TREE_SECONDS,
    )
    if note:
        click.echo(note, err=True)


def _check_model_folder(out_dir, force: bool, inputs: list) -> None:
    """``--out`` is a folder whose model files clickrank may replace (with ``--force``)."""
    from .._io import check_folder_output, check_output

    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"--out {out_dir} is a file; expected a folder for the model")
    files = [out_dir / name for name in ("model.txt", "meta.json", "selection.json", "model.json")]
    check_folder_output(out_dir, what="--out")
    for f in files:  # files clickrank did not write are refused, even with --force
        check_output(f, force=True, what="--out", inputs=inputs)
    if any(f.exists() for f in files[:2]) and not force:
        raise InputError(
            f"--out {out_dir} already holds a model (written by clickrank); pass "
            "--force to replace it"
        )
