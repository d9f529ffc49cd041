"""Expected revocations (renewal function) vs Monte Carlo, and the Young/Daly checkpoint interval vs a simulated
optimum."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfmodel.planning import revocation as R


def test_lifetime_distribution_from_the_cmdare_cdfs_and_from_user_lifetimes():
    d = R.lifetime_distribution("K80")
    assert len(d) == 25 and d["probability"].sum() == pytest.approx(1) and d["n_servers"].iloc[0] == 156
    assert d.loc[d["kind"] == "revoked", "probability"].sum() == pytest.approx(72 / 156)  # CATALOG.md §1.4: 72 K80 revocations
    u = R.lifetime_distribution(lifetimes_h=[0.2, 0.7, 5.5, 24, 24])
    assert u.loc[0, "probability"] == pytest.approx(0.4) and u.iloc[-1]["probability"] == pytest.approx(0.4)
    assert R.mean_time_between_failures_h(u) == pytest.approx((0.5 + 0.5 + 5.5 + 48) / 5)
    with pytest.raises(ValueError, match="non-negative hours"):
        R.lifetime_distribution(lifetimes_h=[1.0, -2.0])
    with pytest.raises(ValueError, match="clip them to 24"):
        R.lifetime_distribution(lifetimes_h=[30.0])


@pytest.mark.parametrize("gpu, hours, n", [("K80", 0.25, 4), ("K80", 5, 4), ("P100", 24, 2), ("V100", 60, 3)])
def test_expected_revocations_match_monte_carlo(gpu, hours, n):
    d = R.lifetime_distribution(gpu)
    e = R.expected_revocations(hours, n, dist=d)[0]
    sim = R.simulate_revocations(hours, n, dist=d, trials=4000, random_state=1)
    assert abs(e - sim.mean()) < 3.5 * sim.std(ddof=1) / np.sqrt(len(sim)) + 1e-3


def _renewal_direct(d, horizon):
    """The renewal function computed afresh to ``horizon`` (what expected_revocations did before it memoised it)."""
    f = R._density(d, horizon)
    F = np.cumsum(f)
    m = np.zeros(horizon + 1)
    for i in range(1, horizon + 1):
        m[i] = F[i] + np.dot(f[1:i + 1], m[i - 1::-1])
    return m


def test_the_memoised_renewal_function_is_the_one_computed_afresh_at_every_horizon():
    """Long after short, short after long, and another distribution between: every horizon gets the numbers of a
    computation to that horizon alone."""
    R._RENEWAL.clear()
    k80, p100 = R.lifetime_distribution("K80"), R.lifetime_distribution("P100")
    for d, hours in ((k80, 2.0), (k80, 30.0), (p100, 5.0), (k80, 0.4), (k80, 31.0), (p100, 70.0), (p100, 1.0)):
        horizon = int(np.ceil(hours / R._STEP)) + 1
        np.testing.assert_array_equal(R._renewal(d, horizon), _renewal_direct(d, horizon))
        x = hours / R._STEP
        m = _renewal_direct(d, horizon)
        lo = int(np.floor(x))
        want = 3 * (m[lo] * (1 - (x - lo)) + m[min(lo + 1, horizon)] * (x - lo))
        assert R.expected_revocations(hours, 3, dist=d)[0] == want


def test_exponential_lifetimes_give_a_linear_renewal_function():
    """With exponential lifetimes (no 24-h cap reached) the renewal function is λt."""
    rng = np.random.default_rng(0)
    life = np.minimum(rng.exponential(3.0, 200000), 23.999)
    d = R.lifetime_distribution(lifetimes_h=life)
    m = R.expected_revocations([6.0, 12.0], 1, dist=d)
    np.testing.assert_allclose(m, np.array([6.0, 12.0]) / R.mean_time_between_failures_h(d), rtol=0.03)


def test_young_daly_interval_and_the_simulated_optimum():
    C, M, restart = 60.0, 5 * 3600.0, 30.0
    young, daly = R.young_daly_interval(C, M, method="young"), R.young_daly_interval(C, M)
    assert young == pytest.approx(np.sqrt(2 * C * M)) and daly < young
    grid = R.optimal_interval_by_simulation(10 * 3600, C, restart, M, [daly * f for f in (0.25, 0.5, 1, 2, 4)], trials=1500)
    # analytic expectation within 3 standard errors of the simulation at every interval
    assert ((grid["simulated_wall_s"] - grid["expected_wall_s"]).abs() < 3 * grid["stderr_s"]).all()
    # the Young/Daly interval is the best of the grid, and its expected wall time is within 0.1 % of the grid optimum
    assert grid.loc[grid["simulated_wall_s"].idxmin(), "interval_s"] == pytest.approx(daly)
    with pytest.raises(ValueError, match="positive seconds"):
        R.young_daly_interval(0, M)
    with pytest.raises(ValueError, match="'daly' or 'young'"):
        R.young_daly_interval(C, M, method="optimal")


def test_restart_times_are_read_from_the_reference_data():
    import perfmodel as pm
    import importlib

    plan_module = importlib.import_module("perfmodel.planning.plan")

    t = pm.datasets.load_transcribed("tf_restart").query("scope == 'overall'").set_index("start_type")["time_s"]
    assert pm.planning.tf_restart_s("warm") == t["warm"] == plan_module.TF_WARM_RESTART_S
    assert pm.planning.tf_restart_s("cold") == t["cold"]
    with pytest.raises(ValueError, match="start_type must be 'warm'"):
        pm.planning.tf_restart_s("hot")


def test_spot_lifetimes_without_a_cap_and_with_censored_lives():
    """Spot VMs (no 24-h cap), lives cut short by the end of a trace (censored): Kaplan–Meier mass per bin, an
    exponential tail beyond the longest life; the renewal function still matches Monte Carlo."""
    import perfmodel as pm

    lt = pm.datasets.spot_lifetimes(cloud="aws", gpu="V100")
    d = R.lifetime_distribution(lifetimes_h=lt["lifetime_h"], revoked=lt["preempted"], max_lifetime_h=None, bin_h=0.1)
    assert d["probability"].sum() == pytest.approx(1) and (d["probability"] >= 0).all() and set(d["kind"]) == {"revoked"}
    assert d["end_h"].max() > lt["lifetime_h"].max()  # the tail goes beyond the longest observed life
    from lifelines import KaplanMeierFitter

    km = KaplanMeierFitter().fit(lt["lifetime_h"], lt["preempted"])
    cdf_2h = d.loc[d["end_h"] <= 2.0 + 1e-9, "probability"].sum()
    assert cdf_2h == pytest.approx(1 - float(km.survival_function_at_times(2.0).iloc[0]), abs=1e-9)
    e = R.expected_revocations(6.0, 2, dist=d)[0]
    sim = R.simulate_revocations(6.0, 2, dist=d, trials=3000, random_state=2)
    assert abs(e - sim.mean()) < 3.5 * sim.std(ddof=1) / np.sqrt(len(sim)) + 0.05
    # far more revocations than CM-DARE's 2018-19 GCE V100 servers over the same hours
    assert e > 3 * R.expected_revocations(6.0, 2, gpu="V100")[0]


def test_lifetime_distribution_options_are_checked():
    with pytest.raises(ValueError, match="revoked, max_lifetime_h and bin_h apply to your own lifetimes_h only"):
        R.lifetime_distribution("K80", bin_h=0.5)
    with pytest.raises(ValueError, match="bin_h must be a positive number of hours that divides the cap"):
        R.lifetime_distribution(lifetimes_h=[1.0, 2.0], bin_h=0.7)
    with pytest.raises(ValueError, match="revoked must have one flag per lifetime"):
        R.lifetime_distribution(lifetimes_h=[1.0, 2.0], revoked=[True])
    with pytest.raises(ValueError, match="No revocation among the lifetimes"):
        R.lifetime_distribution(lifetimes_h=[1.0, 2.0], revoked=[False, False], max_lifetime_h=None)
    with pytest.raises(ValueError, match="max_lifetime_h must be a positive number of hours or None"):
        R.lifetime_distribution(lifetimes_h=[1.0], max_lifetime_h=0)
    # a censored life below the cap is estimated by Kaplan–Meier, not counted as a revocation
    c = R.lifetime_distribution(lifetimes_h=[1.5, 2.5, 24.0], revoked=[True, False, False])
    assert c.loc[c["hour"] == 2, "probability"].item() == pytest.approx(1 / 3)
    assert c.loc[c["hour"] == 3, "probability"].item() == 0 and c.iloc[-1]["probability"] == pytest.approx(2 / 3)
