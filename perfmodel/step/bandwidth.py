"""Memory-bound kernels in half precision: a fixed cost plus the bytes at a learned share of the memory bandwidth.

A norm, softmax, elementwise, cast, embedding or optimizer kernel moves bytes and does next to no arithmetic. It is
described the same way at every precision — the bytes it reads and writes at that precision's element size — and
timed as::

    t_kernel = max(t0_c + bytes / (eta_c · B), KERNEL_MIN_S)

with ``B`` the GPU's peak memory bandwidth (its spec sheet), ``eta_c`` the share of it the kernels of class *c*
reach on large tensors and ``t0_c`` the fixed cost of a kernel of that class (ramp-up and tail of a grid), both learned.
Nothing else of the GPU enters: the time never grows when the bandwidth grows, and a GPU outside the training set
(an H100, a B200, an MI300X) is predicted from its bandwidth alone. The step predictor times BF16/FP16/FP8 steps'
memory-bound kernels with it (:mod:`perfmodel.step.kernels`); FP32/TF32 steps keep the operator model's trees, learned
on the same FP32 microbenchmarks it is scored against.

What each class is learned on (:data:`CLASS_SOURCES`), pooled over GPUs (no GPU identity):

* **elementwise** (adds, multiplies, activations, casts, the optimizer's updates): PyTorch's own elementwise kernel
  measured in FP16 — the residual ``add`` of microsoft/vidur's operator profiles on the A40 and the A100 80GB PCIe
  (:data:`VIDUR_ELEMENTWISE_OPERATORS`; Vidur's H100 stays test data, :mod:`perfmodel.step.half_precision_scores`).
  Vidur's other memory-bound operators are sarathi-serve's custom serving kernels (RMSNorm, rotary, SiLU-and-multiply,
  the embedding gather), not the kernels of a PyTorch training step, and are never learned from.
* **layernorm** and **softmax**: no half-precision measurement of PyTorch's norm or softmax kernels exists in the
  data; they are learned on NeuSight's FP32 microbenchmarks of PyTorch's kernels (``ln``, ``softmax`` … on P4, P100,
  T4, V100 and A100-PCIe-40GB, the same rows and launch-overhead removal as the default operator model,
  :mod:`perfmodel.step.op_latency`) and applied at the half-precision bytes; ``basis`` says so.

The fit is a least-squares fit of ``log t`` weighted by the square root of the measured time, so that the large kernels
that dominate a step weigh more than the launch-bound small ones.

Why elementwise kernels are not learned on NeuSight's FP32 rows (as they were up to version 1): those rows carry a
fixed cost of about 10 µs per kernel that FP16 kernel traces (Vidur's, Kineto kernel durations) do not show, so a
kernel of a few MB came out 2-5x too slow on a fast GPU (:func:`perfmodel.diagnostics.op_model.bandwidth_shares`).
Chosen on the training GPUs only (:func:`elementwise_choice_scores`): Vidur's A40 adds predicted from the A100's and the
A100's from the A40's, 8.5 % and 8.7 % time-weighted against 13.7 % and 24.7 % for the FP32-learned class.

Why not the gradient-boosted trees of the default model for these classes: the trees learn the efficiency as a
function of the roofline time among other features, so a GPU with more bandwidth (an H200 against an H100) falls in
a region learned from slower GPUs and was predicted slower (a 4-layer Llama step in BF16: 11.0 ms on the H200, 9.9 ms
on the H100). Chosen on the training GPUs only (:func:`leave_one_gpu_out_scores`).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

__all__ = ["MEMORY_BOUND_CLASSES", "BandwidthModel", "bandwidth_rows", "fit_bandwidth_bundle", "leave_one_gpu_out_scores",
           "BANDWIDTH_ARTIFACT", "BANDWIDTH_SHA256", "bandwidth_artifact_path", "save_bandwidth_bundle",
           "load_bandwidth_bundle", "bandwidth_model", "bandwidth_model_from_bundle", "fit_user_bandwidth_bundle", "MIN_OWN_ROWS",
           "user_kernel_seconds", "CLASS_SOURCES", "VIDUR_ELEMENTWISE_OPERATORS", "vidur_elementwise_rows",
           "with_elementwise_from", "elementwise_choice_scores"]

#: Operator classes timed by their bytes (:class:`BandwidthModel`); matmul and conv are learned by the operator models.
MEMORY_BOUND_CLASSES = ("elementwise", "layernorm", "softmax")

#: Where each class's ``t0`` and ``eta`` are learned (module docstring): ``"vidur"`` (PyTorch's FP16 elementwise kernel
#: in Vidur's A40 and A100 profiles) or ``"neusight"`` (NeuSight's FP32 microbenchmarks of PyTorch's kernels).
CLASS_SOURCES = {"elementwise": "vidur", "layernorm": "neusight", "softmax": "neusight"}

#: Vidur operators whose kernel is PyTorch's own elementwise kernel (the residual ``torch.add``): the rows the
#: elementwise class is learned on. Every other Vidur memory-bound operator is a custom serving kernel.
VIDUR_ELEMENTWISE_OPERATORS = ("add",)

#: Vidur's GPUs the shipped elementwise class is learned on (the H100 is held out).
VIDUR_TRAINING_GPUS = ("a40", "a100")

#: Columns of a training row of the bandwidth model.
_ROW_COLUMNS = ["gpu", "op_class", "bytes", "bandwidth_bytes_per_s", "kernel_s", "source"]

_BOUNDS_T0 = (1e-7, 1e-3)  # s
_BOUNDS_ETA = (0.05, 1.5)  # share of the peak bandwidth (above 1: tensors served from L2 in a microbenchmark loop)


class BandwidthModel(RegressorMixin, BaseEstimator):
    """Kernel time (s) of memory-bound operators: ``t0_c + bytes / (eta_c · bandwidth)`` per class (module docstring).

    Takes the rows of :func:`perfmodel.step.op_latency.op_design` (``op_class``, ``bytes``,
    ``bandwidth_bytes_per_s``; other columns are ignored) and, in ``fit``, their kernel times without launch overhead.

    Attributes
    ----------
    classes_ : list of str
    latency_s_ : dict
        ``t0`` per class, s.
    efficiency_ : dict
        ``eta`` per class: the share of the peak memory bandwidth reached on large tensors.
    training_devices_ : list of str
        GPUs of the training rows (``gpu`` column), when given.
    provenance_ : str
    """

    def __init__(self):
        pass

    @staticmethod
    def _check_X(X) -> pd.DataFrame:
        if not isinstance(X, pd.DataFrame):
            raise TypeError(f"BandwidthModel takes the DataFrame of perfmodel.step.op_latency.op_design; got {type(X).__name__}.")
        missing = [c for c in ("op_class", "bytes", "bandwidth_bytes_per_s") if c not in X.columns]
        if missing:
            raise ValueError(f"X lacks the columns {missing} (build it with op_design(op_work(...), gpu_columns(...))).")
        num = X[["bytes", "bandwidth_bytes_per_s"]].to_numpy(float)
        if not (np.isfinite(num).all() and (num > 0).all()):
            raise ValueError("X's bytes and bandwidth_bytes_per_s must be positive and finite.")
        return X

    def fit(self, X, y):
        X = self._check_X(X)
        y = np.asarray(y, dtype=float).ravel()
        if y.shape[0] != len(X) or not (np.isfinite(y).all() and (y > 0).all()):
            raise ValueError("y must hold one positive, finite kernel time in seconds per row of X.")
        cls = X["op_class"].astype(str).to_numpy()
        self.classes_ = sorted(set(cls))
        self.latency_s_, self.efficiency_ = {}, {}
        self.gpu_latency_s_, self.gpu_efficiency_ = {}, {}
        for c in self.classes_:
            m = cls == c
            self.latency_s_[c], self.efficiency_[c] = _fit_class(X["bytes"].to_numpy(float)[m],
                                                                 X["bandwidth_bytes_per_s"].to_numpy(float)[m], y[m])
        self.training_devices_ = sorted(set(X["gpu"].astype(str))) if "gpu" in X.columns else []
        self.provenance_ = "user data"
        return self

    def predict_in_stream(self, X) -> np.ndarray:
        """Kernel time (s) of each row when it runs back to back with others, never below ``KERNEL_MIN_S``."""
        from perfmodel.step.op_latency import KERNEL_MIN_S

        check_is_fitted(self, "efficiency_")
        X = self._check_X(X)
        cls = X["op_class"].astype(str).to_numpy()
        unseen = sorted(set(cls) - set(self.classes_))
        if unseen:
            raise ValueError(f"BandwidthModel was not fitted on the operator class(es) {unseen}; it knows {self.classes_}.")
        t0 = np.array([self.latency_s_[c] for c in cls], dtype=float) if len(cls) else np.zeros(0)
        eta = np.array([self.efficiency_[c] for c in cls], dtype=float) if len(cls) else np.ones(0)
        own = getattr(self, "gpu_efficiency_", {})
        if own and "gpu" in X.columns:  # a GPU with measured rows of its own (a user's refit): its own t0 and eta
            for i, k in enumerate(zip(X["gpu"].astype(str), cls)):
                if k in own:
                    t0[i], eta[i] = self.gpu_latency_s_[k], own[k]
        t = t0 + X["bytes"].to_numpy(float) / (eta * X["bandwidth_bytes_per_s"].to_numpy(float))
        return np.maximum(t, KERNEL_MIN_S)

    def predict(self, X) -> np.ndarray:
        """Same as :meth:`predict_in_stream` (a kernel time; no launch overhead is modelled here)."""
        return self.predict_in_stream(X)


def _fit_class(b: np.ndarray, bw: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    """``(t0, eta)`` of one class: least squares of ``log t``, weighted by the square root of the time."""
    from scipy.optimize import least_squares

    from perfmodel.step.op_latency import KERNEL_MIN_S

    w = np.sqrt(t / t.mean())

    def residual(p):
        return w * (np.log(np.maximum(np.exp(p[0]) + b / (p[1] * bw), KERNEL_MIN_S)) - np.log(t))

    r = least_squares(residual, x0=[np.log(5e-6), 0.8],
                      bounds=([np.log(_BOUNDS_T0[0]), _BOUNDS_ETA[0]], [np.log(_BOUNDS_T0[1]), _BOUNDS_ETA[1]]))
    return float(np.exp(r.x[0])), float(r.x[1])


#: Least measured rows of one class on one GPU for a user's refit to give that GPU a ``t0`` and ``eta`` of its own.
MIN_OWN_ROWS = 8


def bandwidth_rows() -> pd.DataFrame:
    """The rows the shipped model is learned on, each class from its source (:data:`CLASS_SOURCES`).

    Returns
    -------
    DataFrame
        ``gpu``, ``op_class``, ``bytes``, ``bandwidth_bytes_per_s``, ``kernel_s`` and ``source``: NeuSight's
        memory-bound training microbenchmarks of the ``"neusight"`` classes
        (:func:`perfmodel.step.op_latency.neusight_op_frame`, five training GPUs), ``kernel_s`` the latency less the
        launch overhead of its GPU and class (its fastest measurement less ``KERNEL_MIN_S``, as
        :class:`~perfmodel.step.op_latency.OpLatencyModel` estimates it); then Vidur's FP16 elementwise rows of its
        A40 and A100 (:func:`vidur_elementwise_rows`). Every ``kernel_s`` at least ``KERNEL_MIN_S``.
    """
    from perfmodel.step.op_latency import neusight_op_frame

    neusight = [c for c, src in CLASS_SOURCES.items() if src == "neusight"]
    X = neusight_op_frame("train")
    X = X[X["op_class"].isin(neusight).to_numpy()].reset_index(drop=True)
    X["kernel_s"] = user_kernel_seconds(X)
    X["source"] = "neusight"
    X["gpu"] = X["gpu"].astype(str)
    return pd.concat([X[_ROW_COLUMNS], vidur_elementwise_rows(VIDUR_TRAINING_GPUS)], ignore_index=True)


def vidur_elementwise_rows(gpus=VIDUR_TRAINING_GPUS, *, h100_spec=None) -> pd.DataFrame:
    """Vidur's FP16 rows of PyTorch's elementwise kernel (:data:`VIDUR_ELEMENTWISE_OPERATORS`) on its folders ``gpus``,
    as bandwidth-model rows (columns of :func:`bandwidth_rows`, ``source == "vidur"``): one kernel per row (phi-2's
    two adds are two kernels), its Kineto kernel time — no launch overhead to remove — at least ``KERNEL_MIN_S``.
    ``h100_spec`` describes the ``h100`` rows (:func:`perfmodel.step.half_precision.vidur_rows`)."""
    from perfmodel.step.vidur import vidur_rows
    from perfmodel.step.op_latency import KERNEL_MIN_S

    V = vidur_rows(tuple(gpus), h100_spec=h100_spec)
    return _elementwise_of(V, KERNEL_MIN_S)


def _elementwise_of(V: pd.DataFrame, floor: float) -> pd.DataFrame:
    V = V[V["operator"].isin(VIDUR_ELEMENTWISE_OPERATORS).to_numpy()].reset_index(drop=True)
    if not len(V) or set(V["op_class"]) != {"elementwise"}:
        raise ValueError("no Vidur elementwise (add) rows to learn from: give rows of perfmodel.step.half_precision."
                         "vidur_rows that include the 'add' operator.")
    out = V[["gpu", "op_class", "bytes", "bandwidth_bytes_per_s"]].copy()
    out["gpu"] = out["gpu"].astype(str)
    out["kernel_s"] = np.maximum(V["kernel_s"].to_numpy(float), floor)
    out["source"] = "vidur"
    return out


def with_elementwise_from(vidur: pd.DataFrame, base: BandwidthModel | None = None) -> BandwidthModel:
    """``base`` (default the shipped model) with its elementwise class learned again on the Vidur rows ``vidur``
    (rows of :func:`perfmodel.step.half_precision.vidur_rows`; only the :data:`VIDUR_ELEMENTWISE_OPERATORS` are used):
    the model of a scoring protocol trained on other Vidur GPUs than the shipped one
    (:func:`perfmodel.step.half_precision_scores.vidur_scores`)."""
    from perfmodel.datasets import gpu_spec
    from perfmodel.step.op_latency import KERNEL_MIN_S
    from perfmodel.step.vidur import VIDUR_SPECS

    base = bandwidth_model() if base is None else base
    R = _elementwise_of(vidur, KERNEL_MIN_S)
    m = BandwidthModel()
    m.classes_ = list(base.classes_)
    m.latency_s_, m.efficiency_ = dict(base.latency_s_), dict(base.efficiency_)
    m.gpu_latency_s_, m.gpu_efficiency_ = {}, {}
    m.latency_s_["elementwise"], m.efficiency_["elementwise"] = _fit_class(
        R["bytes"].to_numpy(float), R["bandwidth_bytes_per_s"].to_numpy(float), R["kernel_s"].to_numpy(float))
    vidur = {gpu_spec(g).gpu for g in VIDUR_SPECS.values()}  # the catalog names of Vidur's rows
    m.training_devices_ = sorted(set(base.training_devices_) - vidur | set(R["gpu"]))
    m.provenance_ = base.provenance_ + f"; elementwise refitted on Vidur's adds of {', '.join(sorted(set(R['gpu'])))}"
    m.class_sources_ = {**getattr(base, "class_sources_", {}),
                        "elementwise": f"Vidur's FP16 adds of {', '.join(sorted(set(R['gpu'])))}"}
    return m



def elementwise_choice_scores() -> pd.DataFrame:
    """How the elementwise class's source was chosen, on the training GPUs only: Vidur's A40 adds predicted from the
    A100's and the A100's from the A40's, by the class learned on the other GPU's adds and by the class learned on
    NeuSight's FP32 elementwise microbenchmarks (version 1 of this model). Vidur's H100 is not read.

    Returns
    -------
    DataFrame
        One row per (``held_out``, ``learned_on``): ``n_rows``, ``time_weighted_ape_pct`` (100 · Σ|pred − meas| /
        Σ meas, both at least ``KERNEL_MIN_S``) and ``median_ratio_ge_32mb`` (median predicted / measured time of the
        kernels moving 32 MB or more).
    """
    from perfmodel.step.op_latency import KERNEL_MIN_S, neusight_op_frame

    R = vidur_elementwise_rows(VIDUR_TRAINING_GPUS)
    N = neusight_op_frame("train")
    N = N[(N["op_class"] == "elementwise").to_numpy()].reset_index(drop=True)
    fp32 = _fit_class(N["bytes"].to_numpy(float), N["bandwidth_bytes_per_s"].to_numpy(float), user_kernel_seconds(N))
    b, bw, t = (R[c].to_numpy(float) for c in ("bytes", "bandwidth_bytes_per_s", "kernel_s"))
    g = R["gpu"].to_numpy()
    rows = []
    for held in sorted(set(g)):
        h = g == held
        other = _fit_class(b[~h], bw[~h], t[~h])
        for what, (t0, eta) in ((f"Vidur FP16 adds of {', '.join(sorted(set(g[~h])))}", other),
                                ("NeuSight FP32 elementwise microbenchmarks", fp32)):
            p = np.maximum(t0 + b[h] / (eta * bw[h]), KERNEL_MIN_S)
            big = b[h] >= 32e6
            rows.append(dict(held_out=held, learned_on=what, n_rows=int(h.sum()),
                             time_weighted_ape_pct=float(100 * np.abs(p - t[h]).sum() / t[h].sum()),
                             median_ratio_ge_32mb=float(np.median(p[big] / t[h][big]))))
    return pd.DataFrame(rows)


def leave_one_gpu_out_scores(X: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each training GPU's memory-bound rows predicted by the model fitted on the other four.

    Returns
    -------
    DataFrame
        One row per (``gpu``, ``op_class``) and per GPU over all classes (``op_class == "all"``): ``n_rows`` and
        ``time_weighted_ape_pct`` (100 · Σ|pred − kernel| / Σ kernel).
    """
    X = bandwidth_rows() if X is None else X
    gpus = X["gpu"].astype(str).to_numpy()
    pred = np.empty(len(X))
    for g in sorted(set(gpus)):
        held = gpus == g
        pred[held] = BandwidthModel().fit(X[~held], X.loc[~held, "kernel_s"]).predict_in_stream(X[held])
    k = X["kernel_s"].to_numpy(float)
    d = pd.DataFrame({"gpu": gpus, "op_class": X["op_class"].astype(str).to_numpy(), "abs": np.abs(pred - k), "k": k})
    rows = []
    for (g, c), grp in [*d.groupby(["gpu", "op_class"]), *((( g, "all"), grp) for g, grp in d.groupby("gpu"))]:
        rows.append(dict(gpu=g, op_class=c, n_rows=len(grp), time_weighted_ape_pct=100 * grp["abs"].sum() / grp["k"].sum()))
    return pd.DataFrame(rows).sort_values(["gpu", "op_class"]).reset_index(drop=True)


