"""Study (c): IPS with misspecified and with estimated propensities.

Clicks come from a PBM with θ_p = p^-η_true. IPS-LambdaMART is trained with
θ_p = p^-η_used for a range of η_used (under-correction for η_used < η_true,
over-correction above), and with θ̂ estimated from the same log by the swap
and the randomized-top-K estimators (``clickrank.estimate_propensities``).

    python simulations/misspecified_propensities/run.py [--quick] [--out DIR] [--config FILE]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _common as C  # noqa: E402

from clickrank import plots  # noqa: E402
from clickrank.clickmodels import power_law  # noqa: E402
from clickrank.propensity import estimate_propensities  # noqa: E402
from clickrank.simulation import Randomize, Swap, simulate  # noqa: E402
from clickrank.targets import Target, ips, naive, oracle  # noqa: E402

NAME = "misspecified_propensities"
REFERENCES = ("oracle", "production", "click limit", "naive")
ESTIMATORS = {"swap": "swap", "randomized": "randomized"}


def main(argv: list[str] | None = None) -> dict:
    args = C.parse_args(NAME, __doc__, argv)
    cfg = C.load_config(args.config, args.quick)
    clock = C.Clock()
    s = C.synthetic_setup(cfg)
    K, metric, nb = cfg["top_k"], cfg["metric"], cfg["n_bootstrap"]
    eta_true = float(cfg["true_eta"])
    model = C.click_model({**cfg["click_model"], "eta": eta_true})
    truth = model.propensities(K)
    n_sweep = int(cfg["sessions"])
    est_sizes = sorted(int(x) for x in cfg["estimate_sessions"])
    n_max = max(n_sweep, est_sizes[-1])
    design = [Swap(cfg["swap_fraction"]), Randomize(cfg["randomize_fraction"])]

    probe = simulate(s.train, policy=s.policy, click_model=model, n_sessions=2000, top_k=K, seed=0)
    shown = naive(s.train, probe).candidates
    limit = Target("click limit", gains=model.attractiveness(s.train.y), candidates=shown)
    refs = {
        "oracle": C.ranker(cfg).fit(s.train, oracle(s.train)),
        "production": s.production,
        "click limit": C.ranker(cfg).fit(s.train, limit),
    }
    ref_rows = C.eval_rows(refs, s.test, metric, nb, eta=None, seed=0)

    sweep, est_rows, est_info, first_estimates = [], [], [], {}
    for seed in cfg["seeds"]:
        full = simulate(
            s.train,
            policy=s.policy,
            click_model=model,
            n_sessions=n_max,
            interventions=design,
            top_k=K,
            seed=int(seed),
        )
        log = full.filter(pl.col("session") < n_sweep)
        models = {"naive": C.ranker(cfg, seed).fit(s.train, naive(s.train, log))}
        for eta in cfg["used_etas"]:
            t = ips(s.train, log, power_law(K, float(eta)))
            models[f"ips η_used={float(eta):g}"] = C.ranker(cfg, seed).fit(s.train, t)
        res = C.eval_rows(models, s.test, metric, nb, seed=seed)
        sweep.append(
            res.with_columns(
                eta=pl.Series([None] + [float(e) for e in cfg["used_etas"]], dtype=pl.Float64)
            )
        )
        for n in est_sizes:
            sub = full.filter(pl.col("session") < n)
            thetas = {"true θ": truth}
            for label, method in ESTIMATORS.items():
                p = estimate_propensities(sub, method)
                th, filled = C.usable_theta(p)
                thetas[f"{label} θ̂"] = th
                err = np.abs(np.log(th[1:] / truth[1:]))
                est_info.append(
                    {
                        "seed": seed,
                        "sessions": n,
                        "estimator": label,
                        "filled_positions": filled,
                        "mean_abs_log_error": float(err.mean()),
                        "max_abs_log_error": float(err.max()),
                        "theta_hat": th.round(4).tolist(),
                        "sessions_used": int(p.n_sessions),
                    }
                )
                if seed == cfg["seeds"][0] and n == est_sizes[-1]:
                    first_estimates[label] = p
            m = {
                f"ips ({k})": C.ranker(cfg, seed).fit(s.train, ips(s.train, sub, th))
                for k, th in thetas.items()
            }
            est_rows.append(C.eval_rows(m, s.test, metric, nb, sessions=n, seed=seed))
        del full
    runs = pl.concat(sweep)
    sweep_agg = C.over_seeds(
        runs.with_columns(
            method=pl.when(pl.col("eta").is_null()).then(pl.col("method")).otherwise(pl.lit("ips"))
        ),
        ["method", "eta"],
    )
    est_runs = pl.concat(est_rows)
    est_agg = C.over_seeds(est_runs, ["method", "sessions"])
    refs_agg = C.over_seeds(ref_rows, ["method", "eta"])
    info = pl.DataFrame([{k: v for k, v in r.items() if k != "theta_hat"} for r in est_info])
    err_agg = (
        info.group_by("estimator", "sessions", maintain_order=True)
        .agg(
            pl.col("mean_abs_log_error").mean(),
            pl.col("max_abs_log_error").mean(),
            pl.col("filled_positions").sum(),
            pl.col("sessions_used").mean().round(0).cast(pl.Int64),
        )
        .sort("sessions", "estimator")
    )

    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    frame = pl.concat(
        [
            f.select("method", pl.col("eta").cast(pl.Float64), "mean", "lower", "upper")
            for f in (sweep_agg, refs_agg)
        ]
    )
    fig = plots.severity_curves(frame, metric=metric.upper(), reference=REFERENCES)
    ax = fig.axes[0]
    ax.axvline(eta_true, color="k", lw=0.8, ls=":")
    ax.set_xlabel(f"η used for the IPS propensities θ_p = p^−η  (clicks: η = {eta_true:g})")
    ax.set_title(
        f"Misspecified propensities, {n_sweep:,} sessions; {len(cfg['seeds'])} seed(s), 95% CI",
        fontsize=10,
    )
    C.save_figure(fig, out / "misspecified_eta.png")
    fig = plots.propensity_vs_truth(first_estimates, truth)
    fig.axes[0].set_title(
        f"θ̂ from {est_sizes[-1]:,} sessions (seed {cfg['seeds'][0]}) vs true θ_p = p^-{eta_true:g}",
        fontsize=10,
    )
    C.save_figure(fig, out / "estimated_propensities.png")

    seconds = clock.seconds()
    report = render(
        cfg, args, sweep_agg, refs_agg, est_agg, err_agg, n_sweep, est_sizes, eta_true, seconds
    )
    results = {
        "config": cfg,
        "seconds": seconds,
        "sweep": C.frame_records(sweep_agg),
        "references": C.frame_records(refs_agg),
        "estimated": C.frame_records(est_agg),
        "estimation_error": C.frame_records(err_agg),
        "theta_estimates": est_info,
        "runs": C.frame_records(runs),
        "estimated_runs": C.frame_records(est_runs),
        "true_theta": truth.tolist(),
    }
    C.write_outputs(out, NAME, report, results)
    return results


def render(cfg, args, sweep, refs, est, err, n_sweep, est_sizes, eta_true, seconds) -> str:
    etas = [float(e) for e in cfg["used_etas"]]
    ips_v = {e: C.value(sweep, "ips", eta=e) for e in etas}
    naive_v = C.value(sweep, "naive")
    best = max(ips_v, key=ips_v.get)
    lo, hi = etas[0], etas[-1]
    n_big = est_sizes[-1]
    tab = sweep.filter(pl.col("method") == "ips").select(
        pl.col("eta").map_elements(lambda x: f"{x:g}", return_dtype=pl.String).alias("η_used"),
        "mean",
        "lower",
        "upper",
    )
    at_true = ips_v.get(eta_true, float("nan"))
    under, over = at_true - ips_v[lo], at_true - ips_v[hi]
    lines = [
        C.header("Misspecified and estimated propensities", NAME, args.quick, args.config, seconds)
    ]
    lines += [
        f"Clicks: PBM with θ_p = p^-{eta_true:g}, binarized relevance, production ranker top "
        f"{cfg['top_k']}; {cfg['swap_fraction']:.0%} swap and {cfg['randomize_fraction']:.0%} "
        f"randomized-top-{cfg['top_k']} sessions. Log seeds {cfg['seeds']}; LambdaMART "
        f"{cfg['lambdamart']}.",
        "",
        f"## IPS with θ_p = p^-η_used, {n_sweep:,} sessions {C.CI_NOTE}",
        "",
        "![misspecified](misspecified_eta.png)",
        "",
        C.md_table(tab),
        "",
        f"Naive (no correction): {C.ci_text(sweep, 'naive')}; references: "
        + ", ".join(f"{m} {C.ci_text(refs, m)}" for m in ("oracle", "production", "click limit"))
        + ".",
        "",
        "## IPS with estimated θ̂ (estimated on the same log prefix it trains on)",
        "",
        "![estimated propensities](estimated_propensities.png)",
        "",
        C.md_table(C.wide_ci(est, "sessions")),
        "",
        "Estimation error of θ̂ over positions 2..K (mean over seeds): mean and max of "
        "|log θ̂_p/θ_p|; `filled_positions` counts positions without a click (θ̂ = 0) carried "
        "forward from the position above; `sessions_used` is the number of sessions that "
        "entered the estimate.",
        "",
        C.md_table(err),
        "",
        "## Reading",
        "",
        f"* Under-correction (η_used = {lo:g}) gives {ips_v[lo]:.3f}"
        + (" — exactly naive's click-count target (θ ≡ 1)" if lo == 0 else "")
        + f"; the true η = {eta_true:g} gives {ips_v.get(eta_true, float('nan')):.3f}; "
        f"over-correction η_used = {hi:g} gives {ips_v[hi]:.3f}. The best used η in the grid is "
        f"{best:g} ({ips_v[best]:.3f}); naive is {naive_v:.3f}"
        + (
            f", and the production ranker {C.value(refs, 'production'):.3f}: over-correcting "
            f"by η_used = {hi:g} ends below the logging ranker itself."
            if ips_v[hi] < C.value(refs, "production")
            else "."
        ),
        f"* Relative to the true η, under-correcting by {eta_true - lo:g} costs {under:.3f} and "
        f"over-correcting by {hi - eta_true:g} costs {over:.3f}"
        + (
            " — over-correction is the more harmful error here: weights p^η_used with "
            "η_used > η_true inflate the clicks at low positions, so documents the production "
            "ranker put low are promoted beyond their relevance and the noise of their few "
            "clicks is amplified."
            if over > under
            else " — under-correction is the more harmful error here."
        ),
        f"* With θ̂ from {n_big:,} sessions: "
        + ", ".join(
            f"{m} {C.ci_text(est, m, sessions=n_big)}"
            for m in ("ips (true θ)", "ips (swap θ̂)", "ips (randomized θ̂)")
        )
        + ".",
    ]
    for n in est_sizes:
        e = {
            r["estimator"]: r["mean_abs_log_error"]
            for r in err.filter(pl.col("sessions") == n).iter_rows(named=True)
        }
        nd = {k: C.value(est, f"ips ({k} θ̂)", sessions=n) for k in e}
        better_err = min(e, key=e.get)
        better_nd = max(nd, key=nd.get)
        lines.append(
            f"* At {n:,} sessions: mean |log θ̂/θ| swap {e['swap']:.3f}, randomized "
            f"{e['randomized']:.3f}; IPS NDCG swap {nd['swap']:.3f}, randomized "
            f"{nd['randomized']:.3f} (true θ {C.value(est, 'ips (true θ)', sessions=n):.3f}). "
            + (
                "The estimator with the smaller error also gives the better ranker."
                if better_err == better_nd
                else f"The smaller average error ({better_err}) did not give the better ranker "
                f"({better_nd}); the average hides where the error sits (the lowest positions "
                "carry the largest weights), so compare the seed intervals in the table."
            )
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
