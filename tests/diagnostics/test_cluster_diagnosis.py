"""diagnose_cluster / diagnose_timeseries on the published runs and on synthetic clusters with a known bottleneck."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfmodel import datasets as ds
from perfmodel.diagnostics.cluster import diagnose_cluster, diagnose_timeseries
from perfmodel.models.cluster import cluster_speeds


@pytest.fixture(scope="module")
def verdicts():
    return diagnose_cluster(cluster_speeds()).set_index(["gpu", "model", "n_ps"])


def test_published_verdicts(verdicts):
    """CATALOG.md §1.3: K80 near-linear; P100 with 1 PS plateaus after 4–5 workers and a 2nd PS helps (ResNets,
    Shake-Shake small); Shake-Shake big stays ≈ 6.5 steps/s with 2 PS: communication-bound."""
    for m in ("resnet-15", "resnet-32", "shake-shake-small", "shake-shake-big"):
        assert verdicts.loc[("K80", m, 1), "verdict"] == "compute-bound"
    for m in ("resnet-15", "resnet-32", "shake-shake-small"):
        v = verdicts.loc[("P100", m, 1)]
        assert v["verdict"] == "PS-bound" and v["stops_growing_after"] in (4, 5)
        assert "add a parameter server" in v["recommendation"]
    big = verdicts.loc[("P100", "shake-shake-big", 1)]
    assert big["verdict"] == "communication-bound" and big["more_ps_gain_pct"] < 5
    assert verdicts.loc[("P100", "shake-shake-big", 2), "verdict"] == "communication-bound"
    assert verdicts.loc[("P100", "resnet-15", 1), "more_ps_gain_pct"] == pytest.approx(65.2, abs=0.1)


def _synthetic(bottleneck):
    rows = []
    for p in (1, 2):
        for n in range(1, 9):
            if bottleneck == "compute":
                s = 10 * n
            elif bottleneck == "ps":
                s = 1 / (0.1 / n + 0.02 * n / p)
            else:  # communication: same ceiling whatever the PS count
                s = min(10 * n, 30)
            rows.append(dict(gpu="G", model="m", n_ps=p, n_workers=n, speed_mean_steps_per_s=s, speed_std_steps_per_s=0.01 * s))
    return pd.DataFrame(rows)


@pytest.mark.parametrize("bottleneck, verdict", [("compute", "compute-bound"), ("ps", "PS-bound"), ("comm", "communication-bound")])
def test_synthetic_known_bottlenecks(bottleneck, verdict):
    d = diagnose_cluster(_synthetic(bottleneck)).set_index("n_ps")
    assert d.loc[1, "verdict"] == verdict


def test_noisy_runs():
    d = _synthetic("compute").assign(speed_std_steps_per_s=lambda x: 0.3 * x.speed_mean_steps_per_s)
    assert set(diagnose_cluster(d)["verdict"]) == {"noisy"}


def test_bad_input():
    with pytest.raises(ValueError, match=r"diagnose_cluster needs per-run speeds with columns \['n_workers', 'speed_mean_steps_per_s'\]"):
        diagnose_cluster(pd.DataFrame({"n_workers": [1, 2]}))
    with pytest.raises(ValueError, match=r"has fewer than two cluster sizes"):
        diagnose_cluster(pd.DataFrame({"n_workers": [1], "speed_mean_steps_per_s": [3.0]}))
    with pytest.raises(ValueError, match=r"cluster speeds must be positive steps/s"):
        diagnose_cluster(pd.DataFrame({"n_workers": [1, 2], "speed_mean_steps_per_s": [3.0, -1.0]}))


def test_timeseries_diagnosis():
    d = diagnose_timeseries(ds.load_speed_timeseries()).set_index(["model", "gpu"])
    assert len(d) == 12 and d["n_samples"].eq(39).all()
    assert d.loc[("shake-shake-big", "K80"), "verdict"] == "stable"
    synth = pd.DataFrame({"model": "m", "gpu": "G", "step": np.arange(1, 21) * 100,
                          "speed_steps_per_s": [1.0, 5.0] + [10.0] * 9 + [20.0] + [10.0] * 8})
    r = diagnose_timeseries(synth).iloc[0]
    assert r["warmup_samples"] == 2 and r["outliers"] == "1200" and r["verdict"] in ("outliers", "unstable")
    with pytest.raises(ValueError, match=r"diagnose_timeseries needs columns"):
        diagnose_timeseries(pd.DataFrame({"x": [1]}))


def test_mismatched_units_are_named():
    d = pd.DataFrame({"n_workers": [1, 2], "speed_mean_steps_per_min": [60.0, 120.0]})
    with pytest.raises(ValueError, match=r"expects speeds in steps per second \(column 'speed_mean_steps_per_s'\); got \['speed_mean_steps_per_min'\]"):
        diagnose_cluster(d)
