"""``clickrank fit-clicks``: fit click models to a log and compare them on held-out sessions."""

from __future__ import annotations

import click

from .._io import check_output
from .._validation import InputError
from ._root import cli, out_option

_DEFAULT = "pbm,ubm,cascade,dcm,sdbn,dbn"


@cli.command("fit-clicks")
@click.argument("log", type=click.Path(exists=True))
@click.option(
    "--models",
    default=_DEFAULT,
    help="Comma-separated click models to fit: pbm, ubm, cascade, dcm, sdbn, dbn, trust.",
)
@click.option(
    "--test-fraction",
    type=float,
    default=0.25,
    help="Share of sessions held out for the evaluation (split by session id and "
    "--seed); 0 evaluates in-sample.",
)
@click.option("--seed", type=int, default=0, help="Seed of the train/test split.")
@click.option(
    "--shrinkage",
    type=float,
    default=0.0,
    help="Pseudo-observations pulling every per-(query, doc) probability towards the "
    "pooled estimate (0: maximum likelihood).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["log", "yandex"]),
    default="log",
    help="LOG is a click log (parquet file, folder or CSV) or a Yandex relevance-"
    "prediction sample (clickrank.publiclogs.load_yandex_sample).",
)
@out_option(
    "out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the comparison (table, per-rank perplexities, parameters, the "
    "recommended correction) as JSON.",
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Save the perplexity-by-rank plot as PNG.",
)
@click.option("-f", "--force", is_flag=True, help="Overwrite OUT and the plot.")
def fit_clicks(log, models, test_fraction, seed, shrinkage, fmt, out, plot_path, force):
    """Fit click models to a click LOG by EM and compare them on held-out sessions.

    Prints one row per model (parameters, log-likelihood per test session,
    perplexity, conditional perplexity, CTR error, fit time) and the correction
    the best model calls for (see docs/clickmodels.md).
    """
    from .._io import atomic_write_json
    from ..clickmodels.fitting import FIT_MODELS, compare_click_models

    names = [m.strip().lower() for m in models.split(",") if m.strip()]
    bad = [m for m in names if m not in FIT_MODELS]
    if bad or not names:
        raise InputError(
            f"--models: unknown model(s) {', '.join(bad) or '(none)'}; choose from "
            f"{', '.join(FIT_MODELS)}"
        )
    if not 0 <= test_fraction < 1:
        raise InputError(f"--test-fraction must be in [0, 1), got {test_fraction}")
    if not shrinkage >= 0 or shrinkage == float("inf"):  # NaN and inf included
        raise InputError(f"--shrinkage must be a finite number >= 0, got {shrinkage}")
    if out is not None:
        check_output(out, force=force, what="--out", inputs=[log])
    if plot_path is not None:
        check_output(plot_path, force=force, what="--plot", inputs=[log, out])
    if fmt == "yandex":
        from ..publiclogs import load_yandex_sample

        log = load_yandex_sample(log)
    result = compare_click_models(
        log, names, test_fraction=test_fraction, seed=seed, shrinkage=shrinkage
    )
    if out is not None:
        atomic_write_json(out, result.to_dict())
    if plot_path is not None:
        result.plot(path=plot_path)
    click.echo(result.summary())
