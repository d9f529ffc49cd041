"""The operator latency model: known-answer roofline work, its inputs checked, and the provenance of the model
perfmodel ships (NeuSight's five training GPUs only, never a GPU the labels test on)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfmodel.step import op_latency as ol
def test_op_work_known_answers():
    ops = pd.DataFrame([
        dict(op_class="matmul", b=2, m=256, n=64, k=300),
        dict(op_class="conv", b=8, in_channels=16, out_channels=32, kernel_size=3, input_size=32, stride=1, padding=1),
        dict(op_class="layernorm", b=10, h=1024),
        dict(op_class="softmax", b=10, h=1024),
        dict(op_class="elementwise", b=100, h=1000, n_inputs=1),
    ])
    w = op_work(ops)
    mm, cv, ln, sm, ew = (w.iloc[i] for i in range(5))
    assert mm["flops"] == 2 * 2 * 256 * 64 * 300 and mm["bytes"] == 4 * 2 * (256 * 64 + 64 * 300 + 256 * 300)
    assert mm["tiles"] == 2 * 2 * 3  # 256/128 x ceil(300/128), twice
    assert cv["flops"] == 2 * (8 * 32 * 32) * 32 * (16 * 9)  # implicit GEMM (b·Ho²) x Co x (Ci·R²)
    assert cv["bytes"] == 4 * (8 * 16 * 32 * 32 + 32 * 16 * 9 + 8 * 32 * 32 * 32)
    assert ln["bytes"] == 4 * (2 * 10 * 1024 + 2 * 1024) and sm["bytes"] == 4 * 2 * 10 * 1024
    assert ew["flops"] == 100_000 and ew["bytes"] == 4 * 100_000 * 2 and ew["tiles"] == np.ceil(100_000 / 512)


def op_work(ops):
    return ol.op_work(ops)


def test_roofline_is_the_bound_of_the_gpu():
    """A 4096³ FP32 GEMM on an A100-PCIe-40GB: 1.37e11 FLOP at 19.5 TFLOPS is compute-bound (7.05 ms); a 1e8-element
    add at 1555 GB/s is memory-bound (1.2e9 B → 0.772 ms)."""
    from perfmodel.step.op_latency import _roofline_s

    work = ol.op_work(pd.DataFrame([dict(op_class="matmul", b=1, m=4096, n=4096, k=4096),
                                    dict(op_class="elementwise", b=1, h=10**8, n_inputs=2)]))
    X = ol.op_design(work, ol.gpu_columns(["A100-PCIe-40GB"] * 2))
    t = _roofline_s(X)
    assert t[0] == pytest.approx(2 * 4096**3 / 19.5e12, rel=1e-9)
    assert t[1] == pytest.approx(3 * 4 * 1e8 / 1555e9, rel=1e-9)


@pytest.mark.parametrize("ops, match", [
    (pd.DataFrame([dict(op_class="attention", b=1, h=2)]), r"Unknown op_class \['attention'\]"),
    (pd.DataFrame([dict(op_class="matmul", b=1, m=2, n=0, k=2)]), r"column 'n' must be a positive number"),
    (pd.DataFrame([dict(op_class="matmul", b=1, m=2, k=2)]), r"need the columns \['b', 'm', 'n', 'k'\]; missing \['n'\]"),
    (pd.DataFrame([dict(b=1)]), "needs an 'op_class' column"),
    (pd.DataFrame([dict(op_class="elementwise", b=1, h=2, n_inputs=3)]), "n_inputs of an elementwise operator must be 1 or 2"),
])
def test_op_work_refuses_bad_shapes(ops, match):
    with pytest.raises(ValueError, match=match):
        ol.op_work(ops)


def test_model_checks_its_input_and_classes():
    X = ol.op_design(ol.op_work(pd.DataFrame([dict(op_class="softmax", b=64, h=512)] * 3)), ol.gpu_columns(["T4"] * 3))
    m = ol.OpLatencyModel(max_iter=5).fit(X, [1e-5, 1.1e-5, 0.9e-5])
    assert (m.predict(X) > 0).all() and m.training_devices_ == ["T4"] and m.provenance_ == "user data"
    Y = ol.op_design(ol.op_work(pd.DataFrame([dict(op_class="layernorm", b=64, h=512)])), ol.gpu_columns(["T4"]))
    with pytest.raises(ValueError, match=r"not fitted on the operator class\(es\) \['layernorm'\]"):
        m.predict(Y)
    with pytest.raises(ValueError, match="one positive, finite latency"):
        ol.OpLatencyModel().fit(X, [1e-5, -1.0, 1e-5])
    with pytest.raises(TypeError, match="takes the DataFrame"):
        m.predict(X.to_numpy())
    with pytest.raises(ValueError, match=r"X lacks the columns \['flops'\]"):
        m.predict(X.drop(columns="flops"))


def test_default_model_is_fitted_on_the_training_gpus_only():
    """The protocol: NeuSight's five training GPUs; never A100-80GB, L4 or H100 (the GPUs of the labels it is tested on)."""
    m = ol.default_op_model()
    assert m.training_devices_ == sorted(ol.TRAINING_GPUS)
    test_gpus = {"A100-PCIe-80GB", "A100-SXM4-80GB", "L4", "H100", "H100-PCIe", "A100"}
    assert not test_gpus & set(m.training_devices_)
    assert "no end-to-end label, no test GPU" in m.provenance_
    assert m.classes_ == ["conv", "elementwise", "layernorm", "matmul", "softmax"]
    assert ol.default_op_model() is m  # fitted once per process