# ----------------------------------------------------------------------------------------------------- fit and artifact

#: Version of this module's fitting code: part of the artifact's key.
BANDWIDTH_MODEL_VERSION = "2"

#: The shipped model (a JSON file of numbers: nothing in it can run) and the sha256 its bytes must have.
BANDWIDTH_ARTIFACT = "fitted/bandwidth.json"
BANDWIDTH_SHA256 = "d6030c33ae19c7421dd6ff6b7cd720b95cb22716c86f7737f0c396d13ddc3da6"

_LOADED: dict = {}


def _key() -> str:
    """Hash of what the fit depends on: this module's version and the sha256 of every NeuSight training file and of
    Vidur's A40 and A100 ``mlp.csv`` profiles."""
    from perfmodel.datasets import registry
    from perfmodel.step.vidur import vidur_profile_hashes

    reg = registry()
    keys = reg[reg["key"].str.contains("/train/collect/", regex=False)].sort_values("key")
    h = hashlib.sha256(f"bandwidth={BANDWIDTH_MODEL_VERSION}".encode())
    for k, sha in [*zip(keys["key"], keys["sha256"]), *vidur_profile_hashes(VIDUR_TRAINING_GPUS, suffix="/mlp.csv")]:
        h.update(f"{k}={sha};".encode())
    return h.hexdigest()[:16]


