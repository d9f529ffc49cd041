"""A user's half-precision measurements refit the half-precision models (``perfmodel fit --with`` of rows that
``perfmodel measure ops --precision bf16`` writes), and a prediction with ``PERFMODEL_OP_MODEL`` uses them."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import perfmodel.step.half_precision as hp
import perfmodel.step.op_latency as ol
from perfmodel.step import op_fit as of
from perfmodel.step._artifact import ArtifactError

H100 = "NVIDIA H100 80GB HBM3"  # as torch.cuda.get_device_name() spells it
FAST = dict(params={"max_iter": 5, "min_gpu_rows": 50}, devices=("P4", "T4"), progress=False)


def _vidur_h100_gemms() -> pd.DataFrame:
    X = hp.vidur_rows(("h100",))
    return X[X["op_class"].isin(hp.HALF_CLASSES).to_numpy()].reset_index(drop=True)


def _as_measured(X: pd.DataFrame) -> pd.DataFrame:
    """Vidur's H100 GEMMs as `perfmodel measure ops --precision bf16` writes them: linear (b, m, n, k), ms."""
    return pd.DataFrame({"device": H100, "op": "linear", "b": 1, "m": X["dim_m"].astype(int), "n": X["dim_n"].astype(int),
                         "k": X["dim_k"].astype(int), "latency_ms": X["kernel_s"].to_numpy(float) * 1e3, "precision": "bf16"})


def _adds(eta=0.5, t0=3e-6) -> pd.DataFrame:
    """bf16 elementwise adds on the H100 at a known share of its bandwidth (3.35 TB/s), plus a launch overhead."""
    h = 2 ** np.arange(10, 27, dtype=np.int64)
    nbytes = 3 * 2 * h  # two inputs and one output of 2-byte elements
    lat = 4e-6 + t0 + nbytes / (eta * 3.35e12)
    return pd.DataFrame({"device": H100, "op": "add", "b": 1, "h": h, "latency_ms": lat * 1e3, "precision": "bf16"})


@pytest.fixture
def user_env(monkeypatch):
    monkeypatch.setattr(ol, "_DEFAULT", {})
    monkeypatch.setattr(hp, "_USER", {})

    def use(path):
        monkeypatch.setattr(ol, "_DEFAULT", {})
        monkeypatch.setenv(ol.ENV_OP_MODEL, str(path))

    return use


def test_half_rows_refit_the_half_models_and_predictions_use_them(tmp_path, user_env):
    X = _vidur_h100_gemms()
    fams = sorted(set(X["model"]))
    mine = (X["model"] == fams[0]).to_numpy()
    csv = tmp_path / "h100_bf16.csv"
    pd.concat([_as_measured(X[mine]), _adds()], ignore_index=True).to_csv(csv, index=False)
    b = of.fit_op_model(csv, out=tmp_path / "mine.npz", **FAST)
    paths = hp.companion_paths(tmp_path / "mine.npz")
    assert b["half"]["half_gemm"] == int(mine.sum()) and b["half"]["half_memory"] == len(_adds())
    assert paths["half"].is_file() and paths["bandwidth"].is_file()
    assert "user rows" not in b["model"].provenance_  # no FP32 row: the FP32-learned model is NeuSight's alone

    user_env(tmp_path / "mine.npz")
    gemm, bandwidth, note = hp.active_half_models()
    assert gemm is not hp.half_precision_op_model() and "H100" in note
    # the GEMMs of the families the user did not measure: closer with the user's rows (Vidur's H100 as that user)
    T = X[~mine].reset_index(drop=True)
    meas = T["kernel_s"].to_numpy(float)
    shipped = np.abs(hp.half_precision_op_model().predict_in_stream(T) - meas).sum() / meas.sum()
    refit = np.abs(gemm.predict_in_stream(T) - meas).sum() / meas.sum()
    assert refit < shipped
    # the adds: the bandwidth efficiency they were made at, for the H100 only
    assert bandwidth.gpu_efficiency_[("H100", "elementwise")] == pytest.approx(0.5, rel=0.05)
    assert ("A100-PCIe-40GB", "elementwise") not in bandwidth.gpu_efficiency_

    import perfmodel as pm

    cfg = dict(model_type="llama", vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = pm.predict_step_time(cfg, "H100", input_shape=(128,), batch_size=8, precision="bf16")
    assert "refitted with your measured half-precision rows of H100" in p["basis"].iloc[0]
    assert "bandwidth efficiency of your measured rows on H100" in p["basis"].iloc[0]


def test_a_refit_without_half_rows_removes_the_old_companions(tmp_path, user_env):
    csv = tmp_path / "adds.csv"
    _adds().to_csv(csv, index=False)
    of.fit_op_model(csv, out=tmp_path / "mine.npz", **FAST)
    paths = hp.companion_paths(tmp_path / "mine.npz")
    assert paths["bandwidth"].is_file() and not paths["half"].exists()
    fp32 = tmp_path / "fp32.csv"
    _adds().drop(columns="precision").to_csv(fp32, index=False)
    of.fit_op_model(fp32, out=tmp_path / "mine.npz", force=True, **FAST)
    assert not paths["bandwidth"].exists()


def test_a_companion_of_another_fit_is_refused(tmp_path, user_env):
    csv = tmp_path / "adds.csv"
    _adds().to_csv(csv, index=False)
    of.fit_op_model(csv, out=tmp_path / "a.npz", **FAST)
    _adds(eta=0.4).to_csv(csv, index=False)
    of.fit_op_model(csv, out=tmp_path / "b.npz", **FAST)
    hp.companion_paths(tmp_path / "b.npz")["bandwidth"].replace(hp.companion_paths(tmp_path / "a.npz")["bandwidth"])
    user_env(tmp_path / "a.npz")
    with pytest.raises(ArtifactError, match="written by another fit"):
        hp.active_half_models()


def test_rows_are_split_by_the_model_they_refit():
    rows = pd.DataFrame({"op_class": ["matmul", "matmul", "elementwise", "conv", "layernorm"],
                         "precision": ["bf16", "fp32", "fp16", "bf16", "tf32"], "gpu": "H100"})
    parts = hp.split_user_rows(rows)
    assert [len(parts[k]) for k in ("fp32", "half_gemm", "half_memory", "half_unused")] == [2, 1, 1, 1]
    assert len(hp.split_user_rows(rows.drop(columns="precision"))["fp32"]) == 5
