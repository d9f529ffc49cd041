"""The half-precision operator model scored on Vidur's held-out GPU (item ``external.vidur_h100_ops``): the model's
kernel seconds as the step predictor uses them, the baseline it replaced, and the protocols.
"""
from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from perfmodel.step.half_precision import (HALF_CLASSES, HALF_MODEL_VERSION, HALF_PRECISIONS, TRAINING_SOURCE_GPUS,
                                             VIDUR_SPECS, _fit, half_precision_design, half_precision_op_model,
                                             vidur_rows)

__all__ = ["half_precision_kernel_seconds", "baseline_kernel_seconds", "PROTOCOLS", "vidur_scores", "calibration_scores",
           "HELDOUT_ARTIFACT", "HELDOUT_SHA256", "fit_heldout_bundle", "save_heldout_bundle", "load_heldout_bundle"]


def half_precision_kernel_seconds(work: pd.DataFrame, spec, prec: str, op_model=None, bandwidth=None) -> np.ndarray:
    """In-stream time (s) of each work row on a GPU at FP16 / BF16, with the half-precision model.

    The step predictor makes the same choice (``kernels._kernel_seconds_uncached`` with
    :func:`perfmodel.step.step_time.half_model_applies`).

    Parameters
    ----------
    work : DataFrame
        Work rows as :func:`perfmodel.step.step_time.work_from_ops` returns them
        (:data:`~perfmodel.step.op_latency.WORK_COLUMNS`; other columns are ignored).
    spec : str or GPUSpec
        The GPU.
    prec : {"fp16", "bf16"}
        BF16 is treated as FP16 (same tensor-core rate on A100 / H100, same element size).
    op_model : OpLatencyModel, optional
        The half-precision GEMM model (default :func:`half_precision_op_model`).
    bandwidth : BandwidthModel, optional
        The model of the memory-bound rows (default: as the step predictor, the shipped
        :func:`perfmodel.step.bandwidth.bandwidth_model`); a scoring protocol passes the one learned on its own GPUs.

    Returns
    -------
    ndarray
        Seconds per row, in ``work``'s order. GEMM rows by ``op_model``; every other row as the step predictor
        predicts it (``kernels.kernel_seconds``): memory-bound kernels by the bandwidth model
        (:func:`perfmodel.step.bandwidth.bandwidth_model`), convolutions by the default FP32-learned model
        (:func:`~perfmodel.step.op_latency.default_op_model`) at the tensor-core peak.

    Raises
    ------
    ValueError
        ``prec`` is not a half precision.
    """
    from perfmodel.step.kernels import kernel_seconds

    if prec not in HALF_PRECISIONS:
        raise ValueError(f"half_precision_kernel_seconds predicts at {HALF_PRECISIONS}; got {prec!r}. Use the default "
                         "operator model for fp32 / tf32.")
    model = half_precision_op_model() if op_model is None else op_model
    work = work.reset_index(drop=True)
    out = np.empty(len(work))
    known = work["op_class"].isin(model.classes_).to_numpy()
    if known.any():
        out[known] = model.predict_in_stream(half_precision_design(work[known], spec, prec))
    rest = ~known
    if bandwidth is not None:
        from perfmodel.step.bandwidth import MEMORY_BOUND_CLASSES

        mem = rest & work["op_class"].isin(MEMORY_BOUND_CLASSES).to_numpy()
        if mem.any():
            out[mem] = bandwidth.predict_in_stream(half_precision_design(work[mem], spec, prec))
        rest &= ~mem
    if rest.any():
        out[rest] = kernel_seconds(work[rest].reset_index(drop=True), spec, prec)
    return out


def baseline_kernel_seconds(work: pd.DataFrame, spec, prec: str = "fp16") -> np.ndarray:
    """What the step predictor gives today at half precision: the default FP32-learned model with the tensor-core
    peak for matmul and conv rows (``kernels._default_kernel_seconds``, what the step predictor gave before the
    half-precision model), seconds per work row."""
    from perfmodel.step.op_latency import default_op_model
    from perfmodel.step.kernels import _default_kernel_seconds

    return _default_kernel_seconds(work.reset_index(drop=True), spec, prec, default_op_model())