def fit_bandwidth_bundle() -> dict:
    """Fit the shipped bandwidth model, each class on its source (:func:`bandwidth_rows`, :data:`CLASS_SOURCES`).

    Returns
    -------
    dict
        ``latency_s``, ``efficiency`` (per class), ``class_sources`` (per class, what it was learned on),
        ``training_devices``, ``n_rows``, ``provenance``, ``leave_one_gpu_out_time_weighted_ape_pct``
        (:func:`leave_one_gpu_out_scores` over all classes, per GPU: each GPU's rows predicted by the classes learned
        without it), ``key`` and ``fitted_with``: what :func:`save_bandwidth_bundle` writes.
    """
    X = bandwidth_rows()
    m = BandwidthModel().fit(X, X["kernel_s"])
    logo = leave_one_gpu_out_scores(X)
    logo = logo[logo["op_class"] == "all"]
    src = X["source"].to_numpy()
    neusight = sorted(set(X.loc[src == "neusight", "gpu"]))
    vidur = sorted(set(X.loc[src == "vidur", "gpu"]))
    sources = {"elementwise": (f"microsoft/vidur @ 7d47513 FP16 operator profiles (data/profiling/compute/{{a40,a100}}/*/*/mlp.csv): "
                               f"the residual add (PyTorch's elementwise kernel), {int((src == 'vidur').sum())} rows of "
                               f"{', '.join(vidur)}; Vidur's H100 held out"),
               "layernorm": "sitar-lab/NeuSight @ 6945927 FP32 training microbenchmarks of PyTorch's norm kernels "
                            f"({', '.join(neusight)}): no half-precision measurement of them",
               "softmax": "sitar-lab/NeuSight @ 6945927 FP32 training microbenchmarks of PyTorch's softmax kernels "
                          f"({', '.join(neusight)}): no half-precision measurement of them"}
    return {"latency_s": m.latency_s_, "efficiency": m.efficiency_, "class_sources": sources,
            "training_devices": m.training_devices_, "n_rows": int(len(X)),
            "provenance": (f"{len(X)} rows, each class pooled over its GPUs (no GPU identity): elementwise on Vidur's FP16 "
                           f"adds of {', '.join(vidur)}; layernorm and softmax on NeuSight's FP32 microbenchmarks of "
                           f"{', '.join(neusight)}"),
            "leave_one_gpu_out_time_weighted_ape_pct": {r.gpu: round(float(r.time_weighted_ape_pct), 6)
                                                        for r in logo.itertuples(index=False)},
            "key": _key(), "fitted_with": f"perfmodel.step.bandwidth.fit_bandwidth_bundle v{BANDWIDTH_MODEL_VERSION}"}


