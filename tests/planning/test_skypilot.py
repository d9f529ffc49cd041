"""SkyPilot adapter, tested with stand-ins for sky.Resources (skypilot is never installed for the tests)."""
import dataclasses

import pytest

import perfmodel as pm
from perfmodel._errors import UnknownNameError
from perfmodel.planning.skypilot import time_estimator

pytest.importorskip("transformers")

CFG = dict(model_type="gpt2", n_layer=4, n_embd=256, n_head=8, vocab_size=1000, n_positions=128, bos_token_id=0, eos_token_id=0)


@dataclasses.dataclass
class FakeResources:
    """What the estimator reads of sky.Resources: ``accelerators`` (dict name -> count, as SkyPilot stores it)."""

    accelerators: object = None


def test_estimate_is_steps_times_predicted_step_time():
    est = time_estimator(CFG, steps=1000, batch_size=16, input_shape=(128,))
    one = est(FakeResources({"A100": 1}))
    ref = pm.predict_step_time(CFG, "A100", input_shape=(128,), batch_size=16, precision="bf16", optimizer="adam")
    assert one == pytest.approx(1000 * ref["step_time_s"].iloc[0])
    four = est(FakeResources({"H100": 4}))
    ref4 = pm.predict_step_time(CFG, "H100", input_shape=(128,), batch_size=16, n_gpus=4, strategy="dp", precision="bf16", optimizer="adam")
    assert four == pytest.approx(1000 * ref4["step_time_s"].iloc[0])
    assert est(FakeResources("H100:4")) == four


def test_resources_perfmodel_cannot_predict():
    est = time_estimator(CFG, steps=10, batch_size=8, input_shape=(128,))
    with pytest.raises(ValueError, match=r"have no accelerators \(e.g. accelerators='A100:8'\)"):
        est(FakeResources(None))
    with pytest.raises(ValueError, match=r"several accelerator types"):
        est(FakeResources({"A100": 1, "H100": 1}))
    with pytest.raises(ValueError, match=r"accelerator count 0.5 for A100: perfmodel predicts whole GPUs"):
        est(FakeResources({"A100": 0.5}))
    with pytest.raises(UnknownNameError, match=r"TPU-v9"):
        est(FakeResources({"TPU-v9": 1}))
    with pytest.raises(ValueError, match=r"steps must be a positive int"):
        time_estimator(CFG, steps=0, batch_size=8)
