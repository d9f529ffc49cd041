"""perfmodel measure llm / gemms: a Hugging Face config's training step and GEMMs held for seconds, timed with the clock
the part ran at; rows appended never overwritten; the clock sampler's three sources (NVML, nvidia-smi, none). The
harness runs on the CPU here with tiny configs; GPUs are measured by the command, never by a test."""
from __future__ import annotations

import json
import os
import stat
import sys
import time
import types

import numpy as np
import pandas as pd
import pytest
import torch

from perfmodel.cli import main
from perfmodel.measure import MeasurementFileError
from perfmodel.measure.gpu_clock import CLOCK_FIELDS, ClockSampler
from perfmodel.measure.llm import (
    GEMM_COLUMNS,
    LLM_STEP_COLUMNS,
    _from_masters,
    _to_masters,
    measure_llm_step,
    measure_sustained_gemms,
    parse_gemm_shapes,
)

TINY = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 256, "max_position_embeddings": 512}
GPT2_TINY = {"model_type": "gpt2", "n_layer": 2, "n_embd": 32, "n_head": 4, "n_positions": 64, "vocab_size": 128}


def test_a_step_on_the_cpu_gives_one_row_per_step_in_the_schema():
    df = measure_llm_step(TINY, seq_len=32, batch_size=2, precision="bfloat16", optimizer="adam-fused", device="cpu",
                          steps=3, warmup=2)
    assert list(df.columns) == LLM_STEP_COLUMNS and len(df) == 5
    assert df["warmup"].tolist() == [True, True, False, False, False] and df["step"].tolist() == list(range(5))
    assert (df["precision"] == "bf16").all() and (df["attention"] == "sdpa").all() and (df["optimizer"] == "adam-fused").all()
    t = df["step_time_s"].to_numpy(float)
    assert np.isfinite(t).all() and (t > 0).all()
    np.testing.assert_allclose(df["tokens_per_s"], 2 * 32 / t)
    from perfmodel.zoo import hf

    assert (df["n_params"] == sum(p.numel() for p in hf.build(TINY).parameters())).all()
    # a CPU has no GPU clock: empty cells and the reason, never made-up values
    assert df["clock_source"].str.startswith("none: not a CUDA device").all() and (df["clock_samples"] == 0).all()
    assert df[["sm_clock_mhz", "power_w", "peak_reserved_gib"]].isna().all().all()
    assert df["device"].eq("cpu").all() and df["transformers_version"].str.len().gt(0).all()


def test_the_config_hash_names_the_model_and_the_attention_kernel_is_the_configs_or_the_argument():
    a = measure_llm_step(TINY, seq_len=16, device="cpu", steps=1, warmup=0, optimizer=None, precision="fp32")
    b = measure_llm_step(dict(TINY, attn_implementation="eager"), seq_len=16, device="cpu", steps=1, warmup=0,
                         optimizer="none", precision="fp32", name="tiny-eager")
    c = measure_llm_step(TINY, seq_len=16, device="cpu", steps=1, warmup=0, optimizer="sgd-momentum", precision="fp32",
                         attention="flash_attention_2")
    assert a["attention"].iloc[0] == "sdpa" and b["attention"].iloc[0] == "eager" and c["attention"].iloc[0] == "sdpa"
    assert a["optimizer"].iloc[0] == b["optimizer"].iloc[0] == "none"
    assert b["model"].iloc[0] == "tiny-eager" and a["model"].iloc[0] == "llama"
    # the kernel is not part of the model: same hash
    assert a["config_sha256"].iloc[0] == b["config_sha256"].iloc[0] == c["config_sha256"].iloc[0]
    d = measure_llm_step(dict(TINY, num_hidden_layers=1), seq_len=16, device="cpu", steps=1, warmup=0, precision="fp32")
    assert d["config_sha256"].iloc[0] != a["config_sha256"].iloc[0]


