"""Step-time prediction under honest protocols (LOMO, cross-GPU) vs the paper's split.

The figure refits one configuration, so it takes no ``data``.

Step-time prediction under honest protocols: the paper's row split vs leave-one-model-out vs cross-GPU, with the
paper's feature (normalized model FLOPs) and with perfmodel's graph features (beyond the paper).

The paper's random 80/20 row split puts samples of every CNN in training, so its test error measures interpolation
between repeated measurements of known CNNs. Leave-one-model-out holds each CNN out entirely; cross-GPU trains on K80
and P100 and predicts the V100 single-worker runs (the only V100 speed data: 4 CNNs).
"""
from __future__ import annotations

import pandas as pd

from perfmodel import datasets as ds
from perfmodel.datasets import v100_samples
from perfmodel.diagnostics.evaluation import (
    cross_gpu,
    leave_one_model_out,
    paper_split,
    predictions_frame,
)
from perfmodel.diagnostics.metrics import ape
from perfmodel.models.step_time import (
    FEATURE_SETS,
    StepTimeRegressor,
    graph_feature_frame,
)
from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.plotting import (
    figure_size,
    legend_outside,
    paper_figure,
    plot_parity,
    subplots,
)

ITEM = Item(
    paper="perfmodel",
    number="beyond CM-DARE prediction models",
    title="Step-time prediction under honest protocols (LOMO, cross-GPU) vs the paper's split",
    upstream="-",
    sources=("cake-lab/CM-DARE: data/processed_data/speed_data/ (speed samples)",
             "cake-lab/CM-DARE: data/processed_data/speed_data_base/ (V100 samples)"),
    procedure=("The paper's random 80/20 split (which leaks models between train and test) vs leave-one-model-out "
               "(K80, P100) and cross-GPU (train K80+P100, test V100), per feature configuration."),
    status="perfmodel analysis",
    legacy_id="speed_protocols",
    notebook="notebooks/02-speed-prediction.ipynb",
    test="tests/papers/test_speed_protocols.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


#: Configurations compared: (label, per-GPU features, cross-GPU features, estimator parameters). The paper's per-GPU
#: models use normalized model FLOPs; across GPUs the paper's GPU-agnostic feature is the normalized computation
#: (model FLOPs / GPU TFLOPS, min-max over K80 and P100).
CONFIGS = (
    ("paper: LR", "paper_model", "paper_computation", dict(method="linear")),
    ("paper: SVR-poly", "paper_model", "paper_computation", dict(method="svr")),
    ("graph: LR on ideal compute time + trainable tensors", "graph", "graph", dict(method="linear")),
    ("graph: log-log LR on ideal compute time", ["ideal_compute_ms"], ["ideal_compute_ms"], dict(method="linear", log_transform=True)),
    # transfer from a measured GPU: the CNN's mean K80 step time (measured, training data) + ideal compute time on the
    # target GPU, log-log. Only meaningful across GPUs (within a GPU it would contain the answer): cross-GPU row only.
    ("transfer: log-log LR on measured K80 step time + ideal compute time", None, ["k80_step_time_s", "ideal_compute_ms"],
     dict(method="linear", log_transform=True)),
)


def _cols(feats):
    if feats is None:
        return None
    return FEATURE_SETS[feats] if isinstance(feats, str) else list(feats)


def _with_reference(train: pd.DataFrame, test: pd.DataFrame):
    """Add ``k80_step_time_s``: each CNN's mean measured K80 step time, taken from the training frame only."""
    ref = train[train["gpu"].astype(str) == "K80"].groupby(train["model"].astype(str))["step_time_s"].mean()
    return (train.assign(k80_step_time_s=train["model"].astype(str).map(ref)), test.assign(k80_step_time_s=test["model"].astype(str).map(ref)))


def campaign_floor() -> pd.DataFrame:
    """How well one measurement campaign predicts another on the *same* GPU and CNN: the mean step time of the
    0-latency samples (the training data of every protocol) used as the prediction of the single-worker time series
    (the campaign the V100 test rows come from), for the 4 CNNs and K80 / P100.

    This is a floor for the cross-GPU error, which predicts the time-series campaign from models fitted on the
    0-latency one: no model of the GPU can remove the difference between the two campaigns.

    Returns
    -------
    DataFrame
        ``gpu``, ``model``, ``samples_step_time_s`` (0-latency mean), ``timeseries_step_time_s`` (time-series mean
        of 1/speed as plotted), ``ape_pct``; plus one ``model == 'all'`` row per GPU with the MAPE.
    """
    series = ds.load_speed_timeseries()
    series = series[~series["origin_row"] & ~series["first_sample"] & series["gpu"].isin(["K80", "P100"])].copy()
    series["step_time_s"] = 1 / series["speed_steps_per_s"]
    t = series.groupby([series["gpu"].astype(str), series["model"].astype(str)])["step_time_s"].mean().rename("timeseries_step_time_s")
    smp = ds.load_speed_samples()
    m = smp.groupby([smp["gpu"].astype(str), smp["model"].astype(str)])["step_time_s"].mean().rename("samples_step_time_s")
    d = pd.concat([m, t], axis=1, join="inner").reset_index().rename(columns={"level_0": "gpu", "level_1": "model"})
    d["ape_pct"] = ape(d["timeseries_step_time_s"], d["samples_step_time_s"])
    allrows = d.groupby("gpu", as_index=False)["ape_pct"].mean().assign(model="all")
    return pd.concat([d, allrows], ignore_index=True)[["gpu", "model", "samples_step_time_s", "timeseries_step_time_s", "ape_pct"]]


def speed_protocols_data() -> pd.DataFrame:
    """MAPE / MAE / RMSE per (configuration, protocol, GPU): ``config``, ``features``, ``protocol``, ``gpu``, ``n_test``,
    ``mape_pct``, ``mae``, ``rmse``. Protocols: ``paper_split`` and ``leave_one_model_out`` per GPU (K80, P100; 20 CNNs),
    ``cross_gpu`` (train K80 + P100, test V100). The "transfer" configuration uses each CNN's measured K80 step time
    and has a cross-GPU row only."""
    samples = graph_feature_frame(ds.load_speed_samples())
    v100 = graph_feature_frame(v100_samples())
    rows = []
    for label, feats, cross_feats, params in CONFIGS:
        cols, xcols = _cols(feats), _cols(cross_feats)
        est = StepTimeRegressor(**params)
        for gpu in ("K80", "P100") if cols is not None else ():
            d = samples[samples["gpu"] == gpu].reset_index(drop=True)
            ps = paper_split(d, est, cols, cv=0).iloc[0]
            lo = leave_one_model_out(d, est, cols).query("model == 'all'").iloc[0]
            for proto, r in (("paper_split", ps), ("leave_one_model_out", lo)):
                rows.append(dict(config=label, features=",".join(cols), protocol=proto, gpu=gpu, n_test=r["n_test"], mape_pct=r["mape_pct"], mae=r["mae"], rmse=r["rmse"]))
        tr, te = _with_reference(samples, v100)
        cg = cross_gpu(tr, te, est, xcols).query("gpu == 'all'").iloc[0]
        rows.append(dict(config=label, features=",".join(xcols), protocol="cross_gpu", gpu="V100", n_test=cg["n_test"], mape_pct=cg["mape_pct"], mae=cg["mae"], rmse=cg["rmse"]))
    return pd.DataFrame(rows)


@paper_figure
def speed_protocols(config: int = 2, *, ax=None):
    """Predicted vs measured step time of one configuration (index into ``CONFIGS``) under leave-one-model-out (K80,
    P100) and cross-GPU (V100)."""
    if not 0 <= config < len(CONFIGS) or CONFIGS[config][1] is None:
        valid = [i for i, c in enumerate(CONFIGS) if c[1] is not None]
        raise ValueError(f"config must index a configuration with per-GPU features: one of {valid}; got {config!r}.")
    label, feats, cross_feats, params = CONFIGS[config]
    cols, xcols = _cols(feats), _cols(cross_feats)
    samples = graph_feature_frame(ds.load_speed_samples())
    v100 = graph_feature_frame(v100_samples())
    parts = []
    for gpu in ("K80", "P100"):
        d = samples[samples["gpu"] == gpu].reset_index(drop=True)
        for m in d["model"].astype(str).unique():
            held = d["model"].astype(str) == m
            parts.append(predictions_frame(d, StepTimeRegressor(**params), cols, train_mask=~held))
    tr, te = _with_reference(samples, v100)
    both = pd.concat([tr, te[[c for c in tr.columns if c in te.columns]]], ignore_index=True)
    parts.append(predictions_frame(both, StepTimeRegressor(**params), xcols, train_mask=(both["gpu"] != "V100").to_numpy()))
    pred = pd.concat(parts, ignore_index=True)
    fig, ax, own = subplots(ax, figsize=figure_size("column", 3.0))
    pred = pred.assign(gpu=pred["gpu"].astype(str))
    plot_parity(pred, x="step_time_s", y="predicted", hue="gpu", hue_order=sorted(pred["gpu"].unique()), log=True, s=8, alpha=0.6,
                labels=lambda gpu: f"{gpu} ({'cross-GPU' if gpu == 'V100' else 'LOMO'})", ax=ax, legend=False)
    ax.set(xlabel="Measured step time (s)", ylabel="Predicted step time (s)", title=label)
    ax.title.set_fontsize(7)
    legend_outside(ax, where="right")
    if own:
        fig.tight_layout()
    return fig


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.speed_protocols_data``)."""
    return speed_protocols_data()


def numbers() -> pd.DataFrame:
    """perfmodel's own results: the MAPE of every configuration under each protocol (``COMPARISON_COLUMNS``, no paper
    value, status ``PERFMODEL-RESULT``, the protocol in ``reason``), from :func:`data`."""
    protocols = {
        "paper_split": "the paper's random 80/20 row split of the {gpu} speed samples ({n} test rows; every CNN has samples on both sides)",
        "leave_one_model_out": "leave-one-model-out on the {gpu} speed samples: each CNN held out entirely and predicted by a fit on the "
                               "others ({n} predictions)",
        "cross_gpu": "cross-GPU: fitted on the K80 + P100 speed samples, tested on the {n} V100 single-worker samples (a GPU the fit never saw)",
    }
    rows = [dict(quantity=f"{r.protocol}_{r.gpu.lower()}_mape_pct ({r.config})", unit="pct", value=r.mape_pct,
                 protocol=protocols[r.protocol].format(gpu=r.gpu, n=r.n_test) + f"; StepTimeRegressor on {r.features}; "
                          "MAPE from perfmodel.diagnostics.metrics")
            for r in data().itertuples(index=False)]
    return _item.item_results(__name__, rows)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (drawn from a fit: ``data`` must be None; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    _item.check_no_data(__name__, data)
    return speed_protocols(ax=ax)