def test_default_model_predicts_a_gpu_it_never_saw():
    """From its spec sheet only: positive latencies for an H100, faster than on a T4 for a large GEMM."""
    ops = pd.DataFrame([dict(op_class="matmul", b=1, m=8192, n=4096, k=4096)] * 2)
    X = ol.op_design(ol.op_work(ops), ol.gpu_columns(["H100", "T4"]))
    t = ol.default_op_model().predict(X)
    assert (t > 0).all() and t[0] < t[1]


def test_leave_one_gpu_out_errors_are_reported_per_class():
    from perfmodel.diagnostics import op_model_errors

    e = op_model_errors(["softmax"], test_split=False)
    assert set(e["gpu"]) == set(ol.TRAINING_GPUS) and set(e["protocol"]) == {"leave-one-GPU-out"}
    assert (e["mape_pct"] > 0).all() and (e["n_ops"] == 1750).all()
    with pytest.raises(ValueError, match="No microbenchmarks of the operator classes"):
        op_model_errors(["attention"])


def _synthetic(gpu: str, scale: float, n: int = 240, seed: int = 0):
    """Elementwise ops of many sizes on one GPU, measured as ``scale`` x roofline plus a 20 µs launch overhead."""
    rng = np.random.default_rng(seed)
    ops = pd.DataFrame(dict(op_class="elementwise", b=rng.integers(1, 4096, n), h=rng.integers(1, 4096, n), n_inputs=2))
    X = ol.op_design(ol.op_work(ops), ol.gpu_columns([gpu] * n))
    y = scale * ol._roofline_s(X) + 20e-6
    return X, y


def test_a_measured_gpu_is_predicted_by_its_own_model_and_another_by_the_pooled_one():
    """Two GPUs that look alike to the pooled features but differ 3x in efficiency: each measured GPU keeps its own
    efficiency; a GPU with another spec (even under the same id) gets the pooled model."""
    Xa, ya = _synthetic("V100-PCIe-32GB", 1.0)
    Xb, yb = _synthetic("V100-PCIe-32GB", 3.0, seed=1)
    Xb["gpu"] = "P100"  # same spec columns, another id: another GPU
    X, y = pd.concat([Xa, Xb], ignore_index=True), np.concatenate([ya, yb])
    m = ol.OpLatencyModel(max_iter=50, min_gpu_rows=100).fit(X, y)
    assert {k.split("|")[0] for k, _ in m.gpu_models_} == {"V100-PCIe-32GB", "P100"}
    assert m.measured_gpus(X).all()
    err_a = np.median(np.abs(m.predict(Xa) / ya - 1))
    err_b = np.median(np.abs(m.predict(Xb) / yb - 1))
    pooled = ol.OpLatencyModel(max_iter=50, per_gpu=False).fit(X, y)
    assert err_a < 0.1 and err_b < 0.1
    assert np.median(np.abs(pooled.predict(Xa) / ya - 1)) > max(0.2, 2 * err_a)  # the pooled model averages the two
    other = Xa.assign(bandwidth_bytes_per_s=Xa["bandwidth_bytes_per_s"] * 2)  # same id, another spec
    assert not m.measured_gpus(other).any()
    np.testing.assert_allclose(m.predict(other), pooled.predict(other))


