"""Per-operator latency on any GPU from its spec sheet: a roofline bound scaled by an efficiency learned from measured
microbenchmarks.

For an operator of class *c* (matmul, conv, layer norm, softmax, elementwise) with ``flops`` floating-point operations
(2 per multiply-add) and ``bytes`` of compulsory memory traffic (every input read once, every output written once), on a
GPU with peak rate *P* (FLOP/s at the precision) and memory bandwidth *B* (byte/s)::

    t_roofline = max(flops / P, bytes / B)
    t_kernel   = max(t_roofline · 10 ** f_c(x), KERNEL_MIN_S)     # back to back in a training step
    t_alone    = δ_c + t_kernel                                    # one call timed alone, as a microbenchmark is

A microbenchmark times one call between two CUDA events on an idle GPU (NeuSight's ``collect.py``), so it includes
the host's launch latency δ — Python, dispatcher, ``cudaLaunchKernel`` — which in a training step overlaps the
kernels before it. δ of a class on a training GPU is its fastest measurement less ``KERNEL_MIN_S`` (22-55 µs on
NeuSight's host); for any other GPU, the median over the training GPUs. ``KERNEL_MIN_S`` (5 µs) is the shortest
time a kernel occupies an eager step, where the host issues kernels no faster than that.

``f_c`` is a gradient-boosted regression (scikit-learn's ``HistGradientBoostingRegressor``) of
``log10((t_measured - δ) / t_roofline)`` on features that describe the operator *relative to the GPU* — the roofline time
itself (the launch-overhead regime of small operators), arithmetic intensity over the GPU's ridge point, waves of output
tiles over the SMs and their quantisation, working set over L2, the operator's shape — so that what is learned on some
GPUs transfers to a GPU that was never measured: only its spec sheet (catalog row) is needed. No feature identifies a
GPU by itself: with five training GPUs, a GPU-level feature (the ridge point, or board power per peak FLOP/s) let the
trees memorise the GPUs, and leave-one-GPU-out on the training GPUs chose the feature set without one (time-weighted
matmul error 27–68 % against 42–80 % with the ridge point; :func:`perfmodel.diagnostics.op_model_errors`).

A GPU measured in training also gets a model of its own per class (``per_gpu``): the pooled trees average GPUs that
look alike in the relative features, which put the V100's large GEMMs (84-87 % of peak) at 63-70 % in-sample; every
other GPU is predicted by the pooled model.

The default model (:func:`default_op_model`) is fitted on NeuSight's microbenchmarks (ASPLOS'25, ``load_neusight_microbenchmarks``)
of its five *training* GPUs only — Tesla P4, P100, T4, V100 and A100-PCIe-40GB — never on an end-to-end label and never
on a measurement of a GPU NeuSight tests on (A100-80GB, L4, H100); the estimator records this provenance in
``training_devices_`` and ``provenance_``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

__all__ = ["OP_CLASSES", "NEUSIGHT_OP_CLASS", "TRAINING_GPUS", "op_work", "gpu_columns", "op_design", "OpLatencyModel",
           "neusight_op_frame", "default_op_model", "fitted_bundle", "leave_one_gpu_out",
           "save_bundle", "load_bundle", "load_op_rows", "shipped_artifact_path", "using_op_model", "PRECISION_ITEMSIZE",
           "step_design", "low_precision_rates", "fp4_peak_tflops", "FP8_RATE", "FP4_RATE", "FP8_SPLIT_ACCUMULATION_RATE",
           "FP8_SPLIT_ACCUMULATION_SLOWDOWN", "LIMITED_FP8_ACCUMULATION_ARCHITECTURES", "fp8_split_accumulation_slowdown"]

#: Operator classes of the latency model.
OP_CLASSES = ("matmul", "conv", "layernorm", "softmax", "elementwise")

#: NeuSight's microbenchmark names → operator class (``*u`` are the in-place / one-input variants of a binary op).
NEUSIGHT_OP_CLASS = {"bmm": "matmul", "linear": "matmul", "conv": "conv", "ln": "layernorm", "softmax": "softmax",
                     **{op: "elementwise" for op in ("add", "mul", "div", "pow", "addu", "mulu", "divu", "powu", "relu",
                                                     "gelu", "tanh")}}

#: NeuSight's training GPUs (catalog ids): the only GPUs the default model is fitted on.
TRAINING_GPUS = ("P4", "P100", "T4", "V100-PCIe-32GB", "A100-PCIe-40GB")

#: Shortest time (s) a kernel occupies a training step's stream: an eager PyTorch step issues kernels no faster than
#: its host launches them (a few µs each); also the floor of a measured kernel once its launch overhead is removed.
KERNEL_MIN_S = 5e-6

_TILE = 128  # output tile edge of the large GEMM kernels (cuBLAS sgemm 128x128, cuDNN implicit GEMM)
_BLOCK = 512  # elements per thread block of PyTorch's vectorised elementwise kernels (128 threads x 4)

#: Work columns of :func:`op_work`.
WORK_COLUMNS = ["op_class", "flops", "bytes", "tiles", "dim_m", "dim_n", "dim_k", "dim_b"]
#: GPU columns of :func:`gpu_columns`.
GPU_COLUMNS = ["peak_flops_per_s", "bandwidth_bytes_per_s", "sm_count", "l2_bytes"]


def _num(frame: pd.DataFrame, col: str) -> np.ndarray:
    return pd.to_numeric(frame[col], errors="coerce").to_numpy(float)


def op_work(ops: pd.DataFrame, *, itemsize: int = 4) -> pd.DataFrame:
    """FLOPs, compulsory bytes and output tiles of operators given by class and shape.

    Parameters
    ----------
    ops : DataFrame
        ``op_class`` (one of :data:`OP_CLASSES`) and its shape columns: matmul ``b, m, n, k`` — ``b`` batched products of an
        ``m × n`` by an ``n × k`` matrix (``n`` is the reduction dimension, NeuSight's convention); conv ``b, in_channels,
        out_channels, kernel_size, input_size, stride, padding`` (square images and kernels); layernorm / softmax ``b``
        rows of ``h``; elementwise ``b × h`` elements and ``n_inputs`` (1 or 2 tensors read; default 2).
    itemsize : int
        Bytes per element (4 for FP32).

    Returns
    -------
    DataFrame
        :data:`WORK_COLUMNS`: ``flops`` (2 per multiply-add), ``bytes`` (inputs read once, output written once), ``tiles``
        (128 × 128 output tiles of a GEMM; rows for norms; 512-element blocks for elementwise), ``dim_*`` (the shape as
        a GEMM ``b × (m × n) · (n × k)``).

    Raises
    ------
    ValueError
        An unknown class, or a missing, non-positive or non-finite dimension.
    """
    if "op_class" not in ops.columns:
        raise ValueError(f"ops needs an 'op_class' column (one of {OP_CLASSES}); it has {list(ops.columns)}.")
    cls = ops["op_class"].astype(str).to_numpy()
    bad = sorted(set(cls) - set(OP_CLASSES))
    if bad:
        raise ValueError(f"Unknown op_class {bad}; expected one of {OP_CLASSES}.")
    n = len(ops)
    out = {c: np.full(n, np.nan) for c in WORK_COLUMNS[1:]}

    def need(mask, cols):
        missing = [c for c in cols if c not in ops.columns]
        if missing:
            raise ValueError(f"{sorted(set(cls[mask]))} operators need the columns {cols}; missing {missing}.")
        vals = {c: _num(ops, c)[mask] for c in cols}
        for c, v in vals.items():
            if not (np.isfinite(v) & (v >= (0 if c == "padding" else 1))).all():
                raise ValueError(f"column {c!r} must be a positive number for {sorted(set(cls[mask]))} operators.")
        return vals

    mm = cls == "matmul"
    if mm.any():
        v = need(mm, ["b", "m", "n", "k"])
        b, m, r, k = v["b"], v["m"], v["n"], v["k"]
        out["flops"][mm] = 2 * b * m * r * k
        out["bytes"][mm] = itemsize * b * (m * r + r * k + m * k)
        out["tiles"][mm] = b * np.ceil(m / _TILE) * np.ceil(k / _TILE)
        out["dim_b"][mm], out["dim_m"][mm], out["dim_n"][mm], out["dim_k"][mm] = b, m, r, k
    cv = cls == "conv"
    if cv.any():
        v = need(cv, ["b", "in_channels", "out_channels", "kernel_size", "input_size", "stride", "padding"])
        b, ci, co, r, h = v["b"], v["in_channels"], v["out_channels"], v["kernel_size"], v["input_size"]
        ho = np.floor((h + 2 * v["padding"] - r) / v["stride"]) + 1
        if (ho < 1).any():
            raise ValueError("conv operators with a kernel larger than the padded input (no output pixel).")
        gm, gk, gn = b * ho * ho, co, ci * r * r  # implicit GEMM: (b·Ho²) × (Ci·R²) by (Ci·R²) × Co
        out["flops"][cv] = 2 * gm * gk * gn
        out["bytes"][cv] = itemsize * (b * ci * h * h + co * ci * r * r + b * co * ho * ho)
        out["tiles"][cv] = np.ceil(gm / _TILE) * np.ceil(gk / _TILE)
        out["dim_b"][cv], out["dim_m"][cv], out["dim_n"][cv], out["dim_k"][cv] = 1, gm, gn, gk
    rows = np.isin(cls, ["layernorm", "softmax"])
    if rows.any():
        v = need(rows, ["b", "h"])
        numel = v["b"] * v["h"]
        out["flops"][rows] = np.where(cls[rows] == "layernorm", 8, 5) * numel  # mean, variance, scale, shift / max, exp, sum, divide
        out["bytes"][rows] = itemsize * (2 * numel + np.where(cls[rows] == "layernorm", 2 * v["h"], 0))
        out["tiles"][rows] = v["b"]
        out["dim_b"][rows], out["dim_m"][rows], out["dim_n"][rows], out["dim_k"][rows] = 1, v["b"], 1, v["h"]
    ew = cls == "elementwise"
    if ew.any():
        v = need(ew, ["b", "h"])
        numel = v["b"] * v["h"]
        n_in = _num(ops, "n_inputs")[ew] if "n_inputs" in ops.columns else np.full(ew.sum(), 2.0)
        if not np.isin(n_in, [1, 2]).all():
            raise ValueError("n_inputs of an elementwise operator must be 1 or 2.")
        out["flops"][ew] = numel
        out["bytes"][ew] = itemsize * numel * (n_in + 1)
        out["tiles"][ew] = np.ceil(numel / _BLOCK)
        out["dim_b"][ew], out["dim_m"][ew], out["dim_n"][ew], out["dim_k"][ew] = 1, v["b"], 1, v["h"]
    return pd.DataFrame({"op_class": cls, **out}, index=ops.index)


def gpu_columns(gpus, *, precision: str = "fp32") -> pd.DataFrame:
    """The spec-sheet columns the model needs, one row per entry of ``gpus`` (catalog ids, device names or specs).

    Returns ``gpu`` (canonical id) and :data:`GPU_COLUMNS`: peak FLOP/s at ``precision``, memory bandwidth (byte/s),
    SM count, L2 (bytes).
    """
    from perfmodel.datasets import gpu_spec, peak_tflops

    rows = []
    cache: dict = {}
    for g in gpus:
        key = g if isinstance(g, str) else id(g)
        if key not in cache:
            s = gpu_spec(g)
            cache[key] = dict(gpu=s.gpu, peak_flops_per_s=peak_tflops(s, precision) * 1e12,
                              bandwidth_bytes_per_s=float(s.memory_bandwidth_gb_per_s) * 1e9, sm_count=float(s.sm_count),
                              l2_bytes=float(s.l2_mib) * 2**20)
        rows.append(cache[key])
    return pd.DataFrame(rows)


def op_design(work: pd.DataFrame, gpu: pd.DataFrame) -> pd.DataFrame:
    """Model inputs: :func:`op_work` columns and :func:`gpu_columns` columns side by side (same length), plus ``gpu``."""
    if len(work) != len(gpu):
        raise ValueError(f"work and gpu must have one row each per operator; got {len(work)} and {len(gpu)}.")
    return pd.concat([work.reset_index(drop=True), gpu.reset_index(drop=True)], axis=1)


def _roofline_s(X: pd.DataFrame) -> np.ndarray:
    return np.maximum(X["flops"].to_numpy(float) / X["peak_flops_per_s"].to_numpy(float),
                      X["bytes"].to_numpy(float) / X["bandwidth_bytes_per_s"].to_numpy(float))


def _features(X: pd.DataFrame) -> np.ndarray:
    f = {c: X[c].to_numpy(float) for c in ("flops", "bytes", "tiles", "dim_m", "dim_n", "dim_k", "dim_b", *GPU_COLUMNS)}
    t = _roofline_s(X)
    ridge = f["peak_flops_per_s"] / f["bandwidth_bytes_per_s"]
    waves = f["tiles"] / f["sm_count"]
    quant = f["tiles"] / (np.ceil(waves) * f["sm_count"])
    return on_feature_grid(np.column_stack([
        np.log10(t), np.log10(f["flops"] / f["bytes"] / ridge), np.log10(waves), quant, np.log10(f["bytes"] / f["l2_bytes"]),
        np.log10(f["dim_m"]), np.log10(f["dim_n"]), np.log10(f["dim_k"]), np.log10(f["dim_b"]),
    ]))


#: Features are rounded to multiples of 1 / FEATURE_GRID (2**-32: 2.3e-10 in log10 units, far below any split the trees
#: make) before a tree sees them, at fit and at prediction time.
FEATURE_GRID = 2.0 ** 32


def on_feature_grid(F: np.ndarray) -> np.ndarray:
    """``F`` rounded to the nearest multiple of ``1 / FEATURE_GRID`` — with exact operations only (a power-of-two
    scale and round-half-even), so the same on every machine.

    numpy's ``log10`` is vectorised differently by CPU (AVX-512 against AVX2 builds of the same wheel) and may differ in
    the last bit. A tree's split thresholds lie between (or on) training features, and a prediction for a shape of the
    training set itself (a 1024 x 64 elementwise kernel) can sit exactly on one: a last-bit difference then takes the
    other branch — GPT-2's step on a T4 came out 3e-5 slower on an AVX2 machine than on the AVX-512 one it was recorded
    on. On the grid, two machines' features agree unless a value falls within one ulp of a grid midpoint."""
    return np.round(F * FEATURE_GRID) / FEATURE_GRID


class OpLatencyModel(RegressorMixin, BaseEstimator):
    """Operator latency (s) = roofline time × a learned efficiency factor per operator class.

    Parameters
    ----------
    max_iter, learning_rate, max_leaf_nodes : 
        Of each class's ``HistGradientBoostingRegressor``.
    random_state : int
        Seed of the boosting (its early-stopping split).
    per_gpu : bool
        Also fit one model per training GPU and class (when ``X`` has a ``gpu`` column and the GPU has at least
        ``min_gpu_rows`` rows of the class), used for that GPU — identified by its id *and* its spec columns — at
        prediction. A GPU measured in training is then predicted from its own measurements, as accurately as they
        allow; every other GPU from the pooled model, which transfers through the GPU-relative features. The pooled
        model alone would average the efficiencies of GPUs that look alike in those features: in-sample, the V100's
        large GEMMs (84-87 % of peak) came out at 63-70 %.
    min_gpu_rows : int
        Fewest rows of a class for a GPU's own model.

    Attributes
    ----------
    classes_ : list of str
        Operator classes seen in training (a class never seen cannot be predicted).
    training_devices_ : list of str
        GPUs of the training rows (the ``gpu`` column of ``X``): the provenance test reads it.
    provenance_ : str
        What the model was fitted on (set by :func:`default_op_model`; "user data" otherwise).
    """

    def __init__(self, max_iter=300, learning_rate=0.1, max_leaf_nodes=31, random_state=0, per_gpu=True, min_gpu_rows=200):
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.max_leaf_nodes = max_leaf_nodes
        self.random_state = random_state
        self.per_gpu = per_gpu
        self.min_gpu_rows = min_gpu_rows

    def _boost(self):
        from sklearn.ensemble import HistGradientBoostingRegressor

        return HistGradientBoostingRegressor(max_iter=self.max_iter, learning_rate=self.learning_rate,
                                             max_leaf_nodes=self.max_leaf_nodes, random_state=self.random_state)

    @staticmethod
    def _gpu_keys(X: pd.DataFrame) -> np.ndarray:
        """One key per row: the GPU id with its spec columns (a spec that differs from the measured GPU's is another GPU)."""
        ids = X["gpu"].astype(str).tolist() if "gpu" in X.columns else [""] * len(X)
        rows = list(zip(ids, *X[GPU_COLUMNS].to_numpy(float).T.tolist()))
        fmt = {u: f"{u[0]}|" + ",".join(f"{v:.6g}" for v in u[1:]) for u in dict.fromkeys(rows)}  # once per GPU
        return np.array([fmt[r] for r in rows], dtype=object)

    def _check_X(self, X) -> pd.DataFrame:
        if not isinstance(X, pd.DataFrame):
            raise TypeError(f"OpLatencyModel takes the DataFrame of perfmodel.step.op_latency.op_design; got {type(X).__name__}.")
        need = ["op_class", *WORK_COLUMNS[1:], *GPU_COLUMNS]
        missing = [c for c in need if c not in X.columns]
        if missing:
            raise ValueError(f"X lacks the columns {missing} (build it with op_design(op_work(...), gpu_columns(...))).")
        num = X[need[1:]].to_numpy(float)
        if not (np.isfinite(num).all() and (num > 0).all()):
            raise ValueError("X's work and GPU columns must be positive and finite (an operator with no work has no latency).")
        return X

    def fit(self, X, y):
        X = self._check_X(X)
        y = np.asarray(y, dtype=float).ravel()
        if y.shape[0] != len(X) or not (np.isfinite(y).all() and (y > 0).all()):
            raise ValueError("y must hold one positive, finite latency in seconds per row of X.")
        cls = X["op_class"].astype(str).to_numpy()
        keys = self._gpu_keys(X)
        self.classes_ = sorted(set(cls))
        # Launch overhead inside each measurement: NeuSight times one call between two CUDA events on an idle GPU, so a
        # measured latency is the host's launch latency (Python, dispatcher, cudaLaunchKernel) plus the kernel. Its floor
        # (the fastest measurement of a class on a GPU, less the shortest kernel) estimates that overhead.
        self.launch_overhead_s_ = {}
        for c in self.classes_:
            for k in sorted(set(keys[cls == c])):
                m = (keys == k) & (cls == c)
                if m.sum() >= self.min_gpu_rows:
                    self.launch_overhead_s_[(k, c)] = max(float(y[m].min()) - KERNEL_MIN_S, 0.0)
        pooled = {c: float(np.median([v for (_, cc), v in self.launch_overhead_s_.items() if cc == c] or [0.0]))
                  for c in self.classes_}
        # convolutions are measured from their smallest realistic shape, not from an empty one: their floor is a
        # kernel, so they take the matmul's overhead (both are module calls of one kernel)
        if "conv" in pooled and "matmul" in pooled:
            pooled["conv"] = pooled["matmul"]
            for (k, c) in list(self.launch_overhead_s_):
                if c == "conv":
                    self.launch_overhead_s_[(k, c)] = self.launch_overhead_s_.get((k, "matmul"), pooled["matmul"])
        self.launch_overhead_pooled_s_ = pooled
        # what is learned is the kernel's time (the latency less that overhead) relative to the roofline
        kernel = np.maximum(y - self._overhead(keys, cls), KERNEL_MIN_S)
        target = np.log10(kernel / _roofline_s(X))
        feats = _features(X)
        from threadpoolctl import threadpool_limits

        # One OpenMP thread: the fitted trees do not depend on the thread count, and on a busy machine OpenMP's
        # spinning threads made fits 5-10x slower than one thread (a refit: 30 s with one thread, > 240 s without)
        with threadpool_limits(1, user_api="openmp"):
            self.models_ = {c: self._boost().fit(feats[cls == c], target[cls == c]) for c in self.classes_}
            self.gpu_models_ = {}
            if self.per_gpu and "gpu" in X.columns:
                for k in sorted(set(keys)):
                    if k.startswith("|"):
                        continue
                    for c in self.classes_:
                        m = (keys == k) & (cls == c)
                        if m.sum() >= self.min_gpu_rows:
                            self.gpu_models_[(k, c)] = self._boost().fit(feats[m], target[m])
        self.training_devices_ = sorted(set(X["gpu"].astype(str))) if "gpu" in X.columns else []
        self.n_training_rows_ = {c: int((cls == c).sum()) for c in self.classes_}
        self.provenance_ = "user data"
        return self

    def _overhead(self, keys, cls) -> np.ndarray:
        own = getattr(self, "launch_overhead_s_", {})
        pooled = getattr(self, "launch_overhead_pooled_s_", {})
        return np.array([own.get((k, c), pooled.get(c, 0.0)) for k, c in zip(keys, cls)], dtype=float)

    def _kernel_s(self, X) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(kernel time, keys, classes) of each row: roofline x the learned factor."""
        check_is_fitted(self, "models_")
        X = self._check_X(X)
        cls = X["op_class"].astype(str).to_numpy()
        unseen = sorted(set(cls) - set(self.classes_))
        if unseen:
            raise ValueError(f"OpLatencyModel was not fitted on the operator class(es) {unseen}; it knows {self.classes_}.")
        feats = _features(X)
        out = _roofline_s(X)
        own = getattr(self, "gpu_models_", {})
        keys = self._gpu_keys(X)
        # One thread: a step has a few thousand operators, and OpenMP's thread start-up per call costs more than the
        # trees (seconds on a loaded machine); scikit-learn's predictions do not depend on the thread count.
        with _one_openmp_thread():
            for c in self.classes_:
                m = cls == c
                if not m.any():
                    continue
                pooled = m.copy()
                for k in set(keys[m]) if own else ():
                    if (k, c) in own:
                        mk = m & (keys == k)
                        out[mk] = out[mk] * 10 ** own[(k, c)].predict(feats[mk])
                        pooled &= ~mk
                if pooled.any():
                    out[pooled] = out[pooled] * 10 ** self.models_[c].predict(feats[pooled])
        return np.maximum(out, KERNEL_MIN_S), keys, cls

    def predict(self, X) -> np.ndarray:
        """Latency (s) of each operator measured alone, as a microbenchmark times it: the launch overhead of a call
        (``launch_overhead_s_`` of a measured GPU and class; the median over the training GPUs for any other GPU) plus
        the kernel (:meth:`predict_in_stream`)."""
        k, keys, cls = self._kernel_s(X)
        return k + self._overhead(keys, cls)

    def predict_in_stream(self, X) -> np.ndarray:
        """Kernel time (s) of each operator when it runs back to back with others on a busy GPU, as in a training step:
        roofline x the learned factor, without the launch overhead an isolated measurement carries, never below
        :data:`KERNEL_MIN_S`."""
        return self._kernel_s(X)[0]

    def measured_gpus(self, X) -> np.ndarray:
        """For each row of ``X``, whether its GPU (id and spec) has its own model (was measured in training)."""
        check_is_fitted(self, "models_")
        X = self._check_X(X)
        own = {k for k, _ in getattr(self, "gpu_models_", {})}
        return np.array([k in own for k in self._gpu_keys(X)], dtype=bool)


_OPENMP: list = []


def _one_openmp_thread():
    """A context that runs OpenMP on one thread (tree predictions). threadpoolctl's controller, which looks up the
    loaded native libraries (milliseconds per call), is made once per process, after scikit-learn's trees are loaded."""
    if not _OPENMP:
        import sklearn.ensemble  # noqa: F401  (loads the OpenMP runtime the trees use, before the controller looks)
        from threadpoolctl import ThreadpoolController

        _OPENMP.append(ThreadpoolController())
    return _OPENMP[0].limit(limits=1, user_api="openmp")


def neusight_op_frame(split: str | None = "train", devices=None) -> pd.DataFrame:
    """NeuSight's microbenchmarks as model rows: :func:`op_design` columns, ``gpu`` (catalog id), ``device`` (NeuSight's
    name), ``op``, ``split`` and the measured ``latency_s``."""
    from perfmodel.datasets import canonical_gpu, load_neusight_microbenchmarks

    m = load_neusight_microbenchmarks(split=split)
    if devices is not None:
        want = {canonical_gpu(d) for d in devices}
        m = m[[canonical_gpu(d) in want for d in m["device"]]]
    m = m[m["op"].isin(list(NEUSIGHT_OP_CLASS))].reset_index(drop=True)
    return _microbenchmark_rows(m, m["split"].to_numpy())


def _microbenchmark_rows(m: pd.DataFrame, split) -> pd.DataFrame:
    """Model rows of microbenchmarks in NeuSight's schema (``device``, ``op``, ``latency_ms``, shape columns):
    :func:`op_design` columns (``gpu`` the catalog id), ``device``, ``op``, ``split`` and ``latency_s``."""
    ops = m.assign(op_class=m["op"].map(NEUSIGHT_OP_CLASS),
                   n_inputs=np.where(m["op"].isin(["add", "mul", "div", "pow"]), 2, 1))
    if "precision" in m.columns:  # a user's rows (perfmodel measure ops): each featurised at its own precision
        X = _design_at_precision(ops, m["device"].astype(str).to_numpy(), m["precision"].astype(str).to_numpy())
    else:  # NeuSight's rows: FP32
        X = op_design(op_work(ops), gpu_columns(m["device"].astype(str).tolist()))
    X["device"], X["op"], X["split"] = m["device"].to_numpy(), m["op"].to_numpy(), split
    if "precision" in m.columns:
        X["precision"] = m["precision"].astype(str).to_numpy()
    X["latency_s"] = pd.to_numeric(m["latency_ms"]).to_numpy(float) / 1e3
    return X


#: Bytes per element of each precision a measured row may have (``precision`` column of :func:`load_op_rows`).
PRECISION_ITEMSIZE = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2}


