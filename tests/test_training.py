"""The parts of the default learner (clickrank.training), each through its public calls."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
from scipy import stats as st

from clickrank import InputError
from clickrank.clickmodels import make_click_model
from clickrank.datasets import split_queries, synthetic
from clickrank.policies import DeterministicPolicy
from clickrank.policies.production import production_ranker
from clickrank.selection import ClickValidation, LambdaMARTCV
from clickrank.simulation import Swap, simulate
from clickrank.targets import ips
from clickrank.training import thresholds
from clickrank.training.backends import (
    LocalBackend,
    MemberFit,
    MemberJob,
    MemberTask,
    ProcessBackend,
    fit_member,
    open_backend,
)
from clickrank.training.bounds import Comparison, paired_bound
from clickrank.training.combine import select, selection_reason, spread
from clickrank.training.learner import ClickRanker
from clickrank.training.members import FAMILY, check_family, shape_lead, trainable
from clickrank.training.propensities import resolve_propensities
from clickrank.training.report import SelectionReport
from clickrank.training.safety import check_safety, guard_race, unseen_guard
from clickrank.training.search import MemberSearch, RacedMemberSearch

GRID = ({"num_leaves": 4, "max_depth": 2}, {"num_leaves": 8, "max_depth": 3})
SETTINGS = {"folds": 3, "repeats": 1, "refit": True, "n_estimators": 30,
            "early_stopping_rounds": 10, "eval_at": 10, "racing": 0.5, "seed": 1}  # fmt: skip


@pytest.fixture(scope="module")
def setup():
    data = synthetic(200, 20, seed=3)
    train, test = split_queries(data, [150, 50], seed=3)
    prod = production_ranker(train, 0.1, seed=3)
    cm = make_click_model("pbm", eta=1.0, attractiveness="graded")
    log = simulate(train, policy=DeterministicPolicy(prod), click_model=cm, n_sessions=10_000,
                   interventions=[Swap(0.1)], top_k=10, seed=3)  # fmt: skip
    return train, test, log, cm.propensities(10), prod


@pytest.fixture(scope="module")
def job(setup):
    train, _, log, theta, _ = setup
    val = ClickValidation.from_log(train, log, theta)
    targets = {m: ips(train, log, theta, candidates=c) for m, c in
               (("ips-shown", "shown"), ("ips-all", "all"))}  # fmt: skip
    return MemberJob(train, val, None, targets, GRID, SETTINGS)


@pytest.fixture(scope="module")
def fitted(setup):
    train, _, log, theta, prod = setup
    kw = {"grid": GRID[:1], "n_estimators": 30, "folds": 3, "repeats": 1}
    return ClickRanker(family=("naive", "ips-shown", "ips-all"), seed=0, **kw).fit(
        train, log, theta, logging_model=prod
    )


# -- bounds ---------------------------------------------------------------------------------


def test_the_paired_bound_by_hand():
    """Per session: gain = sum/N, SE = sqrt(n) s / N, lower = gain - t_{conf, n-1} SE; per
    query (the races): the mean less t s / sqrt(n)."""
    d = np.array([2.0, 1.0, 0.0, 3.0, 1.5])
    n, s = 5, float(np.std(d, ddof=1))
    t = st.t.ppf(0.9, 4)
    b = paired_bound(d, 0.9, per=10.0)
    assert b.gain == d.sum() / 10 and b.se == np.sqrt(n) * s / 10 and b.n == 5
    assert b.lower == b.gain - t * b.se
    m = paired_bound(d, 0.9)
    assert m.gain == d.mean() and m.lower == d.mean() - t * s / np.sqrt(n)
    assert paired_bound(np.ones(4), 0.95, per=2.0).lower == 2.0  # no spread: the gain
    assert paired_bound([1.0], 0.95, per=1.0).se == np.inf


def test_comparison_is_the_bound_of_the_differences():
    a, b = np.array([3.0, 5.0, 4.0, 6.0]), np.array([1.0, 4.0, 4.0, 3.0])
    c = Comparison.of("a", "b", a, b, n_sessions=2.0, confidence=0.95)
    bound = paired_bound(a - b, 0.95, per=2.0)
    assert (c.gain, c.se, c.lower, c.n_queries) == (bound.gain, bound.se, bound.lower, 4)
    assert c.to_dict()["a"] == "a" and "above 0" in c.line()


# -- members and propensities -----------------------------------------------------------------


def test_members_needing_propensities_are_dropped_without_them():
    assert trainable(list(FAMILY), None) == ["naive", "unbiased-lambdamart"]
    assert trainable(["naive", "dr"], np.ones(3)) == ["naive", "dr"]
    with pytest.raises(InputError, match="without propensities"):
        trainable(["ips-all"], None)
    with pytest.raises(InputError, match="family must name"):
        check_family(["naive", "nope"])


def test_given_propensities_are_used_as_they_are(setup):
    train, _, log, theta, _ = setup
    got, src = resolve_propensities(train, log, theta, "auto", 0)
    assert got is theta and "passed to fit" in src.line()
    none, src = resolve_propensities(train, log, None, None, 0)
    assert none is None and "propensity_method=None" in src.line()


# -- combine and safety -----------------------------------------------------------------------


def test_spread_is_the_rms_around_each_querys_mean():
    qptr = np.array([0, 2, 5])
    s = np.array([1.0, 3.0, 0.0, 0.0, 3.0])
    assert spread(s, qptr) == np.sqrt(np.mean((s - np.array([2, 2, 1, 1, 1.0])) ** 2))
    assert spread(np.ones(5), qptr) == 1.0  # constant scores: 1


def test_select_prefers_the_average_then_the_one_se_rule():
    rng = np.random.default_rng(0)
    base = rng.random(300)
    terms = {"naive": base, "ips-shown": base + 0.001 + 0.1 * rng.normal(size=300),
             "average": base + 0.01}  # fmt: skip
    sel, best, member = select(list(terms), terms, 300.0, 1.0, 0.95, prefer="average")
    assert (sel, best, member) == ("average", "average", "ips-shown")
    sel, best, _ = select(["naive", "ips-shown"], terms, 300.0, 1.0, 0.95)
    assert best == "ips-shown" and sel == "naive"  # within one SE: the safer member
    why = selection_reason(["naive", "ips-shown"], sel, best, None, [], {}, 1.0)
    assert why == "naive: within 1 SE of the best (ips-shown), and safer"


def test_the_unseen_guard_and_its_first_fold_race():
    rng = np.random.default_rng(1)
    best = 1 + rng.random(100)
    every = {"naive": best, "dr": 0.7 * best}
    assert unseen_guard(every, ["naive", "dr"], 0.1) == {"dr": pytest.approx(0.3)}
    assert unseen_guard(every, ["naive", "dr"], None) == {}
    assert unseen_guard({"naive": best}, ["naive", "dr"], 0.1) == {}  # dr not scored
    assert guard_race(every, 0.1, 0.95) == {"dr": pytest.approx(0.3)}
    assert guard_race({m: v[:2] for m, v in every.items()}, 0.1, 0.95) == {}  # too few


def test_the_safety_check_keeps_the_safe_ranker_unless_the_gain_is_sure():
    rng = np.random.default_rng(2)
    safe = rng.random(300)
    terms = {"naive": safe - 0.01, "ips-shown": safe + 0.001 + 0.2 * rng.normal(size=300)}
    check = check_safety(list(terms), list(terms), terms, "ips-shown", "best", "logging", safe,
                         safe, 300.0, confidence=0.95, safe=True)  # fmt: skip
    assert check.choice == "logging" and "logging kept" in check.reason
    assert check.record["vs_safe"] is None and check.record["safe"] == "logging"
    assert check.vs_safe["ips-shown"].lower <= 0
    unsafe = check_safety(list(terms), list(terms), terms, "ips-shown", "best", "logging",
                          safe, safe, 300.0, confidence=0.95, safe=False)  # fmt: skip
    assert unsafe.choice == "ips-shown" and unsafe.reason == "best"


# -- search and backends ----------------------------------------------------------------------


class _Recorder:
    """A backend that fits nothing: it says which tasks it ran, and hands back selections
    whose first fold scores the members as given."""

    def __init__(self, held):
        self.held, self.calls = held, []

    def run(self, tasks):
        self.calls.append([(t.name, t.until) for t in tasks])
        self.grids = getattr(self, "grids", []) + [[t.grid for t in tasks]]
        out = {}
        for t in tasks:
            cv = LambdaMARTCV()
            cv.held_terms_, cv.fits_, cv.rounds_ = self.held[t.name], 1, 10
            cv.leader_ = {"num_leaves": len(t.name)}
            out[t.name] = MemberFit(t.name, cv, t.until)
        return out


def test_the_search_schedules():
    """Without the race: one call, every member to the end. With it: every member's first
    fold, then the members not raced out from there (a member 40 % below the best)."""
    best = np.linspace(1, 2, 20)
    held = {"naive": best, "dr": 0.6 * best, "ips-all": 0.95 * best}
    plain = _Recorder(held)
    result = MemberSearch(list(held)).run(plain)
    assert plain.calls == [[("naive", None), ("dr", None), ("ips-all", None)]]
    assert list(result.fitted) == list(held) and result.raced == {}
    raced = _Recorder(held)
    result = RacedMemberSearch(list(held), 0.1, 0.95).run(raced)
    assert raced.calls == [[("naive", 1), ("dr", 1), ("ips-all", 1)],
                           [("naive", None), ("ips-all", None)]]  # fmt: skip
    assert list(result.raced) == ["dr"] and result.raced_cost == (1, 10)
    assert list(result.fitted) == ["naive", "ips-all"]
    assert result.calls == [(("naive", "dr", "ips-all"), 1), (("naive", "ips-all"), None)]


@pytest.mark.parametrize("raced", [False, True])
def test_a_shared_shape_is_the_leaders_of_one_member(raced):
    """With ``shape_from`` the members up to that one fit their first folds on every shape;
    the later ones then fit that fold on its leading shape only, and the schedule goes on
    as without it (the race, or every member to the end)."""
    best = np.linspace(1, 2, 20)
    held = {"naive": best, "ips-shown": 0.99 * best, "dr": 0.6 * best, "ips-all": 0.95 * best}
    rec = _Recorder(held)
    search = (RacedMemberSearch(list(held), 0.1, 0.95, shape_from="ips-shown") if raced
              else MemberSearch(list(held), shape_from="ips-shown"))  # fmt: skip
    result = search.run(rec)
    shape = {"num_leaves": len("ips-shown")}
    assert result.shape == shape
    assert rec.calls[:2] == [[("naive", 1), ("ips-shown", 1)], [("dr", 1), ("ips-all", 1)]]
    assert rec.grids[:2] == [[None, None], [(shape,), (shape,)]]
    rest = [m for m in held if not (raced and m == "dr")]
    assert rec.calls[2:] == [[(m, None) for m in rest]] and rec.grids[2] == [None] * len(rest)
    assert list(result.raced) == (["dr"] if raced else [])
    # the last member, or one member: nothing to share
    for names in (list(held), ["naive"]):
        one = _Recorder(held)
        assert MemberSearch(names, shape_from=names[-1]).run(one).shape is None
        assert one.calls == [[(m, None) for m in names]]


def test_the_shape_lead_is_the_first_corrected_member():
    assert shape_lead(["naive", "ips-shown", "dr"]) == "ips-shown"
    assert shape_lead(["naive", "unbiased-lambdamart"]) == "unbiased-lambdamart"
    assert shape_lead(["naive"]) == "naive"
    assert shape_lead(["naive", "my-target"]) == "my-target"


def test_local_and_process_backends_give_the_same_selections(job, monkeypatch):
    tasks = [MemberTask(m) for m in job.targets]
    with open_backend(job, n_jobs=2) as here:  # below PROCESSES_FROM: here
        assert isinstance(here, LocalBackend)
        local = here.run(tasks)
    monkeypatch.setattr(thresholds, "PROCESSES_FROM", 0)
    said = []
    with open_backend(job, n_jobs=2, say=said.append) as pool:
        assert isinstance(pool, ProcessBackend)
        far = pool.run(tasks)
    assert list(far) == list(local) == list(job.targets) and len(said) == 2
    for m in job.targets:
        a, b = local[m].selection, far[m].selection
        assert a.best_params_ == b.best_params_
        np.testing.assert_array_equal(a.oof_, b.oof_)
        np.testing.assert_array_equal(a.predict(job.data.X), b.predict(job.data.X))


def test_a_task_fitted_up_to_a_fold_goes_on_where_it_stopped(job):
    first = fit_member(job, MemberTask("ips-all", until=1), {})
    assert first.selection.partial and first.selection.held_terms_.ndim == 1
    sent = pickle.loads(pickle.dumps(first.selection))
    rest = fit_member(job, MemberTask("ips-all", sent), {})
    whole = fit_member(job, MemberTask("ips-all"), {})
    assert not rest.selection.partial
    np.testing.assert_array_equal(rest.selection.oof_, whole.selection.oof_)


# -- LambdaMARTCV's partial fit ---------------------------------------------------------------


def test_a_partial_fit_resumed_is_the_full_fit_to_the_bit(job):
    train, val, target = job.data, job.validation, job.targets["ips-shown"]
    kw = {"grid": GRID, **SETTINGS, "refit": False}
    one = LambdaMARTCV(**kw).fit(train, target, validation=val)
    part = LambdaMARTCV(**kw).fit(train, target, validation=val, until=1)
    held_q, terms = part.fold_terms(0, train, val)
    np.testing.assert_array_equal(part.held_terms_, terms)
    part.resume(train, target, validation=val, until=2)
    rest = pickle.loads(pickle.dumps(part)).resume(train, target, validation=val)
    assert rest.best_params_ == one.best_params_ and rest.fits_ == one.fits_
    assert rest.rounds_ == one.rounds_ and rest.cv_results_.equals(one.cv_results_)
    np.testing.assert_array_equal(rest.oof_, one.oof_)
    np.testing.assert_array_equal(rest.predict(train.X), one.predict(train.X))
    with pytest.raises(InputError, match="nothing to resume"):
        rest.resume(train, target, validation=val)
    with pytest.raises(InputError, match="fit\\(..., until=k\\)"):
        rest.fold_terms(0, train, val)


# -- the report -------------------------------------------------------------------------------


def test_the_report_is_the_learners_record(fitted):
    report = fitted.report()
    assert isinstance(report, SelectionReport)
    assert report.summary() == fitted.summary()
    record = report.to_dict()
    assert record == fitted.to_dict()
    again = json.loads(json.dumps(record, default=float))
    assert again["choice"] == fitted.choice_ and again["table"] == fitted.table_.to_dicts()
    assert again["params"] == json.loads(json.dumps(fitted.get_params(), default=float))
    assert SelectionReport.of(pickle.loads(pickle.dumps(fitted))).summary() == report.summary()
