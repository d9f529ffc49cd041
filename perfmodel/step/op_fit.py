"""Fitting the operator model: NeuSight's training microbenchmarks (and a user's measurements) to the model and its
calibration, written once under a lock (:func:`fit_op_model`, ``perfmodel fit``). It sits above the step predictor:
the step intervals are calibrated on whole steps predicted by the models fitted without each GPU
(:func:`step_calibration`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from perfmodel.step.op_latency import (MODEL_VERSION, TRAINING_GPUS, WORK_COLUMNS, OpLatencyModel, _cache_key, _provenance,
                                         leave_one_gpu_out, load_bundle, load_op_rows, neusight_op_frame, save_bundle,
                                         using_op_model)

__all__ = ["fit_bundle", "CALIBRATION_GPUS", "step_calibration", "fit_op_model"]


def fit_bundle(extra=None, *, params: dict | None = None, devices=TRAINING_GPUS, progress: bool = False,
               extra_name: str | None = None) -> dict:
    """Fit the operator model and its leave-one-GPU-out calibration (what :func:`fitted_bundle` serves).

    Parameters
    ----------
    extra : path or DataFrame, optional
        A user's measurements (:func:`load_op_rows`): its FP32/TF32 rows are added to NeuSight's training rows (its
        BF16/FP16 rows refit the half-precision models instead, :func:`fit_op_model`).
    extra_name : str, optional
        What to call ``extra`` in the provenance (the CSV files it was read from); default its path, or "a DataFrame".
    params : dict, optional
        :class:`OpLatencyModel` parameters (the default model uses the defaults).
    devices : sequence of str
        NeuSight training GPUs whose microbenchmarks are used (all five by default).
    progress : bool
        Show a progress bar over the fits.

    Returns
    -------
    dict
        ``model`` (fitted :class:`OpLatencyModel`), ``scores`` (``|log(Σ predicted / Σ measured)|`` of each GPU held out),
        ``logo_predictions`` (every training row predicted with its GPU held out) and ``key`` (:func:`_cache_key`).
    """
    from tqdm.auto import tqdm

    X = neusight_op_frame("train", devices=devices)
    extra_rows, extra_name, extra_sha = 0, "", ""
    if extra is not None:
        import hashlib

        from perfmodel.step.half_precision import split_user_rows

        E = load_op_rows(extra) if not isinstance(extra, pd.DataFrame) else extra
        extra_sha = hashlib.sha256(pd.util.hash_pandas_object(E[["gpu", "op", *WORK_COLUMNS[1:], "latency_s"]],
                                                              index=False).to_numpy().tobytes()).hexdigest()
        E = split_user_rows(E)["fp32"]
        extra_rows = len(E)
        extra_name = extra_name or (str(extra) if not isinstance(extra, pd.DataFrame) else "a DataFrame")
        X = pd.concat([X, E[X.columns.intersection(E.columns)]], ignore_index=True)
    params = dict(params or {})
    gpus = sorted(set(X["gpu"]))
    bar = tqdm(total=1 + len(gpus), desc="fitting the operator model", disable=not progress, unit="fit")
    model = OpLatencyModel(**params).fit(X, X["latency_s"])
    bar.update(1)
    model.provenance_ = _provenance(X, extra_rows, extra_name)
    logo_models: dict = {}
    logo = leave_one_gpu_out(X, params=params, on_fit=lambda: bar.update(1), models=logo_models)
    bar.close()
    held_gpu = X["gpu"].to_numpy()
    steps = step_calibration(logo_models, progress=progress)
    t = X["latency_s"].to_numpy(float)
    scores = {g: abs(float(np.log(logo[m].sum() / t[m].sum()))) for g in gpus for m in [held_gpu == g]}
    import sklearn

    return {"model": model, "scores": pd.Series(scores, name="abs_log_ratio"), "logo_predictions": logo,
            "step_scores": steps, "key": _cache_key(extra_sha), "sklearn_version": sklearn.__version__}


#: Training GPUs whose end-to-end labels calibrate the step intervals (:func:`step_calibration`): NeuSight's training
#: GPUs except the V100, whose labels are test data of the NeuSight benchmark (``external.neusight_benchmark``).
CALIBRATION_GPUS = ("P4", "P100", "T4", "A100-PCIe-40GB")


def step_calibration(logo_models: dict, *, progress: bool = False) -> pd.DataFrame:
    """Nonconformity of whole steps: each single-GPU label NeuSight measured on a GPU of :data:`CALIBRATION_GPUS`,
    predicted by the operator model fitted without that GPU (``logo_models[gpu]``), and
    ``score = |log(predicted / measured)|``. These scores set the step intervals (split conformal,
    :func:`perfmodel.step.step_time.predict_step_time`): a GPU never seen, predicted from its spec sheet, as a
    test GPU is. NeuSight measured only inference steps on these GPUs, so the scores are of forward passes.

    Returns one row per label: ``gpu``, ``model``, ``mode``, ``seq_len``, ``batch_size``, ``measured_s``,
    ``predicted_s``, ``score``."""
    import warnings

    from tqdm.auto import tqdm

    from perfmodel.datasets import canonical_gpu, load_neusight_labels, neusight_traced_config
    from perfmodel._extrapolation import ExtrapolationWarning
    from perfmodel.step.step_time import predict_step_time

    lab = load_neusight_labels()
    lab = lab[(lab["parallel"] == "none") & ~lab["fused"]].copy()
    lab["gpu"] = [canonical_gpu(d) for d in lab["device"]]
    lab = lab[lab["gpu"].isin([g for g in CALIBRATION_GPUS if g in logo_models])]
    lab = lab.sort_values(["gpu", "mode", "model", "seq_len", "batch_size"]).reset_index(drop=True)
    rows = []
    for r in tqdm(list(lab.itertuples(index=False)), desc="calibrating step intervals", disable=not progress, unit="label"):
        cfg = neusight_traced_config(r.model, r.mode)
        with using_op_model(logo_models[r.gpu]), warnings.catch_warnings():
            warnings.simplefilter("ignore", ExtrapolationWarning)
            p = predict_step_time(cfg, r.gpu, input_shape=(int(r.seq_len),), batch_size=int(r.batch_size), optimizer=None,
                                  inference=r.mode == "inf")
        pred, meas = float(p["step_time_s"].iloc[0]), float(r.e2e_latency_ms) / 1e3
        rows.append(dict(gpu=r.gpu, model=r.model, mode=r.mode, seq_len=int(r.seq_len), batch_size=int(r.batch_size),
                         measured_s=meas, predicted_s=pred, score=abs(float(np.log(pred / meas)))))
    return pd.DataFrame(rows, columns=["gpu", "model", "mode", "seq_len", "batch_size", "measured_s", "predicted_s", "score"])


def fit_op_model(extra=None, *, out=None, params: dict | None = None, devices=TRAINING_GPUS, progress: bool = True,
                 force: bool = False, extra_name: str | None = None) -> dict:
    """Refit the operator model (with a user's measurements ``extra``) and write it to ``out`` — once, whatever the
    number of processes asking at the same time.

    The fit and the write happen under a lock on ``out`` (``filelock``): a second process asking for the same fit
    waits, then reads the artifact the first one wrote (its key — code version, data and ``extra`` — matches) instead
    of fitting again. The artifact is written atomically, so no reader ever sees half a file.

    Parameters
    ----------
    extra : path or DataFrame, optional
        Operator measurements in NeuSight's microbenchmark schema (:func:`load_op_rows`). Rows with a ``precision`` of
        ``bf16`` or ``fp16`` (``perfmodel measure ops --precision bf16``) refit the half-precision models, written
        beside ``out`` (:func:`perfmodel.step.half_precision.companion_paths`): GEMMs the GEMM model
        (:func:`~perfmodel.step.half_precision.fit_user_half_bundle`, a model of its own for the measured GPU),
        norms, softmax and elementwise kernels the bandwidth model
        (:func:`~perfmodel.step.bandwidth.fit_user_bandwidth_bundle`). FP32/TF32 rows refit the FP32-learned model.
        With ``PERFMODEL_OP_MODEL=<out>``, every precision is predicted by the models refitted with its own rows.
    extra_name : str, optional
        What to call ``extra`` in the provenance (default its path).
    out : path, optional
        Where to write the artifact; by default perfmodel's cache file ``<cache>/fitted/op_latency-user.npz`` (replaced
        by a new fit). An existing file at a path you give is replaced only with ``force``.
    params, devices, progress :
        As :func:`fit_bundle`.
    force : bool
        Refit even when ``out`` already holds this fit, and replace a file at ``out`` that holds something else.

    Returns
    -------
    dict
        The bundle (:func:`fit_bundle`), with ``path`` and ``sha256`` of the artifact and ``fitted`` (False when it was
        read from an earlier fit).
    """
    from filelock import FileLock

    from perfmodel.datasets._registry import cache_dir
    from perfmodel.step._artifact import ArtifactError, recorded_sha256

    owned = out is None  # perfmodel's own cache file may be replaced by a new fit; a user's path only with force
    if out is None:
        out = cache_dir() / "fitted" / "op_latency-user.npz"
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.is_dir():
        raise IsADirectoryError(f"cannot write the fitted model to {out}: a folder is there. Remove it or choose another path.")
    if out.exists() and not out.is_file() or out.is_symlink() and not out.resolve().is_file():
        # a pipe, a device or /dev/stdout: the artifact is a file replaced atomically beside its .sha256, never a stream
        raise ValueError(f"cannot write the fitted model to {out}: it is not a regular file (a pipe, a device or a link to "
                         "one, such as /dev/stdout). Give the path of a file, e.g. --out my_model.npz.")
    with FileLock(str(out) + ".lock"):
        want = None
        if not force and out.is_file():
            try:
                old = load_bundle(out)
                if old.get("fitted_with") == _fit_signature(extra, params, devices):
                    want = old
            except ArtifactError:
                want = None
            if want is None and not owned:
                raise FileExistsError(f"{out} exists and is not this fit (another fit, or not a perfmodel artifact); "
                                      "perfmodel never overwrites a file it was not asked to replace. Choose another "
                                      "--out, or pass force=True (perfmodel fit --force) to replace it.")
        if want is not None:
            return {**want, "path": out, "sha256": recorded_sha256(out), "fitted": False}
        bundle = fit_bundle(extra, params=params, devices=devices, progress=progress, extra_name=extra_name)
        bundle["fitted_with"] = _fit_signature(extra, params, devices)
        half = _write_half_companions(extra, out, bundle["fitted_with"])
        digest = save_bundle(bundle, out)
        return {**bundle, "path": out, "sha256": digest, "fitted": True, "half": half}


def _write_half_companions(extra, out: Path, key: str) -> dict:
    """Refit the half-precision models with ``extra``'s BF16/FP16 rows and write them beside ``out`` (before ``out``
    itself: a reader that finds the new ``out`` finds its companions); companions of an earlier fit at ``out`` that
    this one does not replace are removed (they would not match the new artifact). Returns what was written:
    ``{"half_gemm": n, "half_memory": n, "half_unused": n, "own_bandwidth": [GPUs], "paths": [...]}`` — the bandwidth
    model is written only when a GPU has :data:`perfmodel.step.bandwidth.MIN_OWN_ROWS` rows of a class.""" 
    from perfmodel.step.bandwidth import fit_user_bandwidth_bundle, save_bandwidth_bundle
    from perfmodel.step.half_precision import companion_paths, fit_user_half_bundle, save_half_bundle, split_user_rows

    paths = companion_paths(out)
    parts = {"half_gemm": pd.DataFrame(), "half_memory": pd.DataFrame(), "half_unused": pd.DataFrame()}
    if extra is not None:
        parts.update({k: v for k, v in split_user_rows(load_op_rows(extra) if not isinstance(extra, pd.DataFrame)
                                                       else extra).items() if k != "fp32"})
    written = []
    if len(parts["half_gemm"]):
        save_half_bundle(fit_user_half_bundle(parts["half_gemm"], key=key), paths["half"])
        written.append(paths["half"])
    own_bandwidth = []
    if len(parts["half_memory"]):
        bb = fit_user_bandwidth_bundle(parts["half_memory"], key=key)
        own_bandwidth = sorted(bb["gpu"])
        if own_bandwidth:  # else no class had enough rows on one GPU: the shipped model stands, nothing to write
            save_bandwidth_bundle(bb, paths["bandwidth"])
            written.append(paths["bandwidth"])
    for p in (paths["half"], Path(str(paths["half"]) + ".sha256"), paths["bandwidth"]):
        if p.exists() and p not in written and not (p.name.endswith(".sha256") and paths["half"] in written):
            p.unlink()
    return {**{k: len(v) for k, v in parts.items()}, "own_bandwidth": own_bandwidth, "paths": written}


def _fit_signature(extra, params, devices) -> str:
    """What a refit depends on besides the code and NeuSight's data: the extra rows' bytes, the parameters, the GPUs."""
    import hashlib
    import json

    h = hashlib.sha256(json.dumps({"params": params or {}, "devices": list(devices), "version": MODEL_VERSION}, sort_keys=True).encode())
    if extra is not None:
        if isinstance(extra, pd.DataFrame):
            h.update(pd.util.hash_pandas_object(extra, index=False).to_numpy().tobytes())
        else:
            h.update(Path(extra).read_bytes())
    return _cache_key() + "-" + h.hexdigest()[:16]
