"""The public step-time contract for any model and GPU: zoo ids, modules and Hugging Face configs; precisions,
optimizers, specs of GPUs outside the catalog; errors for bad input."""
from __future__ import annotations

import warnings

import numpy as np

import pytest
import torch

import perfmodel as pm
from perfmodel.datasets import GPUSpec, UnsupportedPrecisionError
from perfmodel.models import ExtrapolationWarning

TINY_GPT2 = dict(model_type="gpt2", n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=128)


def _quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        return pm.predict_step_time(*args, **kwargs)


def test_contract_columns_and_order():
    r = _quiet(TINY_GPT2, ["A100-PCIe-40GB", "T4"], input_shape=(64,), batch_size=4)
    assert list(r["gpu"]) == ["A100-PCIe-40GB", "T4"]
    assert {"step_time_s", "lower_s", "upper_s", "basis"} <= set(r.columns)
    assert ((r["lower_s"] < r["step_time_s"]) & (r["step_time_s"] < r["upper_s"]) & (r["lower_s"] > 0)).all()
    assert (r["optimizer_s"] > 0).all()  # sgd-momentum by default
    assert r["step_time_s"].iloc[0] < r["step_time_s"].iloc[1]  # an A100 outruns a T4
    none = _quiet(TINY_GPT2, "T4", input_shape=(64,), batch_size=4, optimizer=None)
    assert none["optimizer_s"].iloc[0] == 0 and none["step_time_s"].iloc[0] < r["step_time_s"].iloc[1]
    inf = _quiet(TINY_GPT2, "T4", input_shape=(64,), batch_size=4, optimizer=None, inference=True)
    assert inf["backward_s"].iloc[0] == 0 and 0 < inf["step_time_s"].iloc[0] < none["step_time_s"].iloc[0]


def test_zoo_id_and_module_and_device_names():
    z = _quiet("resnet-32", "Tesla_T4", batch_size=32)
    assert z["model"].iloc[0] == "resnet-32" and z["gpu"].iloc[0] == "T4"
    net = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    m = _quiet(net, "NVIDIA A100-PCIE-40GB", input_shape=(256,), batch_size=64)
    assert m["step_time_s"].iloc[0] > 0


def test_a_gpu_outside_the_catalog_as_a_spec():
    spec = GPUSpec("my-gpu", fp32_peak_tflops=12.0, memory_bandwidth_gb_per_s=800.0, memory_gib=24, sm_count=60, l2_mib=6)
    r = _quiet(TINY_GPT2, spec, input_shape=(32,), batch_size=2)
    assert r["gpu"].iloc[0] == "my-gpu" and r["step_time_s"].iloc[0] > 0


