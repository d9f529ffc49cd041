"""An external benchmark, not a paper reproduction: perfmodel's per-operator step-time predictor on NeuSight's published
training labels (Lee et al., ASPLOS'25; sitar-lab/NeuSight @ 6945927), next to the errors NeuSight publishes for its
own predictor, Li et al.'s per-operator regression, a roofline and Habitat on the same rows.

The labels are single-GPU FP32 training steps (TF32 off), forward + backward without the optimizer step, and
inference forward passes (eager, not the ``torch.compile`` runs), on the GPUs NeuSight tests on: V100-PCIe-32GB,
A100-PCIe-80GB, L4 and H100 (``perfmodel.datasets.load_neusight_labels``). The
predictor never saw a label, nor any measurement of A100-80GB, L4 or H100: its operator model is fitted on the
microbenchmarks of NeuSight's five training GPUs only (``perfmodel.step.op_latency``).
"""
from __future__ import annotations

from perfmodel.plotting import subplots

import numpy as np
import pandas as pd

from perfmodel.diagnostics.metrics import percent_error
from perfmodel.datasets._cache import cached_frame  # computed once per data source; callers get copies

__all__ = ["BENCHMARK_GPUS", "AMD_BENCHMARK_GPUS", "neusight_benchmark_data", "neusight_amd_benchmark_data",
           "neusight_benchmark_summary", "neusight_benchmark", "cmdare_op_model_data"]

#: NeuSight's NVIDIA test GPUs with single-GPU training labels (catalog ids).
BENCHMARK_GPUS = ("V100-PCIe-32GB", "A100-PCIe-80GB", "L4", "H100")

#: NeuSight's AMD test GPUs (catalog ids; MI250 is one of the two dies of a module, as ROCm shows it). Scored apart
#: from the NVIDIA GPUs: the operator model is fitted on NVIDIA microbenchmarks only, and nothing is ever fitted on
#: these labels.
AMD_BENCHMARK_GPUS = ("MI100", "MI210", "MI250")

_METHODS = {"neusight": "NeuSight", "li_et_al": "Li et al.", "roofline": "roofline", "habitat": "Habitat"}


@cached_frame
def neusight_benchmark_data() -> pd.DataFrame:
    """One row per single-GPU label (training and inference, eager) of the NVIDIA benchmark GPUs (:data:`BENCHMARK_GPUS`).

    Returns
    -------
    DataFrame
        ``mode`` (``train``/``inf``), ``device`` (NeuSight's name), ``gpu`` (catalog id), ``model``, ``seq_len``,
        ``batch_size``, ``measured_ms``,
        ``predicted_ms``, ``lower_ms``, ``upper_ms``, ``error_pct`` (signed, ``(predicted − measured) / measured``),
        ``abs_error_pct``, ``covered`` (measured inside the interval), ``status`` (``predicted``, or why not),
        ``rule_of_thumb_ms`` and ``rule_of_thumb_abs_error_pct`` (the baseline on the same label:
        :func:`perfmodel.step.baselines.rule_of_thumb_step_time` at FP32, MFU 0.4), and the
        published absolute errors ``<method>_error_pct`` of NeuSight, Li et al., roofline and Habitat (NaN where NeuSight
        publishes none).
    """
    return _benchmark_rows(BENCHMARK_GPUS)


@cached_frame
def neusight_amd_benchmark_data() -> pd.DataFrame:
    """One row per single-GPU label (training and inference, eager) of NeuSight's AMD GPUs (:data:`AMD_BENCHMARK_GPUS`:
    MI100, MI210, MI250), in the columns of :func:`neusight_benchmark_data`.

    The labels are test data only: the operator model is fitted on NeuSight's NVIDIA microbenchmarks, and an AMD GPU
    enters the prediction through its catalog row alone (FP32 GEMMs and convolutions at the matrix-core rate, see
    :func:`perfmodel.datasets.matmul_peak_tflops`).
    """
    return _benchmark_rows(AMD_BENCHMARK_GPUS)


