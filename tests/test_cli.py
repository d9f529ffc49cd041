"""The command line as a new user meets it: --version, help for every option, the zoo list, models given as
``package.module:Class`` from the current folder, user price files, and one-line errors with exit status 2."""
from __future__ import annotations

import argparse
import textwrap

import pytest

from perfmodel import __version__
from perfmodel.cli import build_parser, main


def _options(parser: argparse.ArgumentParser, path=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, path + (name,))
        elif action.option_strings and not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            yield " ".join(path), action


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"perfmodel {__version__}"


def test_every_option_has_help_with_its_default():
    missing = [f"{cmd} {a.option_strings[0]}" for cmd, a in _options(build_parser()) if not (a.help or "").strip()]
    assert not missing, f"options without help text: {missing}"
    p = build_parser()
    helps = {}
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {name: sub.format_help() for name, sub in action.choices.items()}
    # a default that is not None is printed by the formatter; a None default is explained in the help itself
    assert "(default: 64000)" in helps["plan"]
    assert "(default: None)" not in "".join(helps.values())


def test_zoo_lists_the_ids(capsys):
    assert main(["zoo"]) == 0
    out = capsys.readouterr().out
    from perfmodel.zoo import list_models

    assert all(m in out for m in list_models())
    assert "Res32" in out  # an accepted upstream spelling


