"""``clickrank evaluate``: metrics with bootstrap CIs for saved models or score files."""

from __future__ import annotations

from pathlib import Path

import click

from .._core._io import check_output
from .._core._validation import InputError, check_alpha
from ..specs.names import EMPTY_CONVENTIONS
from ._root import cli, out_option


def load_rankers(data, models: tuple[str, ...], scores: tuple[str, ...]) -> dict:
    """Name -> ranker or scores, from model folders (LambdaMART, or XGBoost from
    ``train --distributed``) and score files (unique names)."""
    from ..evaluation import load_scores
    from ..lambdamart import load_model

    out: dict = {}

    def add(path: str, value) -> None:
        name = Path(path).name or str(path)
        base, i = name, 2
        while name in out:
            name, i = f"{base}#{i}", i + 1
        out[name] = value

    for m in models:
        add(m, load_model(m))
    for s in scores:
        add(s, load_scores(s, data))
    if not out:
        raise InputError("give at least one --model DIR or --scores FILE")
    return out


def load_data(path: str):
    from ..datasets import load_letor

    data = load_letor(path)
    if data.y is None:
        raise InputError(f"{path} has no relevance labels")
    return data


#: Rough memory per bootstrap replicate and column (the replicate means and the copies
#: of the percentile intervals and paired tests), and the least time per replicate.
_REPLICATE_BYTES = 32
_REPLICATE_SECONDS = 1e-6


def _check_bootstrap(n: int, rankers: int, metrics: int) -> None:
    """--bootstrap: memory and time of the resamples, before the work (one line)."""
    from .._core._budget import check_budget

    if n < 1:
        raise InputError(f"--bootstrap must be >= 1, got {n}")
    columns = max(rankers, 1) * max(metrics, 1)
    note = check_budget(
        "--bootstrap",
        n,
        memory=n * columns * _REPLICATE_BYTES,
        seconds=n * columns * _REPLICATE_SECONDS,
    )
    if note:
        click.echo(note, err=True)


@cli.command()
@click.option(
    "--model",
    "models",
    multiple=True,
    type=click.Path(exists=True, file_okay=False),
    help="Model folder (from `clickrank train`, LambdaMART or --distributed XGBoost); repeatable.",
)
@click.option(
    "--scores",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Scores file, one number per line in data order; repeatable.",
)
@click.option(
    "--data",
    "data_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Labelled LETOR/SVMlight test file.",
)
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    default=("ndcg@10", "err@10"),
    help="Metric name (ndcg@10, err@10, map, mrr, p@5, dcg@10, pfound@10); repeatable.",
)
@click.option(
    "--empty",
    type=click.Choice(EMPTY_CONVENTIONS),
    default="skip",
    show_default=True,
    help="Queries without a relevant document: left out of the means (skip, as "
    "ULTRA), or scored 0 (as ranx) or 1 (as LightGBM and XGBoost); the summary says "
    "how many there are.",
)
@click.option(
    "--bootstrap",
    "n_bootstrap",
    type=int,
    default=1000,
    help="Query-level bootstrap resamples for the CIs.",
)
@click.option("--alpha", type=float, default=0.05, help="CIs have level 1 - alpha.")
@click.option(
    "--seed", type=click.IntRange(min=0), default=0, help="Seed of the bootstrap and permutations."
)
@click.option(
    "--compare/--no-compare",
    default=True,
    help="Paired tests of every ranker against the first one, on each metric.",
)
@out_option(
    "output",
    deprecated=("--output",),
    type=click.Path(dir_okay=False),
    help="Write the table and per-query values as JSON.",
)
@click.option(
    "-f",
    "--force",
    is_flag=True,
    help="Replace --out if clickrank wrote it (never anything else).",
)
def evaluate(
    models, scores, data_path, metrics, empty, n_bootstrap, alpha, seed, compare, output, force
):
    """Evaluate saved models and/or score files on a labelled test set, with CIs."""
    from ..evaluation import evaluate as run

    check_alpha(alpha, name="--alpha")
    _check_bootstrap(n_bootstrap, len(models) + len(scores), len(metrics))
    if output:
        check_output(output, force=force, what="--out", inputs=[data_path, *models, *scores])
    data = load_data(data_path)
    rankers = load_rankers(data, models, scores)
    res = run(
        rankers, data, list(metrics), empty=empty, n_bootstrap=n_bootstrap, alpha=alpha, seed=seed
    )
    click.echo(res.summary(option="--empty"))
    if compare and len(res.rankers) > 1:
        first = res.rankers[0]
        for other in res.rankers[1:]:
            for m in res.metrics:
                click.echo("")
                click.echo(res.compare(other, first, m).summary())
    if output:
        res.save(output)
        click.echo(f"wrote {output}", err=True)