def _design_at_precision(ops: pd.DataFrame, devices: np.ndarray, precisions: np.ndarray) -> pd.DataFrame:
    """:func:`op_design` of rows measured at the given precisions, featurised as a prediction at that precision is
    (:func:`perfmodel.step.step_time.predict_step_time`): elements of the precision's size, GEMMs and convolutions
    at the GPU's matrix-unit rate (``matmul_peak_tflops``), the other classes at its FP32 vector rate."""
    from perfmodel.datasets import gpu_spec, matmul_peak_tflops

    parts = []
    for p in sorted(set(precisions)):
        rows = np.flatnonzero(precisions == p)
        sub = ops.iloc[rows]
        work = op_work(sub, itemsize=PRECISION_ITEMSIZE[p])
        cols = gpu_columns(devices[rows].tolist(), precision="fp32")
        mm = sub["op_class"].isin(["matmul", "conv"]).to_numpy()
        peak = {d: matmul_peak_tflops(gpu_spec(d), p) * 1e12 for d in set(devices[rows][mm])}
        cols.loc[mm, "peak_flops_per_s"] = [peak[d] for d in devices[rows][mm]]
        parts.append(op_design(work, cols).set_axis(rows))
    return pd.concat(parts).sort_index().reset_index(drop=True)


def leave_one_gpu_out(X: pd.DataFrame, *, params: dict | None = None, on_fit=None, models: dict | None = None) -> np.ndarray:
    """Latency (s) of every row of ``X`` (:func:`neusight_op_frame` rows) predicted by a model fitted on the rows of
    the other GPUs. Each operator class is fitted on its own rows, so the predictions of a class do not depend on
    which other classes ``X`` holds. ``params``: :class:`OpLatencyModel` parameters; ``on_fit``: called after each fit;
    ``models``: a dict that receives each held-out GPU's model."""
    out = np.empty(len(X))
    gpus = X["gpu"].to_numpy()
    for g in sorted(set(gpus)):
        held = gpus == g
        # the held-out GPU is predicted by the pooled model (it has no model of its own): no per-GPU fits needed
        model = OpLatencyModel(**{**(params or {}), "per_gpu": False}).fit(X[~held], X.loc[~held, "latency_s"])
        out[held] = model.predict(X[held])
        if models is not None:
            models[g] = model
        if on_fit is not None:
            on_fit()
    return out


