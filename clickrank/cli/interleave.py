"""``clickrank interleave``: a simulated interleaving (and A/B) experiment between two rankers."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from .._core._io import check_output
from .._core._validation import InputError, check_alpha
from ..specs.names import CLICK_MODELS, INTERLEAVING_METHODS, POPULATION_MODELS
from ._root import cli, out_option, top_k_option
from .evaluate import load_data, load_rankers

_MODELS = (*CLICK_MODELS, *POPULATION_MODELS)


def _ranker(data, path: str):
    p = Path(path)
    return next(
        iter(
            load_rankers(
                data, (path,) if p.is_dir() else (), () if p.is_dir() else (path,)
            ).values()
        )
    )


@cli.command()
@click.option(
    "--a",
    "a_path",
    required=True,
    type=click.Path(exists=True),
    help="Ranker A: a LambdaMART model folder or a scores file.",
)
@click.option(
    "--b",
    "b_path",
    required=True,
    type=click.Path(exists=True),
    help="Ranker B: a LambdaMART model folder or a scores file.",
)
@click.option(
    "--data",
    "data_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Labelled LETOR/SVMlight test file (labels drive the simulated clicks).",
)
@click.option(
    "--method",
    type=click.Choice(INTERLEAVING_METHODS),
    default="team-draft",
    help="Interleaving method.",
)
@click.option(
    "--click-model",
    type=click.Choice(_MODELS),
    default="pbm",
    help="Click model; pbm-population (eta spread around --eta) and web-population "
    "(navigational, scanning, exhaustive and low-engagement users) mix user types.",
)
@click.option(
    "--eta",
    type=float,
    default=1.0,
    help="Position-bias severity theta_p = (1/p)^eta (pbm, trust, ubm). Attractiveness "
    "is graded, eps + (1 - eps)(2^y - 1)/(2^ymax - 1), eps = 0.1, ymax = top label.",
)
@click.option("--impressions", type=int, default=100_000, help="Simulated impressions.")
@top_k_option("k", deprecated=("--k",), type=int, default=10, help="Length of the shown lists.")
@click.option("--alpha", type=float, default=0.05, help="Test level.")
@click.option(
    "--seed", type=click.IntRange(min=0), default=0, help="Seed (same seed, same result)."
)
@click.option(
    "--ab/--no-ab",
    default=True,
    help="Also run the same traffic as an A/B test on absolute click metrics.",
)
@click.option(
    "--power",
    is_flag=True,
    help="Power curves of all methods and A/B metrics (pool = --impressions).",
)
@click.option(
    "--experiments", type=int, default=2000, help="Simulated experiments per size for --power."
)
@click.option(
    "--sessions-per-user",
    type=int,
    default=1,
    help="With --power: sessions of one user, who keeps her type; users are the unit "
    "of randomization and analysis.",
)
@click.option("--plot", type=click.Path(dir_okay=False), help="With --power: write a PNG.")
@out_option(
    "output",
    deprecated=("--output",),
    type=click.Path(dir_okay=False),
    help="Write results as JSON.",
)
@click.option(
    "-f",
    "--force",
    is_flag=True,
    help="Replace --out / --plot if clickrank wrote them (never anything else).",
)
def interleave(
    a_path,
    b_path,
    data_path,
    method,
    click_model,
    eta,
    impressions,
    k,
    alpha,
    seed,
    ab,
    power,
    experiments,
    sessions_per_user,
    plot,
    output,
    force,
):
    """Compare rankers A and B by simulated interleaving on a labelled test set."""
    from ..online import ab_experiment, interleaving_experiment

    check_alpha(alpha, name="--alpha")
    _check_sizes(impressions, k, ab)
    if output:
        check_output(output, force=force, what="--out", inputs=[a_path, b_path, data_path])
    if plot:
        check_output(plot, force=force, what="--plot", inputs=[a_path, b_path, data_path, output])
    data = load_data(data_path)
    a, b = _ranker(data, a_path), _ranker(data, b_path)
    model = _click_model(click_model, eta, data)
    results: dict = {}
    with click.progressbar(
        length=impressions, label=f"{method} impressions", file=sys.stderr
    ) as bar:
        res = interleaving_experiment(
            data,
            a,
            b,
            method=method,
            click_model=model,
            n_impressions=impressions,
            k=k,
            alpha=alpha,
            seed=seed,
            progress=bar.update,
        )
    names = (_label(a_path), _label(b_path))
    click.echo(res.summary(names=names))
    results["interleaving"] = {**res.to_dict(), "a": names[0], "b": names[1]}
    if ab:
        r_ab = ab_experiment(
            data, a, b, click_model=model, n_impressions=impressions, k=k, alpha=alpha, seed=seed
        )
        click.echo("")
        click.echo(f"A = {names[0]}, B = {names[1]}")
        click.echo(r_ab.summary())
        results["ab"] = r_ab.to_dict()
    if power:
        results["power"] = _power(data, a, b, model, impressions, k, alpha, seed, experiments,
                                  sessions_per_user, plot)  # fmt: skip
    if output:
        from .._core._io import atomic_write_json

        atomic_write_json(output, results)
        click.echo(f"wrote {output} (the results as JSON)", err=True)


def _label(path: str) -> str:
    """A ranker's name in the output: its model folder or score file, as given."""
    return str(path).rstrip("/\\") or str(path)