#: Scoring protocols of :func:`vidur_scores`: (name, Vidur GPU scored, Vidur GPUs fitted on). The first is the shipped
#: model's; the next two are context (the H100 is in their training set, never in their test set); the last two hold out
#: one training GPU of the shipped model with the other alone — the only protocols a choice could be made by.
PROTOCOLS = (("leave-h100-out", "h100", ("a40", "a100")),
             ("leave-a40-out", "a40", ("a100", "h100")),
             ("leave-a100-out", "a100", ("a40", "h100")),
             ("a100-only-to-a40", "a40", ("a100",)),
             ("a40-only-to-a100", "a100", ("a40",)))


def _errors(frame: pd.DataFrame, pred: np.ndarray, by: str = "operator") -> pd.DataFrame:
    from perfmodel.step.op_latency import KERNEL_MIN_S

    meas = frame["measured_s"].to_numpy(float)
    big = frame["kernel_s"].to_numpy(float) >= KERNEL_MIN_S
    d = pd.DataFrame({by: frame[by].to_numpy(), "meas": meas, "abs": np.abs(pred - meas), "ape": np.abs(pred - meas) / meas,
                      "pred": pred, "big": big})
    rows = []
    for key, g in [*d.groupby(by, sort=True), ("all", d)]:
        b = g[g["big"]]
        rows.append({by: key, "n_rows": len(g), "measured_s": g["meas"].sum(), "predicted_s": g["pred"].sum(),
                     "time_weighted_ape_pct": 100 * g["abs"].sum() / g["meas"].sum(),
                     "median_ape_pct": 100 * float(np.median(g["ape"])),
                     "time_weighted_ape_ge_5us_pct": 100 * b["abs"].sum() / b["meas"].sum() if len(b) else np.nan})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------ the context fits, shipped as predictions

#: The held-out predictions of the context protocols and of the calibration refits, computed by
#: :func:`fit_heldout_bundle` and shipped so that scoring them needs no fit; the sha256 its bytes must have.
HELDOUT_ARTIFACT = "fitted/vidur_heldout.npz"
HELDOUT_SHA256 = "4403d847f954cf9724ce5d9d3449865a0b7eb3195766fe066da78a0f3b9c68b2"

#: Version of :func:`fit_heldout_bundle`'s procedure: part of what a shipped prediction is checked against.
HELDOUT_VERSION = "1"


def _data_key(h100_spec=None) -> str:
    """What every fit and prediction of :func:`fit_heldout_bundle` depends on: the fitting code's versions, the sha256
    of every Vidur compute profile of the A40, A100 and H100 (the registry's), and the catalog spec each GPU's rows
    are described with. Inputs, not computed floats: the key is the same on every CPU."""
    from perfmodel.datasets import gpu_spec
    from perfmodel.step.half_precision import vidur_profile_hashes
    from perfmodel.step.op_latency import MODEL_VERSION

    h = hashlib.sha256(f"op_latency={MODEL_VERSION};half={HALF_MODEL_VERSION};heldout={HELDOUT_VERSION};".encode())
    for k, sha in vidur_profile_hashes(tuple(VIDUR_SPECS)):
        h.update(f"{k}={sha};".encode())
    for g in sorted(VIDUR_SPECS):
        spec = h100_spec if (g == "h100" and h100_spec is not None) else VIDUR_SPECS[g]
        h.update(f"{g}={gpu_spec(spec)!r};".encode())
    return h.hexdigest()


class _Recorder:
    """Wraps a fitted GEMM model and remembers what it predicted."""

    def __init__(self, model):
        self.model, self.classes_, self.calls = model, list(model.classes_), []

    def predict_in_stream(self, X: pd.DataFrame) -> np.ndarray:
        out = self.model.predict_in_stream(X)
        self.calls.append(np.asarray(out, dtype=np.float64))
        return out


class _Replayed:
    """A context fit's predictions read from the shipped artifact: it answers ``predict_in_stream`` for the rows the
    fitted model predicted when the artifact was built (the same data and code: :func:`_data_key`), and refuses rows
    of another count."""

    def __init__(self, name: str, seconds: np.ndarray):
        self.name, self.seconds = name, seconds
        self.classes_ = list(HALF_CLASSES)

    def predict_in_stream(self, X: pd.DataFrame) -> np.ndarray:
        if len(X) != len(self.seconds):
            raise ValueError(f"the shipped predictions of {self.name!r} are for {len(self.seconds)} rows, not these {len(X)}; "
                             "they answer only the held-out rows they were computed on. Refit with fit_heldout_bundle().")
        return self.seconds.copy()