def test_extrapolation_and_precision_warn():
    with pytest.warns(ExtrapolationWarning, match=r"H100: peak FP32 66.9 TFLOPS outside the training GPUs"):
        pm.predict_step_time(TINY_GPT2, "H100", input_shape=(32,), batch_size=2)
    with pytest.warns(ExtrapolationWarning, match="precision bf16: GEMMs from the model learned on Vidur's A40 and A100 "
                                                  "FP16 GEMMs .*, elementwise kernels from the bandwidth efficiency "
                                                  "learned on Vidur's FP16 adds of the A40 and A100, norms and softmax "
                                                  "from the one learned on NeuSight's FP32"):
        b = pm.predict_step_time(TINY_GPT2, "A100-PCIe-40GB", input_shape=(32,), batch_size=2, precision="bf16")
    assert b["precision"].iloc[0] == "bf16" and "Vidur's FP16 GEMMs" in b["basis"].iloc[0]
    # each memory-bound class says what it was learned on: measured FP16 adds, or FP32 rows where no FP16 one exists
    assert ("elementwise kernels and casts at their bf16 bytes, the optimizer at FP32 bytes (mixed precision: FP32 "
            "master weights, states and gradients, with the gradients' and the parameters' copies between them), at the "
            "bandwidth efficiency learned on PyTorch's FP16 elementwise kernel" in b["basis"].iloc[0])
    assert "norms and softmax, never measured in half precision, at their bf16 bytes" in b["basis"].iloc[0]
    # TF32 GEMMs on the tensor cores, at the efficiency learned in FP16, and basis says so
    with pytest.warns(ExtrapolationWarning, match="precision tf32: GEMMs from the tensor-core model"):
        t = pm.predict_step_time(TINY_GPT2, "A100-PCIe-40GB", input_shape=(32,), batch_size=2, precision="tf32")
    assert "TF32 GEMMs, never measured, by the tensor-core GEMM model" in t["basis"].iloc[0]
    # a GPU beyond the GEMM model's fastest training GPU says how far (a B200's training step at the share of its
    # clock it sustains, perfmodel.step.kernels.SUSTAINED_CLOCK_SHARE: 2250 x 0.823 TFLOPS, one GPU: the median chip's)
    with pytest.warns(ExtrapolationWarning, match=r"B200@0.823clk: .*bf16 GEMM peak 1852 TFLOPS, 5.9x the fastest GPU "
                                                  r"the half-precision GEMM model was fitted on \(A100 312\)"):
        pm.predict_step_time(TINY_GPT2, "B200", input_shape=(32,), batch_size=2, precision="bf16")
    # a user's refit predicts every precision: the FP32-learned wording comes back
    from perfmodel.step.op_latency import default_op_model, using_op_model

    with using_op_model(default_op_model()), pytest.warns(ExtrapolationWarning, match="precision bf16: the efficiencies were "
                                                                                       "learned on FP32"):
        c = pm.predict_step_time(TINY_GPT2, "A100-PCIe-40GB", input_shape=(32,), batch_size=2, precision="bf16")
    assert "Vidur" not in c["basis"].iloc[0] and c["step_time_s"].iloc[0] != b["step_time_s"].iloc[0]
    # at TF32 too (its GEMMs come from the tensor-core model only without an override), and no memo answers for the other
    with using_op_model(default_op_model()), pytest.warns(ExtrapolationWarning, match="precision tf32: the efficiencies"):
        c = pm.predict_step_time(TINY_GPT2, "A100-PCIe-40GB", input_shape=(32,), batch_size=2, precision="tf32")
    assert "Vidur" not in c["basis"].iloc[0] and c["step_time_s"].iloc[0] != t["step_time_s"].iloc[0]


def test_bad_input():
    with pytest.raises(UnsupportedPrecisionError, match="bf16"):
        pm.predict_step_time(TINY_GPT2, "V100", input_shape=(32,), precision="bf16")
    with pytest.raises(pm.datasets.UnknownNameError, match=r"Unknown GPU 'H1000'.*Did you mean"):
        pm.predict_step_time(TINY_GPT2, "H1000", input_shape=(32,))
    with pytest.raises(pm.datasets.UnknownNameError, match="Unknown precision 'int8'"):
        pm.predict_step_time(TINY_GPT2, "T4", input_shape=(32,), precision="int8")
    with pytest.raises(ValueError, match="optimizer must be 'sgd-momentum', 'adam' or None"):
        pm.predict_step_time(TINY_GPT2, "T4", input_shape=(32,), optimizer="lamb")
    with pytest.raises(ValueError, match="inference=True predicts a forward pass: pass optimizer=None"):
        pm.predict_step_time(TINY_GPT2, "T4", input_shape=(32,), inference=True)
    with pytest.raises(ValueError, match=r"alpha must be in \(0, 1\)"):
        pm.predict_step_time(TINY_GPT2, "T4", input_shape=(32,), alpha=2)
    with pytest.raises(ValueError, match="input_shape is required for a Hugging Face config"):
        pm.predict_step_time(TINY_GPT2, "T4")
    with pytest.raises(TypeError, match="model must be a zoo id"):
        pm.predict_step_time(3.0, "T4", input_shape=(3,))
    emb = torch.nn.Sequential(torch.nn.Embedding(100, 16), torch.nn.Flatten(), torch.nn.Linear(16 * 8, 2))
    with pytest.raises(Exception, match="(?i)embedding"):  # a token model without input_dtype: the cause is named
        pm.predict_step_time(emb, "T4", input_shape=(8,))


def test_a_bigger_batch_is_never_predicted_faster():
    """Small steps are launch-bound: the launch overhead of isolated measurements is removed and each kernel keeps the
    stream's shortest time, so more work never comes out faster (a multiplicative floor once predicted batch 4 slower
    than batch 32)."""
    times = [_quiet(TINY_GPT2, ["A100-PCIe-40GB", "T4", "H100"], input_shape=(64,), batch_size=b)["step_time_s"].to_numpy()
             for b in (1, 4, 32, 128)]
    assert (np.diff(np.vstack(times), axis=0) > 0).all()
