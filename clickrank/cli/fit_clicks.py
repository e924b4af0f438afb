"""``clickrank fit-clicks``: fit click models to a log and compare them on held-out sessions."""

from __future__ import annotations

from pathlib import Path

import click

from .._core._validation import InputError
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
    type=click.Choice(["log", "yandex", "trec"]),
    default="log",
    help="LOG is a click log (parquet file, folder or CSV), a Yandex relevance-"
    "prediction sample (clickrank.publiclogs.load_yandex_sample) or a TREC 2014 "
    "Session Track file such as train_per_query_quid.txt "
    "(clickrank.publiclogs.load_trec_session).",
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
@click.option(
    "-f",
    "--force",
    is_flag=True,
    help="Replace OUT (and the plot) if clickrank wrote them (never anything else).",
)
def fit_clicks(log, models, test_fraction, seed, shrinkage, fmt, out, plot_path, force):
    """Fit click models to a click LOG by EM and compare them on held-out sessions.

    Prints one row per model (parameters, log-likelihood per test session,
    perplexity, conditional perplexity, CTR error, fit time) and the correction
    the best model calls for (see docs/clickmodels.md).
    """
    from .._core._io import atomic_write_json, check_output
    from ..clickmodels.fitting import FIT_MODELS, compare_click_models
    from ..publiclogs import FORMATS

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
    inputs = [log]
    if out is not None:
        check_output(out, force=force, what="--out", inputs=inputs)
    if plot_path is not None:
        check_output(plot_path, force=force, what="--plot", inputs=[*inputs, out])
    data = _read(log, fmt)
    result = compare_click_models(
        data, names, test_fraction=test_fraction, seed=seed, shrinkage=shrinkage
    )
    if out is not None:
        atomic_write_json(out, result.to_dict())
    if plot_path is not None:
        result.plot(path=plot_path)
    log_arg = log if fmt == "log" else "LOG.parquet"
    click.echo("\n".join([*result.table_lines(), *result.recommendation_lines(log=log_arg)]))
    if fmt != "log":
        click.echo(
            f"(LOG.parquet: the {fmt} log in clickrank's schema, e.g. "
            f"clickrank.publiclogs.{FORMATS[fmt]}({log!r}).write_parquet('LOG.parquet'); "
            "training also needs features: --data)"
        )
    for what, path in (("comparison", out), ("perplexity plot", plot_path)):
        if path is not None:
            click.echo(f"wrote {path} ({what})", err=True)


def _read(log: str, fmt: str):
    """The log as compare_click_models takes it; a text file read as a log names --format."""
    from .. import publiclogs

    if fmt != "log":
        return getattr(publiclogs, publiclogs.FORMATS[fmt])(log)
    sniffed = publiclogs.sniff_format(log)
    if sniffed in publiclogs.FORMATS:
        raise InputError(
            f"{log}: not a click log (parquet or CSV); it looks like a {sniffed} file: "
            f"pass --format {sniffed}"
        )
    text_suffix = Path(log).suffix.lower() in (".csv", ".tsv")
    if sniffed is None and Path(log).is_file() and not text_suffix:
        raise InputError(
            f"{log}: not a click log (a parquet file, a folder of them or a .csv/.tsv); "
            "for a public log's text format pass --format yandex or --format trec"
        )
    return log
