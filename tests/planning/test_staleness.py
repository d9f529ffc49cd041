"""The cost of asynchronous staleness measured on ICAC'19's accuracy curves (staleness_cost), its linear fit
(fit_staleness_multiplier, staleness_multiplier) and the planner's opt-in use of it. The claims about the data are computed
from the data, on the cluster sizes with many runs; the mechanics are checked on synthetic curves with a known answer."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from perfmodel import datasets as ds
from perfmodel.models import ExtrapolationWarning
from perfmodel.planning import (
    ICAC_LR_STEP,
    fit_staleness_multiplier,
    icac_staleness_curves,
    plan,
    staleness_cost,
    staleness_multiplier,
)


@pytest.fixture(scope="module")
def curves():
    return icac_staleness_curves()


@pytest.fixture(scope="module")
def cost(curves):
    return staleness_cost(curves)


def _synthetic(plateaus: dict[int, tuple[float, float]], runs: int = 3, top: int = 64000, every: int = 4000, seed: int = 0) -> pd.DataFrame:
    """Curves rising linearly from 0.1 to ``final`` over ``ramp`` steps, then flat; evaluated every ``every`` steps plus a
    small per-run offset (as the real runs), with tiny noise on the plateau."""
    rng = np.random.default_rng(seed)
    rows = []
    for n, (ramp, final) in plateaus.items():
        for r in range(runs):
            steps = np.r_[0, np.arange(every, top + 1, every) + rng.integers(0, 20, top // every)]
            acc = 0.1 + (final - 0.1) * np.minimum(steps / ramp, 1.0)
            rows.append(pd.DataFrame({"run_id": f"n{n}-r{r}", "n_workers": n, "step": steps, "accuracy": acc}))
    return pd.concat(rows, ignore_index=True)


# ---------------------------------------------------------------------------------------------------------------- data


def test_the_selection_is_homogeneous_k80_one_ps_without_revocation_or_failure(curves):
    runs = ds.load_icac_runs(include_unprocessed=True)
    key = runs["experiment"].astype(str) + "/" + runs["config"].astype(str) + "/" + runs["zone"].astype("string").fillna("-").astype(str) \
        + "/" + runs["run"].astype(str)
    chosen = runs[key.isin(set(curves["run_id"]))]
    assert len(chosen) == curves["run_id"].nunique()
    assert (chosen["n_k80"] == chosen["n_workers"]).all() and chosen["region_mix"].isna().all()
    assert not chosen["failed"].any() and (chosen["n_revoked_workers"].fillna(0) == 0).all()
    assert not chosen["master_revoked"].fillna(False).astype(bool).any()
    assert set(chosen.loc[chosen["n_workers"] > 1, "n_ps"]) == {1} and set(chosen.loc[chosen["n_workers"] == 1, "n_ps"]) == {0}
    # what was left out of the same folders had a revocation or a failure
    same = runs[runs["config"].isin(set(chosen["config"])) & ~key.isin(set(curves["run_id"]))]
    assert len(same) > 0
    assert (same["failed"] | (same["n_revoked_workers"].fillna(0) > 0) | same["master_revoked"].fillna(False).astype(bool)).all()
    assert sorted(curves["n_workers"].unique()) == list(range(1, 9))
    assert set(curves["gpu"]) == {"K80"}


def test_the_learning_rate_step_is_where_every_size_jumps(curves, cost):
    """ICAC_LR_STEP is not taken on trust. On every size with ≥ 10 runs, the mean curve (runs interpolated on the 4000-step
    grid of staleness_cost) rises most, among the 8000-step windows after 16 000 steps (once the first climb is over),
    in the window around 32 000 steps; after it the curve is flat (its range under a fifth of that rise)."""
    grid_step = cost.attrs["grid_step"]
    assert grid_step == 4000
    grid = np.arange(0, 64001, grid_step)
    runs = curves.groupby("n_workers")["run_id"].nunique()
    checked = 0
    for n, d in curves.groupby("n_workers"):
        if runs[n] < 10:
            continue
        mean = np.mean([np.interp(grid, r["step"], r["accuracy"]) for _, r in d.groupby("run_id")], axis=0)
        rise = mean[2:] - mean[:-2]  # window (grid[i], grid[i + 2]]
        after = grid[:-2] >= 16000
        i = int(np.flatnonzero(after)[np.argmax(rise[after])])
        assert grid[i] <= ICAC_LR_STEP <= grid[i + 2], (n, grid[i])
        flat = mean[grid >= grid[i + 2]]
        assert flat.max() - flat.min() < rise[i] / 5, n
        checked += 1
    assert checked >= 3


def test_the_reference_is_one(cost):
    ref = cost[cost["n_workers"] == 1].iloc[0]
    assert ref["staleness_multiplier"] == 1.0 and ref["multiplier_low"] == 1.0 and ref["multiplier_high"] == 1.0
    assert ref["accuracy_gap"] == 0.0
    assert cost.attrs["reference_workers"] == 1 and cost.attrs["before_step"] == ICAC_LR_STEP


def test_final_accuracy_is_the_last_evaluation_of_each_run(curves, cost):
    last = curves.sort_values("step").groupby("run_id").tail(1)
    per = last.groupby("n_workers")["accuracy"].agg(["mean", "size"])
    got = cost.set_index("n_workers")
    np.testing.assert_allclose(got["final_accuracy"], per["mean"], rtol=1e-12)
    assert (got["runs"] == per["size"]).all()
    np.testing.assert_allclose(got["accuracy_gap"], per["mean"].loc[1] - per["mean"], rtol=1e-12, atol=1e-15)


def test_what_the_data_show_on_the_well_sampled_sizes(cost):
    """On the sizes with ≥ 10 runs (the others have one), more workers need more steps to the target and end less
    accurate, and the bootstrap intervals of successive sizes do not overlap — whatever the values are."""
    well = cost[cost["runs"] >= 10].sort_values("n_workers")
    assert len(well) >= 3
    assert np.all(np.diff(well["staleness_multiplier"]) > 0)
    assert np.all(np.diff(well["final_accuracy"]) < 0)
    assert np.all(well["multiplier_high"].to_numpy()[:-1] < well["multiplier_low"].to_numpy()[1:])
    assert np.all(well["accuracy_gap_high"].to_numpy()[:-1] < well["accuracy_gap_low"].to_numpy()[1:])
    assert (cost["unreached_frac"] == 0).all(), "the default target leaves a margin: every resample reaches it"


def test_default_target_is_the_documented_fraction_of_the_worst_best_level(curves, cost):
    grid = np.arange(0, ICAC_LR_STEP, 4000)
    best = min(np.mean([np.interp(grid, r["step"], r["accuracy"]) for _, r in d.groupby("run_id")], axis=0).max()
               for _, d in curves.groupby("n_workers"))
    assert cost.attrs["target_accuracy"] == pytest.approx(0.95 * best, rel=1e-12)
    assert (cost["target_accuracy"] == cost.attrs["target_accuracy"]).all()


def test_bootstrap_is_seeded_and_a_single_run_has_no_spread_of_its_own(curves, cost):
    again = staleness_cost(curves)
    pd.testing.assert_frame_equal(cost, again)
    other = staleness_cost(curves, random_state=1)
    assert not np.allclose(other["multiplier_low"], cost["multiplier_low"])
    one = cost[cost["runs"] == 1]
    assert len(one) > 0
    assert (one["steps_to_target_low"] == one["steps_to_target"]).all() and (one["steps_to_target_high"] == one["steps_to_target"]).all()
    assert one["final_accuracy_std"].isna().all()
    assert (cost["multiplier_low"] <= cost["staleness_multiplier"]).all() and (cost["staleness_multiplier"] <= cost["multiplier_high"]).all()


# ---------------------------------------------------------------------------------------------------- known answers


def test_steps_to_target_and_multiplier_on_synthetic_curves():
    # 1 worker ramps to 0.9 over 8000 steps, 4 workers over 24000: 0.5 is reached at half-way of the ramps (×1/0.8·0.4)
    c = _synthetic({1: (8000, 0.9), 4: (24000, 0.85)})
    t = staleness_cost(c, target_accuracy=0.5, before_step=None, n_boot=50)
    by = t.set_index("n_workers")
    # the runs evaluate a few steps after each multiple of 4000: the grid interpolation is linear along the ramp
    assert by.loc[1, "steps_to_target"] == pytest.approx(8000 * 0.4 / 0.8, rel=0.01)
    assert by.loc[4, "steps_to_target"] == pytest.approx(24000 * 0.4 / 0.75, rel=0.01)
    assert by.loc[4, "staleness_multiplier"] == pytest.approx((24000 * 0.4 / 0.75) / (8000 * 0.4 / 0.8), rel=0.02)
    assert by.loc[4, "accuracy_gap"] == pytest.approx(0.05, abs=1e-12)
    assert by.loc[1, "final_accuracy"] == pytest.approx(0.9)


def test_fit_recovers_an_exact_linear_multiplier_and_predicts_with_warnings():
    table = pd.DataFrame({"gpu": "K80", "n_workers": [1, 2, 4, 8], "runs": [10, 5, 5, 5],
                          "staleness_multiplier": [1.0, 1.4, 2.2, 3.8]})
    fit = fit_staleness_multiplier(table)
    assert fit["slope"] == pytest.approx(0.4) and fit["rmse"] == pytest.approx(0, abs=1e-12)
    assert (fit["min_workers"], fit["max_workers"], fit["reference_workers"]) == (1, 8, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert staleness_multiplier(1, fit) == 1.0
        np.testing.assert_allclose(staleness_multiplier([1, 3, 8], fit), [1.0, 1.8, 3.8])
    with pytest.warns(ExtrapolationWarning, match=r"n_workers 16 is 2x above the largest measured cluster size 8; the linear staleness "
                                                  r"model was fitted on 1–8 workers"):
        assert staleness_multiplier(16, fit) == pytest.approx(7.0)


def test_the_default_fit_is_weighted_least_squares_through_the_reference(cost):
    fit = fit_staleness_multiplier(cost)
    x = cost["n_workers"].to_numpy(float) - 1
    y = cost["staleness_multiplier"].to_numpy(float) - 1
    sw = np.sqrt(cost["runs"].to_numpy(float))
    slope = np.linalg.lstsq((sw * x)[:, None], sw * y, rcond=None)[0][0]
    assert fit["slope"] == pytest.approx(slope, rel=1e-12)
    assert fit["slope_low"] < fit["slope"] < fit["slope_high"]
    assert staleness_multiplier(1) == 1.0
    assert staleness_multiplier(8) == pytest.approx(1 + 7 * fit["slope"], rel=1e-12)


# ------------------------------------------------------------------------------------------------------------- planner


@pytest.fixture(scope="module")
def default_plan():
    return plan("resnet-32", gpus=["K80", "V100"], ps=1, transient=(True, False), max_workers=8)


def test_plan_default_is_unchanged(default_plan):
    assert "staleness_multiplier" not in default_plan.columns and "steps" not in default_plan.columns
    zero = {"slope": 0.0, "reference_workers": 1, "min_workers": 1, "max_workers": 8}
    same = plan("resnet-32", gpus=["K80", "V100"], ps=1, transient=(True, False), max_workers=8, staleness=zero)
    pd.testing.assert_frame_equal(same.drop(columns=["staleness_multiplier", "steps"]), default_plan)
    assert (same["staleness_multiplier"] == 1).all() and (same["steps"] == 64000).all()


def test_plan_with_staleness_scales_each_candidates_steps(default_plan):
    st = plan("resnet-32", gpus=["K80", "V100"], ps=1, transient=(True, False), max_workers=8, staleness=True)
    cols = list(st.columns)
    assert cols[cols.index("region") + 1:cols.index("region") + 3] == ["staleness_multiplier", "steps"]
    keys = ["gpu", "n_workers", "n_ps", "transient", "region"]
    m = st.merge(default_plan, on=keys, suffixes=("", "_default"))
    assert len(m) == len(st) == len(default_plan)
    np.testing.assert_allclose(m["staleness_multiplier"], staleness_multiplier(m["n_workers"].to_numpy()))
    np.testing.assert_allclose(m["steps"], 64000 * m["staleness_multiplier"])
    np.testing.assert_allclose(m["compute_time_h"], m["compute_time_h_default"] * m["staleness_multiplier"], rtol=1e-12)
    assert (m.loc[m["n_workers"] == 1, "time_h"] == m.loc[m["n_workers"] == 1, "time_h_default"]).all()
    assert (m.loc[m["n_workers"] > 1, "cost_usd"] > m.loc[m["n_workers"] > 1, "cost_usd_default"]).all()


# --------------------------------------------------------------------------------------------------------------- errors


def test_errors(curves):
    with pytest.raises(ValueError, match=r"target_accuracy 0\.8 is never reached before step 32000 by the mean curve of .*8 K80 workers "
                                         r"\(best 0\.78\d+\)\. Choose a target ≤ 0\.78\d+ or pass before_step=None\."):
        staleness_cost(curves, target_accuracy=0.8, n_boot=10)
    with pytest.raises(ValueError, match=r"target_accuracy 0\.05 is at or below the accuracy at the first evaluation"):
        staleness_cost(curves, target_accuracy=0.05, n_boot=10)
    with pytest.raises(ValueError, match=r"No run of reference_workers=9 for GPU 'K80': the curves hold cluster sizes \[1, 2, 3, 4, 5, 6, "
                                         r"7, 8\]\. Pass one of them as reference_workers\."):
        staleness_cost(curves, reference_workers=9, n_boot=10)
    with pytest.raises(ds.UnknownNameError, match=r"ICAC'19 configuration\(s\) \['4p100'\] have no run in the staleness selection .* "
                                                  r"Expected some of: "):
        icac_staleness_curves(["4-demand", "4p100"])
    with pytest.raises(ValueError, match=r"curves lacks the columns \['n_workers'\]"):
        staleness_cost(curves.drop(columns="n_workers"))
    with pytest.raises(ValueError, match=r"accuracy must be a fraction in \[0, 1\]; got values from .* Divide percentages by 100\."):
        staleness_cost(curves.assign(accuracy=curves["accuracy"] * 100))
    short = curves[~((curves["run_id"] == curves["run_id"].iloc[0]) & (curves["step"] > 40000))]
    with pytest.raises(ValueError, match=r"1 run\(s\) end before step 64000 that the others reach .*drop unfinished runs"):
        staleness_cost(short)
    with pytest.raises(ValueError, match=r"n_workers must be whole numbers ≥ 1; got 0"):
        staleness_multiplier(0, {"slope": 0.5, "reference_workers": 1})
    with pytest.raises(ValueError, match=r"fit must be the dict of fit_staleness_multiplier\(\)"):
        staleness_multiplier(2, {"c": 0.5})
    with pytest.raises(ValueError, match=r"staleness must be False, True or the dict of perfmodel\.planning\.fit_staleness_multiplier\(\); "
                                         r"got str\."):
        plan("resnet-32", gpus=["K80"], staleness="yes")


def test_item_numbers_are_the_tables(cost):
    from perfmodel.papers.beyond import async_staleness as item

    nums = item.numbers().set_index("quantity")["reproduced"]
    fit = fit_staleness_multiplier(cost)
    assert nums["staleness_slope"] == pytest.approx(fit["slope"], rel=1e-12)
    for r in cost[cost["n_workers"] > 1].itertuples():
        assert nums[f"staleness_multiplier ({r.n_workers} workers)"] == pytest.approx(r.staleness_multiplier, rel=1e-12)
        assert nums[f"accuracy_gap ({r.n_workers} workers)"] == pytest.approx(r.accuracy_gap, rel=1e-12)


def test_v100_clusters_give_a_lower_slope_than_the_k80_fit(cost):
    """What staleness_multiplier's notes say: the same procedure on ICAC'19's V100 clusters (1ps<N>v, 1 PS; the single
    V100 runs that finished as the reference) at the K80 target gives a lower slope."""
    runs = ds.load_icac_runs(include_unprocessed=True)
    v = runs[(runs["n_v100"] == runs["n_workers"]) & runs["region_mix"].isna() & ~runs["failed"]
             & (runs["config"].str.fullmatch(r"1ps\dv") | (runs["config"] == "v100"))]
    key = lambda d: d["experiment"].astype(str) + "/" + d["config"].astype(str) + "/" + d["zone"].astype("string").fillna("-").astype(str) \
        + "/" + d["run"].astype(str)  # noqa: E731
    c = ds.load_icac_accuracy_curves()
    c = c[~c["restart_row"]].assign(run_id=key)
    cv = c.merge(v.assign(run_id=key)[["run_id", "n_workers"]], on="run_id").assign(gpu="V100")
    tv = staleness_cost(cv, target_accuracy=cost.attrs["target_accuracy"], n_boot=200)
    assert sorted(tv["n_workers"]) == list(range(1, 9))
    assert fit_staleness_multiplier(tv)["slope"] < fit_staleness_multiplier(cost)["slope"]
