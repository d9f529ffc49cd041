"""A :class:`perfmodel.Workload` never silently changes the question: each field is checked when the workload is made
(as the functions check the same keyword), a field left unset means the default of the function it is passed to, and
``pm.plan`` routes a workload to the world its fields and GPUs ask for."""
from __future__ import annotations

import warnings

import pandas as pd
import pytest

import perfmodel as pm
from perfmodel.features import FeatureExtractionError
from perfmodel._extrapolation import ExtrapolationWarning

LLAMA = dict(model_type="llama", vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        yield


# -- 1. every field checked at construction -------------------------------------------------------------------------

@pytest.mark.parametrize("shape, hint", [
    ("512", r"input_shape=\(512,\)"),
    ("333", r"input_shape=\(333,\)"),
    ("3,32,32", r"input_shape=\(3, 32, 32\)"),
])
def test_a_string_is_not_a_shape(shape, hint):
    with pytest.raises(TypeError, match=r"Workload input_shape .*got '" + shape + "'.*" + hint):
        pm.Workload(LLAMA, input_shape=shape)


@pytest.mark.parametrize("shape", [(512.9,), (3, 32, 32.0), (0, 32), (-1,), (True, 32), (), [None], {"a": 1}, 1.5, 0])
def test_a_shape_is_positive_whole_numbers(shape):
    with pytest.raises((TypeError, ValueError), match=r"Workload input_shape must be .*positive int.*e\.g\."):
        pm.Workload(LLAMA, input_shape=shape)


def test_an_int_shape_is_one_dimension_as_predict_step_time_takes_it():
    assert pm.Workload(LLAMA, input_shape=512).input_shape == (512,)
    assert pm.Workload(LLAMA, input_shape=[3, 32, 32]).input_shape == (3, 32, 32)


@pytest.mark.parametrize("field", ["inference", "compile"])
@pytest.mark.parametrize("value", ["False", "True", 0, 1, None])
def test_flags_are_real_booleans(field, value):
    with pytest.raises(TypeError, match=rf"Workload {field} must be True or False.*got {value!r}"):
        pm.Workload(LLAMA, **{field: value})


@pytest.mark.parametrize("fields, match", [
    (dict(precision="fp64"), r"Workload.*precision 'fp64'.*fp32"),
    (dict(optimizer="lbfgs"), r"Workload optimizer must be"),
    (dict(activation_checkpointing="sometimes"), r"Workload activation_checkpointing must be"),
    (dict(batch_size=2.5), r"Workload batch_size must be a positive int"),
    (dict(batch_size="8"), r"Workload batch_size must be a positive int"),
    (dict(input_high=0), r"Workload input_high must be a positive int"),
    (dict(input_high="512"), r"Workload input_high must be a positive int"),
    (dict(input_dtype="int65"), r"Workload input_dtype must be a torch.dtype"),
    (dict(inference=True, optimizer="adam"), r"Workload.*inference=True.*optimizer=None"),
])
def test_every_field_is_checked_as_the_functions_check_it(fields, match):
    with pytest.raises(ValueError, match=match):
        pm.Workload(LLAMA, **fields)


def test_the_keywords_refuse_the_same_values():
    """The rules are shared: what a Workload refuses, predict_step_time refuses as a keyword."""
    with pytest.raises(TypeError, match=r"inference must be True or False"):
        pm.predict_step_time(LLAMA, "H100", input_shape=(64,), optimizer=None, inference="False")
    with pytest.raises(FeatureExtractionError, match=r"got '512'\. A string is not a shape: pass input_shape=\(512,\)"):
        pm.predict_step_time("resnet-32", "H100", input_shape="512")


# -- 2. a field left unset is the function's own default -------------------------------------------------------------

STEP = dict(batch_size=8, input_shape=(64,))


def test_predict_step_time_from_a_workload_is_the_keywords():
    pd.testing.assert_frame_equal(pm.predict_step_time(pm.Workload(LLAMA, **STEP), "H100"),
                                  pm.predict_step_time(LLAMA, "H100", **STEP), check_exact=True)


def test_predict_memory_from_a_workload_is_the_keywords():
    pd.testing.assert_frame_equal(pm.predict_memory(pm.Workload(LLAMA, **STEP), "H100", n_gpus=2, strategy="fsdp"),
                                  pm.predict_memory(LLAMA, "H100", n_gpus=2, strategy="fsdp", **STEP), check_exact=True)


def test_explore_strategies_from_a_workload_is_the_keywords():
    kw = dict(micro_batches=(1,), activation_checkpointing=(False,), strategies=("dp", "fsdp"))
    pd.testing.assert_frame_equal(pm.planning.explore_strategies(pm.Workload(LLAMA, **STEP), "A100", 2, **kw),
                                  pm.planning.explore_strategies(LLAMA, "A100", 2, **STEP, **kw), check_exact=True)


def test_plan_from_a_workload_is_the_keywords():
    kw = dict(gpus=["H100"], n_gpus=(1,), strategies=("dp",), spot=(False,), steps=100)
    a = pm.plan(pm.Workload(LLAMA, **STEP), **kw)
    b = pm.plan(LLAMA, batch_sizes=(8,), input_shape=(64,), **kw)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert a.attrs["world"] == "cloud"
    # plan's own defaults (BF16, Adam), not predict_step_time's FP32 and SGD
    fp32 = pm.plan(LLAMA, batch_sizes=(8,), input_shape=(64,), precision="fp32", optimizer="sgd-momentum", **kw)
    assert (fp32["step_time_s"].to_numpy() != a["step_time_s"].to_numpy()).all()


def test_unset_fields_are_not_passed_and_the_repr_shows_what_was_set():
    w = pm.Workload("resnet-32", batch_size=8)
    assert w.values() == {"batch_size": 8}
    assert w.precision is pm.Workload.UNSET and not w.is_set("precision") and w.is_set("batch_size")
    assert repr(w) == "Workload('resnet-32', batch_size=8)"
    assert repr(pm.Workload("resnet-32", optimizer=None)) == "Workload('resnet-32', optimizer=None)"
    # a field set to a value that happens to be some function's default is set: it is passed on
    assert pm.Workload("resnet-32", precision="fp32").values() == {"precision": "fp32"}
    with pytest.raises(ValueError, match=r"explore_strategies has no use for the workload's compile=False; leave it unset"):
        pm.planning.explore_strategies(pm.Workload(LLAMA, compile=False, **STEP), "A100", 2)


# -- 3. plan routes a workload to the world its fields ask for ---------------------------------------------------------

def test_a_zoo_cnn_on_cmdare_gpus_plans_in_cmdares_world():
    kw = dict(max_workers=2, ps=(1,), transient=(False,), steps=1000)
    a = pm.plan(pm.Workload("resnet-32"), gpus="K80", **kw)
    assert a.attrs["world"] == "cmdare"
    pd.testing.assert_frame_equal(a, pm.plan("resnet-32", gpus="K80", **kw), check_exact=True)
    # the Workload's batch is the samples of one (asynchronous) step: CM-DARE's batch_size
    b = pm.plan(pm.Workload("resnet-32", batch_size=64), gpus="K80", world="cmdare", **kw)
    pd.testing.assert_frame_equal(b, pm.plan("resnet-32", gpus="K80", world="cmdare", batch_size=64, **kw), check_exact=True)


def test_a_workload_field_cmdares_world_has_no_use_for_is_named_with_the_way_out():
    with pytest.raises(ValueError, match=r"world='cmdare'.*workload's precision='bf16'.*leave it unset.*world='cloud'"):
        pm.plan(pm.Workload("resnet-32", precision="bf16"), gpus="K80", world="cmdare")
    with pytest.raises(ValueError, match=r"Workload sets \['precision'\].*\['max_workers'\]"):
        pm.plan(pm.Workload("resnet-32", precision="bf16"), gpus="K80", max_workers=2)
    with pytest.raises(ValueError, match=r"plan was given batch_sizes=\(16,\) and a Workload with batch_sizes=\(8,\)"):
        pm.plan(pm.Workload(LLAMA, **STEP), gpus=["H100"], batch_sizes=(16,))
