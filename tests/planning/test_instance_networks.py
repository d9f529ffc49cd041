"""The network between a cloud's GPU instances: the shipped table read in its sources, and plan_cloud joining a rental's
instances by their type's network instead of one assumed link."""
from __future__ import annotations

import warnings

import pandas as pd
import pytest

import perfmodel as pm
from perfmodel.datasets.reference import load_gpu_prices, load_instance_networks
from perfmodel.planning import plan_cloud, search_layouts
from perfmodel.planning.cloud import MULTI_INSTANCE_LINK
from perfmodel.planning.cloud import instance_cluster
from perfmodel.planning.networks import InstanceNetwork, instance_network, instance_networks
from perfmodel.step.collectives import NCCL_EFFICIENCY, fitted_link

LLAMA = dict(model_type="llama", vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=8,
             num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=16384, tie_word_embeddings=False)
KW = dict(input_shape=(256,), samples=16000, batch_sizes=(64,), spot=False, precision="bf16", optimizer="adam-fused")


def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **k)


def test_every_multi_gpu_instance_of_the_shipped_prices_has_a_cited_network():
    nets = load_instance_networks()
    assert not nets.duplicated(["instance_type", "gpus_per_instance"]).any()
    assert (nets["network_gbit_per_s"] > 0).all() and nets["source_url"].str.startswith("https://").all()
    assert set(nets["transport"]) <= {"efa", "infiniband", "roce", "gpudirect-tcpx", "gpudirect-tcpxo", "ethernet", "not stated"}
    prices = load_gpu_prices()
    big = set(map(tuple, prices.loc[prices["gpus_per_instance"] > 1, ["instance_type", "gpus_per_instance"]].values))
    assert big <= set(map(tuple, nets[["instance_type", "gpus_per_instance"]].values))
    # each row's GPU is a catalog id, the price table's where both list the type
    assert [pm.datasets.canonical_gpu(g) for g in nets["gpu"]] == list(nets["gpu"])
    both = nets.merge(prices[["instance_type", "gpu"]].drop_duplicates(), on="instance_type", suffixes=("", "_priced"))
    assert len(both) >= 13 and (both["gpu"] == both["gpu_priced"]).all()
    # the AWS rows are the catalog's entries quoted, as the price rows are
    p5 = nets.set_index("instance_type").loc["p5.48xlarge"]
    assert p5["network_gbit_per_s"] == 3200 and bool(p5["gpudirect_rdma"]) and '"3200 Gbps EFAv2"' in p5["note"]
    assert "instance_networks" in set(pm.datasets.list_datasets(with_shape=False)["name"])


def test_a_network_is_split_over_the_gpus_as_rails_at_the_efficiency_of_its_transport():
    ndr = fitted_link("infiniband-ndr")
    p5 = instance_network("p5.48xlarge", 8)
    rail = p5.rail()
    # 3,200 Gb/s over 8 GPUs: 400 Gb/s = 50 GB/s each, the NDR fit's efficiency and latency (GPUDirect RDMA over EFA)
    assert p5.nics_per_node == 8 and rail.bandwidth_gb_per_s == pytest.approx(50.0)
    assert (rail.efficiency, rail.latency_s) == (ndr.efficiency, ndr.latency_s)
    a3 = instance_network("a3-highgpu-8g", 8).rail()  # GPUDirect-TCPX: no RDMA, the assumed efficiency
    # its four GPU NICs' 800 Gb/s (the general-purpose fifth not counted), as A3 Mega's eight 1,600
    assert a3.bandwidth_gb_per_s == pytest.approx(800 / 8 / 8) and a3.efficiency == NCCL_EFFICIENCY
    mega = instance_network("a3-megagpu-8g", 8).rail()
    assert mega.bandwidth_gb_per_s == pytest.approx(1600 / 8 / 8) and mega.efficiency == NCCL_EFFICIENCY
    assert instance_network("g6.xlarge", 1).rail().bandwidth_gb_per_s == pytest.approx(10 / 8)
    assert instance_network("my-own-box", 8) is None and instance_network("p5.48xlarge", 4) is None
    # a price row's own network wins over the table
    own = instance_network("p5.48xlarge", 8, network_gbit_per_s=800, gpudirect_rdma="false")
    assert own.rail().bandwidth_gb_per_s == pytest.approx(12.5) and own.rail().efficiency == NCCL_EFFICIENCY
    assert len(instance_networks()) == len(load_instance_networks())


@pytest.mark.parametrize("bad, match", [(dict(network_gbit_per_s="fast"), r"positive number of Gb/s; got 'fast'"),
                                        (dict(network_gbit_per_s=-1), r"positive number of Gb/s; got -1"),
                                        (dict(network_gbit_per_s=100, gpudirect_rdma="maybe"), r"true or false")])
