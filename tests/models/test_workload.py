"""A workload described once (:class:`perfmodel.Workload`) gives what the keywords give, to the bit, to every function
that takes a model; a keyword that disagrees with it, or a field a function has no use for, is an error."""
from __future__ import annotations

import warnings

import pandas as pd
import pytest

import perfmodel as pm
from perfmodel._extrapolation import ExtrapolationWarning

LLAMA = dict(model_type="llama", vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False)
STEP = dict(input_shape=(64,), batch_size=8, precision="bf16", optimizer="adam-fused", compile=True,
            activation_checkpointing="selective")


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        yield


def test_the_step_and_its_memory_from_a_workload_are_the_keywords_to_the_bit():
    w = pm.Workload(LLAMA, **STEP)
    pd.testing.assert_frame_equal(pm.predict_step_time(w, ["A100", "H100"], n_gpus=4, strategy="fsdp2-tp2"),
                                  pm.predict_step_time(LLAMA, ["A100", "H100"], n_gpus=4, strategy="fsdp2-tp2", **STEP),
                                  check_exact=True)
    pd.testing.assert_frame_equal(pm.predict_memory(w, "H100", n_gpus=4, strategy="fsdp"),
                                  pm.predict_memory(LLAMA, "H100", n_gpus=4, strategy="fsdp", **STEP), check_exact=True)
    # a keyword that agrees with the workload is fine
    pd.testing.assert_frame_equal(pm.predict_step_time(w, "H100", precision="bf16"), pm.predict_step_time(LLAMA, "H100", **STEP))


def test_the_strategy_explorer_and_the_planner_take_a_workload():
    w = pm.Workload(LLAMA, input_shape=(64,), batch_size=8, precision="bf16", optimizer="adam")
    pd.testing.assert_frame_equal(pm.planning.explore_strategies(w, "A100", 2, micro_batches=(1,), activation_checkpointing=(False,)),
                                  pm.planning.explore_strategies(LLAMA, "A100", 2, batch_size=8, input_shape=(64,), precision="bf16",
                                                                 optimizer="adam", micro_batches=(1,), activation_checkpointing=(False,)),
                                  check_exact=True)
    kw = dict(gpus=["H100"], n_gpus=(1,), strategies=("dp",), spot=(False,), steps=100)
    a = pm.plan(w, **kw)
    b = pm.plan(LLAMA, input_shape=(64,), input_dtype=None, precision="bf16", optimizer="adam", batch_sizes=(8,), **kw)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert a.attrs["world"] == "cloud"


def test_a_workload_said_twice_differently_or_with_fields_a_function_has_no_use_for_is_an_error():
    w = pm.Workload(LLAMA, **STEP)
    with pytest.raises(ValueError, match=r"predict_step_time was given precision='fp32' and a Workload with precision='bf16'; say it once"):
        pm.predict_step_time(w, "H100", precision="fp32")
    with pytest.raises(ValueError, match=r"explore_strategies has no use for the workload's compile=True"):
        pm.planning.explore_strategies(w, "H100", 2)
    with pytest.raises(ValueError, match=r"predict_memory has no use for the workload's inference=True"):
        pm.predict_memory(pm.Workload(LLAMA, input_shape=(64,), optimizer=None, inference=True), "H100")
    with pytest.raises(ValueError, match=r"Workload batch_size must be a positive int; got 0"):
        pm.Workload(LLAMA, batch_size=0)
    with pytest.raises(TypeError, match=r"not another Workload"):
        pm.Workload(w)
    assert pm.Workload("resnet-32", input_shape=[3, 32, 32]).input_shape == (3, 32, 32)