#: Rough memory per impression (its outcome; with --ab, per-impression clicks), per shown
#: result of a chunk in flight (uniforms, lists, clicks), the impressions of a chunk, and
#: the least time per shown result.
_IMPRESSION_BYTES = 1
_AB_BYTES = 16
_SLOT_BYTES = 64
_CHUNK = 250_000
_SLOT_SECONDS = 5e-8


def _check_sizes(impressions: int, k: int, ab: bool) -> None:
    """--impressions and --top-k: memory and time, before the work (one line each)."""
    from .._core._budget import check_budget

    for name, value in (("--impressions", impressions), ("--top-k", k)):
        if value < 1:
            raise InputError(f"{name} must be >= 1, got {value}")
    check_budget("--top-k", k, memory=min(impressions, _CHUNK) * k * _SLOT_BYTES)
    per = _IMPRESSION_BYTES + (_AB_BYTES if ab else 0)
    note = check_budget(
        "--impressions",
        impressions,
        memory=impressions * per + min(impressions, _CHUNK) * k * _SLOT_BYTES,
        seconds=impressions * k * _SLOT_SECONDS * (2 if ab else 1),
    )
    if note:
        click.echo(note, err=True)


def _click_model(name: str, eta: float, data: Any) -> Any:
    """The simulated users: graded attractiveness (and DBN satisfaction) scaled to the
    data's top label, as ``clickrank simulate`` does; populations get it as ``max_label``."""
    from ..specs import make_click_model

    if name in POPULATION_MODELS:
        top = max(float(data.y.max()), 1.0)
        extra = {"eta_mean": eta} if name == "pbm-population" else {}
        return make_click_model({"name": name, "max_label": top, **extra})[0]
    model, line = make_click_model({"name": name, "eta": eta}, data.y)
    click.echo(line, err=True)
    return model


def _power(data, a, b, model, impressions, k, alpha, seed, experiments, sessions_per_user,
           plot) -> dict:  # fmt: skip
    """Power curves of interleaving and A/B (printed, drawn to ``plot`` if given)."""
    from ..online import power_analysis

    click.echo("computing power curves ...", err=True)
    pc = power_analysis(data, a, b, click_model=model, pool_size=impressions, k=k, alpha=alpha,
                        seed=seed, n_experiments=experiments,
                        sessions_per_user=sessions_per_user)  # fmt: skip
    click.echo("")
    click.echo(pc.summary())
    if plot:
        from ..plots import power_curves

        power_curves(pc, path=plot)  # atomic PNG write
        click.echo(f"wrote {plot}", err=True)
    return pc.to_dict()