def test_a_bad_network_in_a_price_row_is_refused_with_the_fix(bad, match):
    with pytest.raises(ValueError, match=match):
        instance_network("nd-h100-v5", 8, **bad)
    with pytest.raises(ValueError, match="positive whole number of GPUs"):
        InstanceNetwork("x", 0, 100.0, False)


@pytest.fixture(scope="module")
def h100_16():
    """16 H100 on the shipped table's H100 instances, and on a user's own row that states its network."""
    own = pd.DataFrame(dict(provider=["azure"], region=["eastus"], instance_type=["nd-h100-v5"], gpu=["H100"],
                            gpus_per_instance=[8], on_demand_usd_per_h=[98.32], spot_usd_per_h=[float("nan")],
                            network_gbit_per_s=[3200], gpudirect_rdma=[True]))
    unknown = own.assign(instance_type="mystery-8g").drop(columns=["network_gbit_per_s", "gpudirect_rdma"])
    azure = unknown.assign(instance_type="Standard_ND96isr_H100_v5")  # no price shipped, its network is
    shipped = load_gpu_prices()
    prices = pd.concat([shipped[shipped["gpu"] == "H100"], own, unknown, azure], ignore_index=True)
    return _quiet(plan_cloud, LLAMA, gpus=["H100"], n_gpus=(16,), strategies=("fsdp",), prices=prices, **KW)


def test_plan_cloud_joins_instances_by_their_own_network(h100_16):
    by = h100_16.drop_duplicates("instance_type").set_index("instance_type")
    rail = instance_network("p5.48xlarge", 8).rail()
    c = pm.Cluster("H100", n_gpus=16, gpus_per_node=8, interconnect={"intra": None, "inter": rail}, nics_per_node=8)
    w = pm.Workload(LLAMA, input_shape=(256,), batch_size=64, precision="bf16", optimizer="adam-fused")
    want = _quiet(pm.predict, w, c, "fsdp")
    assert by.loc["p5.48xlarge", "step_time_s"] == pytest.approx(want.step_time_s, rel=1e-12)
    assert "p5.48xlarge's 3200 Gb/s network as 8 rails (GPUDirect RDMA" in by.loc["p5.48xlarge", "extrapolated"]
    # a user's row stating the same network plans the same step; the A3 High's slower TCP network, a slower one
    assert by.loc["nd-h100-v5", "step_time_s"] == pytest.approx(want.step_time_s, rel=1e-12)
    assert "the price table's network_gbit_per_s" in by.loc["nd-h100-v5", "extrapolated"]
    assert by.loc["Standard_ND96isr_H100_v5", "step_time_s"] == pytest.approx(want.step_time_s, rel=1e-12)
    assert "Standard_ND96isr_H100_v5's 3200 Gb/s network" in by.loc["Standard_ND96isr_H100_v5", "extrapolated"]
    assert by.loc["a3-highgpu-8g", "step_time_s"] > want.step_time_s
    # an instance type with no known network keeps the assumed link, and says so
    assert by.loc["mystery-8g", "interconnect"] == MULTI_INSTANCE_LINK
    assert f"link between instances assumed {MULTI_INSTANCE_LINK}: no network known for mystery-8g" in \
        by.loc["mystery-8g", "extrapolated"]


def test_the_layout_search_runs_on_the_instances_network():
    prices = load_gpu_prices().query("instance_type == 'p5.48xlarge' and region == 'us-east-1'")
    row = _quiet(plan_cloud, LLAMA, gpus=["H100"], n_gpus=(16,), strategies="search", prices=prices, **KW).iloc[0]
    rail = instance_network("p5.48xlarge", 8).rail()
    c = pm.Cluster("H100", n_gpus=16, gpus_per_node=8, interconnect={"intra": None, "inter": rail}, nics_per_node=8)
    w = pm.Workload(LLAMA, input_shape=(256,), batch_size=64, precision="bf16", optimizer="adam-fused")
    best = _quiet(search_layouts, w, c).query("fits").iloc[0]
    assert row["strategy"].startswith(f"{best['strategy']} ({best['framework']}, ")
    assert row["step_time_s"] == pytest.approx(best["step_time_s"], rel=1e-12)
    assert "p5.48xlarge's 3200 Gb/s network" in row["extrapolated"]
    assert row["mfu"] == pytest.approx(_quiet(pm.predict, w, c, best["parallelism"]).mfu, rel=1e-12)