def _cache_key(extra_sha256: str = "") -> str:
    """Hash of what a fitted operator model depends on: the code version (:data:`MODEL_VERSION`), the sha256 of every
    NeuSight microbenchmark file of the training split, and the sha256 of a user's extra rows (if any). scikit-learn's
    version is not part of it: the artifact holds the trees as arrays and is read without scikit-learn's code."""
    import hashlib

    from perfmodel.datasets import registry

    reg = registry()
    train = reg[reg["key"].str.contains("/data/dataset/train/collect/", regex=False)].sort_values("key")
    h = hashlib.sha256(f"{MODEL_VERSION}".encode())
    for k, sha in zip(train["key"], train["sha256"]):
        h.update(f"{k}={sha};".encode())
    if extra_sha256:
        h.update(f"extra={extra_sha256};".encode())
    return h.hexdigest()[:16]


#: Version of the fitting code: part of the key of a fitted model (bump when the model changes, then rebuild the
#: shipped artifact with ``perfmodel fit --out perfmodel/step/fitted/op_latency.npz`` and pin its new sha256).
MODEL_VERSION = "8"

#: The fitted default model shipped in the package (:func:`fitted_bundle`) and the sha256 its bytes must have.
SHIPPED_ARTIFACT = "fitted/op_latency.npz"
SHIPPED_SHA256 = "95fcf9d5641d54ce66a3ba7d857f80b238bf82c58064be99c66626c727cbd947"