def _protocol_work(X: pd.DataFrame, held: str, train, h100_spec=None):
    """The training rows, the held-out rows and the held-out GPU's spec of one protocol."""
    src = X["source_gpu"].to_numpy()
    T = X[src == held].reset_index(drop=True)
    spec = h100_spec if (held == "h100" and h100_spec is not None) else VIDUR_SPECS[held]
    return X[np.isin(src, list(train))], T, spec


def _calibration_work(X: pd.DataFrame):
    """Per Vidur model family on the H100: (family, training rows, scored rows) of :func:`calibration_scores`."""
    X = X[X["op_class"].isin(HALF_CLASSES).to_numpy()].reset_index(drop=True)
    h = (X["source_gpu"] == "h100").to_numpy()
    for fam in sorted(set(X.loc[h, "model"])):
        mine = h & (X["model"] == fam).to_numpy()
        yield fam, X[~h | mine], X[h & ~mine].reset_index(drop=True)


def fit_heldout_bundle() -> dict:
    """Fit every model :func:`vidur_scores` and :func:`calibration_scores` need besides the shipped one, and record
    what each predicted on its held-out rows: what :func:`save_heldout_bundle` writes.

    The fits are those of the context protocols (:data:`PROTOCOLS` other than leave-H100-out: each with its held-out
    GPU never in its training rows) and of the calibration refits (one H100 model family added to the A40 and A100
    rows, a model of its own for the H100). The header keeps the key of the data and code they were computed from
    (:func:`_data_key`); the scores use them only when the data at hand has the same key (:func:`_heldout_model`),
    else they fit again. A few minutes.

    Returns
    -------
    dict
        ``header`` (``data_key``; ``entries``: ``name``, ``array``, ``n_rows``; the scikit-learn release, the
        fitter) and ``arrays`` (one float64 array of in-stream kernel seconds per entry).
    """
    import sklearn

    X = vidur_rows(("a40", "a100", "h100"))
    entries, arrays = [], {}

    def add(name, seconds):
        key = f"e{len(entries)}"
        entries.append(dict(name=name, array=key, n_rows=int(len(seconds))))
        arrays[key] = np.asarray(seconds, dtype=np.float64)

    for name, held, train in PROTOCOLS:
        if sorted(train) == sorted(TRAINING_SOURCE_GPUS):
            continue  # the shipped model (op_latency_half.npz): scored as shipped
        tr, T, spec = _protocol_work(X, held, train)
        rec = _Recorder(_fit(tr))
        half_precision_kernel_seconds(T, spec, "fp16", op_model=rec)
        (seconds,) = rec.calls
        add(f"protocol:{name}", seconds)
    for fam, tr, T in _calibration_work(X):
        add(f"calibration:{fam}", _fit(tr, per_gpu=True).predict_in_stream(T))
    header = dict(kind="vidur held-out predictions", data_key=_data_key(), entries=entries, sklearn_version=sklearn.__version__,
                  fitted_with=f"perfmodel.step.half_precision_scores.fit_heldout_bundle v{HELDOUT_VERSION}",
                  provenance=("microsoft/vidur @ 7d47513 FP16 operator profiles (a40, a100, h100 mlp.csv): the GEMM rows; "
                              "each entry's model fitted on its training rows only, its predictions of rows it never saw"))
    return dict(header=header, arrays=arrays)


def heldout_artifact_path() -> Path:
    """Path of the shipped held-out predictions inside the installed package."""
    return Path(__file__).resolve().parent / HELDOUT_ARTIFACT


def save_heldout_bundle(bundle: dict, path) -> str:
    """Write :func:`fit_heldout_bundle`'s result (the artifact format of the fitted models: numbers and JSON only,
    deterministic bytes, ``<path>.sha256`` beside it). Returns its sha256."""
    from perfmodel.step import _artifact

    return _artifact.save(path, bundle["header"], bundle["arrays"])


def load_heldout_bundle(path=None, *, sha256: str | None = None) -> dict:
    """Read held-out predictions: the shipped ones (sha256 pinned in :data:`HELDOUT_SHA256`) when ``path`` is None.
    Every entry's array is checked: as many finite, positive seconds as it says."""
    from perfmodel.step import _artifact

    if path is None:
        path, sha256 = heldout_artifact_path(), HELDOUT_SHA256
    header, arrays = _artifact.load(path, sha256=sha256)
    entries = header.get("entries")
    if not isinstance(entries, list) or not isinstance(header.get("data_key"), str):
        raise _artifact.ArtifactError(f"{path} holds no list of held-out entries: not a file fit_heldout_bundle wrote.")
    for e in entries:
        a = arrays.get(str(e.get("array")))
        if a is None or a.ndim != 1 or len(a) != e.get("n_rows") or not np.isfinite(a).all() or (a <= 0).any():
            raise _artifact.ArtifactError(f"{path}: entry {str(e.get('name'))[:80]!r} has no array of {e.get('n_rows')} "
                                          "finite positive seconds. Rebuild it with fit_heldout_bundle().")
    return dict(header=header, arrays=arrays)