def _to_bytes(bundle: dict) -> bytes:
    def rounded(v):
        if isinstance(v, float):
            return float(f"{v:.12g}")
        if isinstance(v, dict):
            return {k: rounded(x) for k, x in v.items()}
        if isinstance(v, list):
            return [rounded(x) for x in v]
        return v

    return (json.dumps(rounded(bundle), sort_keys=True, indent=1) + "\n").encode()


def bandwidth_artifact_path() -> Path:
    """Path of the shipped bandwidth model inside the installed package."""
    return Path(__file__).resolve().parent / BANDWIDTH_ARTIFACT


def save_bandwidth_bundle(bundle: dict, path) -> str:
    """Write a bundle of :func:`fit_bandwidth_bundle` as JSON (numbers only, deterministic bytes), atomically.
    Returns its sha256."""
    import os
    import tempfile

    data = _to_bytes(bundle)
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return hashlib.sha256(data).hexdigest()


def load_bandwidth_bundle(path=None, *, sha256: str | None = None) -> dict:
    """Read a bandwidth bundle: the shipped one (sha256 pinned in :data:`BANDWIDTH_SHA256`) when ``path`` is None.

    Raises
    ------
    perfmodel.step._artifact.ArtifactError
        The bytes do not have the pinned sha256, the file is over 1 MB or not JSON of the expected form.
    """
    from perfmodel.step._artifact import ArtifactError

    if path is None:
        path, sha256 = bandwidth_artifact_path(), BANDWIDTH_SHA256
    path = Path(path)
    try:
        if path.stat().st_size > 1_000_000:
            raise ArtifactError(f"the bandwidth model {path} is over 1 MB: not a perfmodel bandwidth model.")
        data = path.read_bytes()
    except OSError as exc:
        raise ArtifactError(f"the bandwidth model {path} cannot be read ({exc}); reinstall perfmodel.") from exc
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise ArtifactError(f"the bandwidth model {path} has sha256 {hashlib.sha256(data).hexdigest()[:16]}…, expected "
                            f"{sha256[:16]}…: it was altered or truncated after it was written; reinstall perfmodel.")
    try:
        b = json.loads(data)
        ok = all(isinstance(b[k], dict) for k in ("latency_s", "efficiency")) and set(b["latency_s"]) == set(b["efficiency"])
        vals = [*b["latency_s"].values(), *b["efficiency"].values()]
        own = b.get("gpu") or {}
        ok = ok and isinstance(own, dict) and all(isinstance(d, dict) and set(d["latency_s"]) == set(d["efficiency"])
                                                  and set(d["efficiency"]) <= set(b["efficiency"]) for d in own.values())
        vals += [v for d in own.values() for v in (*d["latency_s"].values(), *d["efficiency"].values())]
        ok = ok and all(isinstance(v, (int, float)) and np.isfinite(v) and v > 0 for v in vals)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ArtifactError(f"the bandwidth model {path} is not JSON of a perfmodel bandwidth model ({exc}).") from exc
    if not ok:
        raise ArtifactError(f"the bandwidth model {path} needs positive, finite latency_s and efficiency per class.")
    return b


