"""``clickrank train``: fit a (debiased) LambdaMART ranker from a click log."""

from __future__ import annotations

import click

from .._validation import InputError
from ._root import cli


@cli.command()
@click.option(
    "--data",
    "data_path",
    type=click.Path(exists=True, dir_okay=False),
    required=True,
    help="Training documents: LETOR/SVMlight file (features, qid, docid comments).",
)
@click.option(
    "--log",
    "log_path",
    type=click.Path(exists=True),
    default=None,
    help="Click log (parquet file or folder, or CSV); needed by every target but oracle.",
)
@click.option(
    "--target",
    type=click.Choice(["naive", "ips", "skip-above", "pairs", "oracle", "unbiased-lambdamart",
                       "prs-pairs", "ips-pairs"]),
    default="ips",
    help="Training target built from the log (oracle: true labels; pairs: click preferences "
    "by --strategy).",
)
@click.option(
    "--propensities",
    "theta_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help='JSON propensities ({"theta": [...]} or a plain list); '
    "required by --target ips and --ips-weighted skip-above.",
)
@click.option(
    "--out",
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
    help="Labelled validation LETOR file for early stopping.",
)
@click.option("--trees", type=int, default=100, help="Maximum number of trees.")
@click.option("--learning-rate", type=float, default=0.1, help="Shrinkage per tree.")
@click.option("--leaves", type=int, default=31, help="Maximum leaves per tree.")
@click.option("--max-depth", type=int, default=-1, help="Maximum tree depth (-1: none).")
@click.option("--min-data-in-leaf", type=int, default=20, help="Minimum documents per leaf.")
@click.option(
    "--truncation",
    type=int,
    default=30,
    help="Only pairs with a document in the current top TRUNCATION (0: all pairs).",
)
@click.option(
    "--early-stopping",
    type=int,
    default=None,
    help="Stop after this many rounds without validation improvement (needs --valid).",
)
@click.option("--eval-at", type=int, default=10, help="k of the validation NDCG@k.")
@click.option("--clip", type=float, default=None, help="IPS propensity clipping (min theta).")
@click.option(
    "--candidates",
    type=click.Choice(["shown", "all"]),
    default="shown",
    help="Documents in each training list: shown at least once, or all.",
)
@click.option(
    "--naive-kind",
    type=click.Choice(["clicks", "ctr"]),
    default="clicks",
    help="Naive target gains: click counts or click-through rates.",
)
@click.option("--strategy", default="skip-above",
              help="Preference strategy of --target pairs: skip-above, last-click-skip-above, "
              "skip-previous, skip-next, fairpairs, or a '+' combination (skip-above+skip-next).")
@click.option("--ips-weighted", is_flag=True, help="Weight preference pairs by 1/theta.")
@click.option("--seed", type=int, default=0, help="Seed of LightGBM's randomness.")
@click.option("--jobs", type=int, default=1, help="Threads of the tree learner.")
@click.option("-f", "--force", is_flag=True,
              help="Replace a model clickrank wrote in --out (never other files).")
def train(data_path, log_path, target, theta_path, out_dir, valid_path, trees, learning_rate,
          leaves, max_depth, min_data_in_leaf, truncation, early_stopping, eval_at, clip,
          candidates, naive_kind, strategy, ips_weighted, seed, jobs, force):  # fmt: skip
    """Train LambdaMART on DATA with a naive, IPS, click-preference or oracle target."""
    from .. import targets as T
    from ..clicklog import read_log
    from ..datasets import load_letor
    from ..lambdamart import LambdaMART

    if target != "oracle" and log_path is None:
        raise click.UsageError(f"--target {target} needs --log")
    if target == "oracle" and log_path is not None:
        raise click.UsageError("--target oracle uses the labels of --data; drop --log")
    if (target in ("ips", "prs-pairs", "ips-pairs") or ips_weighted) and theta_path is None:
        raise click.UsageError(f"--propensities is required by --target {target} and "
                               "--ips-weighted")
    if early_stopping is not None and valid_path is None:
        raise click.UsageError("--early-stopping needs --valid")
    if truncation < 0:
        raise InputError(f"--truncation must be >= 0, got {truncation}")

    from pathlib import Path

    from .._io import check_output

    if Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise InputError(f"--out {out_dir} is a file; expected a folder for the model")
    files = [Path(out_dir) / name for name in ("model.txt", "meta.json")]
    for f in files:  # files clickrank did not write are refused, even with --force
        check_output(f, force=True, what="--out",
                     inputs=[data_path, log_path, theta_path, valid_path])
    if any(f.exists() for f in files) and not force:
        raise InputError(f"--out {out_dir} already holds a model (written by clickrank); pass "
                         "--force to replace it")
    data = load_letor(data_path)
    theta = T.read_theta(theta_path) if theta_path is not None else None
    log = read_log(log_path) if log_path is not None else None
    if target == "oracle":
        tgt = T.oracle(data)
    elif target == "naive":
        tgt = T.naive(data, log, kind=naive_kind, candidates=candidates)
    elif target == "ips":
        tgt = T.ips(data, log, theta, clip=clip, candidates=candidates)
    elif target == "unbiased-lambdamart":
        tgt = T.unbiased_lambdamart(data, log)
    elif target in ("prs-pairs", "ips-pairs"):
        build = T.propensity_ratio_pairs if target == "prs-pairs" else T.ips_rank_pairs
        tgt = build(data, log, theta, clip=clip, candidates=candidates)
    else:
        strategy = "skip-above" if target == "skip-above" else strategy
        tgt = T.click_preferences(data, log, strategy=strategy, ips_weighted=ips_weighted,
                                  propensities=theta, candidates=candidates)  # fmt: skip
    click.echo(tgt.summary(), err=True)
    valid = load_letor(valid_path) if valid_path is not None else None
    model = LambdaMART(
        n_estimators=trees, learning_rate=learning_rate, num_leaves=leaves, max_depth=max_depth,
        min_data_in_leaf=min_data_in_leaf, truncation_level=truncation or None,
        early_stopping_rounds=early_stopping, eval_at=eval_at, seed=seed, n_jobs=jobs,
    ).fit(data, tgt, valid=valid)  # fmt: skip
    path = model.save(out_dir, overwrite=force)
    click.echo(model.summary())
    click.echo(f"model written to {path}")