def test_a_config_json_path_and_a_pretrained_config_are_accepted(tmp_path):
    from transformers import GPT2Config

    path = tmp_path / "config.json"
    path.write_text(json.dumps(GPT2_TINY))
    a = measure_llm_step(path, seq_len=16, device="cpu", steps=1, warmup=0, precision="fp32")
    b = measure_llm_step(GPT2Config(**{k: v for k, v in GPT2_TINY.items() if k != "model_type"}), seq_len=16, device="cpu",
                         steps=1, warmup=0, precision="fp32")
    assert a["model"].iloc[0] == "gpt2" and len(a) == len(b) == 1 and (a["n_params"] == b["n_params"]).all()


def test_half_precision_with_an_optimizer_steps_fp32_masters_and_copies_them_back():
    lin = torch.nn.Linear(4, 3).to(torch.bfloat16)
    params = list(lin.parameters())
    masters = [p.detach().float() for p in params]
    assert all(m.dtype == torch.float32 and m.data_ptr() != p.data_ptr() for m, p in zip(masters, params))
    opt = torch.optim.SGD(masters, lr=0.5)
    before = [p.detach().clone() for p in params]
    lin(torch.ones(2, 4, dtype=torch.bfloat16)).sum().backward()
    _to_masters(params, masters)
    assert all(p.grad is None for p in params) and all(m.grad.dtype == torch.float32 for m in masters)
    opt.step()
    _from_masters(params, masters)
    assert all(m.grad is None for m in masters)
    for p, b, m in zip(params, before, masters):
        assert p.dtype == torch.bfloat16 and not torch.equal(p, b)
        torch.testing.assert_close(p, m.to(torch.bfloat16))


def test_rows_are_appended_and_a_file_of_other_columns_is_refused_before_anything_runs(tmp_path):
    out = tmp_path / "llm.csv"
    measure_llm_step(TINY, seq_len=16, device="cpu", steps=1, warmup=1, out=out, precision="fp32")
    measure_llm_step(TINY, seq_len=16, device="cpu", steps=2, warmup=0, out=out, precision="fp32")
    back = pd.read_csv(out)
    assert list(back.columns) == LLM_STEP_COLUMNS and len(back) == 4
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    t0 = time.perf_counter()
    with pytest.raises(MeasurementFileError):
        measure_llm_step(dict(TINY, num_hidden_layers=64, hidden_size=1024), seq_len=4096, device="cpu", out=other)
    assert time.perf_counter() - t0 < 5  # refused before the model was built
    assert other.read_text() == "a,b\n1,2\n"


@pytest.mark.parametrize("kw, match", [
    (dict(seq_len=0), "seq_len must be a positive int"),
    (dict(seq_len=16, batch_size=-1), "batch_size must be a positive int"),
    (dict(seq_len=16, steps=0), "steps must be a positive int"),
    (dict(seq_len=16, warmup=-1), "warmup must be an int >= 0"),
    (dict(seq_len=16.5), "seq_len must be a positive int"),
    (dict(seq_len=16, optimizer="lamb"), "optimizer must be one of 'none', 'sgd-momentum', 'adam', 'adam-fused'"),
    (dict(seq_len=16, precision="fp8"), "precision must be one of"),
    (dict(seq_len=16, precision="tf32"), "tf32"),
    (dict(seq_len=16, attention="flex_attention"), "Unknown attn_implementation"),
    (dict(seq_len=16, device="cuda:7"), "not available"),
])
def test_bad_arguments_are_refused_with_what_was_expected(kw, match):
    kw = dict(kw)
    kw.setdefault("device", "cpu")
    with pytest.raises(ValueError, match=match):
        measure_llm_step(TINY, **kw)


def test_a_sequence_longer_than_the_learned_position_table_is_refused():
    from perfmodel._errors import ModelConfigError

    with pytest.raises(ModelConfigError, match="64"):
        measure_llm_step(GPT2_TINY, seq_len=128, device="cpu", steps=1, warmup=0, precision="fp32")
    with pytest.raises(ValueError, match="Hugging Face config"):
        measure_llm_step([1, 2], seq_len=16, device="cpu")


