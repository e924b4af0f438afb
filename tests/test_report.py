"""report.md and summary.json: the reading follows the numbers; markdown renders; atomic writes."""

from __future__ import annotations

import json
import re

import pytest

from clickrank._core._io import LEDGER
from clickrank.clicklog import LogStats, PositionCTR, SkipAboveCounts
from clickrank.evaluation import ComparisonResult
from clickrank.experiment import load_config
from clickrank.online import InterleavingResult
from clickrank.report import reading, render_report, write_report


def _row(
    ranker: str, mean: float, *, metric: str = "ndcg@10", half: float = 0.01, se: float = 0.005
) -> dict:
    return {
        "ranker": ranker,
        "metric": metric,
        "mean": mean,
        "se": se,
        "ci_low": mean - half,
        "ci_high": mean + half,
        "n_queries": 100,
        "n_used": 95,
        "n_empty": 5,
        "empty": "skip",
    }


def _comparison(a: str, b: str, diff: float, p: float) -> dict:
    # built by the result class, so the test does not restate the schema of summary.json
    return ComparisonResult(
        a=a,
        b=b,
        metric="ndcg@10",
        n_queries=95,
        mean_a=0.5 + diff,
        mean_b=0.5,
        diff=diff,
        sd_diff=0.1,
        cohen_dz=diff / 0.1,
        t_stat=3.0,
        t_p_value=p,
        t_ci=(diff - 0.02, diff + 0.02),
        randomization_p_value=p,
        n_permutations=1000,
        bootstrap_ci=(diff - 0.02, diff + 0.02),
        alpha=0.05,
    ).to_dict()


def _interleaving(wins: int, losses: int, ties: int, winner: str, p: float) -> dict:
    r = InterleavingResult("team-draft", wins + losses + ties, wins, losses, ties, 0.05, "PBM")
    assert r.winner == winner and (r.p_value < 1e-6 if p < 1e-6 else r.p_value > 0.05)
    return {"a": "ips", "b": "naive", **r.to_dict()}


def _results(
    *,
    naive=0.70,
    ips=0.85,
    oracle=0.90,
    production=0.60,
    skip=0.05,
    ctr=(0.35, 0.02),
    alpha=(0.35, 0.20),
    theta_est=(1.0, 0.52, 0.30),
    lower=(1.0, 0.48, 0.28),
    upper=(1.0, 0.56, 0.34),
    comparisons=None,
    interleaving=None,
    curve=None,
) -> dict:
    truth = [1.0, 0.5, 1 / 3]
    rankers = {
        "production": production,
        "naive": naive,
        "ips": ips,
        "skip-above": skip,
        "oracle": oracle,
    }
    ctr_rows = tuple(
        PositionCTR(
            position=p,
            impressions=1000,
            clicks=int(1000 * c),
            ctr=c,
            se=0.01,
            mean_label=1.0,
            mean_click_given_examined=a,
            true_theta=t,
        )
        for p, c, a, t in zip((1, 3), ctr, alpha, (1.0, 1 / 3), strict=True)
    )
    log = LogStats(
        sessions=1000,
        impressions=3000,
        clicks=500,
        sessions_by_intervention={"none": 900, "swap": 100},
        ctr_view="none",
        ctr_by_position=ctr_rows,
        skip_above=SkipAboveCounts(preferences=100, agree=50, tie=20, invert=30),
        click_model="PBM()",
        path="log.parquet",
    )
    return {
        "format": "clickrank.experiment.summary",
        "config": load_config().to_dict(),
        "config_origin": "<test>",
        "config_hash": "0" * 16,
        "data": {
            "name": "synthetic",
            "source": "synthetic",
            "n_features": 6,
            "parts": {"train": {"queries": 10, "docs": 100, "labels": {"0.0": 60, "1.0": 40}}},
        },
        "production": {"policy": "production", "trained_on_queries": 1},
        "log": log.to_dict(),
        "propensities": {
            "use": "swap",
            "alpha": 0.05,
            "truth": truth,
            "estimates": {
                "swap": {
                    "theta": list(theta_est),
                    "lower": list(lower),
                    "upper": list(upper),
                    "n_sessions": 1000,
                    "absolute": False,
                    "warnings": [],
                }
            },
        },
        "models": {r: {"kind": "gains", "trees": 10} for r in rankers if r != "production"},
        "evaluation": {
            "rankers": list(rankers),
            "metrics": ["ndcg@10"],
            "n_queries": 100,
            "alpha": 0.05,
            "n_bootstrap": 200,
            "empty": "skip",
            "table": [_row(r, m) for r, m in rankers.items()],
            "comparisons": comparisons or [],
            "notes": [],
        },
        "interleaving": interleaving or [],
        "learning_curve": curve or {"metric": "ndcg@10", "rows": []},
        "figures": {"ctr_by_position": "figures/ctr_by_position.png"},
        "notes": [],
        "versions": {"clickrank": "0.1.0"},
        "timings": {"stages": {"data": {"seconds": 0.1, "reused": False}}, "total_seconds": 0.1},
    }