_SHIPPED: dict = {}


def _heldout_model(name: str, train: pd.DataFrame, *, h100_spec=None, **params):
    """The model of one context fit: its shipped predictions when they were computed from this data and code
    (:func:`_data_key`, with the H100 described by ``h100_spec``), else a fit on ``train`` now (a warning says why)."""
    if "bundle" not in _SHIPPED:
        b = load_heldout_bundle()
        _SHIPPED["bundle"] = (b["header"]["data_key"], {e["name"]: e for e in b["header"]["entries"]}, b["arrays"])
    key, entries, arrays = _SHIPPED["bundle"]
    e = entries.get(name)
    if e is not None and key == _data_key(h100_spec):
        return _Replayed(name, arrays[e["array"]])
    warnings.warn(f"{name}: the shipped held-out predictions were computed from other data, code or GPU specs (the "
                  "data, the fitting code or the H100's spec changed); fitting the model now (a few seconds).",
                  UserWarning, stacklevel=3)
    return _fit(train, **params)


def vidur_scores(*, h100_spec=None, protocols=PROTOCOLS) -> pd.DataFrame:
    """Held-out errors on Vidur's operators, of this module's model and of the current approach on the same rows.

    Every half-precision GEMM model is fitted on the GEMM rows of the GPUs of its protocol (:data:`PROTOCOLS`;
    :class:`OpLatencyModel` defaults, pooled: a held-out GPU is predicted from its spec sheet). The leave-H100-out one
    is the shipped model (:func:`half_precision_op_model`, fitted on the same A40 and A100 rows); the others'
    predictions of their held-out rows ship in :data:`HELDOUT_ARTIFACT` (:func:`fit_heldout_bundle`) and are used when
    their training rows are these rows to the bit, else the model is fitted here (``h100_spec`` other than the
    default changes the H100 training rows of two protocols); the other operators are predicted as the step predictor predicts them
    (:func:`half_precision_kernel_seconds`: the bandwidth model, its elementwise class learned on the protocol's own
    GPUs' adds, :func:`perfmodel.step.bandwidth.with_elementwise_from`). The
    baseline is the default FP32-learned model for every operator, with the tensor-core peak
    (:func:`baseline_kernel_seconds`): fitted on NeuSight's FP32 microbenchmarks, never on Vidur.

    Parameters
    ----------
    h100_spec : str or GPUSpec, optional
        Spec of Vidur's H100 (default the catalog's SXM5 ``"H100"``; ``"H100-NVL"`` for the sensitivity check).
    protocols : sequence of (str, str, tuple of str)
        (name, scored GPU, training GPUs), Vidur's folder names.

    Returns
    -------
    DataFrame
        One row per (``protocol``, ``held_out``, ``trained_on``, ``predictor``, ``operator``) — the ten operators and
        ``"all"`` — with ``n_rows``, ``measured_s``, ``predicted_s`` (sums, s), ``time_weighted_ape_pct``
        (100 · Σ|pred − meas| / Σ meas), ``median_ape_pct`` and ``time_weighted_ape_ge_5us_pct`` (the same over the
        rows whose measured kernel takes at least ``KERNEL_MIN_S``, the floor of every prediction). ``predictor`` is
        ``"half_precision"`` (the step predictor's choice), ``"baseline"`` (the FP32-learned model alone),
        ``"roofline"`` (each kernel at the FP16 peak or the bandwidth, whichever binds) or ``"rule_of_thumb"`` (the
        kernel's FLOPs at 40 % of the FP16 peak: the practitioner's rule, :mod:`perfmodel.step.baselines`).
    """
    from perfmodel.datasets import matmul_peak_tflops
    from perfmodel.step.bandwidth import with_elementwise_from
    from perfmodel.step.baselines import RULE_OF_THUMB_MFU
    from perfmodel.step.op_latency import _roofline_s

    X = vidur_rows(("a40", "a100", "h100"), h100_spec=h100_spec)
    out = []
    for name, held, train in protocols:
        tr, T, spec = _protocol_work(X, held, train, h100_spec)
        # the leave-H100-out model is the shipped one (fitted on the A40 and A100 rows): scored as shipped, not refitted;
        # the others' held-out predictions are shipped too (fit_heldout_bundle), used when fitted on these very rows
        model = (half_precision_op_model() if sorted(train) == sorted(TRAINING_SOURCE_GPUS) else
                 _heldout_model(f"protocol:{name}", tr, h100_spec=h100_spec))
        n_k = T["n_kernels"].to_numpy(float)
        # memory-bound rows: the shipped bandwidth model with its elementwise class learned on this protocol's GPUs
        # (the shipped one's are the A40 and A100: the same fit for leave-H100-out)
        bw = with_elementwise_from(tr)
        pred = half_precision_kernel_seconds(T, spec, "fp16", op_model=model, bandwidth=bw) * n_k
        base = baseline_kernel_seconds(T, spec) * n_k
        roof = _roofline_s(T) * n_k
        rule = T["flops"].to_numpy(float) / (RULE_OF_THUMB_MFU * matmul_peak_tflops(spec, "fp16") * 1e12) * n_k
        trained = {"half_precision": "+".join(train), "baseline": "NeuSight FP32 (default model)",
                   "roofline": "nothing (spec sheet)", "rule_of_thumb": "nothing (spec sheet)"}
        for who, p in (("half_precision", pred), ("baseline", base), ("roofline", roof), ("rule_of_thumb", rule)):
            e = _errors(T, p)
            e.insert(0, "predictor", who)
            e.insert(0, "trained_on", trained[who])
            e.insert(0, "held_out", str(T["gpu"].iloc[0]))
            e.insert(0, "protocol", name)
            out.append(e)
    return pd.concat(out, ignore_index=True)