def _benchmark_rows(gpus: tuple[str, ...]) -> pd.DataFrame:
    import warnings

    from perfmodel.datasets import canonical_gpu, load_neusight_errors, load_neusight_labels, neusight_traced_config
    from perfmodel.step.baselines import rule_of_thumb_step_time
    from perfmodel.step.step_time import predict_step_time

    from perfmodel._extrapolation import ExtrapolationWarning

    lab = load_neusight_labels()
    lab = lab[(lab["parallel"] == "none") & ~lab["fused"]].copy()
    lab["gpu"] = [canonical_gpu(d) for d in lab["device"]]
    lab = lab[lab["gpu"].isin(gpus)].sort_values(["mode", "gpu", "model", "seq_len", "batch_size"]).reset_index(drop=True)
    rows = []
    for (mode, model, seq, batch), grp in lab.groupby(["mode", "model", "seq_len", "batch_size"], sort=False):
        try:
            cfg = neusight_traced_config(model, mode)
        except Exception as exc:  # noqa: BLE001 - reported per row, never silently dropped
            pred, status = None, f"not predicted: no model config upstream ({type(exc).__name__})"
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ExtrapolationWarning)  # every benchmark GPU but V100 is outside by design
                pred = predict_step_time(cfg, list(grp["gpu"]), input_shape=(int(seq),), batch_size=int(batch), optimizer=None,
                                         inference=mode == "inf")
                rule = rule_of_thumb_step_time(cfg, list(grp["gpu"]), input_shape=(int(seq),), batch_size=int(batch),
                                               precision="fp32", optimizer=None, inference=mode == "inf")
            status = "predicted"
        for i, r in enumerate(grp.itertuples(index=False)):
            row = dict(mode=mode, device=r.device, gpu=r.gpu, model=model, seq_len=int(seq), batch_size=int(batch),
                       measured_ms=float(r.e2e_latency_ms), status=status)
            if pred is not None:
                p = pred.iloc[i]
                row.update(predicted_ms=p["step_time_s"] * 1e3, lower_ms=p["lower_s"] * 1e3, upper_ms=p["upper_s"] * 1e3,
                           rule_of_thumb_ms=float(rule["step_time_s"].iloc[i]) * 1e3)
            rows.append(row)
    out = pd.DataFrame(rows)
    for c in ("predicted_ms", "lower_ms", "upper_ms", "rule_of_thumb_ms"):
        if c not in out:
            out[c] = np.nan
    done = out["predicted_ms"].notna()  # a label without a model config is reported, not predicted
    out["error_pct"] = np.nan
    if done.any():
        out.loc[done, "error_pct"] = percent_error(out.loc[done, "measured_ms"], out.loc[done, "predicted_ms"])
    out["abs_error_pct"] = out["error_pct"].abs()
    out["rule_of_thumb_abs_error_pct"] = np.nan
    if done.any():
        out.loc[done, "rule_of_thumb_abs_error_pct"] = np.abs(np.asarray(percent_error(
            out.loc[done, "measured_ms"], out.loc[done, "rule_of_thumb_ms"]), float))
    out["covered"] = (out["lower_ms"] <= out["measured_ms"]) & (out["measured_ms"] <= out["upper_ms"])
    err = load_neusight_errors()
    err = err[(err["parallel"] == "none") & ~err["fused"]]
    wide = err.pivot_table(index=["mode", "device", "model", "seq_len", "batch_size"], columns="method", values="e2e_error_pct")
    wide = wide.rename(columns={m: f"{m}_error_pct" for m in wide.columns}).reset_index()
    out = out.merge(wide, on=["mode", "device", "model", "seq_len", "batch_size"], how="left")
    out = out.sort_values(["mode", "gpu", "model", "seq_len", "batch_size"], ascending=[False, True, True, True, True]).reset_index(drop=True)
    for m in _METHODS:
        if f"{m}_error_pct" not in out:
            out[f"{m}_error_pct"] = np.nan
    return out


def neusight_benchmark_summary(data: pd.DataFrame | None = None, *, mode: str = "train") -> pd.DataFrame:
    """MAPE per GPU and overall of perfmodel and of each published method, on the rows perfmodel predicted.

    Parameters
    ----------
    mode : {"train", "inf"}
        Training steps or inference passes.

    Returns ``gpu`` (``all`` last), ``n_labels``, ``perfmodel_mape_pct``, ``interval_coverage`` and
    ``<method>_mape_pct`` for NeuSight, Li et al., roofline and Habitat.
    """
    if mode not in ("train", "inf"):
        raise ValueError(f"mode must be 'train' or 'inf'; got {mode!r}.")
    d = neusight_benchmark_data() if data is None else data
    d = d[(d["status"] == "predicted") & (d["mode"] == mode)]
    rows = []
    for g, grp in [*d.groupby("gpu", sort=True), ("all", d)]:
        row = dict(gpu=g, n_labels=len(grp), perfmodel_mape_pct=float(grp["abs_error_pct"].mean()),
                   interval_coverage=float(grp["covered"].mean()))
        for m in _METHODS:
            row[f"{m}_mape_pct"] = float(grp[f"{m}_error_pct"].mean())
        rows.append(row)
    return pd.DataFrame(rows)