def _text(results: dict) -> str:
    return " ".join(reading(results))


# -- the reading ---------------------------------------------------------------------------


def test_gap_closed_is_computed_from_the_metrics():
    assert "IPS closes 75% of the gap between naive (0.700) and oracle (0.900)" in _text(
        _results(naive=0.70, ips=0.85, oracle=0.90)
    )
    assert "IPS closes 20% of the gap" in _text(_results(naive=0.80, ips=0.82, oracle=0.90))


def test_ips_below_naive_or_no_gap_is_said_so():
    text = _text(_results(naive=0.80, ips=0.78, oracle=0.90))
    assert "does not improve on naive" in text and "closes" not in text
    text = _text(_results(naive=0.91, ips=0.85, oracle=0.90))
    assert "there is no gap for IPS" in text
    assert "reaches the oracle" in _text(_results(naive=0.7, ips=0.92, oracle=0.9))


def test_ctr_and_relevance_ratios_and_their_wording():
    text = _text(_results(ctr=(0.40, 0.02), alpha=(0.40, 0.20)))
    assert "CTR at position 3 is 20.0× lower than at position 1" in text
    assert "falls only 2.0×" in text and "most of the fall is position bias" in text
    text = _text(_results(ctr=(0.40, 0.20), alpha=(0.40, 0.19)))
    assert "falls only" not in text and "little position bias" in text


def test_propensity_coverage_counts_the_positions_inside_the_interval():
    text = _text(_results())
    assert "covers the true θ with its 95% CI at 2 of 2 estimated positions" in text
    assert "largest relative error is 10% (position 3)" in text
    text = _text(
        _results(theta_est=(1.0, 0.7, 0.6), lower=(1.0, 0.65, 0.55), upper=(1.0, 0.75, 0.65))
    )
    assert "at 0 of 2 estimated positions" in text and "more misses than" in text


def test_paired_tests_say_significant_only_when_both_tests_reject():
    sig = _text(_results(comparisons=[_comparison("ips", "naive", 0.1, 1e-6)]))
    assert "1 of 1 differences are significant at 95%: IPS beats naive by 0.100" in sig
    neg = _text(_results(comparisons=[_comparison("ips", "naive", -0.1, 1e-6)]))
    assert "naive beats IPS by 0.100" in neg
    ns = _text(_results(comparisons=[_comparison("ips", "naive", 0.01, 0.3)]))
    assert "0 of 1 differences" in ns
    assert "not significant at this level: IPS vs naive (+0.010)" in ns


def test_the_paired_tests_are_one_sentence_and_one_table():
    res = _results(
        comparisons=[
            _comparison("ips", "naive", 0.1, 1e-6),
            _comparison("oracle", "ips", 0.02, 1e-6),
            _comparison("ips", "skip-above", 0.01, 0.3),
        ]
    )
    paired = [s for s in reading(res) if "aired test" in s]
    assert len(paired) == 1 and "2 of 3 differences are significant" in paired[0]
    md = render_report(res)
    table = md[md.index("| A | B | A − B [95% CI]") :].split("\n\n")[0].splitlines()
    assert len(table) == 2 + 3
    assert table[2].startswith("| IPS | naive | +0.100") and table[2].endswith("IPS is better |")
    assert table[4].endswith("| not significant |")
    assert md.index("## Reading") < md.index("| A | B | A − B") < md.index("## Data and click log")


def test_the_report_opens_in_plain_words():
    ips_naive = [_comparison("ips", "naive", 0.15, 1e-6)]
    res = _results(naive=0.70, ips=0.85, oracle=0.90, comparisons=ips_naive)
    md = render_report(res)
    plain = md[md.index("## In plain words") : md.index("## Reading")]
    assert md.index("## In plain words") < md.index("## Reading")
    for r in ("production", "naive", "ips", "oracle"):
        assert f"- **{r}**: " in plain
    assert "inverse propensity scoring" in plain
    assert '"IPS closes 75% of the gap" means: naive scores 0.700 and the oracle 0.900' in plain
    assert "**What to do next.**" in plain and "IPS beats naive here" in plain
    assert "clickrank fit-clicks LOG" in plain
    weak = render_report(_results(naive=0.80, ips=0.78, oracle=0.90))
    assert "IPS does not significantly beat naive here" in weak