#: Environment variable naming a user's refit (written by ``perfmodel fit --with ...``) to use instead of the shipped model.
ENV_OP_MODEL = "PERFMODEL_OP_MODEL"

_DEFAULT: dict = {}


def _provenance(X: pd.DataFrame, extra_rows: int, extra_name: str) -> str:
    base = (f"NeuSight microbenchmarks (sitar-lab/NeuSight @ 6945927, scripts/asplos/data/dataset/train), "
            f"{len(X) - extra_rows} rows of {', '.join(TRAINING_GPUS)}; no end-to-end label, no test GPU")
    if extra_rows:
        base += f"; plus {extra_rows} user rows from {extra_name} ({', '.join(sorted(set(X['gpu'].iloc[len(X) - extra_rows:])))})"
    return base


def load_op_rows(path) -> pd.DataFrame:
    """A user's operator measurements in NeuSight's microbenchmark schema (the columns of
    :func:`perfmodel.datasets.load_neusight_microbenchmarks`) as model rows (:func:`neusight_op_frame` columns). Needs
    ``device`` (a GPU :func:`perfmodel.datasets.gpu_spec` knows, e.g. as ``torch.cuda.get_device_name()`` spells it),
    ``op``, ``latency_ms`` and the op's shape columns; other columns are ignored, except ``precision`` (``fp32``,
    ``tf32``, ``bf16``, ``fp16``; what ``perfmodel measure ops`` writes): a row is then featurised at its precision
    (:data:`PRECISION_ITEMSIZE` bytes per element, GEMMs and convolutions at the GPU's matrix-unit rate for it); without
    it every row is FP32, as NeuSight's are. Rows measured on a CPU are refused."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no operator measurements at {path}: give a CSV in NeuSight's microbenchmark schema "
                                "(device, op, latency_ms and the shape columns of perfmodel.datasets.load_neusight_microbenchmarks).")
    try:
        m = pd.read_csv(path)
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise ValueError(f"{path} is not a CSV of operator measurements ({exc}); expected a UTF-8 CSV with the columns "
                         "device, op, latency_ms and the shape columns of each op.") from exc
    missing = [c for c in ("device", "op", "latency_ms") if c not in m.columns]
    if missing:
        raise ValueError(f"{path} lacks the columns {missing}; expected device, op, latency_ms and the op's shape columns.")
    unknown = sorted(set(m["op"]) - set(NEUSIGHT_OP_CLASS))
    if unknown:
        raise ValueError(f"{path} has operators {unknown} the model does not know; expected some of {sorted(NEUSIGHT_OP_CLASS)}.")
    lat = pd.to_numeric(m["latency_ms"], errors="coerce").to_numpy(float)
    if not (np.isfinite(lat) & (lat > 0)).all():
        raise ValueError(f"{path}: every latency_ms must be a positive number; {int((~(np.isfinite(lat) & (lat > 0))).sum())} are not.")
    cpu = sorted({str(d) for d in m["device"] if str(d).upper().startswith("CPU")})
    if cpu:
        raise ValueError(f"{path} has rows measured on a CPU ({', '.join(cpu)}); the operator model predicts GPUs and is "
                         "calibrated with GPU measurements only. Measure on a GPU (perfmodel measure ops --device cuda, or "
                         "--sky to rent one) or leave these rows out.")
    if "precision" in m.columns:
        bad = sorted(set(m["precision"].astype(str)) - set(PRECISION_ITEMSIZE))
        if bad:
            raise ValueError(f"{path} has precision(s) {bad}; expected some of {list(PRECISION_ITEMSIZE)} (the column "
                             "perfmodel measure ops writes; leave it out for FP32 rows).")
    return _microbenchmark_rows(m.reset_index(drop=True), "user")


_OVERRIDE: list = []


class using_op_model:
    """Context manager: predict with ``model`` instead of the default operator model (the calibration's held-out fits)."""

    def __init__(self, model, step_scores: pd.DataFrame | None = None):
        self.model = model
        self.step_scores = step_scores

    def __enter__(self):
        _OVERRIDE.append(self)
        return self.model

    def __exit__(self, *exc):
        _OVERRIDE.pop()
        return False


def bundle_arrays(bundle: dict) -> tuple[dict, dict]:
    """The (header, arrays) of a fitted bundle: what :func:`save_bundle` writes (numbers and JSON only)."""
    from perfmodel.step._artifact import from_sklearn

    m = bundle["model"]
    arrays, trees = {}, []

    def put(name, est):
        ens = est if hasattr(est, "offsets") else from_sklearn(est)
        arrays.update(ens.arrays(f"tree{len(trees)}"))
        trees.append({"name": name, "prefix": f"tree{len(trees)}", "baseline": ens.baseline, "n_trees": ens.n_trees})

    for c in m.classes_:
        put(["pooled", c], m.models_[c])
    for (k, c) in sorted(m.gpu_models_):
        put(["gpu", k, c], m.gpu_models_[(k, c)])
    arrays["logo_predictions"] = np.asarray(bundle["logo_predictions"], dtype=np.float64)
    steps = bundle.get("step_scores")
    if steps is not None and len(steps):
        for c in ("seq_len", "batch_size"):
            arrays[f"step_scores/{c}"] = steps[c].to_numpy(np.int64)
        for c in ("measured_s", "predicted_s", "score"):
            arrays[f"step_scores/{c}"] = steps[c].to_numpy(np.float64)
    header = {  # the name the artifact records (kept from before the step model had its own package: shipped files stay byte-identical; the old module path is an alias)
        "model": "perfmodel.models.op_latency.OpLatencyModel", "model_version": MODEL_VERSION, "key": bundle["key"],
        "params": m.get_params(), "classes": list(m.classes_), "training_devices": list(m.training_devices_),
        "n_training_rows": m.n_training_rows_, "provenance": m.provenance_,
        "launch_overhead_s": [[k, c, v] for (k, c), v in sorted(m.launch_overhead_s_.items())],
        "launch_overhead_pooled_s": m.launch_overhead_pooled_s_,
        "scores": {g: float(v) for g, v in bundle["scores"].items()}, "trees": trees,
        "fitted_with": bundle.get("fitted_with", ""), "sklearn_version": bundle.get("sklearn_version", ""),
        "step_scores": {c: [str(v) for v in steps[c]] for c in ("gpu", "model", "mode")} if steps is not None and len(steps) else {},
    }
    return header, arrays


def bundle_from_arrays(header: dict, arrays: dict) -> dict:
    """Rebuild a fitted bundle from an artifact's (header, arrays): the model predicts bit for bit as it did fitted."""
    from perfmodel.step._artifact import ArtifactError, TreeEnsemble, check_bundle

    # every field and array checked before use (a matching .sha256 proves no more than that the file is unaltered);
    # 9 features: the columns of _features (tests/models/test_artifact_hardening.py checks)
    check_bundle(header, arrays, model_version=MODEL_VERSION, params=OpLatencyModel().get_params(), n_features=9)
    if header.get("model_version") != MODEL_VERSION:
        raise ArtifactError(f"the fitted operator model is of version {header.get('model_version')!r}; this perfmodel "
                            f"needs version {MODEL_VERSION!r}. Rebuild it with `perfmodel fit`.")
    m = OpLatencyModel(**header["params"])
    m.classes_ = list(header["classes"])
    m.models_, m.gpu_models_ = {}, {}
    for t in header["trees"]:
        ens = TreeEnsemble.from_arrays(arrays, t["prefix"], t["baseline"])
        if t["name"][0] == "pooled":
            m.models_[t["name"][1]] = ens
        else:
            m.gpu_models_[(t["name"][1], t["name"][2])] = ens
    m.launch_overhead_s_ = {(k, c): float(v) for k, c, v in header["launch_overhead_s"]}
    m.launch_overhead_pooled_s_ = {c: float(v) for c, v in header["launch_overhead_pooled_s"].items()}
    m.training_devices_ = list(header["training_devices"])
    m.n_training_rows_ = dict(header["n_training_rows"])
    m.provenance_ = header["provenance"]
    scores = pd.Series(header["scores"], name="abs_log_ratio", dtype=float)
    text = header.get("step_scores") or {}
    steps = pd.DataFrame({**text, **{c: arrays[f"step_scores/{c}"] for c in ("seq_len", "batch_size", "measured_s",
                                                                             "predicted_s", "score") if text}})
    return {"model": m, "scores": scores, "logo_predictions": arrays["logo_predictions"], "step_scores": steps, "key": header["key"],
            "fitted_with": header.get("fitted_with", ""), "sklearn_version": header.get("sklearn_version", "")}


def save_bundle(bundle: dict, path) -> str:
    """Write a fitted bundle as an artifact (atomically; ``<path>.sha256`` beside it). Returns its sha256."""
    from perfmodel.step import _artifact
    header, arrays = bundle_arrays(bundle)
    return _artifact.save(path, header, arrays)


def load_bundle(path, *, sha256: str | None = None) -> dict:
    """Read a fitted bundle written by :func:`save_bundle` (or the shipped one), after checking its sha256."""
    from perfmodel.step import _artifact
    return bundle_from_arrays(*_artifact.load(path, sha256=sha256))


def shipped_artifact_path() -> Path:
    """Path of the fitted default model inside the installed package."""
    return Path(__file__).resolve().parent / SHIPPED_ARTIFACT


def fitted_bundle() -> dict:
    """The operator model perfmodel predicts with, and its leave-one-GPU-out calibration scores — read, never fitted.

    The model shipped in the package (``perfmodel/step/fitted/op_latency.npz``; numbers and JSON only, its sha256
    pinned in :data:`SHIPPED_SHA256`), or a user's refit named by the environment variable ``PERFMODEL_OP_MODEL``
    (written by ``perfmodel fit``; its sha256 checked against the ``.sha256`` written beside it). Read once per process.

    Returns ``{"model": OpLatencyModel, "scores": Series, "logo_predictions": ndarray, "key": str}``: the
    leave-one-GPU-out predictions of every row of ``neusight_op_frame("train", devices=TRAINING_GPUS)``
    (:func:`leave_one_gpu_out`) and from them the scores ``|log(Σ predicted / Σ measured)|`` of each training GPU held out.
    """
    import os

    user = os.environ.get(ENV_OP_MODEL, "")
    mem_key = f"user:{user}" if user else "shipped"
    if mem_key not in _DEFAULT:
        if user:
            _DEFAULT[mem_key] = load_bundle(Path(user).expanduser())
        else:
            _DEFAULT[mem_key] = load_bundle(shipped_artifact_path(), sha256=SHIPPED_SHA256)
    return _DEFAULT[mem_key]
def default_op_model() -> OpLatencyModel:
    """The operator model perfmodel ships: fitted on NeuSight's microbenchmarks of its five training GPUs
    (:data:`TRAINING_GPUS`, ``train`` split) and nothing else; read from the package (:func:`fitted_bundle`), never
    fitted at prediction time. Inside ``with using_op_model(m):``, the model ``m``."""
    if _OVERRIDE:
        return _OVERRIDE[-1].model
    return fitted_bundle()["model"]


def interval_step_scores() -> pd.DataFrame | None:
    """The step scores the intervals are calibrated on (:func:`step_calibration`): the default model's, or those given
    to the active :class:`using_op_model` (None there: no interval, as in a calibration run itself)."""
    if _OVERRIDE:
        return _OVERRIDE[-1].step_scores
    return fitted_bundle().get("step_scores")


#: codes of :func:`low_precision_rates`: a GEMM at the GPU's FP8 rate, at its FP4 rate, and at its FP8 rate with split
#: accumulation (:data:`FP8_SPLIT_ACCUMULATION_SLOWDOWN`).
FP8_RATE, FP4_RATE, FP8_SPLIT_ACCUMULATION_RATE = 1, 2, 3

#: How much slower an FP8 GEMM runs with split accumulation than with fast accumulation on a GPU whose FP8 tensor cores
#: accumulate in limited precision (:data:`LIMITED_FP8_ACCUMULATION_ARCHITECTURES`). There cuBLAS's FP8 GEMM either
#: keeps its partial sums in the tensor cores' accumulator ("fast accumulation", ``CUBLASLT_MATMUL_DESC_FAST_ACCUM``,
#: ``torch._scaled_mm(use_fast_accum=True)``) or periodically promotes them to FP32 on the CUDA cores ("split
#: accumulator"), which costs time. The training stacks promote in the backward pass only: torchao's ``Float8Linear``
#: (every recipe: ``gemm_config_output`` fast, ``gemm_config_grad_input`` and ``gemm_config_grad_weight`` not;
#: ``torchao/float8/config.py`` at eab345c, December 2024, and 6243040, June 2025) and Transformer Engine
#: (``_2X_ACC_FPROP = False``, ``_2X_ACC_DGRAD = _2X_ACC_WGRAD = True`` in ``transformer_engine/pytorch/module/base.py``).
#: The factor is the middle of the 1.1-1.2x speed-up that enabling fast accumulation gives torchao's FP8 GEMMs on an
#: H100 (https://github.com/pytorch/ao/issues/2377, June 2025, its benchmark; the maintainers' reply confirms the
#: trade-off). A stated constant, not fitted on any training step; it divides the FP8 rate of the backward FP8 GEMMs,
#: so a memory-bound one is barely slowed.
FP8_SPLIT_ACCUMULATION_SLOWDOWN = 1.15

#: Architectures (the catalog's ``architecture`` column, its first word) whose FP8 tensor cores accumulate in limited
#: precision, so that split accumulation costs time: Ada and Hopper (DeepSeek-V3's technical report, section 3.3.2,
#: measures about 14 bits on an H800). Blackwell's accumulate in full precision (cuBLAS has no fast-accumulation mode on
#: sm_100), AMD's MFMA in FP32.
LIMITED_FP8_ACCUMULATION_ARCHITECTURES = ("Ada", "Hopper")


def fp8_split_accumulation_slowdown(spec) -> float:
    """:data:`FP8_SPLIT_ACCUMULATION_SLOWDOWN` on a GPU of :data:`LIMITED_FP8_ACCUMULATION_ARCHITECTURES`, 1 elsewhere."""
    arch = str(getattr(spec, "architecture", "") or "").split()
    return FP8_SPLIT_ACCUMULATION_SLOWDOWN if arch and arch[0] in LIMITED_FP8_ACCUMULATION_ARCHITECTURES else 1.0


def low_precision_rates(work: pd.DataFrame) -> np.ndarray:
    """Per work row, the rate its GEMM runs at in an FP8 step (int8): 0 the step's own (BF16), :data:`FP8_RATE` for the
    forward rows the ``fp8`` column marks (:func:`perfmodel.step.trace.fp8_work`, ``te_fp8_work``; a recomputed forward
    GEMM too), :data:`FP8_SPLIT_ACCUMULATION_RATE` for its backward rows (the input- and weight-gradient GEMMs, which
    torchao and Transformer Engine run with split accumulation) and for the forward ones the ``fp8_split`` column marks
    (Transformer Engine's FP8 block scaling splits all three), :data:`FP4_RATE` for those the ``fp4`` column marks
    (Transformer Engine's NVFP4 recipe)."""
    out = work["fp8"].to_numpy(bool).astype(np.int8) if "fp8" in work.columns else np.zeros(len(work), np.int8)
    if "phase" in work.columns and out.any():
        out[(out == FP8_RATE) & (work["phase"].astype(str) == "backward").to_numpy()] = FP8_SPLIT_ACCUMULATION_RATE
    if "fp8_split" in work.columns and out.any():  # a recipe that splits the forward GEMMs' accumulation too
        split = work["fp8_split"].astype(object).where(work["fp8_split"].notna(), False).astype(bool).to_numpy()
        out[(out == FP8_RATE) & split] = FP8_SPLIT_ACCUMULATION_RATE
    if "fp4" in work.columns:
        out[work["fp4"].to_numpy(bool)] = FP4_RATE
    return out


def fp4_peak_tflops(spec) -> float:
    """The dense FP4 tensor-core rate of a GPU (TFLOPS), for the GEMMs of Transformer Engine's NVFP4 recipe; a
    ``UnsupportedPrecisionError`` where the GPU has none."""
    v = float(getattr(spec, "fp4_peak_tflops", np.nan))
    if not np.isfinite(v) or v <= 0:
        from perfmodel.datasets import UnsupportedPrecisionError

        raise UnsupportedPrecisionError(f"{spec.gpu} has no FP4 tensor-core rate in the catalog (fp4_peak_tflops), so an "
                                        "NVFP4 GEMM cannot be predicted on it; use fp8_recipe='delayed' or 'mxfp8'.")
    return v


def step_design(work: pd.DataFrame, spec, prec: str, fp8=None) -> pd.DataFrame:
    """Operator-model inputs (:func:`perfmodel.step.op_latency.op_design`) of work rows on the GPU ``spec`` at
    ``prec``, as the step predictor sees the GPU: GEMMs and convolutions at the matrix units' rate (tensor cores; FP32
    too where the vendor BLAS runs FP32 GEMMs on matrix cores, AMD CDNA), the rest on the CUDA cores / vector units; at
    ``"fp8"`` the rows marked in ``fp8`` (:func:`low_precision_rates`: bools, or its codes) at the FP8 rate (divided by
    :func:`fp8_split_accumulation_slowdown` for the split-accumulation ones), or the FP4 rate, and every other GEMM at
    BF16's.

    ``spec`` is one GPU, or a numpy object array of one GPU per row (the rows of several GPUs predicted in one call)."""
    from perfmodel.datasets import matmul_peak_tflops
    from perfmodel.step.op_latency import WORK_COLUMNS, gpu_columns, op_design

    if isinstance(spec, np.ndarray):
        ids = np.array([id(s) for s in spec], dtype=np.int64)
        _, first, at = np.unique(ids, return_index=True, return_inverse=True)
        gpus = [spec[i] for i in first]
    else:
        gpus, at = [spec], np.zeros(len(work), dtype=np.int64)
    one = gpu_columns(gpus, precision="fp32")  # each GPU's columns once, then one row per work row
    cols = pd.DataFrame({c: one[c].to_numpy()[at] for c in one.columns})
    mm = work["op_class"].isin(["matmul", "conv"]).to_numpy()
    peak = cols["peak_flops_per_s"].to_numpy(float).copy()
    matrix = np.array([matmul_peak_tflops(g, "bf16" if prec == "fp8" else prec) * 1e12 for g in gpus])[at]
    peak[mm] = matrix[mm]
    if prec == "fp8" and fp8 is not None and fp8.any():
        code = np.asarray(fp8).astype(np.int8)
        sel = ((code == FP8_RATE) | (code == FP8_SPLIT_ACCUMULATION_RATE)) & mm
        if sel.any():
            f8 = np.array([matmul_peak_tflops(g, "fp8") * 1e12 for g in gpus])[at]
            split = np.array([fp8_split_accumulation_slowdown(g) for g in gpus])[at]
            peak[sel] = np.where(code[sel] == FP8_SPLIT_ACCUMULATION_RATE, f8[sel] / split[sel], f8[sel])
        sel = (code == FP4_RATE) & mm
        if sel.any():
            f4 = np.array([fp4_peak_tflops(g) * 1e12 for g in gpus])[at]
            peak[sel] = f4[sel]
    cols["peak_flops_per_s"] = peak
    return op_design(work[WORK_COLUMNS].reset_index(drop=True), cols)