def test_a_cluster_on_a_clouds_instances_is_the_one_plan_cloud_rents(h100_16):
    c = pm.planning.instance_cluster("p5.48xlarge", 16)
    assert isinstance(c, pm.Cluster)
    assert (c.gpu, c.n_gpus, c.gpus_per_node, c.nics_per_node) == ("H100", 16, 8, 8)
    assert c.interconnect == {"intra": None, "inter": instance_network("p5.48xlarge", 8).rail()}
    w = pm.Workload(LLAMA, input_shape=(256,), batch_size=64, precision="bf16", optimizer="adam-fused")
    row = h100_16[h100_16["instance_type"] == "p5.48xlarge"].iloc[0]
    assert _quiet(pm.predict, w, c, "fsdp").step_time_s == pytest.approx(row["step_time_s"], rel=1e-12)
    # a type whose network is known but whose price is not shipped: its GPU from the network table
    az = instance_cluster("Standard_ND96isr_H100_v5", 16)
    assert (az.gpu, az.gpus_per_node, az.nics_per_node) == ("H100", 8, 8)
    assert _quiet(pm.predict, w, az, "fsdp").step_time_s == pytest.approx(row["step_time_s"], rel=1e-12)
    # inside one instance: the GPU's own link, the instance's GPUs a node
    one = instance_cluster("g6e.48xlarge", 4)
    assert (one.gpu, one.gpus_per_node, one.interconnect, one.nics_per_node) == ("L40S", 4, None, None)


@pytest.mark.parametrize("args, match", [
    (("p5.48xlarg", 16), r"Unknown instance type 'p5.48xlarg'; the nearest known: p5.48xlarge"),
    (("my-a2-1g", 4), r"4 GPUs span 4 my-a2-1g instances, but no network between them is known .* Add "
                      r"network_gbit_per_s"),
    (("p5.48xlarge", 0), r"n_gpus must be a positive whole number of GPUs; got 0")])
def test_a_cluster_on_instances_says_what_is_missing(args, match):
    # a price table of one's own: every shipped type has its network, a type of one's own may not
    shipped = load_gpu_prices()
    own = shipped[shipped["instance_type"] == "a2-highgpu-1g"].assign(instance_type="my-a2-1g")
    with pytest.raises(ValueError, match=match):
        instance_cluster(*args, prices=pd.concat([shipped, own], ignore_index=True))


def test_perfmodel_predict_takes_an_instance(tmp_path, capsys):
    import json

    from perfmodel.cli import main

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(LLAMA))
    argv = ["predict", str(cfg), "--instance", "p5.48xlarge", "--n-gpus", "16", "--strategy", "fsdp", "--input-shape",
            "256", "--batch-size", "64", "--precision", "bf16", "--optimizer", "adam-fused"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(argv) == 0
    out = capsys.readouterr().out
    assert "on p5.48xlarge instances" in out and "8 x p5.48xlarge network (400 Gb/s per GPU, RDMA)" in out
    assert main([*argv, "--gpus", "A100"]) == 2
    assert "--instance p5.48xlarge has H100 GPUs; got --gpus A100. Leave --gpus out." in capsys.readouterr().err
    assert main([*argv, "--interconnect", "nvlink"]) == 2
    assert "leave out --interconnect, or --instance" in capsys.readouterr().err


def test_plan_rows_carry_the_steps_mfu_as_pm_predict_gives_it(h100_16):
    row = h100_16[h100_16["instance_type"] == "p5.48xlarge"].iloc[0]
    c = instance_cluster("p5.48xlarge", 16)
    w = pm.Workload(LLAMA, input_shape=(256,), batch_size=64, precision="bf16", optimizer="adam-fused")
    assert row["mfu"] == pytest.approx(_quiet(pm.predict, w, c, "fsdp").mfu, rel=1e-12) and 0 < row["mfu"] < 1


def test_perfmodel_layouts_takes_an_instance(tmp_path, capsys):
    import json

    from perfmodel.cli import main

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(LLAMA))
    argv = ["layouts", str(cfg), "--instance", "p5.48xlarge", "--n-gpus", "16", "--input-shape", "256", "--batch-size",
            "32", "--top", "2", "--quiet"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(argv) == 0
    out = capsys.readouterr().out
    usd = load_gpu_prices().query("instance_type == 'p5.48xlarge'")["on_demand_usd_per_h"].min() / 8
    assert f"cheapest on-demand GPU-hour in the shipped price table, ${usd:.3g}" in out
    assert "on 16 x H100 (8 per node)" in out and "p5.48xlarge network (400 Gb/s per GPU, RDMA)" in out
    assert "cost_per_step_usd" in out
    assert main([*argv, "--gpu", "A100"]) == 2
    assert "--instance p5.48xlarge has H100 GPUs; got --gpu A100. Leave --gpu out." in capsys.readouterr().err
    azure = [a if a != "p5.48xlarge" else "Standard_ND96isr_H100_v5" for a in argv]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(azure) == 0
    out = capsys.readouterr().out
    assert "no price for Standard_ND96isr_H100_v5: give --usd-per-gpu-h" in out and "cost_per_step_usd" not in out