def neusight_benchmark(data: pd.DataFrame | None = None, *, ax=None):
    """Predicted vs measured step time of every training label, one colour per GPU, with perfmodel's and NeuSight's
    MAPE per GPU in the legend."""
    import matplotlib.pyplot as plt

    d = neusight_benchmark_data() if data is None else data
    s = neusight_benchmark_summary(d).set_index("gpu")
    d = d[(d["status"] == "predicted") & (d["mode"] == "train")]
    fig, ax, own = subplots(ax, figsize=(3.6, 3.3))
    for g, grp in d.groupby("gpu", sort=True):
        ax.errorbar(grp["measured_ms"], grp["predicted_ms"],
                    yerr=[grp["predicted_ms"] - grp["lower_ms"], grp["upper_ms"] - grp["predicted_ms"]], fmt="o", ms=3,
                    elinewidth=0.5, capsize=0,
                    label=f"{g}: {s.loc[g, 'perfmodel_mape_pct']:.1f} % (NeuSight {s.loc[g, 'neusight_mape_pct']:.1f} %)")
    lo, hi = float(d[["measured_ms", "lower_ms"]].min().min()) / 1.3, float(d[["measured_ms", "upper_ms"]].max().max()) * 1.3
    ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8)
    ax.set(xscale="log", yscale="log", xlabel="Measured step (ms, NeuSight labels)", ylabel="perfmodel prediction (ms)",
           title=f"MAPE {s.loc['all', 'perfmodel_mape_pct']:.1f} % (NeuSight {s.loc['all', 'neusight_mape_pct']:.1f} %)")
    ax.legend(frameon=False, fontsize=5, loc="upper left")
    if own:
        fig.tight_layout()
    return fig


def cmdare_op_model_data() -> pd.DataFrame:
    """The per-operator predictor on CM-DARE's world: the twenty CIFAR CNNs at batch 128 on K80 and P100, a training
    step with SGD-momentum, against the mean measured step time of CM-DARE's single-worker speed samples
    (``load_speed_samples``; TensorFlow 1 on GCE, a worker with its parameter server — what the PyTorch operator sum
    does not model).

    Returns
    -------
    DataFrame
        ``model``, ``gpu``, ``measured_s`` (mean over the samples), ``n_samples``, ``predicted_s``, ``lower_s``,
        ``upper_s``, ``error_pct`` (signed); ``attrs["mape_pct"]`` per GPU and ``"all"``.
    """
    import warnings

    from perfmodel.datasets import load_speed_samples
    from perfmodel.diagnostics.metrics import mape
    from perfmodel._extrapolation import ExtrapolationWarning
    from perfmodel.step.step_time import predict_step_time

    s = load_speed_samples()
    m = s.groupby(["model", "gpu"], observed=True)["step_time_s"].agg(measured_s="mean", n_samples="size").reset_index()
    m["model"], m["gpu"] = m["model"].astype(str), m["gpu"].astype(str)
    rows = []
    for model, grp in m.groupby("model", sort=False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExtrapolationWarning)  # K80 lies below the training GPUs' peak rates
            p = predict_step_time(model, list(grp["gpu"]), batch_size=128, optimizer="sgd-momentum")
        for r, q in zip(grp.itertuples(index=False), p.itertuples(index=False)):
            rows.append(dict(model=model, gpu=r.gpu, measured_s=r.measured_s, n_samples=int(r.n_samples),
                             predicted_s=q.step_time_s, lower_s=q.lower_s, upper_s=q.upper_s))
    out = pd.DataFrame(rows)
    out["error_pct"] = percent_error(out["measured_s"], out["predicted_s"])
    out.attrs["mape_pct"] = {**{g: mape(d["measured_s"], d["predicted_s"]) for g, d in out.groupby("gpu")},
                             "all": mape(out["measured_s"], out["predicted_s"])}
    return out
