"""Inputs the planners and the parallel models must refuse or honour, said in one clear message: `perfmodel plan`'s
--steps / --batch-size when today's-cloud planner answers, tensor parallelism that does not divide the key/value heads,
a sequence longer than the position table under context parallelism, non-numeric deadlines and budgets, a GPU spec
given as a dict, and configs with absurd layer counts."""
from __future__ import annotations

import dataclasses
import json
import warnings

import pytest

import perfmodel as pm
from perfmodel._errors import ModelConfigError
from perfmodel.step.strategy import StrategyError

# Llama 3 8B's attention (32 query heads sharing 8 key/value heads), a small width so that nothing heavy is traced
GQA = dict(model_type="llama", vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
           num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=256, tie_word_embeddings=False)


def _quiet(fn, *a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **kw)


# -- 1. perfmodel plan --steps / --batch-size answered by today's-cloud planner --------------------------------------

class _Stop(Exception):
    pass


def _cloud_call(monkeypatch, tmp_path, *flags):
    """The keyword arguments `perfmodel plan config.json ...` hands to plan_cloud (which is not run)."""
    import perfmodel.planning as planning

    seen = {}

    def fake(model, **kw):
        seen.update(kw)
        raise _Stop

    monkeypatch.setattr(planning, "plan_cloud", fake)
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(GQA))
    from perfmodel.cli import main

    with pytest.raises(_Stop):
        main(["plan", str(cfg), "--gpus", "H100", *flags])
    return seen


def test_plan_steps_and_batch_size_are_honoured_by_the_cloud_planner(monkeypatch, tmp_path, capsys):
    kw = _cloud_call(monkeypatch, tmp_path, "--steps", "100", "--batch-size", "8")
    assert kw["steps"] == 100 and kw["samples"] is None and list(kw["batch_sizes"]) == [8]
    assert "100 steps of batch 8" in capsys.readouterr().out


def test_plan_steps_alone_keep_the_batch_size_of_plan(monkeypatch, tmp_path):
    kw = _cloud_call(monkeypatch, tmp_path, "--steps", "100")
    assert kw["steps"] == 100 and list(kw["batch_sizes"]) == [128]  # plan's --batch-size default: steps x batch fixed


def test_plan_batch_size_alone_fixes_the_batch(monkeypatch, tmp_path):
    kw = _cloud_call(monkeypatch, tmp_path, "--batch-size", "16")
    assert list(kw["batch_sizes"]) == [16] and kw["steps"] is None and kw["samples"] == 320_000


def test_plan_without_steps_or_batch_keeps_the_cloud_defaults(monkeypatch, tmp_path):
    kw = _cloud_call(monkeypatch, tmp_path)
    assert list(kw["batch_sizes"]) == [8, 16, 32] and kw["steps"] is None and kw["samples"] == 320_000


# -- 2. tensor parallelism must divide the key/value heads -------------------------------------------------------------

def test_tp_that_does_not_divide_the_kv_heads_is_refused():
    kw = dict(input_shape=(64,), batch_size=16, precision="bf16", optimizer="adam")
    msg = r"key/value heads = 8 .*not divisible by 16.*Valid tp degrees for it: 1, 2, 4, 8\."
    with pytest.raises(StrategyError, match=msg):
        _quiet(pm.predict_step_time, GQA, "H100", n_gpus=16, strategy="tp", **kw)
    with pytest.raises(StrategyError, match=msg):
        _quiet(pm.predict_step_time, GQA, "H100", n_gpus=32, strategy="dp2-tp16", **kw)
    with pytest.raises(StrategyError, match=msg):
        _quiet(pm.predict_memory, GQA, "H100", n_gpus=16, strategy="tp", **kw)
    ok = _quiet(pm.predict_step_time, GQA, "H100", n_gpus=16, strategy="dp2-tp8", **kw).iloc[0]
    assert ok["step_time_s"] > 0


# -- 3. the position table bounds the whole sequence, whatever the context-parallel split -----------------------------

# GPT-2 looks positions up in a learned table of n_positions rows: a longer sequence cannot run
LEARNED = dict(model_type="gpt2", vocab_size=512, n_embd=64, n_layer=2, n_head=4, n_positions=256)


