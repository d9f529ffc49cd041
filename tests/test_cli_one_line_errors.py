"""A model that cannot run on the input asked for, or a config that cannot be built, is one line on stderr from the
command line, not a traceback."""
from __future__ import annotations

import json

import pytest

from perfmodel.cli import main

LLAMA = {"model_type": "llama", "vocab_size": 512, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 256, "tie_word_embeddings": False}


@pytest.mark.parametrize("case,config,args,says", [
    ("cnn-given-a-token-shape", None, ["predict", "resnet-32", "--input-shape", "1024"], "failed to run a training step"),
    ("llm-given-two-dims", LLAMA, ["--input-shape", "1024,2"],
     "its input is a sequence of token ids, so one sample's shape is one number, the sequence length"),
    ("more-kv-heads-than-heads", dict(LLAMA, num_key_value_heads=8), ["--input-shape", "64"],
     "num_key_value_heads = 8 and num_attention_heads = 4"),
])
def test_one_line_error(tmp_path, capsys, case, config, args, says):
    if config is not None:
        path = tmp_path / "config.json"
        path.write_text(json.dumps(config))
        args = ["predict", str(path), *args]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [["predict"], ["layouts", "--n-gpus", "8"], ["plan"]])
def test_a_config_path_that_is_not_a_file_is_a_usage_error(tmp_path, capsys, command):
    missing = tmp_path / "llama-3-70b.json"
    assert main([*command[:1], str(missing), *command[1:]]) == 2
    err = capsys.readouterr().err
    assert f"no Hugging Face config at {missing}" in err and "Traceback" not in err
    assert err.startswith(f"perfmodel {command[0]}: ") and len(err.strip().splitlines()) == 1


def test_kv_heads_that_do_not_divide_the_heads_are_refused_before_tracing():
    from perfmodel._errors import ModelConfigError
    from perfmodel.zoo.hf import build

    with pytest.raises(ModelConfigError, match="divides the number of attention heads"):
        build(dict(LLAMA, num_attention_heads=4, num_key_value_heads=3))
    build(dict(LLAMA, num_attention_heads=4, num_key_value_heads=4))  # multi-head attention: fine
