"""pm.plan: one planner for every model form and GPU, saying which world answered."""
from __future__ import annotations

import json

import pytest

import perfmodel as pm
from perfmodel.planning import choose_world

GPT2_TINY = {"model_type": "gpt2", "n_layer": 2, "n_embd": 128, "n_head": 4, "n_positions": 256, "vocab_size": 1000}


@pytest.mark.parametrize("model, gpus, kwargs, world", [
    ("resnet-32", None, {}, "cmdare"),
    ("resnet-32", ["K80", "V100"], {}, "cmdare"),
    ("resnet-32", "nvidia-tesla-v100", {}, "cmdare"),  # GCP's name of CM-DARE's V100
    ("resnet-32", "Tesla V100-PCIE-16GB", {}, "cloud"),  # another V100 part than CM-DARE measured
    ("resnet-32", ["H100"], {}, "cloud"),
    ("resnet-32", ["K80", "H100"], {}, "cloud"),
    ("resnet-32", ["T4"], {"max_workers": 2}, "cmdare"),  # a CM-DARE-only argument chooses its world
    ("resnet-32", None, {"n_gpus": (1, 2)}, "cloud"),
    (GPT2_TINY, None, {}, "cloud"),
    (GPT2_TINY, ["K80"], {}, "cloud"),
])
def test_the_world_follows_the_question(model, gpus, kwargs, world):
    assert choose_world(model, gpus, **kwargs) == world


def test_conflicting_or_unknown_arguments_are_clear_errors():
    with pytest.raises(ValueError, match=r"arguments of CM-DARE's measured world \['max_workers'\] and of today's clouds \['n_gpus'\]"):
        pm.plan("resnet-32", max_workers=2, n_gpus=(2,))
    with pytest.raises(TypeError, match=r"argument\(s\) \['n_workerz'\] that neither planner takes"):
        pm.plan("resnet-32", n_workerz=2)
    with pytest.raises(ValueError, match="world must be one of"):
        pm.plan("resnet-32", world="2019")
    with pytest.raises(ValueError, match="a Hugging Face config cannot be placed there"):
        pm.plan(GPT2_TINY, world="cmdare")
    with pytest.raises(TypeError, match=r"CM-DARE's planner does not take \['precision'\]"):
        pm.plan("resnet-32", world="cmdare", precision="bf16")


def test_cmdare_world_answers_the_papers_question_and_says_so():
    f = pm.plan("resnet-32", gpus=["K80"], max_workers=2, ps=1, steps=64000)
    assert set(f["basis"]) == {"cmdare"} and f.attrs["world"] == "cmdare"
    assert "CM-DARE" in f.attrs["basis"] and "measured" in f.attrs["basis"]
    same = pm.planning.plan_cmdare("resnet-32", gpus=["K80"], max_workers=2, ps=1, steps=64000)
    assert f.drop(columns="basis").equals(same)


def test_a_config_json_on_todays_gpus_is_planned_by_spec_sheet_prediction(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(GPT2_TINY))
    f = pm.plan(str(path), gpus=["H100"], n_gpus=(1,), batch_sizes=(8,), strategies=("dp",), steps=100,
                input_shape=(128,), spot=False)
    assert len(f) and set(f["basis"]) == {"cloud"} and "spec-sheet prediction" in f.attrs["basis"]
    assert (f["gpu"] == "H100").all()
    with pytest.raises(FileNotFoundError, match="no Hugging Face config at"):
        pm.plan(str(tmp_path / "nope.json"), gpus=["H100"])
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(ValueError, match="holds JSON list"):
        pm.plan(str(tmp_path / "list.json"), gpus=["H100"])
