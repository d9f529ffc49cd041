"""A grid of predictions, bit for bit against the values recorded in ``prediction_grid.json``.

The step-time model is layered code (trace → kernel times → one step → parallel layout → plans) that is reorganised
from time to time; such a change must not move any number. The grid covers every path of the public faces:
one GPU at each precision, with and without the optimizer, inference, ``torch.compile``, FP8, each activation
checkpointing policy, every strategy, torchtitan's and Megatron's layouts, Transformer Engine FP8, pipeline schedules, asynchronous TP, links per level, the
memory model, the strategy explorer and the planner.

A change that is meant to move numbers regenerates the file (``python tests/models/test_prediction_grid.py``) and says
so in its commit. Recorded values are compared bit for bit where the machine's floating-point kernels are the ones
the file was written with (numpy's SIMD features equal); elsewhere to 1e-12 relative (numpy's vectorised ``exp``/
``log`` may round the last bit otherwise)."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

GRID = Path(__file__).with_name("prediction_grid.json")

LLAMA = dict(model_type="llama", vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False)
GPT2 = dict(model_type="gpt2", n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=128, bos_token_id=0, eos_token_id=0)

_LLM = dict(input_shape=(64,), batch_size=8, precision="bf16", optimizer="adam")
#: FP8 on 256 tokens: at 8 x 64 the token count is LLAMA's vocabulary size, and a GEMM with a vocabulary-sized
#: dimension stays in BF16 (the output projection), so no linear would run in FP8
_FP8 = dict(_LLM, batch_size=4, precision="fp8")

#: (name, function name, args, keyword arguments)
CASES = [
    ("resnet-fp32", "predict_step_time", ("resnet-32", ["P100", "V100", "A100-PCIe-40GB"]), dict(batch_size=32)),
    ("resnet-tf32-adam", "predict_step_time", ("resnet-32", "A100"), dict(batch_size=64, precision="tf32", optimizer="adam")),
    ("resnet-bf16-dp4", "predict_step_time", ("resnet-32", "H100"), dict(batch_size=128, precision="bf16", n_gpus=4)),
    ("gpt2-fwd-bwd", "predict_step_time", (GPT2, ["T4", "A100-PCIe-40GB"]), dict(input_shape=(64,), batch_size=4, optimizer=None)),
    ("gpt2-inference", "predict_step_time", (GPT2, "L4"), dict(input_shape=(64,), batch_size=4, optimizer=None, inference=True)),
    ("gpt2-fp16-adam", "predict_step_time", (GPT2, "V100"), dict(input_shape=(64,), batch_size=4, precision="fp16", optimizer="adam")),
    ("gpt2-amd", "predict_step_time", (GPT2, ["MI210", "MI250"]), dict(input_shape=(64,), batch_size=4, precision="bf16")),
    ("llama-bf16", "predict_step_time", (LLAMA, ["A100", "H100"]), dict(_LLM)),
    ("llama-fused-adam", "predict_step_time", (LLAMA, "H100"), dict(_LLM, optimizer="adam-fused")),
    ("llama-compile", "predict_step_time", (LLAMA, "H100"), dict(_LLM, compile=True)),
    ("llama-fp8", "predict_step_time", (LLAMA, "H100"), dict(_FP8)),
    ("llama-fp8-compile", "predict_step_time", (LLAMA, "H100"), dict(_FP8, compile=True)),
    ("llama-te", "predict_step_time", (LLAMA, ["A100", "H100"]), dict(_LLM, stack="te")),
    ("llama-ac-full", "predict_step_time", (LLAMA, "H100"), dict(_LLM, activation_checkpointing=True)),
    ("llama-ac-selective", "predict_step_time", (LLAMA, "H100"), dict(_LLM, activation_checkpointing="selective")),
    ("llama-ac-layer", "predict_step_time", (LLAMA, "H100"), dict(_LLM, activation_checkpointing="layer:2")),
    ("llama-accumulate", "predict_step_time", (LLAMA, "A100"), dict(_LLM, micro_batches=2)),
    ("llama-dp8", "predict_step_time", (LLAMA, "H100"), dict(_LLM, n_gpus=8, strategy="dp")),
    ("llama-dp8-no-overlap", "predict_step_time", (LLAMA, "H100"), dict(_LLM, n_gpus=8, overlap_grad_reduce=False)),
    ("llama-fsdp8", "predict_step_time", (LLAMA, "H100"), dict(_LLM, n_gpus=8, strategy="fsdp")),
    ("llama-fsdp16-nodes", "predict_step_time", (LLAMA, "H100"),
     dict(_LLM, batch_size=16, n_gpus=16, strategy="fsdp", interconnect={"intra": "nvlink", "inter": "infiniband-ndr"})),
    ("llama-tp2", "predict_step_time", (LLAMA, "H100"), dict(_LLM, n_gpus=2, strategy="tp")),
    ("llama-pp4", "predict_step_time", (LLAMA, "A100"), dict(_LLM, n_gpus=4, strategy="pp", micro_batches=4)),
    ("llama-dp2-tp2-pp2", "predict_step_time", (LLAMA, "A100"), dict(_LLM, n_gpus=8, strategy="dp2-tp2-pp2", micro_batches=2)),
    ("llama-fsdp2-tp2-ac", "predict_step_time", (LLAMA, "H100"),
     dict(_LLM, n_gpus=4, strategy="fsdp2-tp2", activation_checkpointing="selective", compile=True)),
    ("llama-fsdp2-tp2-async", "predict_step_time", (LLAMA, "H100"), dict(_LLM, n_gpus=4, strategy="fsdp2-tp2", compile=True, async_tp=True)),
    ("llama-fsdp2-cp2", "predict_step_time", (LLAMA, "H100"), dict(_LLM, n_gpus=4, strategy="fsdp2-cp2")),
    ("llama-fsdp2-tp2-pp2", "predict_step_time", (LLAMA, "H100"),
     dict(_LLM, n_gpus=8, strategy="fsdp2-tp2-pp2", gpus_per_node=4, interconnect={"intra": "nvlink", "inter": "infiniband-hdr"})),
    ("llama-pp2-interleaved", "predict_step_time", (LLAMA, "H100"),
     dict(_LLM, n_gpus=4, strategy="fsdp2-pp2", pipeline_schedule="interleaved-1f1b", activation_checkpointing="layer")),
    ("llama-te-fp8", "predict_step_time", (LLAMA, "H100"), dict(_FP8, stack="te")),
    ("llama-megatron-4d", "predict_step_time", (LLAMA, "H100"),
     dict(_LLM, batch_size=16, n_gpus=16, strategy="dp2-cp2-tp2-pp2", micro_batches=4, framework="megatron",
          pipeline_schedule="interleaved-1f1b", virtual_stages=2, interconnect={"intra": "nvlink", "inter": "infiniband-ndr"})),
    ("llama-megatron-dp-tp", "predict_step_time", (LLAMA, "H100"),
     dict(_LLM, n_gpus=4, strategy="dp2-tp2", framework="megatron", optimizer="adam-fused")),
    ("llama-megatron-te-fp8", "predict_step_time", (LLAMA, "H100"),
     dict(_FP8, batch_size=8, n_gpus=4, strategy="dp2-tp2", framework="megatron", optimizer="adam-fused")),
    ("memory-llama-megatron", "predict_memory", (LLAMA, "H100"),
     dict(_LLM, batch_size=16, n_gpus=16, strategy="dp2-cp2-tp2-pp2", micro_batches=4, framework="megatron",
          pipeline_schedule="interleaved-1f1b", virtual_stages=2)),
    ("memory-llama", "predict_memory", (LLAMA, "H100"), dict(_LLM, n_gpus=8, strategy="fsdp", activation_checkpointing="selective")),
    ("memory-llama-3d", "predict_memory", (LLAMA, "H100"), dict(_LLM, n_gpus=8, strategy="fsdp2-tp2-pp2", micro_batches=2)),
    ("memory-resnet", "predict_memory", ("resnet-32", "V100"), dict(batch_size=128)),
    ("explore", "explore_strategies", (LLAMA, "A100", 4), dict(batch_size=8, input_shape=(64,), precision="bf16")),
]


def _call(fn: str, args, kw) -> pd.DataFrame:
    import perfmodel as pm
    from perfmodel._extrapolation import ExtrapolationWarning

    f = getattr(pm, fn) if hasattr(pm, fn) else getattr(pm.planning, fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        warnings.simplefilter("ignore", UserWarning)
        return f(*args, **kw)


def _record(frame: pd.DataFrame) -> dict:
    out = {}
    for c in frame.columns:
        v = frame[c].tolist()
        out[c] = [x.hex() if isinstance(x, float) else (x if isinstance(x, (int, bool, str)) or x is None else str(x))
                  for x in v]
    return out


def _simd() -> list:
    from numpy._core._multiarray_umath import __cpu_features__

    return sorted(k for k, v in __cpu_features__.items() if v)


def grid() -> dict:
    """Every case of :data:`CASES`, recorded (floats as their exact hex form)."""
    return {name: _record(_call(fn, args, kw)) for name, fn, args, kw in CASES}


@pytest.fixture(scope="module")
def recorded() -> dict:
    return json.loads(GRID.read_text())


@pytest.mark.parametrize("name,fn,args,kw", CASES, ids=[c[0] for c in CASES])
def test_prediction_is_the_recorded_one(recorded, name, fn, args, kw):
    want = recorded["cases"][name]
    got = _record(_call(fn, args, kw))
    assert list(got) == list(want), f"{name}: columns changed"
    exact = recorded["simd"] == _simd()
    for c in want:
        for a, b in zip(got[c], want[c], strict=True):
            if isinstance(b, str) and isinstance(a, str) and b.startswith(("0x", "-0x")) and a.startswith(("0x", "-0x")):
                fa, fb = float.fromhex(a), float.fromhex(b)
                if exact:
                    assert a == b, f"{name}.{c}: {fa!r} != recorded {fb!r}"
                else:
                    assert fa == pytest.approx(fb, rel=1e-12, abs=0), f"{name}.{c}"
            elif isinstance(b, str) and b in ("nan", "inf", "-inf") or (isinstance(a, str) and a.startswith(("nan", "inf"))):
                assert a == b, f"{name}.{c}"
            else:
                assert a == b, f"{name}.{c}: {a!r} != recorded {b!r}"


if __name__ == "__main__":  # regenerate (a change meant to move numbers says so in its commit)
    GRID.write_text(json.dumps({"simd": _simd(), "cases": grid()}, indent=0, sort_keys=False) + "\n")
    print(f"wrote {GRID} ({len(CASES)} cases)")
