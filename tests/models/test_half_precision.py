"""The half-precision operator model: Vidur's operators as work rows, the shipped A40+A100 artifact read without the data
mirror, the step-predictor hook with its fallback for classes it never saw, and a rebuild bit for bit from the data."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfmodel.step import _artifact
from perfmodel.step import half_precision as hp
from perfmodel.step import half_precision_scores as hps
from perfmodel.step.op_latency import WORK_COLUMNS

_HAS_VIDUR = (Path(os.environ.get("PERFMODEL_DATA", "")) / "microsoft" / "vidur").is_dir()
needs_data = pytest.mark.skipif(not _HAS_VIDUR, reason="needs Vidur's profiles in the data mirror (PERFMODEL_DATA)")


def _llama7b(op, T=1024, tp=2):
    return pd.DataFrame({"operator": [op], "num_tokens": [T], "tp": [tp], "n_head": [32], "n_kv_head": [32], "n_embd": [4096],
                         "n_expanded_embd": [11008], "use_gated_mlp": [True], "model": ["meta-llama/Llama-2-7b-hf"]})


def test_vidur_operators_become_the_work_rows_of_their_kernels():
    ops = ["attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj", "mlp_act", "input_layernorm",
           "post_attention_layernorm", "attn_rope", "add", "emb"]
    w = hp.vidur_work(pd.concat([_llama7b(o) for o in ops], ignore_index=True)).set_index(pd.Index(ops))
    assert list(w.columns) == [*WORK_COLUMNS, "op", "n_kernels"]
    T, E, F = 1024, 4096, 11008
    # F.linear of the 1/tp shard: (m, n, k) = (tokens, reduction, output columns), 2-byte elements
    for op, n, k in (("attn_pre_proj", E, 3 * E // 2), ("attn_post_proj", E // 2, E), ("mlp_up_proj", E, F), ("mlp_down_proj", F // 2, E)):
        r = w.loc[op]
        assert (r.op_class, r.dim_m, r.dim_n, r.dim_k, r.dim_b) == ("matmul", T, n, k, 1)
        assert r.flops == 2 * T * n * k and r.bytes == 2 * (T * n + n * k + T * k)
        assert r.tiles == np.ceil(T / 128) * np.ceil(k / 128)
    assert w.loc["input_layernorm", "op_class"] == "layernorm" and w.loc["input_layernorm", "bytes"] == 2 * (2 * T * E + E)
    assert w.loc["add", "bytes"] == 6 * T * E and w.loc["mlp_act", "bytes"] == 6 * T * F // 2
    assert w.loc["emb", "bytes"] == 8 * T + 4 * T * E
    assert w.loc["attn_rope", "bytes"] == 4 * T * 2 * E // 2 + 2 * T * (E // 32) + 8 * T
    # FP16 elementwise moves 6 bytes per output element: the binary FP32 op over bytes / 12 elements (work_from_ops)
    assert w.loc["add", "flops"] == 6 * T * E / 12
    assert (w["n_kernels"] == 1).all()
    phi = _llama7b("add").assign(use_gated_mlp=False, n_embd=2560, n_expanded_embd=10240)
    assert hp.vidur_work(phi)["n_kernels"].item() == 2  # attn + ff + residual: two adds
    with pytest.raises(ValueError, match=r"Unknown Vidur operator\(s\) \['attention'\]"):
        hp.vidur_work(_llama7b("attention"))


def test_the_shipped_model_is_read_without_the_data_and_never_saw_an_h100(monkeypatch):
    monkeypatch.setattr(hp, "_LOADED", {})
    monkeypatch.setattr(hp, "vidur_rows", lambda *a, **k: (_ for _ in ()).throw(AssertionError("read the data")))
    m = hp.half_precision_op_model()
    assert m.training_devices_ == ["A100-PCIe-80GB", "A40"] and "no H100 row" in m.provenance_
    assert m.classes_ == ["matmul"] and m.training_devices_ == ["A100-PCIe-80GB", "A40"]
    assert not getattr(m, "gpu_models_", {}), "no GPU identity: no GPU has trees of its own"
    header, _ = _artifact.load(hp.half_artifact_path(), sha256=hp.HALF_SHA256)
    assert header["key"] == hp._half_key() and header["format"] == _artifact.FORMAT
    assert hp.half_artifact_path().stat().st_size < 4_000_000


def test_kernel_seconds_use_the_half_model_for_gemms_only():
    from perfmodel.step.kernels import kernel_seconds

    w = hp.vidur_work(pd.concat([_llama7b(o) for o in ("mlp_up_proj", "add", "input_layernorm")], ignore_index=True))
    conv = pd.DataFrame([("conv", 2 * 4096 * 576 * 64, 2e6, 32 * 1, 4096, 576, 64, 1), ("softmax", 5e6, 4e6, 1024, 1024, 1, 1024, 1)],
                        columns=WORK_COLUMNS)
    work = pd.concat([w[WORK_COLUMNS], conv], ignore_index=True)
    t = hps.half_precision_kernel_seconds(work, "H100", "fp16")
    assert t.shape == (5,) and (t > 0).all()
    np.testing.assert_array_equal(t[:1], hp.half_precision_op_model().predict_in_stream(hp.half_precision_design(w[:1], "H100", "fp16")))
    # memory-bound kernels (Vidur's add and norm here), convolutions and softmax: the step predictor's other path
    np.testing.assert_array_equal(t[1:], kernel_seconds(work[1:].reset_index(drop=True), "H100", "fp16"))
    np.testing.assert_array_equal(hps.half_precision_kernel_seconds(work, "H100", "bf16"), t)  # BF16 rate = FP16 rate on H100
    with pytest.raises(ValueError, match=r"half_precision_kernel_seconds predicts at \('fp16', 'bf16'\); got 'fp32'"):
        hps.half_precision_kernel_seconds(work, "H100", "fp32")


@needs_data
def test_rebuild_gives_the_shipped_half_artifact():
    """fit_half_bundle + bundle_arrays rebuild the shipped artifact from Vidur's A40/A100 rows: the same header and
    arrays bit for bit with the scikit-learn release and floating-point arithmetic it was built with; on another CPU
    the same model in every aggregate (tests/models/_rebuild.py); with another scikit-learn release the same
    predictions within 2 %."""
    import sklearn

    from _rebuild import check_rebuild
    from perfmodel.step.op_latency import bundle_arrays, bundle_from_arrays

    header, arrays = _artifact.load(hp.half_artifact_path(), sha256=hp.HALF_SHA256)
    rebuilt = hp.fit_half_bundle()
    h2, a2 = bundle_arrays(rebuilt)
    X = hp.vidur_rows(hp.TRAINING_SOURCE_GPUS)
    X = X[X["op_class"].isin(hp.HALF_CLASSES).to_numpy()].reset_index(drop=True)
    shipped = bundle_from_arrays(header, arrays)["model"].predict_in_stream(X)
    if header["sklearn_version"] == sklearn.__version__:
        how = check_rebuild(header, arrays, h2, a2, fmt=_artifact.FORMAT, shipped_pred=shipped,
                            rebuilt_pred=rebuilt["model"].predict_in_stream(X))
        if how == "bit for bit":
            assert _artifact.sha256_of(_artifact.to_bytes(h2, a2)) == hp.HALF_SHA256
    else:  # pragma: no cover - another scikit-learn release in the environment
        assert np.max(np.abs(rebuilt["model"].predict_in_stream(X) / shipped - 1)) < 0.02

# ------------------------------------------------------------------ the context fits' held-out predictions, shipped


@needs_data
def test_the_scores_fit_nothing_and_equal_a_refit(monkeypatch):
    """vidur_scores and calibration_scores read the context fits' held-out predictions from the shipped artifact (no
    fit, no warning); the same scores with every model fitted now."""
    import warnings

    from perfmodel.step import half_precision_scores as hps_

    monkeypatch.setattr(hps_, "_SHIPPED", {})
    monkeypatch.setattr(hps_, "_fit", lambda *a, **k: (_ for _ in ()).throw(AssertionError("fitted")))
    protos = tuple(p for p in hps_.PROTOCOLS if p[0] == "leave-a40-out")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shipped = hps_.vidur_scores(protocols=protos)
        cal = hps_.calibration_scores()
    monkeypatch.undo()
    monkeypatch.setattr(hps_, "_heldout_model", lambda name, train, h100_spec=None, **params: hp._fit(train, **params))
    refit = hps_.vidur_scores(protocols=protos)
    pd.testing.assert_frame_equal(shipped, refit, check_exact=False, rtol=1e-3)
    assert set(cal["measured_family"]) >= {"meta-llama/Llama-2-7b-hf", "mean"}
    mean = cal.set_index("measured_family").loc["mean"]
    assert mean["calibrated_time_weighted_ape_pct"] < mean["shipped_time_weighted_ape_pct"]


def test_shipped_heldout_predictions_answer_only_their_own_rows(monkeypatch):
    from perfmodel.step import half_precision_scores as hps_

    b = hps_.load_heldout_bundle()
    names = [e["name"] for e in b["header"]["entries"]]
    assert names[:4] == [f"protocol:{p[0]}" for p in hps_.PROTOCOLS[1:]]
    assert all(n.startswith("calibration:") for n in names[4:]) and len(names) > 4
    e = b["header"]["entries"][0]
    assert b["header"]["data_key"] == hps_._data_key()  # the data and code of this checkout: the same on every CPU
    r = hps_._Replayed(e["name"], b["arrays"][e["array"]])
    other = pd.DataFrame({"m": [1.0, 2.0]})
    with pytest.raises(ValueError, match="for 21924 rows, not these 2"):
        r.predict_in_stream(other)
    # another H100 spec describes other training rows: a warning that says so, and a fit on them
    monkeypatch.setattr(hps_, "_SHIPPED", {})
    monkeypatch.setattr(hps_, "_fit", lambda train, **params: ("fitted", len(train), params))
    assert hps_._data_key("H100-NVL") != hps_._data_key()
    with pytest.warns(UserWarning, match="computed from other data, code or GPU specs .* fitting the model now"):
        got = hps_._heldout_model(e["name"], pd.DataFrame({"op_class": ["matmul"], "kernel_s": [1e-5]}),
                                  h100_spec="H100-NVL", per_gpu=True)
    assert got == ("fitted", 1, {"per_gpu": True})


def test_heldout_artifact_is_refused_when_altered_or_malformed(tmp_path):
    from perfmodel.step import _artifact
    from perfmodel.step import half_precision_scores as hps_

    b = hps_.load_heldout_bundle()
    p = tmp_path / "h.npz"
    bad = dict(header=dict(b["header"]), arrays=dict(b["arrays"]))
    bad["arrays"]["e0"] = bad["arrays"]["e0"][:-1]
    hps_.save_heldout_bundle(bad, p)
    with pytest.raises(_artifact.ArtifactError, match="has no array of 21924 finite positive seconds"):
        hps_.load_heldout_bundle(p)
    with pytest.raises(_artifact.ArtifactError, match="altered or truncated"):
        hps_.load_heldout_bundle(p, sha256=hps_.HELDOUT_SHA256)


@needs_data
def test_rebuild_gives_the_shipped_heldout_predictions():
    """fit_heldout_bundle rebuilds the shipped held-out predictions from Vidur's rows: the same bytes with the
    scikit-learn release and floating-point arithmetic they were built with; else every entry's predictions within
    0.1 % in total and 2 % per row (ties of histogram gradient boosting, tests/models/_rebuild.py)."""
    from perfmodel.step import _artifact
    from perfmodel.step import half_precision_scores as hps_

    shipped = hps_.load_heldout_bundle()
    rebuilt = hps_.fit_heldout_bundle()
    same = _artifact.sha256_of(_artifact.to_bytes(rebuilt["header"], rebuilt["arrays"])) == hps_.HELDOUT_SHA256
    if not same:
        assert rebuilt["header"]["entries"] == shipped["header"]["entries"]
        assert rebuilt["header"]["data_key"] == shipped["header"]["data_key"]
        for k, a in shipped["arrays"].items():
            r = rebuilt["arrays"][k]
            assert abs(r.sum() / a.sum() - 1) < 1e-3 and np.max(np.abs(r / a - 1)) < 0.02, k
