"""``perfmodel layouts``: the layouts of one large run searched from the command line, the same answer as
:func:`perfmodel.planning.search_layouts`, and one-line usage errors."""
from __future__ import annotations

import json
import warnings

import pytest

import perfmodel as pm
from perfmodel.cli import main
from perfmodel.planning import search_layouts

LLAMA = dict(model_type="llama", vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=8,
             num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=2048, tie_word_embeddings=False)


@pytest.fixture()
def config(tmp_path):
    path = tmp_path / "llama.json"
    path.write_text(json.dumps(LLAMA))
    return str(path)


def test_the_command_prints_search_layouts_fastest_first(config, capsys):
    args = [config, "--gpu", "H100", "--n-gpus", "8", "--input-shape", "1024", "--batch-size", "16", "--tp", "1,2",
            "--pp", "1,2", "--usd-per-gpu-h", "2.5", "--quiet"]
    assert main(["layouts", *args]) == 0
    out = capsys.readouterr().out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = search_layouts(pm.Workload(LLAMA, input_shape=(1024,), batch_size=16, precision="bf16", optimizer="adam"),
                               pm.Cluster("H100", n_gpus=8), usd_per_gpu_h=2.5, tensor_parallel=[1, 2],
                               pipeline_parallel=[1, 2])
    best = found.iloc[0]
    assert f"{len(found)} layouts, {int(found['fits'].sum())} fit in memory" in out
    assert f"fastest that fits: {best['framework']} {best['strategy']}, {best['step_time_s']:.4g} s per step" in out
    from perfmodel.step.baselines import rule_of_thumb_step_time

    rule = rule_of_thumb_step_time(LLAMA, "H100", input_shape=(1024,), batch_size=16, precision="bf16",
                                   n_gpus=8)["step_time_s"].iloc[0]
    assert f"rule of thumb: {rule:.4g} s per step, whatever the layout" in out
    table = out.split("fastest first\n", 1)[1].splitlines()
    assert "cost_per_step_usd" in table[0] and table[1].split()[:2] == [best["framework"], best["strategy"]]
    assert "basis: " in out and "no --interconnect" not in out  # one node: nothing to say of the links between nodes


def test_the_fp8_recipe_travels_in_the_workload(config, capsys):
    """--fp8-recipe is the Workload's field: the command's answer is search_layouts' on a Workload that says it."""
    args = [config, "--gpu", "H100", "--n-gpus", "8", "--input-shape", "1024", "--batch-size", "16", "--tp", "1,2",
            "--pp", "1", "--precision", "fp8", "--stack", "te", "--fp8-recipe", "current", "--frameworks", "megatron",
            "--activation-checkpointing", "none", "--quiet"]
    assert main(["layouts", *args]) == 0
    out = capsys.readouterr().out
    kw = dict(input_shape=(1024,), batch_size=16, precision="fp8", optimizer="adam", stack="te")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = {r: search_layouts(pm.Workload(LLAMA, **kw, fp8_recipe=r), pm.Cluster("H100", n_gpus=8),
                                   tensor_parallel=[1, 2], pipeline_parallel=[1], frameworks=["megatron"],
                                   activation_checkpointing=[False]).iloc[0] for r in ("current", "delayed")}
    best = found["current"]
    assert f"fastest that fits: {best['framework']} {best['strategy']}, {best['step_time_s']:.4g} s per step" in out
    assert found["current"]["step_time_s"] != found["delayed"]["step_time_s"]
    assert "current per-tensor scaling" in out.split("basis: ", 1)[1]


