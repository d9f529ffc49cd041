"""plan_cloud(strategies="search"): the layouts of a large run searched on every GPU, count and instance size of the
price table, the fastest that fits planned with each rental."""
from __future__ import annotations

import warnings

import pandas as pd
import pytest

import perfmodel as pm
from perfmodel.planning import plan_cloud, search_layouts
from perfmodel.step.strategy import StrategyError

LLAMA = dict(model_type="llama", vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=8,
             num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=16384, tie_word_embeddings=False)
# a user's own table (not quotes): 8-GPU and 4-GPU instances of the same GPU, and a GPU with a fifth of its memory
PRICES = pd.DataFrame(dict(provider=["aws", "aws", "gcp"], region=["us-east-1"] * 2 + ["us-central1"],
                           instance_type=["big", "half", "small"], gpu=["H100", "H100", "L4"], gpus_per_instance=[8, 4, 8],
                           on_demand_usd_per_h=[80.0, 40.0, 8.0], spot_usd_per_h=[30.0, 15.0, 3.0],
                           price_date=["test"] * 3))
KW = dict(prices=PRICES, input_shape=(256,), samples=16000, batch_sizes=(16,), spot=False, precision="bf16",
          optimizer="adam-fused")


@pytest.fixture(scope="module")
def searched():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return plan_cloud(LLAMA, gpus=["H100"], n_gpus=(8,), strategies=("search", "fsdp"), **KW)


def test_search_plans_the_fastest_layout_that_fits_on_each_instance_size(searched):
    s = searched[searched["strategy"] != "fsdp"]
    assert set(s["instance_type"]) == {"big", "half"} and s["fits"].all()
    for inst, per in (("big", 8), ("half", 4)):
        row = s[s["instance_type"] == inst].iloc[0]
        assert row["n_instances"] == 8 // per
        # the same answer as the search of that cluster: 8 GPUs in nodes of the instance's GPUs, the link between
        # instances plan_cloud's default
        c = pm.Cluster("H100", n_gpus=8, gpus_per_node=per,
                       interconnect=None if per == 8 else {"inter": pm.planning.cloud.MULTI_INSTANCE_LINK})
        w = pm.Workload(LLAMA, input_shape=(256,), batch_size=16, precision="bf16", optimizer="adam-fused")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            best = search_layouts(w, c).query("fits").iloc[0]
        assert row["strategy"].startswith(f"{best['strategy']} ({best['framework']}, ")
        assert row["step_time_s"] == pytest.approx(best["step_time_s"], rel=1e-12)
        assert row["memory_per_gpu_bytes"] == pytest.approx(best["memory_per_gpu_bytes"], rel=1e-12)
    # the named strategy is still planned beside the search, and no searched layout is slower than it on the 8-GPU node
    fsdp = searched[(searched["strategy"] == "fsdp") & (searched["instance_type"] == "big")]
    assert len(fsdp) == 1
    assert s[s["instance_type"] == "big"]["step_time_s"].iloc[0] <= fsdp["step_time_s"].iloc[0]


def test_search_keeps_to_the_framework_given():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = plan_cloud(LLAMA, gpus=["H100"], n_gpus=(8,), strategies="search", framework="pytorch", **KW)
    assert f["strategy"].str.contains(r"\(pytorch, ").all()


def test_search_where_nothing_fits_names_the_smallest_layout():
    big = dict(LLAMA, hidden_size=8192, intermediate_size=28672, num_hidden_layers=16, num_attention_heads=64,
               num_key_value_heads=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(StrategyError, match=r"on 2 x L4 in instances of 8: no layout of the \d+ searched fits: the "
                                                r"smallest, .* needs [\d.]+ GiB per GPU of [\d.]+\. Plan more GPUs"):
            plan_cloud(big, gpus=["L4"], n_gpus=(2,), strategies="search", **dict(KW, input_shape=(4096,)))


def test_search_needs_a_token_model_and_says_so():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"plan_cloud\(strategies='search'\) on 8 x H100 in instances of 8: "
                                             r"layout_candidates searches the layouts of a transformer language model .* "
                                             r"Or name the strategies to plan"):
            plan_cloud("resnet-32", gpus=["H100"], n_gpus=(8,), strategies="search",
                       **dict(KW, input_shape=(3, 32, 32)))


def test_cli_plan_cloud_searches_layouts(tmp_path, capsys):
    import json

    from perfmodel.cli import main

    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    PRICES.to_csv(tmp_path / "prices.csv", index=False)
    argv = ["plan-cloud", str(tmp_path / "config.json"), "--input-shape", "256", "--n-gpus", "8", "--batch-sizes", "16",
            "--gpus", "H100", "--strategies", "search", "--samples", "16000", "--spot", "on-demand", "--quiet",
            "--prices", str(tmp_path / "prices.csv")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("Pareto front of 2 candidates") and "micro-batches" in out
    assert main([*argv, "--interconnect", "intra=nvlink,inter=infiniband-ndr"]) == 0
    assert main([*argv, "--interconnect", "intra="]) == 2
    assert "--interconnect takes a link" in capsys.readouterr().err


def test_a_link_per_level_takes_each_instance_as_a_node():
    links = {"intra": "nvlink", "inter": "infiniband-ndr"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = plan_cloud(LLAMA, gpus=["H100"], n_gpus=(8,), strategies=("fsdp",), interconnect=links, **KW)
        half = f[f["instance_type"] == "half"].iloc[0]
        want = pm.predict(pm.Workload(LLAMA, input_shape=(256,), batch_size=16, precision="bf16", optimizer="adam-fused"),
                          pm.Cluster("H100", n_gpus=8, gpus_per_node=4, interconnect=links), "fsdp")
    assert half["step_time_s"] == pytest.approx(want.step_time_s, rel=1e-12)
    assert half["step_time_s"] > f[f["instance_type"] == "big"].iloc[0]["step_time_s"]  # its ring leaves the node


def test_on_demand_plans_time_no_checkpoint_and_do_not_warn_about_one():
    from perfmodel._extrapolation import ExtrapolationWarning

    big = dict(LLAMA, hidden_size=1024, intermediate_size=4096, num_hidden_layers=12, num_attention_heads=16,
               num_key_value_heads=16, vocab_size=32000)  # a state of GBs: beyond the checkpoint fit's range
    kw = dict(KW, prices=PRICES.iloc[[0]], batch_sizes=(8,))
    for spot, warned in ((False, False), ((True, False), True)):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            f = plan_cloud(big, gpus=["H100"], n_gpus=(1,), strategies=("dp",), **dict(kw, spot=spot))
        said = [w for w in seen if issubclass(w.category, ExtrapolationWarning) and "checkpoint time" in str(w.message)]
        assert bool(said) == warned
        assert f.loc[~f["spot"], "checkpoint_s"].isna().all()
