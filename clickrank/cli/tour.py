"""``clickrank tour``: metrics on the worked example and a ranker on synthetic data.

It was ``clickrank demo`` until that name was confused with ``python3 tasks.py demo``
(which runs the default experiment); ``demo`` still works, hidden, with a warning.
"""

from __future__ import annotations

import click

from ._root import cli

_SEED = click.option(
    "--seed", type=click.IntRange(min=0), default=0, help="Seed of the synthetic data."
)


@cli.command("demo", hidden=True)
@_SEED
@click.pass_context
def demo(ctx: click.Context, seed: int) -> None:
    """The old name of ``clickrank tour``."""
    click.echo(
        "warning: `clickrank demo` is now `clickrank tour` (`python3 tasks.py demo` runs the "
        "default experiment: `clickrank run`)",
        err=True,
    )
    ctx.invoke(tour, seed=seed)


@cli.command()
@_SEED
def tour(seed: int) -> None:
    """A two-minute tour: metrics on the worked example and rankers on synthetic data.

    Not the default experiment (that is `clickrank run`, or `python3 tasks.py demo`).
    """
    import numpy as np

    from ..datasets import split_queries, synthetic
    from ..metrics import get_metric

    labels = np.array([0, 3, 1, 0, 2, 0.0])
    scores = -np.arange(6.0)
    qptr = np.array([0, 6])
    click.echo("Worked example: labels in ranked order (0, 3, 1, 0, 2, 0)")
    for name in ("p@1", "p@3", "p@5", "map", "mrr", "dcg@6", "ndcg@3", "ndcg@6", "err@6"):
        click.echo(f"  {name:<8} {float(get_metric(name)(scores, labels, qptr)):.3f}")

    data = synthetic(1300, 30, seed=seed)
    train, test = split_queries(data, [300, 1000], seed=seed)
    click.echo(f"\n{data}\n  train {train.n_queries} queries, test {test.n_queries} queries")
    A = np.c_[train.X, np.ones(train.n_docs)]
    w = np.linalg.lstsq(A, train.y, rcond=None)[0]
    rankers = {
        "random": np.random.default_rng(seed).random(test.n_docs),
        "linear pointwise": np.c_[test.X, np.ones(test.n_docs)] @ w,
        "true labels": test.y,
    }
    ndcg5 = get_metric("ndcg@5")
    for name, s in rankers.items():
        res = ndcg5(s, test.y, test.qptr)
        click.echo(f"  {name:<17} NDCG@5 {res.mean:.3f} (SE {res.sem:.3f}, {res.n_empty} empty)")