def bandwidth_model_from_bundle(b: dict) -> BandwidthModel:
    """The :class:`BandwidthModel` of a bundle (:func:`load_bandwidth_bundle`), with the per-GPU ``t0`` and ``eta`` of
    a user's refit (``"gpu"``) where it has them."""
    m = BandwidthModel()
    m.classes_ = sorted(b["efficiency"])
    m.latency_s_ = {k: float(v) for k, v in b["latency_s"].items()}
    m.efficiency_ = {k: float(v) for k, v in b["efficiency"].items()}
    own = b.get("gpu") or {}
    m.gpu_latency_s_ = {(g, c): float(v) for g, d in own.items() for c, v in d["latency_s"].items()}
    m.gpu_efficiency_ = {(g, c): float(v) for g, d in own.items() for c, v in d["efficiency"].items()}
    m.training_devices_ = list(b["training_devices"])
    m.provenance_ = str(b["provenance"])
    m.class_sources_ = {str(k): str(v) for k, v in (b.get("class_sources") or {}).items()}
    return m


def fit_user_bandwidth_bundle(rows: pd.DataFrame, *, key: str) -> dict:
    """The shipped bandwidth model with a ``t0`` and ``eta`` of its own for each GPU and class a user measured in
    half precision (``split_user_rows(...)["half_memory"]``; at least :data:`MIN_OWN_ROWS` rows of the class on the GPU,
    else that class stays the shipped, pooled one). The rows' kernel times are their latencies less the launch
    overhead (:func:`user_kernel_seconds`). ``key`` ties it to the artifact it is
    written beside; returns a bundle :func:`save_bandwidth_bundle` writes."""
    b = dict(load_bandwidth_bundle())
    U = rows.reset_index(drop=True)
    t = user_kernel_seconds(U)
    own: dict = {}
    for (g, c), idx in U.groupby([U["gpu"].astype(str), U["op_class"].astype(str)]).groups.items():
        if len(idx) < MIN_OWN_ROWS:
            continue
        i = np.asarray(idx)
        t0, eta = _fit_class(U["bytes"].to_numpy(float)[i], U["bandwidth_bytes_per_s"].to_numpy(float)[i], t[i])
        d = own.setdefault(g, {"latency_s": {}, "efficiency": {}, "n_rows": {}})
        d["latency_s"][c], d["efficiency"][c], d["n_rows"][c] = t0, eta, int(len(i))
    b["gpu"] = own
    b["provenance"] = (b["provenance"] + f"; plus a user's {len(U)} measured half-precision rows (perfmodel fit --with): "
                       + (", ".join(f"{g} ({', '.join(sorted(d['efficiency']))})" for g, d in sorted(own.items()))
                          or f"no class with {MIN_OWN_ROWS} rows or more on one GPU, nothing refitted"))
    b["key"] = b["fitted_with"] = key
    return b


def user_kernel_seconds(rows: pd.DataFrame) -> np.ndarray:
    """In-stream kernel time of a user's measured rows (:func:`perfmodel.step.op_latency.load_op_rows`): the latency
    less the launch overhead of its GPU and class — the fastest row of that GPU and class less ``KERNEL_MIN_S``, as the
    bandwidth model's NeuSight rows are treated (:func:`perfmodel.step.bandwidth.bandwidth_rows`) — never below
    ``KERNEL_MIN_S``."""
    from perfmodel.step.op_latency import KERNEL_MIN_S

    lat = rows["latency_s"].to_numpy(float)
    overhead = rows.groupby(["gpu", "op_class"])["latency_s"].transform("min").to_numpy(float) - KERNEL_MIN_S
    return np.maximum(lat - np.maximum(overhead, 0.0), KERNEL_MIN_S)


def bandwidth_model() -> BandwidthModel:
    """The shipped :class:`BandwidthModel` (``perfmodel/step/fitted/bandwidth.json``, sha256 pinned): no data mirror,
    no fit."""
    if "shipped" not in _LOADED:
        _LOADED["shipped"] = bandwidth_model_from_bundle(load_bandwidth_bundle())
    return _LOADED["shipped"]
