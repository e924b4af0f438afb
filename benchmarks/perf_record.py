"""The performance record: quick versions of the scale benchmarks, as one JSON of ratios.

Run ``python benchmarks/perf_record.py [--out benchmarks/perf_record.json]`` (a few minutes;
``python3 tasks.py bench`` runs it, then :mod:`check_perf`). Every figure is a ratio of two
timings taken alternately in this process (best of ``--repeats`` each), so it is comparable
between machines; each entry records its target and the command of the full benchmark:

* ``simulate/<model>[/2threads]``: ``simulate`` of ``--sessions`` sessions x 10 (in-memory
  log) on one and two threads (``n_jobs``) over numpy's one-thread
  ``rng.random(sessions * 10 * n_uniforms)`` (``bench_simulation.py --jobs``); targets 3x
  for PBM, 5x for the others.
* ``lambdamart/<docs>x<per query>[/2threads]``: clickrank LambdaMART (oracle target, 20
  trees, 31 leaves, truncation 30) over LightGBM's built-in lambdarank, same trees, on one
  and two threads, 10^4-10^6 documents and 10-1000 per query (``bench_lambdamart.py``);
  target 1.1x.
* ``unbiased-lambdamart/fit``: building the Unbiased LambdaMART target and fitting 100
  trees over the same for the IPS target, on MQ2008 Fold1 (or synthetic data without it)
  with a 10^5-session swap log (``debiasing_real.py --methods default,unbiased-lambdamart``
  is the full protocol, with model selection); target 3x.

* ``default/fit-cost[-no-interventions]``: the default learner's fit over one LightGBM
  lambdarank fit of 100 trees, 10^4 documents, one thread (``bench_default_cost.py``);
  target 10x.

The coverage study is not re-run here (``bench_propensity.py --parts coverage`` takes
an hour); ``--coverage FILE`` copies the smallest and largest coverage of each cell of
its JSON into the record (target 0.95 +- 0.02). Nor are the default's fits at every size
(the 10^6 one takes minutes); ``--cost FILE`` copies the rows of
``bench_default_cost.py --sizes ... --threads 1,2 --json FILE``: each size's ratio to
LightGBM (target 10x) and, for 10^6 documents on two threads, the time over five minutes
(target 1).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import lightgbm as lgb
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_lambdamart import _builtin_params  # noqa: E402
from bench_simulation import setup as sim_setup  # noqa: E402

from clickrank import targets as T  # noqa: E402
from clickrank.clickmodels import make_click_model, relevance_for_labels  # noqa: E402
from clickrank.datasets import load_letor, synthetic  # noqa: E402
from clickrank.lambdamart import LambdaMART  # noqa: E402
from clickrank.policies import DeterministicPolicy  # noqa: E402
from clickrank.policies.production import production_ranker  # noqa: E402
from clickrank.propensity import estimate_propensities  # noqa: E402
from clickrank.simulation import Swap, simulate  # noqa: E402

K = 10
_ONE_THREAD = (
    "one thread: writing the log's columns (33 bytes a row) to fresh "
    "memory costs about 1.9x the bare draw and hashing the click draws 0.8x "
    "(bench_simulation.py's floor and clicks lines), so 3x is out of reach at this schema; "
    "on two threads (n_jobs=2) it is at target"
)
#: Figures known to be off target, with why, by exact name: :mod:`check_perf` prints them as
#: ``open`` and does not fail on them. Remove an entry when its work is done.
OPEN = {
    "simulate/pbm": _ONE_THREAD,
}
#: Rows still above their target, and why (a lambdamart row is open only when over 1.1x).
OPEN_OVER = {
    "simulate/ubm": "above 5x on this run: one thread measured 4.73-5.24x on Dec 2, "
    "with the machine's state (docs/simulation.md, UBM's chain): around the target",
    "lambdamart/": "above 1.1x on this run: every row measured 0.79-0.96x when recorded "
    "(docs/benchmarks.md); a noisy machine, or a regression",
    "default/fit-cost": "the default is not yet at ten fits at this size and thread count "
    "(docs/default-cost.md, 'Where it is not yet at ten fits')",
    "default/fit-time": "over five minutes without interventions: regression EM and more "
    "rounds add a minute (docs/default-cost.md, 'Where it is not yet at ten fits')",
}


def _best(fn, repeats: int) -> float:
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _ratio(a, b, repeats: int) -> float:
    """Best time of ``a`` over best time of ``b``, timed alternately ``repeats`` times each.

    The best of several runs is the time least disturbed by other jobs on the machine.
    """
    ta, tb = [], []
    for _ in range(repeats):
        ta.append(_best(a, 1))
        tb.append(_best(b, 1))
    return float(min(ta) / min(tb))


def record_simulation(n: int, repeats: int) -> dict:
    """Every click model at 1 and 2 threads (``simulate(n_jobs=...)``; keys
    ``simulate/<model>`` and ``.../2threads``) over numpy's one-thread bare draw."""
    data, policy, _ = sim_setup()
    out = {}
    for threads in (1, 2):
        for name, target in (("pbm", 3.0), ("trust", 5.0), ("cascade", 5.0), ("dcm", 5.0),
                             ("dbn", 5.0), ("sdbn", 5.0), ("ubm", 5.0)):  # fmt: skip
            model = make_click_model(name)
            n_u = model.n_uniforms

            def sim(model=model, threads=threads):
                simulate(
                    data, policy=policy, click_model=model, n_sessions=n, top_k=K, n_jobs=threads
                )

            def bare(n_u=n_u):
                np.random.default_rng().random(n * K * n_u)

            sim()  # warm-up (numba, first touch)
            r = _ratio(sim, bare, repeats)
            key = f"simulate/{name}" + ("" if threads == 1 else "/2threads")
            out[key] = {
                "ratio": r, "target": target,
                "command": f"python benchmarks/bench_simulation.py --sessions {n} --skip-stream "
                           f"--jobs {threads}",
            }  # fmt: skip
            print(f"{key:<26} {r:6.2f}x  (target <= {target:g}x)", flush=True)
    return out


