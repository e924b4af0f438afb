"""Click-model fitting at scale: PBM and DBN on a 10^7-session top-10 log, against baselines.

Run ``python benchmarks/bench_clickmodel_fit.py`` (default 10^7 sessions) or
``--sessions 1000000`` for a smaller run. Parts:

scale      simulate a DBN log of ``--sessions`` sessions (300 synthetic queries, a
           production ranker's top 10, 10 % swap and 5 % randomized sessions, as in
           study (d)) to parquet, read it, and time ``fit_click_model`` from the
           in-memory log to the fitted model (reducing the log to its distinct sessions
           included) for PBM and DBN; reports the distinct sessions, the EM iterations,
           the recovered DBN gamma (true 0.9) and the peak RSS. Target: each <= 60 s on
           2 cores.
baseline   the same EM written plainly, in the same process, on a 2 * 10^4-session
           subsample: a per-session pure-Python DBN E-step (the structure of PyClick's
           DBN) and a row-wise numpy PBM EM (one E-step over every displayed result, no
           aggregation). Prints the time per EM iteration and per session, clickrank's
           time per iteration on the same subsample, and checks that the estimates agree.
clax       clickrank's PBM, UBM and DBN (maximum likelihood and shrinkage 1) against
           CLAX's (``clax-models``, JAX, gradient-based; the optional extra
           ``pip install -e .[clax]``) on the Yandex sample, 25 % of the sessions held
           out: perplexity, conditional perplexity, fit time. Without CLAX it prints
           clickrank's rows only.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from clickrank.clickmodels import DBN, binarized, err_satisfaction, fit_click_model
from clickrank.clickmodels.fitting import sessions_from_log
from clickrank.datasets import split_queries, synthetic
from clickrank.policies import DeterministicPolicy
from clickrank.policies.production import production_ranker
from clickrank.simulation import Randomize, Swap, simulate

K = 10
GAMMA = 0.9


def _simulate(n: int, path: Path) -> None:
    data = synthetic(1300, 30, seed=0)
    train, _ = split_queries(data, [300, 1000], seed=0)
    prod = production_ranker(train, 0.01, seed=0)
    model = DBN(binarized(threshold=3, eps_plus=1.0, eps_minus=0.1), err_satisfaction(), GAMMA)
    simulate(
        train,
        policy=DeterministicPolicy(prod),
        click_model=model,
        n_sessions=n,
        interventions=[Swap(0.1), Randomize(0.05)],
        top_k=K,
        seed=0,
        out=path,
        chunk_size=500_000,
    )


def bench_scale(n: int) -> dict:
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        path = Path(tmp) / "log.parquet"
        t0 = time.perf_counter()
        _simulate(n, path)
        t_sim = time.perf_counter() - t0
        t0 = time.perf_counter()
        log = pl.read_parquet(path, columns=["session", "query", "position", "doc", "click"])
        t_read = time.perf_counter() - t0
    fit_click_model(log.head(20_000), "dbn")  # compile the kernels outside the timings
    out = {"sessions": n, "rows": log.height, "simulate_s": t_sim, "read_s": t_read}
    t0 = time.perf_counter()
    s = sessions_from_log(log)
    out["distinct_sessions"] = s.n_unique
    out["sessions_from_log_s"] = time.perf_counter() - t0
    for name in ("pbm", "dbn"):
        t0 = time.perf_counter()
        fit = fit_click_model(log, name)
        out[f"{name}_s"] = time.perf_counter() - t0
        out[f"{name}_iterations"] = fit.iterations
        if name == "dbn":
            out["dbn_gamma"] = float(fit.globals["gamma"][0])
            out["dbn_gamma_se"] = float(fit.globals_se["gamma"][0])
    out["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(
        f"scale: {n:,} sessions ({log.height:,} rows; {s.n_unique:,} distinct), simulate "
        f"{t_sim:.1f} s, read {t_read:.1f} s; reduce to distinct sessions "
        f"{out['sessions_from_log_s']:.1f} s"
    )
    for name in ("pbm", "dbn"):
        ok = "OK" if out[f"{name}_s"] <= 60 else "OVER"
        print(
            f"  fit {name.upper()} from the log: {out[f'{name}_s']:.1f} s "
            f"({out[f'{name}_iterations']} EM iterations) [{ok}: target 60 s]"
        )
    z = (out["dbn_gamma"] - GAMMA) / out["dbn_gamma_se"]
    print(
        f"  DBN gamma {out['dbn_gamma']:.5f} (se {out['dbn_gamma_se']:.5f}, true {GAMMA}, "
        f"z = {z:+.2f}); peak RSS {out['peak_rss_gb']:.1f} GB"
    )
    return out


# -- baselines: the same EM, written plainly --------------------------------------------------


def _py_dbn_em(pairs, clicks, G, n_iter):
    """Per-session DBN EM in pure Python (the loop structure of PyClick's DBN)."""
    a = [0.5] * G
    s = [0.5] * G
    gamma = 0.9
    for _ in range(n_iter):
        an, ad, sn, sd = [0.0] * G, [0.0] * G, [0.0] * G, [0.0] * G
        gn = gd = 0.0
        for pr, cl in zip(pairs, clicks, strict=True):
            n = len(pr)
            last = max((j for j in range(n) if cl[j]), default=-1)
            T = [1.0] * (n + 1)
            for j in range(n - 1, last, -1):
                T[j] = (1 - a[pr[j]]) * ((1 - gamma) + gamma * T[j + 1])
            for j in range(max(last, 0)):
                g = pr[j]
                ad[g] += 1
                if cl[j]:
                    an[g] += 1
                    sd[g] += 1
                gn += 1
                gd += 1
            if last >= 0:
                g = pr[last]
                ad[g] += 1
                an[g] += 1
                cont = gamma * (1 - s[g])
                if last < n - 1:
                    D = (1 - cont) + cont * T[last + 1]
                    sn[g] += s[g] / D
                    sd[g] += 1
                    gd += (1 - s[g]) * ((1 - gamma) + gamma * T[last + 1]) / D
                    gn += cont * T[last + 1] / D
                    f = cont / D
                else:
                    f = 0.0
                start = last + 1
            else:
                f, start = 1.0 / T[0], 0
            for j in range(start, n):
                pe = f * T[j]
                ad[pr[j]] += pe
                if j < n - 1:
                    gd += pe
                    gn += f * (1 - a[pr[j]]) * gamma * T[j + 1]
                f *= (1 - a[pr[j]]) * gamma
        a = [an[g] / ad[g] if ad[g] > 0 else a[g] for g in range(G)]
        s = [sn[g] / sd[g] if sd[g] > 0 else s[g] for g in range(G)]
        gamma = gn / gd
    return np.array(a), np.array(s), gamma


def _numpy_pbm_em(g, k, c, G, n_iter):
    """Row-wise PBM EM in numpy: one E-step over every displayed result (no aggregation)."""
    theta = np.full(K, 0.5)
    alpha = np.full(G, 0.5)
    n_g = np.bincount(g, minlength=G)
    n_k = np.bincount(k, minlength=K)
    for _ in range(n_iter):
        t, a = theta[k], alpha[g]
        q = np.maximum(1 - t * a, 1e-12)
        pe = np.where(c, 1.0, t * (1 - a) / q)
        pa = np.where(c, 1.0, (1 - t) * a / q)
        theta = np.bincount(k, pe, minlength=K) / n_k
        alpha = np.bincount(g, pa, minlength=G) / np.maximum(n_g, 1)
    return theta / theta[0], alpha * theta[0]


def bench_baseline(n: int = 20_000, n_iter: int = 20) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.parquet"
        _simulate(n, path)
        log = pl.read_parquet(path)
    s = sessions_from_log(log)
    G = s.n_pairs
    # per-session lists in the sessions' pair indices (every logged session, not the distinct)
    pair = s.pair[s.inverse]
    click = s.click[s.inverse]
    pairs = [list(r[r >= 0]) for r in pair]
    clicks = [list(r[: len(p)]) for r, p in zip(click, pairs, strict=True)]
    t0 = time.perf_counter()
    a_py, s_py, g_py = _py_dbn_em(pairs, clicks, G, n_iter)
    t_py = (time.perf_counter() - t0) / n_iter
    converged = fit_click_model(s, "dbn")  # also compiles the kernels
    t0 = time.perf_counter()
    fit = fit_click_model(s, "dbn", max_iter=n_iter, tol=0.0)
    # SQUAREM: 3 E-steps per iteration
    t_ours = (time.perf_counter() - t0) / (3 * fit.iterations)
    print(
        f"baseline DBN, {n:,} sessions ({s.n_unique:,} distinct), {n_iter} plain EM "
        f"iterations: pure Python {t_py * 1e3:.0f} ms/iteration "
        f"({t_py / n * 1e6:.1f} us/session); clickrank {t_ours * 1e3:.2f} ms/E-step "
        f"(x{t_py / t_ours:.0f}); gamma after {n_iter} iterations: python {g_py:.4f} (from "
        f"0.5), clickrank {fit.globals['gamma'][0]:.4f}; clickrank converged "
        f"{converged.globals['gamma'][0]:.4f} in {converged.iterations} iterations"
    )
    ss = log.sort("session", "position")
    gidx = s.pair[s.inverse][s.shown[s.inverse]]
    k = ss["position"].to_numpy().astype(np.int64) - 1
    c = ss["click"].to_numpy()
    t0 = time.perf_counter()
    th_np, _ = _numpy_pbm_em(gidx, k, c, G, 200)
    t_np = (time.perf_counter() - t0) / 200
    t0 = time.perf_counter()
    pbm = fit_click_model(s, "pbm")
    t_pbm = time.perf_counter() - t0
    err = float(np.max(np.abs(np.log(th_np[1:] / pbm.globals["theta"][1:]))))
    print(
        f"baseline PBM, row-wise numpy EM: {t_np * 1e3:.1f} ms/iteration over {k.size:,} rows "
        f"(200 iterations: {200 * t_np:.1f} s); clickrank (cells, SQUAREM, to convergence) "
        f"{t_pbm:.2f} s in {pbm.iterations} iterations; max |log theta ratio| after 200 plain "
        f"iterations {err:.3f}"
    )
    return {
        "python_dbn_ms_per_iteration": 1e3 * t_py,
        "clickrank_dbn_ms_per_estep": 1e3 * t_ours,
        "numpy_pbm_ms_per_iteration": 1e3 * t_np,
        "clickrank_pbm_s": t_pbm,
        "gamma_python": g_py,
        "gamma_clickrank": float(fit.globals["gamma"][0]),
    }


def bench_clax(yandex: Path) -> dict:
    """clickrank's EM against CLAX's gradient-based fits on the Yandex sample (same split)."""
    from clickrank.publiclogs import load_yandex_sample

    if not yandex.is_file():
        print(f"clax: the Yandex sample is not at {yandex}; skipped")
        return {}
    s = sessions_from_log(load_yandex_sample(yandex), test_fraction=0.25, seed=0)
    train, test = s.train(), s.test_sessions()
    out: dict = {}
    for name in ("pbm", "ubm", "dbn"):
        for m in (0.0, 1.0):
            t0 = time.perf_counter()
            fit = fit_click_model(train, name, shrinkage=m)
            dt = time.perf_counter() - t0
            ev = fit.evaluate(test)
            out[f"clickrank {name} m={m:g}"] = (ev.perplexity, ev.conditional_perplexity, dt)
    try:
        import jax.numpy as jnp
        import optax
        from clax import Trainer
        from clax.models import DynamicBayesianNetwork, PositionBasedModel, UserBrowsingModel
        from flax import nnx
    except ImportError as err:
        print(
            f"clax: clax-models is not importable ({err}); install the optional extra "
            "(pip install -e .[clax]) to compare. clickrank alone:"
        )
    else:
        idx = s.inverse
        pair, click, is_test = s.pair[idx], s.click[idx], s.test[idx]
        G = s.n_pairs

        def batches(mask: np.ndarray, size: int = 256) -> list[dict]:
            rows = np.flatnonzero(mask)
            return [
                {
                    "query_doc_ids": jnp.asarray(np.maximum(pair[r], 0) + 1),
                    "positions": jnp.asarray(np.tile(np.arange(1, K + 1), (r.size, 1))),
                    "clicks": jnp.asarray(click[r].astype(np.int32)),
                    "mask": jnp.asarray(pair[r] >= 0),
                }
                for r in (rows[a : a + size] for a in range(0, rows.size, size))
            ]

        tr_b, te_b = batches(~is_test), batches(is_test)
        makers = {
            "pbm": lambda: PositionBasedModel(
                positions=K + 1, query_doc_pairs=G + 2, rngs=nnx.Rngs(0)
            ),
            "ubm": lambda: UserBrowsingModel(
                positions=K + 1, query_doc_pairs=G + 2, rngs=nnx.Rngs(0)
            ),
            "dbn": lambda: DynamicBayesianNetwork(query_doc_pairs=G + 2, rngs=nnx.Rngs(0)),
        }
        for name, make in makers.items():
            model = make()
            trainer = Trainer(optimizer=optax.adamw(0.003), epochs=50)
            t0 = time.perf_counter()
            trainer.train(model, tr_b, te_b)  # CLAX early-stops on this (the test) loader
            dt = time.perf_counter() - t0
            r = trainer.test_clicks(model, te_b).to_dict("records")[0]
            out[f"clax {name}"] = (float(r["test_ppl"]), float(r["test_cond_ppl"]), dt)
    print(f"Yandex sample, {train.n_sessions:,} training / {test.n_sessions:,} test sessions:")
    for k, (ppl, cppl, dt) in out.items():
        print(f"  {k:<20} perplexity {ppl:.4f}  conditional {cppl:.4f}  fit {dt:6.2f} s")
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--sessions", type=int, default=10_000_000)
    p.add_argument(
        "--parts",
        nargs="+",
        default=["baseline", "scale", "clax"],
        choices=["baseline", "scale", "clax"],
    )
    p.add_argument(
        "--yandex",
        type=Path,
        default=Path(__file__).resolve().parents[2]
        / "shared"
        / "data"
        / "yandex_relpred2011_pyclick_sample"
        / "trainSample",
    )
    args = p.parse_args()
    if "baseline" in args.parts:
        bench_baseline()
    if "scale" in args.parts:
        bench_scale(args.sessions)
    if "clax" in args.parts:
        bench_clax(args.yandex)


if __name__ == "__main__":
    main()