def test_bad_input_shape_is_a_usage_error(capsys):
    assert main(["plan", "resnet-32", "--input-shape", "3,x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "perfmodel plan: --input-shape must be comma-separated integers like 3,32,32" in err


def test_unknown_model_suggests(capsys):
    assert main(["predict", "resnet-33", "--gpus", "K80"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "resnet-33" in err


def test_predict_takes_a_module_of_the_current_folder(tmp_path, monkeypatch, capsys):
    (tmp_path / "mynets_cli.py").write_text(textwrap.dedent("""
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                          nn.Linear(16, 10))
            def forward(self, x):
                return self.body(x)
    """))
    monkeypatch.chdir(tmp_path)
    assert main(["predict", "mynets_cli:Net", "--gpus", "P100", "--max-workers", "2", "--input-shape", "3,32,32"]) == 0
    out = capsys.readouterr().out
    assert "Net" in out and "P100" in out


def test_module_target_errors(tmp_path, monkeypatch):
    from perfmodel.zoo import load_model

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="Malformed target 'a b:C'"):
        load_model("a b:C")
    with pytest.raises(ValueError, match="Cannot import 'no_such_module_xyz:Net'"):
        load_model("no_such_module_xyz:Net")
    (tmp_path / "needs_args.py").write_text("import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self, width):\n        super().__init__()\n")
    with pytest.raises(ValueError, match="could not be instantiated without arguments"):
        load_model("needs_args:Net")


def test_plan_with_a_user_price_file(tmp_path, capsys):
    prices = tmp_path / "prices.csv"
    prices.write_text("server,gpu,on_demand_usd_per_h,transient_usd_per_h\nworker,Tesla K80,1.0,0.5\nparameter_server,,0.2,0.1\n")
    assert main(["plan", "resnet-32", "--gpus", "K80", "--max-workers", "2", "--prices", str(prices)]) == 0
    out = capsys.readouterr().out
    assert "user prices (prices.csv)" in out


@pytest.mark.parametrize("content, match", [
    ("server,gpu,on_demand_usd_per_h\nworker,K80,1\n", r"lacks the columns \['transient_usd_per_h'\]"),
    ("server,gpu,on_demand_usd_per_h,transient_usd_per_h\nworker,K80,-1,0.5\nparameter_server,,0.2,0.1\n", "must be a positive number"),
    ("server,gpu,on_demand_usd_per_h,transient_usd_per_h\nworker,K80,1,0.5\n", "no parameter_server row"),
    ("server,gpu,on_demand_usd_per_h,transient_usd_per_h\nworker,K80,1,0.5\nworker,k80,2,1\nparameter_server,,0.2,0.1\n",
     "listed more than once"),
    ("server,gpu,on_demand_usd_per_h,transient_usd_per_h\nvm,K80,1,0.5\n", "server must be 'worker' or 'parameter_server'"),
])
def test_bad_price_files(tmp_path, content, match):
    from perfmodel.planning import read_prices

    f = tmp_path / "p.csv"
    f.write_text(content)
    with pytest.raises(ValueError, match=match):
        read_prices(f)
    with pytest.raises(FileNotFoundError, match="not found"):
        read_prices(tmp_path / "missing.csv")


def test_predict_and_plan_take_a_batch_size(capsys):
    import warnings

    from perfmodel.models import ExtrapolationWarning, predict_cluster_speed
    from perfmodel.models import predict_cmdare_step_time as predict_step_time

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        t128 = predict_step_time("resnet-32", "P100")["step_time_s"].iloc[0]
    with pytest.warns(ExtrapolationWarning, match=r"batch size 256 \(the fits saw batch 128 only"):
        t256 = predict_step_time("resnet-32", "P100", batch_size=256)["step_time_s"].iloc[0]
    assert t256 > t128 > 0  # twice the work per step takes longer
    with pytest.warns(ExtrapolationWarning):
        c = predict_cluster_speed("resnet-32", "P100", workers=[1, 2], n_ps=1, batch_size=256)
    assert c["basis"].iloc[0].endswith("at batch 256")
    assert c["speed_steps_per_s"].iloc[0] < 1 / t128
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        predict_step_time("resnet-32", "P100", batch_size=0)
    assert main(["predict", "resnet-32", "--gpus", "P100", "--max-workers", "1", "--batch-size", "64"]) == 0
    cli = capsys.readouterr()
    assert "batch size 64" in cli.err and "rule_of_thumb_s" not in cli.out  # a CNN: no language model's rule of thumb
    assert main(["plan", "resnet-32", "--gpus", "K80", "--max-workers", "1", "--batch-size", "0"]) == 2


def test_predict_answers_what_predict_step_time_answers_for_a_config_on_todays_gpus(tmp_path, capsys):
    """`perfmodel predict` takes a config.json, any GPU spelling, a precision, an optimizer, GPU counts and strategies,
    and prints pm.predict_step_time's numbers with the memory per GPU and whether it fits."""
    import json

    import perfmodel as pm

    cfg = {"model_type": "gpt2", "n_layer": 2, "n_embd": 128, "n_head": 4, "n_positions": 256, "vocab_size": 1000}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    argv = ["predict", str(path), "--gpus", "NVIDIA H100 80GB HBM3", "--input-shape", "128", "--batch-size", "8",
            "--precision", "bf16", "--optimizer", "adam", "--n-gpus", "2", "--strategy", "fsdp", "--interconnect", "nvlink"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    want = pm.predict_step_time(cfg, "H100", input_shape=(128,), batch_size=8, precision="bf16", optimizer="adam", n_gpus=2,
                                strategy="fsdp", interconnect="nvlink")["step_time_s"].iloc[0]
    assert f"{want:.6f}"[:6] in out
    assert "memory_per_gpu" in out and "fits" in out and "basis:" in out
    assert "CM-DARE's measured world" not in out  # a transformer on today's GPU: no parameter-server tables
    from perfmodel.step.baselines import rule_of_thumb_step_time

    rule = rule_of_thumb_step_time(cfg, "H100", input_shape=(128,), batch_size=8, precision="bf16", n_gpus=2)
    assert "rule_of_thumb_s" in out and f"{rule['step_time_s'].iloc[0]:.6f}"[:6] in out  # the rule of thumb beside it

    # the links per level as key=value pairs or as a JSON object: one answer; unsaid, the reference system's network
    many = [a if a != "8" else "16" for a in argv[:argv.index("--n-gpus")]] + ["--n-gpus", "16", "--strategy", "fsdp"]
    answers = []
    for links in (["--interconnect", "intra=nvlink,inter=infiniband-ndr"],
                  ["--interconnect", '{"intra": "nvlink", "inter": "infiniband-ndr"}'], []):
        assert main(many + links) == 0
        answers.append(capsys.readouterr().out)
    assert answers[0] == answers[1]
    assert answers[2].split("basis:")[0] == answers[0].split("basis:")[0] and "DGX H100" in answers[2]


def test_predict_breakdown_prints_each_gpu_s_whole_result(tmp_path, capsys):
    """`perfmodel predict --breakdown` prints pm.predict's result for each GPU after the table: the same step, then
    where it goes (communication per group, memory by part), basis last."""
    import json
    import warnings

    import perfmodel as pm

    cfg = {"model_type": "gpt2", "n_layer": 2, "n_embd": 128, "n_head": 4, "n_positions": 256, "vocab_size": 1000}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    argv = ["predict", str(path), "--gpus", "H100,A100", "--input-shape", "128", "--batch-size", "8", "--precision", "bf16",
            "--optimizer", "adam", "--n-gpus", "4", "--strategy", "fsdp2-tp2", "--activation-checkpointing", "selective",
            "--breakdown"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = pm.predict(pm.Workload(cfg, input_shape=(128,), batch_size=8, precision="bf16", optimizer="adam"),
                          pm.Cluster("A100", n_gpus=4), pm.Parallelism("fsdp2-tp2", activation_checkpointing="selective"))
    assert repr(want) in out
    assert out.count("Prediction: gpt2 on 4 x ") == 2 and "Prediction: gpt2 on 4 x H100 (fsdp2-tp2)" in out
    assert "communication" in out and "memory per GPU" in out and "incl. recompute" in out


def test_predict_and_plan_refuse_bad_new_options_in_one_line(tmp_path, capsys):
    assert main(["predict", "resnet-32", "--gpus", "H100", "--n-gpus", "0"]) == 2
    assert "--n-gpus must be ≥ 1" in capsys.readouterr().err
    assert main(["predict", "resnet-32", "--gpus", "H100", "--interconnect", "tp=,dp=x"]) == 2
    assert "--interconnect takes a link" in capsys.readouterr().err
    assert main(["predict", "resnet-32", "--gpus", "H100", "--interconnect", '{"intra": ']) == 2
    assert "is not a JSON object" in capsys.readouterr().err
    assert main(["predict", "resnet-32", "--gpus", "H100", "--interconnect", '{"intra": 1}']) == 2
    assert "a JSON object maps levels or groups to link names" in capsys.readouterr().err
    (tmp_path / "null.json").write_text("null")
    assert main(["predict", str(tmp_path / "null.json"), "--gpus", "H100"]) == 1
    err = capsys.readouterr().err
    assert "holds JSON NoneType" in err and len(err.strip().splitlines()) == 1

def test_plan_price_file_in_another_encoding_is_one_line(tmp_path, capsys):
    """`plan --prices` reads through the same checks as plan-cloud: latin-1 or UTF-16 is named, with the fix."""
    prices = tmp_path / "prices.csv"
    prices.write_bytes("server,gpu,on_demand_usd_per_h,transient_usd_per_h\nworker,K80 \u00e9,1.0,0.5\n".encode("latin-1"))
    assert main(["plan", "resnet-32", "--gpus", "K80", "--max-workers", "2", "--prices", str(prices)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"perfmodel: Price file {prices} is not UTF-8 (byte 0xe9 at offset ") and len(err.strip().splitlines()) == 1
    assert "Expected a UTF-8 CSV file with the columns server, gpu, on_demand_usd_per_h, transient_usd_per_h" in err


def test_gpu_is_the_same_option_as_gpus_in_every_command(tmp_path, capsys):
    """`--gpu` (as `perfmodel layouts` spells it) and `--gpus` are one option in predict, plan and plan-cloud: a user who
    types either gets an answer, not argparse's "ambiguous option: --gpu could match --gpus, --gpus-per-node"."""
    import json

    cfg = {"model_type": "gpt2", "n_layer": 2, "n_embd": 128, "n_head": 4, "n_positions": 256, "vocab_size": 1000}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    outs = []
    for opt in ("--gpu", "--gpus"):
        assert main(["predict", str(path), opt, "H100", "--input-shape", "128", "--batch-size", "8", "--precision", "bf16"]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] and "H100" in outs[0]
    from perfmodel.cli import build_parser

    parser = build_parser()
    for cmd in (["plan", "resnet-32"], ["plan-cloud", str(path)]):
        assert parser.parse_args([*cmd, "--gpu", "H100"]).gpus == parser.parse_args([*cmd, "--gpus", "H100"]).gpus == "H100"


def test_predict_takes_the_fp8_recipe_and_the_fp8_parameter_gather(tmp_path, capsys):
    """The options only the run's objects take reach the shell: --fp8-recipe (the Workload's) and --fp8-param-gather
    (the Parallelism's), with the model's refusals said in one line."""
    import json

    from perfmodel.cli import main

    cfg = tmp_path / "llama.json"
    cfg.write_text(json.dumps(dict(model_type="llama", vocab_size=512, hidden_size=64, intermediate_size=128,
                                   num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                                   max_position_embeddings=256, tie_word_embeddings=False)))
    base = ["predict", str(cfg), "--input-shape", "64", "--batch-size", "8", "--precision", "fp8", "--optimizer", "adam-fused"]
    assert main([*base, "--gpus", "B200", "--stack", "te", "--fp8-recipe", "mxfp8"]) == 0
    assert "MXFP8 block scaling" in capsys.readouterr().out
    assert main([*base, "--gpus", "H100", "--n-gpus", "4", "--strategy", "dp2-tp2", "--framework", "megatron",
                 "--stack", "te", "--fp8-param-gather"]) == 0
    assert "--fp8-param-gather does" in capsys.readouterr().out
    assert main([*base, "--gpus", "H100", "--stack", "te", "--fp8-recipe", "mxfp8"]) != 0
    assert "H100 lack" in capsys.readouterr().err
    assert main([*base, "--gpus", "B200", "--stack", "te", "--fp8-recipe", "nvfp4"]) == 0
    assert "NVFP4 recipe" in capsys.readouterr().out
    assert main([*base, "--gpus", "MI355X", "--stack", "te", "--fp8-recipe", "nvfp4"]) != 0
    assert "MI355X lack" in capsys.readouterr().err
    # the K and V context parallelism exchanges (a Parallelism option), said in basis
    cp = ["predict", str(cfg), "--input-shape", "64", "--batch-size", "2", "--gpus", "H100", "--n-gpus", "2",
          "--strategy", "fsdp1-cp2", "--precision", "bf16"]
    assert main([*cp, "--context-parallel-kv", "repeated"]) == 0
    assert "at every query head" in capsys.readouterr().out
    assert main(cp) == 0
    assert "at every query head" not in capsys.readouterr().out


def test_predict_takes_megatrons_selective_recomputation(tmp_path, capsys):
    """--activation-checkpointing attention (or selective with --framework megatron) is Megatron's core-attention
    recomputation, the step pm.predict gives for it, said in basis."""
    import json
    import warnings

    import perfmodel as pm
    from perfmodel.cli import main

    cfg = dict(model_type="gpt2", n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=128, bos_token_id=0,
               eos_token_id=0, attn_implementation="eager")
    path = tmp_path / "gpt2.json"
    path.write_text(json.dumps(cfg))
    base = ["predict", str(path), "--gpus", "A100", "--n-gpus", "2", "--strategy", "tp2", "--framework", "megatron",
            "--input-shape", "64", "--batch-size", "8", "--precision", "bf16", "--optimizer", "adam"]
    outs = []
    for ac in ("attention", "selective"):
        assert main([*base, "--activation-checkpointing", ac]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] and "Megatron's selective recomputation: each layer's core attention" in outs[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = pm.predict(pm.Workload(cfg, input_shape=(64,), batch_size=8, precision="bf16", optimizer="adam"),
                       pm.Cluster("A100", n_gpus=2), pm.Parallelism("tp2", framework="megatron",
                                                                      activation_checkpointing="attention"))
    assert f"{p.step_time_s:.6f}" in outs[0]


def test_predict_takes_the_micro_batch_size(tmp_path, capsys):
    """--micro-batch-size says the micro-batch as Megatron's configs do: the same step as the micro-batches it makes;
    with --micro-batches too, or one that does not divide the rank's batch, a one-line refusal."""
    import json

    from perfmodel.cli import main

    cfg = tmp_path / "llama.json"
    cfg.write_text(json.dumps(dict(model_type="llama", vocab_size=512, hidden_size=64, intermediate_size=128,
                                   num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                                   max_position_embeddings=256, tie_word_embeddings=False)))
    base = ["predict", str(cfg), "--gpus", "H100", "--input-shape", "64", "--batch-size", "16", "--precision", "bf16",
            "--n-gpus", "8", "--strategy", "dp2-tp2-pp2", "--framework", "megatron"]
    assert main([*base, "--micro-batch-size", "2"]) == 0
    by_size = capsys.readouterr().out
    assert main([*base, "--micro-batches", "4"]) == 0
    assert capsys.readouterr().out == by_size
    assert main([*base, "--micro-batch-size", "3"]) != 0
    err = capsys.readouterr().err
    assert "micro_batch_size=3 does not divide the data-parallel rank's batch 8" in err and len(err.strip().splitlines()) == 1
    assert main([*base, "--micro-batch-size", "2", "--micro-batches", "4"]) != 0
    assert "both say how the batch is cut" in capsys.readouterr().err


def test_predict_runs_the_gpus_at_a_sustained_clock(tmp_path, capsys):
    """--sustained-clock: a share of the datasheet clock, or a CSV of GEMMs measured on the part from which the share
    is found; the prediction equals pm.predict_step_time on the clocked spec; bad values are one-line refusals."""
    import json
    import warnings

    import pandas as pd

    import perfmodel as pm
    from perfmodel.cli import main
    from perfmodel.step.kernels import at_sustained_clock, gemm_work, kernel_seconds

    cfg = tmp_path / "llama.json"
    cfg.write_text(json.dumps(dict(model_type="llama", vocab_size=512, hidden_size=64, intermediate_size=128,
                                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                   max_position_embeddings=256, tie_word_embeddings=False)))
    base = ["predict", str(cfg), "--gpus", "H100", "--input-shape", "64", "--batch-size", "4", "--precision", "bf16"]
    assert main([*base, "--sustained-clock", "0.8"]) == 0
    out = capsys.readouterr().out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = pm.predict_step_time(str(cfg), at_sustained_clock("H100", 0.8), input_shape=(64,), batch_size=4,
                                    precision="bf16", optimizer="sgd-momentum")["step_time_s"].iloc[0]
    # the GPU named as given, its clock said in basis (pm.Cluster(..., clock=0.8))
    assert "the GPU at 0.8 of its datasheet clock (Cluster.clock)" in out and f"{want:.6f}" in out
    assert "@0.8clk" not in out
    # GEMMs the model times at 0.75 of the clock give 0.75 back
    shapes = pd.DataFrame({"m": [8192, 16384], "n": [8192, 4096], "k": [8192, 14336]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = kernel_seconds(gemm_work(shapes), at_sustained_clock("H100", 0.75), "bf16")
    csv = tmp_path / "gemms.csv"
    shapes.assign(ms=t * 1e3).to_csv(csv, index=False)
    assert main([*base, "--sustained-clock", str(csv)]) == 0
    assert "H100: the GEMMs of gemms.csv ran at 0.750 of its datasheet clock" in capsys.readouterr().out
    # one chip's GEMMs: a run of 2 waits on the slowest of its chips (a number given is the run's clock as said)
    from perfmodel.step.kernels import slowest_chip_clock

    assert main([*base, "--n-gpus", "2", "--strategy", "dp", "--sustained-clock", str(csv)]) == 0
    out = capsys.readouterr().out
    slow = slowest_chip_clock(0.75, "H100", 2)
    assert f"the slowest of 2 chips is expected at {slow:.3f}" in out and 0.74 < slow < 0.75
    assert f"the GPU at {slow:.3g} of its datasheet clock (Cluster.clock)" in out
    assert main([*base, "--n-gpus", "2", "--strategy", "dp", "--sustained-clock", "0.8"]) == 0
    assert "the GPU at 0.8 of its datasheet clock (Cluster.clock)" in capsys.readouterr().out
    for bad, said in (("3", "must be a share of the datasheet clock in (0, 2] or a CSV of measured GEMMs; got 3"),
                      ("nofile.csv", "is neither a number in (0, 2] nor a CSV file of measured GEMMs")):
        assert main([*base, "--sustained-clock", bad]) != 0
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1
    (tmp_path / "bad.csv").write_text("m,n,k\n1,2,3\n")
    assert main([*base, "--sustained-clock", str(tmp_path / "bad.csv")]) != 0
    assert "needs the measured time of each GEMM" in capsys.readouterr().err


def test_predict_takes_megatrons_backward_overlap(tmp_path, capsys):
    """--overlap-tp-backward / --no-overlap-tp-backward reach the Parallelism: on by default with --framework megatron
    (said in basis), off with the --no form, refused in one line under PyTorch's tensor parallelism."""
    import json

    from perfmodel.cli import main

    cfg = tmp_path / "llama.json"
    cfg.write_text(json.dumps(dict(model_type="llama", vocab_size=512, hidden_size=64, intermediate_size=128,
                                   num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                                   max_position_embeddings=256, tie_word_embeddings=False)))
    base = ["predict", str(cfg), "--input-shape", "64", "--batch-size", "8", "--precision", "bf16", "--gpus", "H100",
            "--n-gpus", "4", "--strategy", "dp2-tp2"]
    assert main([*base, "--framework", "megatron"]) == 0
    assert "under the weight-gradient GEMM" in capsys.readouterr().out
    assert main([*base, "--framework", "megatron", "--no-overlap-tp-backward"]) == 0
    assert "under the weight-gradient GEMM" not in capsys.readouterr().out
    assert main([*base, "--overlap-tp-backward"]) != 0
    assert "overlap_tp_backward=True is Megatron-Core's" in capsys.readouterr().err


def test_predict_takes_the_gradient_reduce_overlap(tmp_path, capsys):
    """--no-overlap-grad-reduce reaches the Parallelism: the data-parallel all-reduce after the backward pass, as
    pm.predict_step_time(overlap_grad_reduce=False) predicts it; without the flag, DDP's overlap."""
    import json
    import warnings

    import perfmodel as pm
    from perfmodel.cli import main

    cfg = dict(model_type="llama", vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False)
    path = tmp_path / "llama.json"
    path.write_text(json.dumps(cfg))
    base = ["predict", str(path), "--input-shape", "64", "--batch-size", "8", "--precision", "bf16", "--gpus", "H100",
            "--n-gpus", "4", "--strategy", "dp", "--optimizer", "adam"]
    kw = dict(input_shape=(64,), batch_size=8, precision="bf16", optimizer="adam", n_gpus=4, strategy="dp")
    for flag, overlap in (([], True), (["--no-overlap-grad-reduce"], False), (["--overlap-grad-reduce"], True)):
        assert main([*base, *flag]) == 0
        out = capsys.readouterr().out
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = pm.predict_step_time(cfg, "H100", overlap_grad_reduce=overlap, **kw).iloc[0]
        row = out.split("rule_of_thumb_s\n", 1)[1].splitlines()[0].split()
        assert float(row[1]) == pytest.approx(want["step_time_s"], rel=5e-4)  # as printed: 4 digits or more
        assert float(row[7]) == pytest.approx(want["comm_s"], rel=1e-2)  # small ones printed to 2 digits
    assert main([*base, "--no-overlap-grad-reduce"]) == 0
    no = float(capsys.readouterr().out.split("rule_of_thumb_s\n", 1)[1].splitlines()[0].split()[7])
    assert main(base) == 0
    yes = float(capsys.readouterr().out.split("rule_of_thumb_s\n", 1)[1].splitlines()[0].split()[7])
    assert no > yes