def test_in_stream_time_removes_the_measured_launch_overhead():
    """Isolated measurements carry the host's launch latency (their floor): the model learns the kernel (latency less
    that overhead); alone, an operator takes overhead + kernel; back to back on a busy GPU, the kernel only, never less
    than the shortest kernel."""
    X, y = _synthetic("T4", 1.0)
    m = ol.OpLatencyModel(max_iter=50, min_gpu_rows=100).fit(X, y)
    delta = m.launch_overhead_s_[(m._gpu_keys(X)[0], "elementwise")]
    assert delta == pytest.approx(y.min() - ol.KERNEL_MIN_S)
    s = m.predict_in_stream(X)
    assert (s >= ol.KERNEL_MIN_S).all()
    np.testing.assert_allclose(m.predict(X), s + delta)
    assert np.median(np.abs(m.predict(X) / y - 1)) < 0.1
    other = X.assign(gpu="L4", peak_flops_per_s=X["peak_flops_per_s"] * 2)  # not measured: the pooled overhead
    np.testing.assert_allclose(m.predict(other) - m.predict_in_stream(other), m.launch_overhead_pooled_s_["elementwise"])


def test_default_model_overheads_come_from_the_training_gpus():
    m = ol.default_op_model()
    assert {k.split("|")[0] for k, _ in m.launch_overhead_s_} == set(ol.TRAINING_GPUS)
    assert {k.split("|")[0] for k, _ in m.gpu_models_} == set(ol.TRAINING_GPUS)
    assert all(10e-6 < v < 100e-6 for v in m.launch_overhead_pooled_s_.values())


def test_fits_and_predictions_run_on_one_openmp_thread(monkeypatch):
    """On a busy machine OpenMP's spinning threads made a fit 5-10x slower: every tree is fitted, and every step
    predicted, with OpenMP bounded to one thread (the trees do not depend on the thread count)."""
    from threadpoolctl import threadpool_info

    seen = []
    boost = ol.OpLatencyModel._boost

    def recording_boost(self):
        est = boost(self)
        fit = est.fit

        def fit_and_record(*args, **kwargs):
            seen.append({i["num_threads"] for i in threadpool_info() if i["user_api"] == "openmp"})
            return fit(*args, **kwargs)

        est.fit = fit_and_record
        return est

    monkeypatch.setattr(ol.OpLatencyModel, "_boost", recording_boost)
    X, y = _synthetic("V100-PCIe-32GB", 1.0)
    m = ol.OpLatencyModel(max_iter=5, min_gpu_rows=100).fit(X, y)
    assert seen and all(s <= {1} for s in seen)  # {} where no OpenMP runtime is loaded
    assert any(s == {1} for s in seen)  # scikit-learn's OpenMP runtime is loaded and was bounded
    import sklearn.ensemble._hist_gradient_boosting.gradient_boosting as hgb

    calls = []
    predict = hgb.HistGradientBoostingRegressor.predict

    def predict_and_record(self, *args, **kwargs):
        calls.append({i["num_threads"] for i in threadpool_info() if i["user_api"] == "openmp"})
        return predict(self, *args, **kwargs)

    monkeypatch.setattr(hgb.HistGradientBoostingRegressor, "predict", predict_and_record)
    m.predict(X)
    assert calls and all(s == {1} for s in calls)
