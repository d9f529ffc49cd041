"""The planner at scale: an O(n log n) Pareto front equal to the pairwise definition, large clusters planned in
seconds with a warning beyond the measured 1–8 workers, and a feasible set monotone in the deadline and the budget."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfmodel.planning.plan import MEASURED_MAX_WORKERS, pareto_front
from perfmodel.planning.plan import plan_cmdare as plan


def _pairwise_front(frame: pd.DataFrame, time: str = "time_h", cost: str = "cost_usd") -> pd.Series:
    """The definition (and the former implementation): not dominated by any row, O(n²) memory."""
    t = frame[time].to_numpy(float)
    c = frame[cost].to_numpy(float)
    dominated = ((t[None, :] <= t[:, None]) & (c[None, :] <= c[:, None]) & ((t[None, :] < t[:, None]) | (c[None, :] < c[:, None]))).any(axis=1)
    return pd.Series(~dominated, index=frame.index, name="pareto")


@pytest.mark.parametrize("seed", range(30))
def test_pareto_front_equals_the_pairwise_definition_on_random_frames(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    # few distinct values: many ties in time, in cost and exact duplicates; some NaN and inf
    t = rng.integers(0, 12, n).astype(float)
    c = rng.integers(0, 12, n).astype(float)
    if seed % 3 == 0:
        t[rng.random(n) < 0.05] = np.nan
        c[rng.random(n) < 0.05] = np.inf
    if seed % 3 == 1:
        t, c = rng.random(n), rng.random(n)
    idx = rng.permutation(n) * 7 + 3  # a non-default index is kept
    frame = pd.DataFrame({"time_h": t, "cost_usd": c}, index=idx)
    got = pareto_front(frame)
    pd.testing.assert_series_equal(got, _pairwise_front(frame))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, -0.0, 1.0, 2.0, 2.5, np.inf, np.nan]), st.sampled_from([0.0, 1.0, 3.0, np.inf, np.nan])),
                min_size=0, max_size=30))
def test_pareto_front_property_ties_zeros_and_nans(pairs):
    frame = pd.DataFrame(pairs, columns=["time_h", "cost_usd"], dtype=float)
    pd.testing.assert_series_equal(pareto_front(frame), _pairwise_front(frame))


def test_pareto_front_memory_is_linear():
    """120000 rows: the pairwise version needs 3 × 14 GB boolean arrays; this one a few MB."""
    import tracemalloc

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"time_h": rng.random(120_000), "cost_usd": rng.random(120_000)})
    tracemalloc.start()
    front = pareto_front(frame)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 50 * 2**20, peak
    assert front.any() and front.sum() < 200


def test_plan_beyond_the_measured_workers_warns_and_scales():
    with pytest.warns(UserWarning, match=r"max_workers=300 is beyond the measured 1–8 workers of CM-DARE's cluster runs: .*extrapolated"):
        p = plan("resnet-32", gpus=["K80"], max_workers=300, ps=(1, 2))
    assert len(p) == 300 * 2 * 2 and p["pareto"].any()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plan("resnet-32", gpus=["K80"], max_workers=MEASURED_MAX_WORKERS, ps=1)  # within the measured range: no warning


@pytest.fixture(scope="module")
def base():
    return plan("resnet-32", gpus=["K80", "V100"], max_workers=3, ps=(1, 2))


def _feasible(frame: pd.DataFrame) -> set:
    f = frame[frame["feasible"]]
    return set(zip(f["gpu"], f["n_workers"], f["n_ps"], f["transient"], f["region"]))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(deadline=st.floats(0.05, 40), more_h=st.floats(0, 40), budget=st.floats(0.5, 200), more_usd=st.floats(0, 200),
       use_deadline=st.booleans(), use_budget=st.booleans())
def test_feasible_set_is_monotone_in_deadline_and_budget(base, deadline, more_h, budget, more_usd, use_deadline, use_budget):
    """A larger deadline or budget never removes a feasible configuration."""
    kw = dict(gpus=["K80", "V100"], max_workers=3, ps=(1, 2))
    d0 = deadline if use_deadline else None
    b0 = budget if use_budget else None
    d1 = deadline + more_h if use_deadline else None  # no deadline stays no deadline (the loosest)
    b1 = budget + more_usd if use_budget else None
    tight = plan("resnet-32", deadline_h=d0, budget_usd=b0, **kw)
    looser_deadline = plan("resnet-32", deadline_h=d1, budget_usd=b0, **kw)
    looser_budget = plan("resnet-32", deadline_h=d0, budget_usd=b1, **kw)
    both = plan("resnet-32", deadline_h=d1, budget_usd=b1, **kw)
    small = _feasible(tight)
    assert small <= _feasible(looser_deadline)
    assert small <= _feasible(looser_budget)
    assert _feasible(looser_deadline) <= _feasible(both) and _feasible(looser_budget) <= _feasible(both)
    assert _feasible(both) <= _feasible(base) == set(zip(base["gpu"], base["n_workers"], base["n_ps"], base["transient"], base["region"]))
    # dropping a constraint is the limit of relaxing it
    assert _feasible(tight) <= _feasible(plan("resnet-32", deadline_h=None, budget_usd=b0, **kw))
    # the front is taken among the feasible rows only
    assert not (tight["pareto"] & ~tight["feasible"]).any()