def test_chunk_counts_and_micro_batch_sizes_are_searched_as_asked(config, capsys):
    """--virtual-stages and --micro-batch-size: search_layouts' virtual_stages= and micro_batch_size=, each value a
    layout (8 layers over 2 ranks: 1F1B, 2 and 4 chunks; micro-batches of 1 and 2 samples of a rank's 8)."""
    args = [config, "--gpu", "H100", "--n-gpus", "4", "--input-shape", "1024", "--batch-size", "16", "--tp", "1",
            "--pp", "2", "--frameworks", "megatron", "--activation-checkpointing", "none", "--shard-gradients", "never",
            "--virtual-stages", "1,2,4", "--micro-batch-size", "1,2", "--quiet"]
    assert main(["layouts", *args]) == 0
    out = capsys.readouterr().out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = search_layouts(pm.Workload(LLAMA, input_shape=(1024,), batch_size=16, precision="bf16", optimizer="adam"),
                               pm.Cluster("H100", n_gpus=4), tensor_parallel=[1], pipeline_parallel=[2],
                               frameworks=["megatron"], activation_checkpointing=[False], shard_gradients=[None],
                               virtual_stages=[1, 2, 4], micro_batch_size=[1, 2])
    assert len(found) == 6 and f"{len(found)} layouts, {int(found['fits'].sum())} fit in memory" in out
    assert {(v, m) for v, m in zip(found["virtual_stages"].fillna(1), found["micro_batches"])} == {
        (v, m) for v in (1, 2, 4) for m in (8, 4)}
    best = found.iloc[0]
    assert f"fastest that fits: {best['framework']} {best['strategy']}, {best['step_time_s']:.4g} s per step" in out
    assert main(["layouts", *args, "--virtual-stages", "0"]) == 2
    assert "--virtual-stages must be positive whole numbers" in capsys.readouterr().err


def test_a_multi_node_run_without_links_between_nodes_is_told_so(config, capsys):
    assert main(["layouts", config, "--n-gpus", "16", "--input-shape", "1024", "--batch-size", "16", "--tp", "4",
                 "--pp", "2", "--frameworks", "megatron", "--activation-checkpointing", "none", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "note: no --interconnect for 16 GPUs: inside a node the GPU's own link; no network given between the nodes of 8" in out
    assert "DGX H100" in out and "pass interconnect={'intra': ..., 'inter': ...}" in out


@pytest.mark.parametrize("extra, message", [
    (["--n-gpus", "0", "--input-shape", "1024"], "--n-gpus, --batch-size, --gpus-per-node and --top must be ≥ 1"),
    (["--n-gpus", "8"], "--input-shape is required: the sequence length"),
    (["--n-gpus", "8", "--input-shape", "1024", "--tp", "2.5"], "--tp must be comma-separated whole numbers"),
    (["--n-gpus", "8", "--input-shape", "1024", "--activation-checkpointing", "sometimes"],
     "--activation-checkpointing takes policies among none, selective, attention, full"),
    (["--n-gpus", "8", "--input-shape", "1024", "--usd-per-gpu-h", "-1"], "--usd-per-gpu-h must be a positive number"),
    (["--gpus", "H100,A100", "--n-gpus", "8", "--input-shape", "1024"], "searches the layouts of one GPU; got --gpu 'H100,A100'"),
])
def test_usage_errors_are_one_line_with_exit_2(config, capsys, extra, message):
    assert main(["layouts", config, *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("perfmodel layouts: ") and message in err and len(err.strip().splitlines()) == 1


def test_a_model_that_is_not_a_language_model_config_is_refused(capsys):
    assert main(["layouts", "resnet-32", "--n-gpus", "8", "--input-shape", "1024"]) == 2
    err = capsys.readouterr().err
    assert "searches the layouts of a transformer language model: give its Hugging Face config.json" in err


def test_a_layout_the_model_cannot_split_is_one_line_with_exit_1(config, capsys):
    # no tensor-parallel degree divides 8 heads and 4 KV heads as 3 would: every candidate is refused by the model
    assert main(["layouts", config, "--n-gpus", "3", "--input-shape", "1024", "--batch-size", "3", "--tp", "3",
                 "--pp", "1", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("perfmodel: search_layouts: the model refuses every layout tried") and len(err.strip().splitlines()) == 1
