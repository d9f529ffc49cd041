"""The example inputs the README's command lines use (``examples/``) run as a newcomer types them, and a model name
perfmodel cannot resolve points at them."""
from __future__ import annotations

import math
import warnings
from pathlib import Path

import pytest

pytest.importorskip("transformers")

import perfmodel as pm  # noqa: E402
from perfmodel._errors import UnknownNameError  # noqa: E402
from perfmodel.cli import main  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_every_example_config_builds_and_is_predicted():
    for cfg in sorted(EXAMPLES.glob("*.json")):
        out = pm.predict_step_time(str(cfg), ["H100"], input_shape=(128,), batch_size=1, precision="bf16", optimizer=None,
                                   inference=True)
        t = float(out["step_time_s"].iloc[0])
        assert math.isfinite(t) and t > 0, cfg.name


def test_llama_3_8b_on_a_b200_and_an_mi300x_is_an_answer_with_its_extrapolation_said():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = pm.predict_step_time(str(EXAMPLES / "llama-3-8b.json"), ["B200", "MI300X"], input_shape=(2048,), batch_size=8,
                                   precision="bf16", optimizer="adam", n_gpus=8, strategy="fsdp")
    assert list(out["gpu"]) == ["B200", "MI300X"] and (out["step_time_s"] > 0).all()
    said = " ".join(str(w.message) for w in caught if type(w.message).__name__ == "ExtrapolationWarning")
    assert "B200" in said and "MI300X" in said and "fitted on" in said


def test_the_example_module_is_predicted_from_the_repository_root(monkeypatch, capsys):
    monkeypatch.chdir(EXAMPLES.parent)
    assert main(["predict", "examples.mynets:Net", "--input-shape", "3,64,64", "--batch-size", "8", "--gpus", "V100"]) == 0
    assert "Net" in capsys.readouterr().out


def test_a_hub_id_says_that_a_local_config_json_works():
    with pytest.raises(UnknownNameError) as exc:
        pm.zoo.load_model("meta-llama/Meta-Llama-3-8B")
    text = str(exc.value)
    assert "config.json" in text and "examples/llama-3-8b.json" in text and "does not download" in text
    with pytest.raises(UnknownNameError, match="resnet-32") as exc:  # a near miss of a zoo id still suggests it
        pm.zoo.load_model("resnet32x")
    assert "Hugging Face config.json path" in str(exc.value)