@pytest.mark.parametrize("strategy", ["fsdp8", "fsdp4-cp2"])
def test_sequence_longer_than_the_position_table_is_refused_under_cp(strategy):
    kw = dict(input_shape=(512,), batch_size=8, precision="bf16", optimizer="adam", n_gpus=8, strategy=strategy)
    msg = r"sequences of 512 tokens.*positions for 256"
    with pytest.raises(ModelConfigError, match=msg):
        _quiet(pm.predict_step_time, LEARNED, "H100", **kw)
    with pytest.raises(ModelConfigError, match=msg):
        _quiet(pm.predict_memory, LEARNED, "H100", **kw)


def test_a_sequence_within_the_table_still_runs_under_cp():
    r = _quiet(pm.predict_step_time, LEARNED, "H100", input_shape=(256,), batch_size=8, precision="bf16", optimizer="adam",
               n_gpus=8, strategy="fsdp4-cp2").iloc[0]
    assert r["step_time_s"] > 0


def test_rotary_models_take_longer_sequences_with_or_without_cp():
    """A rotary model (Llama) has no position table: max_position_embeddings is its trained context, and longer
    sequences run (torchtitan's Llama 3 8B at 262,144 tokens over cp8), the same under every split."""
    kw = dict(input_shape=(512,), batch_size=8, precision="bf16", optimizer="adam", n_gpus=8)
    for strategy in ("fsdp8", "fsdp4-cp2"):
        assert _quiet(pm.predict_step_time, GQA, "H100", strategy=strategy, **kw).iloc[0]["step_time_s"] > 0


# -- 4. the planners' numeric arguments and GPUs -------------------------------------------------------------------

@pytest.mark.parametrize("kw, name", [(dict(deadline_h="2"), "deadline_h"), (dict(budget_usd="5"), "budget_usd"),
                                      (dict(checkpoint_s="1"), "checkpoint_s"),
                                      (dict(b_simple="3", reference_batch=8), "b_simple"),
                                      (dict(b_simple=3.0, reference_batch="8"), "reference_batch"),
                                      (dict(deadline_h=float("nan")), "deadline_h")])
def test_plan_cloud_refuses_non_numbers(kw, name):
    from perfmodel.planning import plan_cloud

    kw = {"steps": 10, **kw}
    with pytest.raises((TypeError, ValueError), match=rf"{name} must be a positive .*got {kw[name]!r}.*Pass"):
        plan_cloud("resnet-32", gpus="H100", n_gpus=(1,), batch_sizes=(8,), input_shape=(3, 32, 32), **kw)


@pytest.mark.parametrize("kw, name", [(dict(deadline_h="2"), "deadline_h"), (dict(budget_usd="2"), "budget_usd"),
                                      (dict(steps="100"), "steps"), (dict(max_workers="2"), "max_workers"),
                                      (dict(steps=2.5), "steps")])
def test_plan_cmdare_refuses_non_numbers(kw, name):
    with pytest.raises((TypeError, ValueError), match=rf"{name} must be a positive .*got {kw[name]!r}.*Pass"):
        pm.plan("resnet-32", gpus="K80", **kw)


def test_a_gpu_spec_as_a_dict_gets_a_hint():
    from perfmodel import datasets as ds
    from perfmodel.planning import plan_cloud

    d = dataclasses.asdict(ds.gpu_spec("H100"))
    for gpus in (d, [d], ds.gpu_spec("H100")):
        with pytest.raises((TypeError, ValueError), match=r"perfmodel\.datasets\.GPUSpec\(\*\*d\).*by name"):
            plan_cloud("resnet-32", gpus=gpus, n_gpus=(1,), batch_sizes=(8,), steps=10, input_shape=(3, 32, 32))
    with pytest.raises((TypeError, ValueError), match=r"perfmodel\.datasets\.GPUSpec\(\*\*d\)"):
        pm.plan("resnet-32", gpus=d)


# -- 5. a layer count far beyond any real model is refused before anything is built ------------------------------------

def test_absurd_layer_count_is_refused_before_building():
    from perfmodel.zoo import hf

    for key in ("num_hidden_layers", "n_layer"):
        cfg = dict(GQA, **{key: 100_000}) if key == "num_hidden_layers" else dict(model_type="gpt2", n_layer=100_000)
        with pytest.raises(ModelConfigError, match=rf"{key} = 100000.*at most {hf.MAX_LAYERS}.*MAX_LAYERS"):
            hf.build(cfg)
    with pytest.raises(ModelConfigError, match=r"num_hidden_layers = 100000"):
        _quiet(pm.predict_step_time, dict(GQA, num_hidden_layers=100_000), "H100", input_shape=(64,), batch_size=1)
    assert hf.MAX_LAYERS >= 1024
    hf.build(dict(GQA, num_hidden_layers=3))  # an ordinary count builds