def test_sustained_gemms_on_the_cpu_give_rows_the_clock_finder_reads():
    df = measure_sustained_gemms([(64, 48, 32), (16, 16, 16)], precision="fp32", seconds=0.15, device="cpu")
    assert list(df.columns) == GEMM_COLUMNS and len(df) == 2
    assert df[["m", "n", "k"]].values.tolist() == [[64, 48, 32], [16, 16, 16]]
    assert (df["ms"] > 0).all() and (df["calls"] > 1).all() and (df["seconds"] >= 0.15).all()
    np.testing.assert_allclose(df["tflops"], 2 * df["m"] * df["n"] * df["k"] / (df["ms"] * 1e-3) / 1e12)
    assert df["clock_source"].str.startswith("none").all() and (df["accumulation"] == "fp32").all()
    from perfmodel.step.kernels import gemm_work

    w = gemm_work(df)  # the schema perfmodel.step.kernels.sustained_clock reads
    assert len(w) == 2 and (w["flops"] == 2.0 * df["m"] * df["n"] * df["k"]).all()
    same = measure_sustained_gemms("16x16x16", precision="bf16", seconds=0.05, device="cpu")
    assert same["dtype"].iloc[0] == "bfloat16" and same["precision"].iloc[0] == "bf16"


@pytest.mark.parametrize("shapes, seconds, match", [
    ([(0, 4, 4)], 1.0, "three positive ints"), ([], 1.0, "non-empty"), ([(4, 4)], 1.0, "three positive ints"),
    ([(4, 4, 4)], 0, r"seconds must be .* \(0, 600\]"), ([(4, 4, 4)], 601, r"\(0, 600\]"), ("4x4", 1.0, "m x n x k"),
])
def test_bad_gemm_arguments_are_refused(shapes, seconds, match):
    with pytest.raises(ValueError, match=match):
        measure_sustained_gemms(shapes, seconds=seconds, device="cpu", precision="fp32")


@pytest.mark.parametrize("precision", ["fp8", "fp8-split", "FP8"])
def test_fp8_gemms_need_fp8_tensor_cores(precision):
    with pytest.raises(ValueError, match="compute capability 8.9 or later"):
        measure_sustained_gemms([(16, 16, 16)], precision=precision, seconds=0.05, device="cpu")


def test_gemm_shapes_parse_from_text():
    assert parse_gemm_shapes("8192x14336x4096, 4096X4096x4096") == ((8192, 14336, 4096), (4096, 4096, 4096))
    with pytest.raises(ValueError, match="'8192x0x1'"):
        parse_gemm_shapes("8192x0x1")


# ------------------------------------------------------------------------------------------- the clock sampler's sources
def _cuda_sampler(interval=0.01):
    s = ClockSampler("cpu", interval_s=interval)
    s.index = 0  # as for cuda:0 (no GPU here): the sources are faked below
    s.source = ""
    return s