def record_lambdamart(repeats: int) -> dict:
    """Ours over LightGBM's lambdarank at 10^4-10^6 documents, 10-1000 per query, on 1 and 2
    threads (keys ``lambdamart/<docs>x<per query>`` and ``.../2threads``)."""
    cfg = {"n_estimators": 20, "learning_rate": 0.1, "num_leaves": 31, "max_depth": -1,
           "min_data_in_leaf": 20, "truncation_level": 30}  # fmt: skip
    out = {}
    sizes = ((10_000, 30), (100_000, 30), (100_000, 10), (100_000, 100), (100_000, 1000),
             (1_000_000, 30))  # fmt: skip
    for threads in (1, 2):
        for n_docs, m in sizes:
            data = synthetic(n_docs // m, m, seed=1)

            def ours(data=data, threads=threads):
                LambdaMART(**cfg, n_jobs=threads).fit(data)

            def theirs(data=data, threads=threads):
                dset = lgb.Dataset(data.X, data.y, group=data.lengths)
                lgb.train(_builtin_params(cfg, threads), dset, cfg["n_estimators"])

            ours()
            r = _ratio(ours, theirs, repeats)
            name = f"lambdamart/{n_docs}x{m}" + ("" if threads == 1 else "/2threads")
            out[name] = {
                "ratio": r, "target": 1.1,
                "command": f"python benchmarks/bench_lambdamart.py --threads {threads}",
            }  # fmt: skip
            print(f"{name:<32} {r:6.2f}x  (target <= 1.1x)", flush=True)
    return out


def _letor() -> tuple:
    env = os.environ.get("CLICKRANK_SHARED_DATA")
    root = Path(env) if env else HERE.parents[1] / "shared" / "data"
    fold = root / "letor4_mq2008" / "Fold1"
    if (fold / "train.txt").is_file():
        return "MQ2008 Fold1", load_letor(fold / "train.txt")
    return "synthetic(300, 20)", synthetic(300, 20, seed=0)


def record_unbiased(repeats: int, sessions: int = 100_000) -> dict:
    name, train = _letor()
    prod = production_ranker(train, 0.2, seed=1)
    params, _ = relevance_for_labels("pbm", train.y, relevance="binarized", eps=0.1)
    log = simulate(train, policy=DeterministicPolicy(prod),
                   click_model=make_click_model("pbm", eta=1.0, **params),
                   n_sessions=sessions, interventions=[Swap(0.1)], top_k=K, seed=1)  # fmt: skip
    theta = estimate_propensities(log, method="swap")
    trees = {"n_estimators": 100, "learning_rate": 0.1, "num_leaves": 8, "max_depth": 3}

    def fit(target_name: str) -> None:
        target = T.make_target(target_name, train, log, theta, seed=1)
        LambdaMART(**trees, seed=1).fit(train, target)

    fit("unbiased-lambdamart")  # warm-up
    r = _ratio(lambda: fit("unbiased-lambdamart"), lambda: fit("ips"), repeats)
    print(f"unbiased-lambdamart/fit {r:6.2f}x  (target <= 3x; {name})", flush=True)
    return {
        "unbiased-lambdamart/fit": {
            "ratio": r, "target": 3.0, "data": name, "sessions": sessions,
            "command": "python benchmarks/debiasing_real.py --methods default,unbiased-lambdamart"
                       " --seeds 1",
        }
    }  # fmt: skip


def record_default_cost() -> dict:
    """The default learner's fit over one LightGBM lambdarank fit of 100 trees on the same
    10^4 documents, one thread, on the log with 10 % swaps (key ``default/fit-cost``) and
    on the log without interventions, whose propensities come from regression EM
    (``default/fit-cost-no-interventions``)."""
    from bench_default_cost import baseline, default, setup, warm_up

    warm_up()
    out = {}
    for key, swap in (("default/fit-cost", 0.1), ("default/fit-cost-no-interventions", 0.0)):
        data, log = setup(10_000, 6, 100, swap=swap)
        base = baseline(data, 1)
        took, model = default(data, log, 1)
        r = took / min(base, baseline(data, 1))
        print(f"{key} {r:6.1f}x  (target <= 10x; {model.cost_['rounds']:,} rounds)",
              flush=True)  # fmt: skip
        out[key] = {
            "ratio": r, "target": 10.0, "rounds": model.cost_["rounds"],
            "command": "python benchmarks/bench_default_cost.py --sizes 10000 --threads 1"
                       + ("" if swap else " --swap 0"),
        }  # fmt: skip
    return out


def _size(docs: int) -> str:
    """A size's name in the record: 9,960 documents -> ``1e4``, 249,960 -> ``2.5e5``."""
    mantissa, exp = f"{docs:.1e}".split("e")
    return f"{float(mantissa):g}e{int(exp)}"


def record_cost(path: str) -> dict:
    """The rows of a ``bench_default_cost.py --json`` file: the default's fit over
    LightGBM's at each size, thread count and log (``default/fit-cost-<size>[-no-
    interventions][/2threads]``, target 10x) and, for 10^6 documents on two threads, its
    time over five minutes (``default/fit-time-1e6[-no-interventions]/2threads``, target
    1). The last row of each size, thread count and log is kept."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    out = {}
    for row in rows:
        two = "" if row["threads"] == 1 else f"/{row['threads']}threads"
        none = row.get("swap", 0.1) == 0
        tag = f"{_size(row['docs'])}{'-no-interventions' if none else ''}"
        swap = " --swap 0" if none else ""
        command = (f"python benchmarks/bench_default_cost.py --sizes {round(row['docs'], -4)} "
                   f"--threads {row['threads']}{swap} --json FILE")  # fmt: skip
        out[f"default/fit-cost-{tag}{two}"] = {
            "ratio": row["default_s"] / row["lightgbm_s"], "target": 10.0,
            "rounds": row["rounds"], "seconds": row["default_s"], "command": command,
        }  # fmt: skip
        if row["docs"] >= 990_000 and row["threads"] == 2:
            out[f"default/fit-time-{tag}{two}"] = {
                "ratio": row["default_s"] / 300, "target": 1.0, "seconds": row["default_s"],
                "command": command,
            }  # fmt: skip
    return out


def record_coverage(path: str) -> dict:
    cells = json.loads(Path(path).read_text())["cells"]
    out = {}
    for name, cell in cells.items():
        cov = np.asarray(cell["coverage"][1:], dtype=float)  # position 1 is the reference
        out[f"coverage/{name}"] = {
            "min": float(cov.min()), "max": float(cov.max()), "target": [0.93, 0.97],
            "logs": cell["logs"], "sessions": cell["sessions"],
            "command": "python benchmarks/bench_propensity.py --parts coverage --logs 1000",
        }  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(HERE / "perf_record.json"))
    ap.add_argument("--sessions", type=int, default=1_000_000,
                    help="simulated sessions (the record measures 10^6)")  # fmt: skip
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--parts", nargs="*",  # none: only --coverage / --cost with --update
                    default=["simulation", "lambdamart", "unbiased", "default"],
                    choices=["simulation", "lambdamart", "unbiased", "default"])  # fmt: skip
    ap.add_argument("--coverage", default=None, help="coverage JSON of bench_propensity.py")
    ap.add_argument("--cost", default=None,
                    help="JSON lines of bench_default_cost.py --sizes ... --threads 1,2 "
                         "(the 10^6 fit takes minutes, so it is not run here)")  # fmt: skip
    ap.add_argument("--update", action="store_true",
                    help="keep the figures of --out that --parts does not measure (a record "
                         "regenerated in part)")  # fmt: skip
    args = ap.parse_args()
    record: dict = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "lightgbm": lgb.__version__},
        "figures": {},
    }  # fmt: skip
    if args.update and Path(args.out).exists():
        record["figures"] = json.loads(Path(args.out).read_text())["figures"]
    if "unbiased" in args.parts:
        record["figures"].update(record_unbiased(args.repeats))
    if "simulation" in args.parts:
        record["figures"].update(record_simulation(args.sessions, args.repeats))
    if "lambdamart" in args.parts:
        record["figures"].update(record_lambdamart(args.repeats))
    if "default" in args.parts:
        record["figures"].update(record_default_cost())
    if args.coverage:
        record["figures"].update(record_coverage(args.coverage))
    if args.cost:
        record["figures"].update(record_cost(args.cost))
    for name, fig in record["figures"].items():
        fig.pop("open", None)  # a kept figure's reason is given again, if still open
        if name in OPEN:
            fig["open"] = OPEN[name]
        for prefix, why in OPEN_OVER.items():
            if name.startswith(prefix) and fig["ratio"] > fig["target"]:
                fig["open"] = why
    out = Path(args.out)  # whole or not at all: a temporary file, then a rename
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(tmp, out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