def calibration_scores() -> pd.DataFrame:
    """How much a user's own half-precision measurements of one GPU improve its GEMMs: Vidur's H100 as that user.

    For each model family Vidur profiles on the H100, the GEMM rows of that family play the user's measurements
    (``perfmodel measure ops --precision bf16`` on their GPU, then ``perfmodel fit --with``): the GEMM model is fitted
    on the A40 and A100 rows plus those H100 rows, with a model of its own for the measured GPU (what a user's refit
    does: ``per_gpu=True``), and scored on the H100 GEMM rows of every *other* family, next to the shipped model
    (A40 and A100 only) on the same rows. No row is both measured and scored. The refits' predictions of the scored
    rows ship in :data:`HELDOUT_ARTIFACT` (:func:`fit_heldout_bundle`), used when fitted on these rows to the bit.

    Returns
    -------
    DataFrame
        One row per measured family and one ``"mean"`` row: ``measured_family``, ``n_measured`` and ``n_scored`` (rows),
        ``measured_s`` (Σ of the scored kernels, s), ``shipped_time_weighted_ape_pct`` and
        ``calibrated_time_weighted_ape_pct`` (100 · Σ|pred − meas| / Σ meas over the scored rows).
    """
    X = vidur_rows(("a40", "a100", "h100"))
    shipped = half_precision_op_model()  # fitted on the A40 and A100 rows
    rows = []
    for fam, tr, T in _calibration_work(X):
        # the refit's predictions of the scored rows are shipped (fit_heldout_bundle), used when fitted on these rows
        calibrated = _heldout_model(f"calibration:{fam}", tr, per_gpu=True)
        meas = T["kernel_s"].to_numpy(float)

        def twape(pred, meas=meas):
            return float(100 * np.abs(pred - meas).sum() / meas.sum())

        n_measured = int((tr["source_gpu"] == "h100").sum())
        rows.append(dict(measured_family=fam, n_measured=n_measured, n_scored=len(T), measured_s=float(meas.sum()),
                         shipped_time_weighted_ape_pct=twape(shipped.predict_in_stream(T)),
                         calibrated_time_weighted_ape_pct=twape(calibrated.predict_in_stream(T))))
    out = pd.DataFrame(rows)
    mean = dict(measured_family="mean", n_measured=int(out["n_measured"].mean()), n_scored=int(out["n_scored"].mean()),
                measured_s=float(out["measured_s"].mean()),
                shipped_time_weighted_ape_pct=float(out["shipped_time_weighted_ape_pct"].mean()),
                calibrated_time_weighted_ape_pct=float(out["calibrated_time_weighted_ape_pct"].mean()))
    return pd.concat([out, pd.DataFrame([mean])], ignore_index=True)