def test_nvml_samples_are_read_and_windowed(monkeypatch):
    calls = {"n": 0}

    def clock(handle, which):
        calls["n"] += 1
        return 1755 if calls["n"] % 2 else 1785

    shut = []
    fake = types.SimpleNamespace(
        NVML_CLOCK_SM=1, NVML_TEMPERATURE_GPU=0, nvmlInit=lambda: None, nvmlShutdown=lambda: shut.append(1),
        nvmlDeviceGetHandleByUUID=lambda u: (_ for _ in ()).throw(RuntimeError("no uuid")),
        nvmlDeviceGetHandleByIndex=lambda i: f"handle{i}", nvmlDeviceGetEnforcedPowerLimit=lambda h: 700000,
        nvmlDeviceGetClockInfo=clock, nvmlDeviceGetPowerUsage=lambda h: 650500, nvmlDeviceGetTemperature=lambda h, s: 61)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    s = _cuda_sampler()
    t0 = time.perf_counter()
    with s:
        time.sleep(0.2)
    t1 = time.perf_counter()
    assert s.source == "nvml" and s.power_limit_w == 700.0 and shut == [1]  # NVML released on stop
    w = s.window(t0, t1)
    assert set(w) == set(CLOCK_FIELDS) and w["clock_samples"] >= 5
    assert 1755 <= w["sm_clock_mhz"] <= 1785 and w["power_w"] == 650.5 and w["temperature_c"] == 61
    empty = s.window(t1 + 10, t1 + 11)
    assert empty["clock_samples"] == 0 and np.isnan(empty["sm_clock_mhz"]) and empty["clock_source"] == "nvml"


def test_nvidia_smi_is_the_fallback_and_unreadable_samples_are_skipped(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\nwhile true; do echo '1980, 690.25, 55, 700.00'; echo '[N/A], [N/A], 55, 700.00'; "
                   "sleep 0.01; done\n")
    smi.chmod(smi.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    s = _cuda_sampler()
    t0 = time.perf_counter()
    with s:
        time.sleep(0.3)
    w = s.window(t0, time.perf_counter())
    assert s.source == "nvidia-smi" and w["clock_samples"] >= 3
    assert w["sm_clock_mhz"] == 1980 and w["power_w"] == 690.25 and w["power_limit_w"] == 700.0
    assert s._proc.poll() is not None  # the streaming process was stopped


def test_without_nvml_or_nvidia_smi_nothing_is_sampled_and_the_reason_is_kept(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setenv("PATH", str(tmp_path))
    s = _cuda_sampler()
    with s:
        pass
    assert s.source == "none: no NVML module (pip install nvidia-ml-py); no nvidia-smi on PATH"
    assert s.samples.empty and s.window(0, 1e12)["clock_samples"] == 0


def test_the_interval_is_checked():
    with pytest.raises(ValueError, match=r"interval_s .* \(0, 10\]"):
        ClockSampler("cpu", interval_s=0)


# ---------------------------------------------------------------------------------------------------------- command line
def test_the_commands_measure_append_and_refuse_bad_input(tmp_path, capsys):
    cfg = tmp_path / "tiny.json"
    cfg.write_text(json.dumps(TINY))
    out = tmp_path / "steps.csv"
    assert main(["measure", "llm", str(cfg), "--seq-len", "16", "--device", "cpu", "--steps", "2", "--warmup", "1",
                 "--precision", "fp32", "--optimizer", "none", "--out", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "3 rows appended" in text and "median step" in text and "clock: none: not a CUDA device" in text
    assert len(pd.read_csv(out)) == 3
    assert main(["measure", "llm", str(tmp_path / "missing.json"), "--seq-len", "16", "--device", "cpu"]) == 2
    assert "is not a file" in capsys.readouterr().err
    g = tmp_path / "gemms.csv"
    assert main(["measure", "gemms", "--device", "cpu", "--precision", "fp32", "--shapes", "16x16x16", "--seconds", "0.05",
                 "--out", str(g), "--quiet"]) == 0
    assert "--sustained-clock" in capsys.readouterr().out and len(pd.read_csv(g)) == 1
    assert main(["measure", "gemms", "--device", "cpu", "--shapes", "16x16"]) == 2
    assert "m x n x k" in capsys.readouterr().err


def test_the_hf_builder_takes_cuda_devices_and_refuses_others():
    from perfmodel.zoo import hf

    for bad in ("tpu", "cuda:x", "gpu", 0):
        with pytest.raises(ValueError, match="'meta', 'cpu', 'cuda' or 'cuda:N'"):
            hf.build(TINY, device=bad)
    assert next(hf.build(TINY, device="cpu").parameters()).device.type == "cpu"