def test_the_data_seed_and_the_swap_session_count_are_explained():
    res = _results()
    res["data"]["name"] = "synthetic(seed=3757552657)"
    res["config"]["seed"] = 0
    md = render_report(res)
    assert "not the configuration's `seed = 0` but derived from it" in md
    res["config"]["data"]["seed"] = 5
    assert "Its seed is the `[data] seed`" in render_report(res)
    res = _results()
    res["log"]["sessions_by_intervention"] = {"none": 900, "swap": 100}
    res["propensities"]["estimates"]["swap"]["n_sessions"] = 1000
    text = _text(res)
    assert "(1,000 sessions: the 100 swap sessions compared with the 900 sessions" in text


def test_interleaving_verdict_and_agreement_with_the_offline_metric():
    win = _text(_results(interleaving=[_interleaving(600, 400, 1000, "A", 1e-9)]))
    assert "users prefer IPS" in win and "agrees in direction with the offline ndcg@10" in win
    assert "A wins 60% of the non-tied ones" in win
    # offline IPS > naive, but interleaving prefers naive: the reading says they disagree
    lose = _text(_results(interleaving=[_interleaving(400, 600, 1000, "B", 1e-9)]))
    assert "users prefer naive" in lose and "disagrees" in lose
    both = _text(
        _results(
            interleaving=[_interleaving(600, 400, 1000, "A", 1e-9)],
            comparisons=[_comparison("ips", "naive", 0.1, 0.2)],
        )
    )
    assert "agrees in direction with the (not significant) offline" in both
    none = _text(_results(interleaving=[_interleaving(500, 505, 1000, "none", 0.9)]))
    assert "no significant preference" in none and "agrees" not in none


def test_skip_above_below_the_logger_is_explained_by_the_deterministic_logger():
    text = _text(_results(skip=0.05, production=0.60))
    assert "below even the logging ranker (0.600)" in text
    assert "learns to reverse the logging ranker" in text
    assert "38% of the 80 untied preferences contradict" in text  # 30 / (50 + 30)
    text = _text(_results(skip=0.70, production=0.60))
    assert "above the logging ranker" in text and "reverse" not in text


def test_learning_curve_sentence_follows_the_gap():
    rows = [
        {"method": m, "sessions": n, "mean": v, "lower": v - 0.01, "upper": v + 0.01}
        for m, n, v in (
            ("naive", 100, 0.70),
            ("naive", 1000, 0.70),
            ("ips", 100, 0.75),
            ("ips", 1000, 0.85),
        )
    ]
    text = _text(_results(curve={"metric": "ndcg@10", "rows": rows}))
    assert "gap grows from +0.050 to +0.150" in text
    assert "the naive ranker does not improve with more clicks (+0.000" in text


# -- the markdown and the files ------------------------------------------------------------


def test_markdown_tables_have_consistent_columns_and_relative_figure_links():
    md = render_report(
        _results(
            comparisons=[_comparison("ips", "naive", 0.1, 1e-6)],
            interleaving=[_interleaving(600, 400, 1000, "A", 1e-9)],
        )
    )
    lines = md.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|---"):
            header = lines[i - 1]
            n = len(re.findall(r"(?<!\\)\|", header))
            j = i + 1
            while j < len(lines) and lines[j].startswith("|"):
                assert len(re.findall(r"(?<!\\)\|", lines[j])) == n, lines[j]
                j += 1
    assert "](figures/ctr_by_position.png)" in md
    assert "```toml" in md and "[simulation]" in md


def test_write_report_writes_both_files_atomically(tmp_path):
    res = _results()
    res.pop("timings")
    report, summary = write_report(res, tmp_path)
    assert report.read_text().startswith(f"# clickrank experiment: {tmp_path.name}")
    assert json.loads(summary.read_text()) == json.loads(json.dumps(res))
    assert res["reading"] == reading(res)
    names = sorted(p.name for p in tmp_path.iterdir() if p.name != LEDGER)
    assert names == ["report.md", "summary.json"]


@pytest.mark.parametrize("policy", ["plackett-luce", "random"])
def test_stochastic_loggers_do_not_get_the_deterministic_explanation(policy):
    res = _results(skip=0.05, production=0.60)
    res["production"]["policy"] = policy
    assert "deterministic logger" not in _text(res)
