"""Step-time regressions on CPU measurements: the analysis on a synthetic measurement frame with a known
answer, and on the bundled measurements."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

import perfmodel as pm
from perfmodel.features import load_zoo_features


def _synthetic(noise=0.0, seed=0):
    """Step time = 0.02 s/GFLOP + 1 ms per trainable tensor + 5 ms, for every zoo CNN at batch 8, 1 thread."""
    rng = np.random.default_rng(seed)
    z = load_zoo_features()
    rows = []
    for m, fl, nt in zip(z["model"], z["train_step_flops"], z["trainable_tensors"]):
        t = 0.02 * fl * 8 / 1e9 + 0.001 * nt + 0.005
        for s in range(3):
            rows.append(dict(model=m, batch_size=8, threads=1, step=s, warmup=s == 0, outlier=False,
                             step_time_s=(t * 3 if s == 0 else t) * (1 + noise * rng.standard_normal())))
    return pd.DataFrame(rows)


def test_known_linear_law_is_recovered_leave_one_model_out():
    d = pm.figures.cpu_lomo_data(_synthetic())
    lin = d[(d["fit"] == "linear") & (d["features"] == "FLOPs + trainable tensors")].iloc[0]
    assert lin["n_models"] == 20 and lin["mape_pct"] < 1e-6  # exact law, warm-up rows (3× slower) left out
    assert d["mape_pct"].max() > 1  # the single-feature fit cannot see the per-tensor cost
    s = pm.figures.cpu_step_times(_synthetic())
    assert (s["n_steps"] == 2).all()
    assert s.set_index("model").loc["resnet-15", "train_step_gflops"] == pytest.approx(0.613621 * 8, rel=1e-5)


def test_errors():
    with pytest.raises(ValueError, match="missing \\['outlier'"):
        pm.figures.cpu_step_times(_synthetic().drop(columns=["outlier", "warmup"]))
    with pytest.raises(ValueError, match="features must be one of"):
        pm.figures.cpu_lomo(_synthetic(), features="params")


def test_bundled_cpu_measurements():
    """The bundled data: 20 CNNs x batch 32/128 x 1/2 threads; the best LOMO MAPE per configuration is reported."""
    steps = pm.datasets.load_cpu_measurements("steps")
    s = pm.figures.cpu_step_times(steps)
    assert s["model"].nunique() == 20 and set(s["batch_size"]) == {32, 128} and set(s["threads"]) == {1, 2}
    assert (s["n_steps"] >= 1).all()
    d = pm.figures.cpu_lomo_data(steps)
    best = d.groupby(["batch_size", "threads"])["mape_pct"].min()
    assert len(best) == 4 and (best < 10).all()  # 6.2–8.8 % measured (the README quotes it, checked by tests/test_readme.py)
    fig = pm.figures.cpu_lomo(steps)
    assert sum(len(c.get_offsets()) for c in fig.axes[0].collections) == 80
    plt.close(fig)
    ck = pm.datasets.load_cpu_measurements("checkpoints")
    assert ck["model"].nunique() == 20 and (ck["duration_s"] > 0).all()
