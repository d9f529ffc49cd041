"""``pm.predict(Workload, Cluster, Parallelism)``: the same numbers as the keyword faces, to the bit, on every
``predict_step_time`` case of the prediction grid; the three objects refuse bad fields when made; the result adds up,
prints its numbers before ``basis`` and draws its breakdown."""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest

import perfmodel as pm
from perfmodel.datasets import UnknownNameError

from test_prediction_grid import CASES, LLAMA  # noqa: E402 (tests/models is on the path, as for _rebuild)

_WORKLOAD = {"input_shape", "batch_size", "input_dtype", "input_high", "precision", "optimizer", "inference", "compile",
             "activation_checkpointing", "stack"}
_CLUSTER = {"n_gpus", "gpus_per_node", "interconnect"}


def _objects(model, gpu, kw):
    w = pm.Workload(model, **{k: v for k, v in kw.items() if k in _WORKLOAD})
    c = pm.Cluster(gpu, **{k: v for k, v in kw.items() if k in _CLUSTER})
    p = pm.Parallelism(**{k: v for k, v in kw.items() if k not in _WORKLOAD | _CLUSTER})
    return w, c, p


_STEP_CASES = [(name, args, kw) for name, fn, args, kw in CASES if fn == "predict_step_time"]


@pytest.mark.parametrize("name,args,kw", _STEP_CASES, ids=[c[0] for c in _STEP_CASES])
def test_predict_is_the_keyword_face_to_the_bit(name, args, kw):
    model, gpus = args
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = pm.predict_step_time(model, gpus, **kw)
        for i, gpu in enumerate([gpus] if isinstance(gpus, str) else gpus):
            got = pm.predict(*_objects(model, gpu, kw))
            row = got.to_frame().iloc[0]
            for col in want.columns:
                assert row[col] == want[col].iloc[i] or (pd.isna(row[col]) and pd.isna(want[col].iloc[i])), f"{name}.{col}"
            assert got.step_time_s == want["step_time_s"].iloc[i]
            assert got.basis == want["basis"].iloc[i]
            if "memory_per_gpu_bytes" in want:
                assert got.memory["total_bytes"] == want["memory_per_gpu_bytes"].iloc[i]
                assert got.fits == want["fits"].iloc[i]
            else:
                assert got.memory is None and got.fits is None


