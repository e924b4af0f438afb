"""``clickrank run``: one command from data to a bias-analysis report."""

from __future__ import annotations

import click

from ._root import cli, out_option


@cli.command()
@click.argument("config", required=False, type=click.Path(dir_okay=False))
@out_option(
    "out_dir",
    type=click.Path(file_okay=False),
    default="results/default",
    help="Results folder (report.md, summary.json, figures, artefacts).",
)
@click.option(
    "-f",
    "--force",
    is_flag=True,
    help="Recompute every stage instead of reusing artefacts with unchanged inputs "
    "(files clickrank did not write are never replaced or deleted).",
)
@click.option(
    "--skip-space-check",
    is_flag=True,
    help="Run even if the estimated size of the click log exceeds the free disk space.",
)
@click.option("-q", "--quiet", is_flag=True, help="No per-stage progress lines on stderr.")
@click.option(
    "--full",
    is_flag=True,
    help="The fuller versions of the stages the default keeps light: a learning curve on "
    "four log prefixes instead of two (keys CONFIG sets itself keep their value).",
)
@click.option(
    "--print-default-config",
    is_flag=True,
    help="Print the embedded default TOML configuration and exit.",
)
def run(
    config: str | None,
    out_dir: str,
    force: bool,
    skip_space_check: bool,
    quiet: bool,
    full: bool,
    print_default_config: bool,
) -> None:
    """Run the experiment described by CONFIG (TOML; default: the embedded default config).

    Simulates biased clicks, estimates propensities, trains naive / IPS /
    skip-above / oracle LambdaMART rankers, evaluates them with confidence
    intervals, runs an interleaving test and writes OUT/report.md. A rerun into
    the same folder reuses every stage whose inputs did not change.

    \b
    Examples:
      clickrank run --out results/default
      clickrank run --print-default-config > my.toml   # edit, then:
      clickrank run my.toml --out results/my
      clickrank run --full --out results/full       # the four-point learning curve
    """
    from ..experiment import default_config_text, load_config, run_experiment

    if print_default_config:
        click.echo(default_config_text(), nl=False)
        return
    cfg = load_config(config, full=full)  # validated before anything is written
    result = run_experiment(
        cfg, out_dir, progress=not quiet, force=force, check_space=not skip_space_check
    )
    click.echo(result.summary())
    click.echo(f"summary: {result.summary_path}")
