"""The default learner's output, bit for bit: record it, or check it against a recording.

``python benchmarks/default_bits.py --record FILE`` fits :class:`clickrank.ClickRanker`
with its defaults on MQ2008 Fold1 (20,000 sessions from the deterministic production
ranker, PBM clicks, with and without 10 % swaps, seeds 0-2; the propensities resolved by
the learner itself) and on a small synthetic set where the thresholds of the large-log
path (member processes, the average's weights on a sample of queries) are lowered so that
it runs; it writes every cell's test
predictions and selection record. ``--check FILE`` fits the same cells and fails, naming
the cell and what differs, unless the predictions are equal to the bit and the records
equal. A refactoring of the learner must pass ``--check`` against a recording made before
it. MQ2008 is read from ``../shared/data`` (``CLICKRANK_SHARED_DATA``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from clickrank import ClickRanker
from clickrank.clickmodels import make_click_model, relevance_for_labels
from clickrank.datasets import RankingData, load_letor, synthetic
from clickrank.policies import DeterministicPolicy
from clickrank.policies.production import production_ranker
from clickrank.simulation import Swap, simulate

#: Where the large-log thresholds live, and the values the synthetic cell lowers them to.
THRESHOLDS_MODULE = "clickrank.training.thresholds"
LOWERED = {"PROCESSES_FROM": 0, "SPREAD_DOCS": 4_000}


def _shared_data() -> Path:
    env = os.environ.get("CLICKRANK_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


@contextmanager
def _lowered():
    module = importlib.import_module(THRESHOLDS_MODULE)
    saved = {k: getattr(module, k) for k in LOWERED}
    try:
        for k, v in LOWERED.items():
            setattr(module, k, v)
        yield
    finally:
        for k, v in saved.items():
            setattr(module, k, v)


def _log(train: RankingData, prod, seed: int, swap: float, sessions: int):
    params, _ = relevance_for_labels("pbm", train.y, relevance="binarized", eps=0.1)
    params["eta"] = 1.0
    return simulate(
        train,
        policy=DeterministicPolicy(prod),
        click_model=make_click_model("pbm", **params),
        n_sessions=sessions,
        interventions=[Swap(swap)] if swap > 0 else [],
        top_k=10,
        seed=seed,
    )


def _mq2008():
    fold = _shared_data() / "letor4_mq2008" / "Fold1"
    if not (fold / "train.txt").is_file():
        raise FileNotFoundError(f"{fold}/train.txt: MQ2008 Fold1 is needed (CLICKRANK_SHARED_DATA)")
    return load_letor(fold / "train.txt"), load_letor(fold / "test.txt")


def _mq2008_cell(seed: int, swap: float, sessions: int, **params) -> dict:
    train, test = _mq2008()
    prod = production_ranker(train, 0.01, seed=seed)
    log = _log(train, prod, seed, swap, sessions)
    return _cell(ClickRanker(seed=seed, **params).fit(train, log, logging_model=prod), test)


def _large_path_cell() -> dict:
    data = synthetic(240, 40, seed=7)
    train, test = data.subset(np.arange(160)), data.subset(np.arange(160, 240))
    prod = production_ranker(train, 0.05, seed=1)
    log = _log(train, prod, 1, 0.1, 8_000)
    with _lowered():
        ranker = ClickRanker(seed=1, n_jobs=2, unseen_guard=0.01).fit(
            train, log, logging_model=prod
        )
    return _cell(ranker, test)


#: Cell name -> how it is fitted: the default on 2·10^4 sessions with and without swaps;
#: small logs, where the safety check usually fails and the CRM fallback retrains, with
#: either ``combine``; the large-log path on a small synthetic set.
CELLS = {
    **{f"mq2008-fold1/seed{s}/swap{w:g}": (lambda s=s, w=w: _mq2008_cell(s, w, 20_000))
       for s in range(3) for w in (0.1, 0.0)},
    **{f"mq2008-fold1/2000-sessions/seed{s}/{c}":
       (lambda s=s, c=c: _mq2008_cell(s, 0.1, 2_000, combine=c))
       for s in range(3) for c in ("average", "select")},
    "synthetic/large-path": _large_path_cell,
}  # fmt: skip


def cells(names=None) -> dict[str, dict]:
    """Cell name -> fitted ranker's test predictions and record."""
    out: dict[str, dict] = {}
    for name in names or CELLS:
        t = time.perf_counter()
        out[name] = CELLS[name]()
        print(f"{name}: {out[name]['record']['choice']} ({time.perf_counter() - t:.1f} s)",
              flush=True)  # fmt: skip
    return out


def compare(got: dict[str, dict], path: str | os.PathLike) -> list[str]:
    """What differs between fitted cells and a recording (empty: equal to the bit)."""
    saved = np.load(path)
    records = json.loads(str(saved["records"]))
    bad = []
    for k, v in got.items():
        if k not in records:
            bad.append(f"{k}: not in the recording")
            continue
        if not np.array_equal(saved[f"{k}|pred"], v["pred"]):
            diff = np.max(np.abs(saved[f"{k}|pred"] - v["pred"]))
            bad.append(f"{k}: predictions differ (max |diff| {diff:.3g})")
        if records[k] != v["record"]:
            keys = sorted(x for x in records[k].keys() | v["record"].keys()
                          if records[k].get(x) != v["record"].get(x))  # fmt: skip
            bad.append(f"{k}: record differs in {keys}")
    return bad


def _cell(ranker: ClickRanker, test: RankingData) -> dict:
    record = json.loads(json.dumps(ranker.to_dict(), default=float))
    return {"pred": np.asarray(ranker.predict(test), dtype=np.float64), "record": record}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--record", help="write the cells' predictions and records here (.npz)")
    what.add_argument("--check", help="compare the cells with this recording (.npz)")
    ap.add_argument("--cells", help="comma-separated cell names (default: all)")
    args = ap.parse_args()
    got = cells(args.cells.split(",") if args.cells else None)
    if args.record:
        arrays = {f"{k}|pred": v["pred"] for k, v in got.items()}
        arrays["records"] = np.array(json.dumps({k: v["record"] for k, v in got.items()}))
        np.savez_compressed(args.record, **arrays)
        print(f"recorded {len(got)} cells in {args.record}")
        return
    bad = compare(got, args.check)
    if bad:
        sys.exit("not equal to the recording:\n  " + "\n  ".join(bad))
    print(f"all {len(got)} cells equal to the recording, predictions to the bit")


if __name__ == "__main__":
    main()