@pytest.mark.parametrize("name,args,kw", _STEP_CASES, ids=[c[0] for c in _STEP_CASES])
def test_the_breakdown_adds_up(name, args, kw):
    model, gpus = args
    gpu = gpus if isinstance(gpus, str) else gpus[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = pm.predict(*_objects(model, gpu, kw))
    b = r.breakdown
    assert b["compute"] + b["comm_exposed"] + b["bubble"] + b["overlap_slowdown"] == pytest.approx(r.step_time_s, rel=1e-12)
    assert sum(s for _, s in r.segments()) == pytest.approx(r.step_time_s, rel=1e-12)
    assert sum(r.comm_exposed_s.values()) == pytest.approx(b["comm_exposed"], rel=1e-9, abs=1e-15)
    assert sum(r.comm_total_s.values()) == pytest.approx(b["comm_total"], rel=1e-9, abs=1e-15)
    assert all(v >= 0 for v in [*r.comm_exposed_s.values(), *r.comm_total_s.values(), *b.values()])
    assert all(r.comm_exposed_s[g] <= r.comm_total_s[g] * (1 + 1e-9) + 1e-15 for g in r.comm_exposed_s)
    assert (b["recompute"] > 0) == bool(kw.get("activation_checkpointing"))
    assert 0 < r.mfu < 1 and r.lower_s <= r.step_time_s <= r.upper_s
    if r.memory:
        parts = sum(r.memory[k] for k in ("params_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes"))
        assert parts == pytest.approx(r.memory["total_bytes"], rel=1e-12)


def _llama():
    return pm.Workload(LLAMA, input_shape=(64,), batch_size=8, precision="bf16", optimizer="adam")


def test_groups_name_the_layout_s_collectives():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = pm.predict(_llama(), pm.Cluster("H100", n_gpus=8), pm.Parallelism("dp2-tp2-pp2", micro_batches=2))
        f = pm.predict(_llama(), pm.Cluster("H100", n_gpus=8), "fsdp")
    assert r.comm_total_s["tp"] > 0 and r.comm_total_s["pp"] > 0 and r.comm_total_s["dp"] > 0 and r.comm_total_s["cp"] == 0
    assert f.comm_total_s["dp"] > 0 and f.comm_total_s["tp"] == f.comm_total_s["pp"] == 0
    assert r.breakdown["bubble"] > 0 and f.breakdown["bubble"] == 0
    assert r.tokens_per_s == pytest.approx(r.samples_per_s * 64)


def test_result_prints_numbers_first_and_basis_last_and_draws():
    import matplotlib

    matplotlib.use("Agg")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = pm.predict(_llama(), "H100")
        many = pm.predict(_llama(), pm.Cluster("H100", n_gpus=4), pm.Parallelism("fsdp2-tp2"))
    text = repr(many).splitlines()
    assert text[0].startswith("Prediction: llama on 4 x H100 (fsdp2-tp2), batch 8, bf16")
    assert text[1].lstrip().startswith("step time")
    at = [i for i, line in enumerate(text) if line.startswith("  basis: ")]
    assert len(at) == 1 and all(line.startswith(" " * 9) for line in text[at[0] + 1:])  # basis last, wrapped under itself
    assert any(line.lstrip().startswith("communication") and "tp " in line for line in text)
    assert any(line.lstrip().startswith("memory per GPU") for line in text)
    frame = many.to_frame()
    assert list(frame.columns)[-1] == "basis" and len(frame) == 1
    assert {"comm_tp_s", "comm_dp_total_s", "recompute_s", "activations_bytes", "mfu", "tokens_per_s"} <= set(frame.columns)
    ax = one.plot()
    many.plot(ax, y=1)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["llama on H100", "llama on 4 x H100 (fsdp2-tp2)"]
    labels = [c.get_label() for c in ax.containers if not c.get_label().startswith("_")]
    assert len(labels) == len(set(labels)) and {"forward", "backward", "optimizer"} <= set(labels)
    import matplotlib.pyplot as plt

    plt.close("all")


def test_inference_has_no_memory():
    w = pm.Workload(LLAMA, input_shape=(64,), batch_size=4, optimizer=None, inference=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = pm.predict(w, "L4")
    assert r.memory is None and r.fits is None and "memory per GPU" not in repr(r)


@pytest.mark.parametrize("make,error,words", [
    (lambda: pm.Cluster("H1000"), UnknownNameError, "H1000"),
    (lambda: pm.Cluster(["H100", "A100"]), TypeError, "one GPU"),
    (lambda: pm.Cluster("H100", n_gpus=0), ValueError, "n_gpus"),
    (lambda: pm.Cluster("H100", n_gpus=True), ValueError, "n_gpus"),
    (lambda: pm.Cluster("H100", gpus_per_node=2.5), ValueError, "gpus_per_node"),
    (lambda: pm.Cluster("H100", interconnect="warp-drive"), UnknownNameError, "warp-drive"),
    (lambda: pm.Cluster("H100", interconnect={"intra": "nvlink", "outer": "infiniband-ndr"}), UnknownNameError, "outer"),
    (lambda: pm.Parallelism("zero-4"), UnknownNameError, "zero-4"),
    (lambda: pm.Parallelism(micro_batches=0), ValueError, "micro_batches"),
    (lambda: pm.Parallelism(pipeline_schedule="zb-v"), UnknownNameError, "zb-v"),
    (lambda: pm.Parallelism(activation_checkpointing="some"), ValueError, "activation_checkpointing"),
    (lambda: pm.Parallelism(async_tp="yes"), TypeError, "async_tp"),
    (lambda: pm.Workload(LLAMA, stack="xla"), ValueError, "stack"),
    (lambda: pm.Workload(LLAMA, stack="eager", compile=True), ValueError, "compile"),
])
def test_objects_refuse_bad_fields_when_made(make, error, words):
    with pytest.raises(error, match=words):
        make()


def test_objects_are_frozen_and_the_run_is_said_once():
    c = pm.Cluster("H100", n_gpus=16)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.n_gpus = 8
    assert c.nodes == 2 and c.spec.gpu == "H100"
    assert pm.Parallelism("fsdp2-tp4").degrees(8)["tp"] == 4
    w = pm.Workload(LLAMA, input_shape=(64,), batch_size=8, activation_checkpointing="full")
    with pytest.raises(ValueError, match="say it once"):
        pm.predict(w, "H100", pm.Parallelism(activation_checkpointing="selective"))
    with pytest.raises(TypeError, match="Cluster"):
        pm.predict(w, pm.Parallelism(), "H100")
    with pytest.raises(TypeError, match="parallelism"):
        pm.predict(w, "H100", 4)
    with pytest.raises(pm.step.parallel.StrategyError):
        pm.predict(w, pm.Cluster("H100", n_gpus=6), "dp4-tp2")


def test_stack_in_the_workload_is_the_keyword():
    w = pm.Workload(LLAMA, input_shape=(64,), batch_size=8, precision="bf16", stack="te")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = pm.predict_step_time(w, "H100")
        b = pm.predict_step_time(LLAMA, "H100", input_shape=(64,), batch_size=8, precision="bf16", stack="te")
        c = pm.predict(w, "H100")
    assert a["step_time_s"].iloc[0] == b["step_time_s"].iloc[0] == c.step_time_s
    assert "Transformer Engine" in c.basis
