"""With ``nics_per_node``, a process group that leaves its node carries its collectives over the node's NICs, each on
its own rail: its share of them (the node's NICs times its share of the node's ranks), never faster than the node's
own link. Unsaid, an InfiniBand fabric has a NIC per GPU (the HGX / DGX reference designs), and on other links one NIC
carries each group that leaves its node. And the
communication hidden under compute slows that compute by the published share (``OVERLAP_SLOWDOWN``)."""
from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import perfmodel as pm
import dataclasses
import functools
import math

from perfmodel.step.collectives import TREE_BUS_SHARE, Interconnect, allgather_time, allreduce_time, resolve_interconnect
from perfmodel.step.strategy import (parse_strategy, rail_link, ranks_per_node, resolve_links, ring_step_latency,
                                     tree_latency)

LEVELS = {"intra": "nvlink", "inter": "infiniband-ndr"}
#: GPT-2 small's Hugging Face config, as the README's examples use it
GPT2 = str(Path(__file__).resolve().parents[2] / "examples" / "gpt2.json")
LLAMA = dict(model_type="llama", vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False)


@pytest.mark.parametrize("strategy,n,want", [
    ("fsdp", 64, {"tp": 1, "cp": 1, "dp": 8, "pp": 1, "ep": 1}),
    ("dp8-tp8", 64, {"tp": 8, "cp": 1, "dp": 1, "pp": 1, "ep": 1}),
    ("fsdp8-tp2", 16, {"tp": 2, "cp": 1, "dp": 4, "pp": 1, "ep": 1}),
    ("fsdp4-cp2-tp8", 64, {"tp": 8, "cp": 1, "dp": 1, "pp": 1, "ep": 1}),
    ("dp2-tp2-pp4", 16, {"tp": 2, "cp": 1, "dp": 2, "pp": 2, "ep": 1}),
    ("dp16-ep4-tp2", 32, {"tp": 2, "cp": 1, "dp": 4, "pp": 1, "ep": 4}),  # ep's ranks consecutive
    ("dp4-cp2-ep8", 8, {"tp": 1, "cp": 2, "dp": 8, "pp": 1, "ep": 8}),  # over the cp ranks too: the whole node
    ("dp16-ep8-tp2", 32, {"tp": 2, "cp": 1, "dp": 4, "pp": 1, "ep": 8}),  # consecutive, whole experts: one node
    ("dp8-ep16-tp2", 16, {"tp": 2, "cp": 1, "dp": 4, "pp": 1, "ep": 8}),  # half of the ep group on each node
])
def test_ranks_of_a_group_on_one_node(strategy, n, want):
    assert ranks_per_node(parse_strategy(strategy, n), 8) == want


def test_a_group_gets_its_share_of_the_rails_never_more_than_the_node_s_link():
    intra, inter = resolve_interconnect("nvlink", "H100"), resolve_interconnect("infiniband-ndr", "H100")
    eight = rail_link(inter, intra, 8)
    assert eight.bandwidth_gb_per_s == 8 * inter.bandwidth_gb_per_s and eight.efficiency == inter.efficiency
    assert rail_link(inter, intra, 1) == inter
    half = rail_link(inter, intra, 0.5)  # two groups of a node share one NIC
    assert half.bytes_per_s == pytest.approx(inter.bytes_per_s / 2)
    capped = rail_link(inter, intra, 16)  # more rails than NVLink carries: the node's link bounds the ring
    assert capped.bytes_per_s == pytest.approx(intra.bytes_per_s) and capped.latency_s == inter.latency_s
    links = resolve_links(LEVELS, "H100", degrees=parse_strategy("fsdp", 64), gpus_per_node=8, nics_per_node=8)
    assert links["dp"].bytes_per_s == pytest.approx(8 * inter.bytes_per_s)
    assert links["pp"] == intra  # no pipeline: the unused group stays on the node's link
    tp8 = resolve_links(LEVELS, "H100", degrees=parse_strategy("dp8-tp8", 64), gpus_per_node=8, nics_per_node=8)
    # one rank of each dp group per node: its own rail, and NCCL's tree over its 8 nodes for an all-reduce
    assert dataclasses.replace(tp8["dp"], tree_latency_s=0.0) == inter and tp8["tp"] == intra
    assert tp8["dp"].tree_latency_s == pytest.approx(2 * 3 * inter.latency_s, rel=1e-12)
    one = resolve_links(LEVELS, "H100", degrees=parse_strategy("fsdp", 64), gpus_per_node=8, nics_per_node=1)
    # one NIC for the node: the ring crosses it once per node; 7 of its 63 steps between ranks leave a node
    assert one["dp"].bytes_per_s == inter.bytes_per_s
    assert one["dp"].latency_s == pytest.approx(intra.latency_s + (inter.latency_s - intra.latency_s) * 7 / 63, rel=1e-12)
    shared = resolve_links(LEVELS, "H100", degrees=parse_strategy("fsdp8-tp2", 16), gpus_per_node=8, nics_per_node=1)
    assert shared["dp"].bytes_per_s == pytest.approx(inter.bytes_per_s / 2)  # two dp groups of a node share its NIC
    # unsaid on an InfiniBand fabric: the HGX / DGX reference design, a NIC per GPU on its own rail
    unsaid = resolve_links(LEVELS, "H100", degrees=parse_strategy("fsdp8-tp2", 16), gpus_per_node=8)
    assert unsaid == resolve_links(LEVELS, "H100", degrees=parse_strategy("fsdp8-tp2", 16), gpus_per_node=8, nics_per_node=8)
    # unsaid on another link (Ethernet between cloud instances, a spec): one NIC per group that leaves the node
    eth = {"intra": "nvlink", "inter": "ethernet-100g"}
    plain = resolve_links(eth, "H100", degrees=parse_strategy("fsdp8-tp2", 16), gpus_per_node=8)
    e100 = resolve_interconnect("ethernet-100g", "H100")
    assert plain["dp"].bytes_per_s == e100.bytes_per_s and plain["tp"] == intra
    # its ring of 8 ranks over 2 nodes: 1 of its 7 steps between ranks leaves a node
    assert plain["dp"].latency_s == pytest.approx(ring_step_latency(e100.latency_s, intra.latency_s, 8, 2), rel=1e-12)


def test_fsdp_across_nodes_is_cheaper_with_more_rails_and_basis_says_over_what():
    w = pm.Workload(LLAMA, input_shape=(64,), batch_size=16, precision="bf16", optimizer="adam")
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for nics in (1, 2, 8):
            out[nics] = pm.predict(w, pm.Cluster("H100", n_gpus=16, interconnect=LEVELS, nics_per_node=nics), "fsdp")
        unsaid = pm.predict(w, pm.Cluster("H100", n_gpus=16, interconnect=LEVELS), "fsdp")
        inside = pm.predict(w, pm.Cluster("H100", n_gpus=8, interconnect=LEVELS, nics_per_node=1), "fsdp")
    assert out[8].comm_total_s["dp"] < out[2].comm_total_s["dp"] < out[1].comm_total_s["dp"]
    assert unsaid.step_time_s == out[8].step_time_s  # InfiniBand unsaid: a NIC per GPU (RAIL_FABRICS)
    assert "8 x infiniband-ndr" in out[8].basis and "2 x infiniband-ndr" in out[2].basis
    assert "infiniband" not in inside.basis  # a group inside one node never uses the NICs


def test_a_ring_across_nodes_pays_the_network_latency_only_where_it_leaves_a_node():
    # NCCL's ring latency: of an all-reduce's 2(n-1) steps 2(N-1) cross nodes, of an all-gather's n-1 steps N-1; the
    # others stay on NVLink
    intra, inter = resolve_interconnect("nvlink", "H100"), resolve_interconnect("infiniband-ndr", "H100")
    links = resolve_links(LEVELS, "H100", degrees=parse_strategy("fsdp", 64), gpus_per_node=8, nics_per_node=8)
    dp = links["dp"]
    ring = functools.partial(allreduce_time, algorithm="ring")
    lat = ring(1.0, 64, dp) - ring(1.0, 64, dataclasses.replace(dp, latency_s=0.0))
    assert lat == pytest.approx(2 * 7 * inter.latency_s + 2 * 56 * intra.latency_s, rel=1e-9)
    lat = allgather_time(1.0, 64, dp) - allgather_time(1.0, 64, dataclasses.replace(dp, latency_s=0.0))
    assert lat == pytest.approx(7 * inter.latency_s + 56 * intra.latency_s, rel=1e-9)
    assert ring_step_latency(inter.latency_s, intra.latency_s, 8, 1) == intra.latency_s
    assert ring_step_latency(inter.latency_s, intra.latency_s, 8, 8) == inter.latency_s
    # the pipeline's sends leave the node at every hop that crosses: the network's latency
    three = resolve_links(LEVELS, "H100", degrees=parse_strategy("fsdp8-pp8", 64), gpus_per_node=8, nics_per_node=8)
    assert three["pp"].latency_s == inter.latency_s and three["dp"] == intra


def test_nccl_tree_latency_grows_with_log2_of_the_nodes_as_nccl_s_tuning_model_counts_it():
    a, b = 19e-6, 3e-6  # network, node
    assert tree_latency(a, b, 8, 1) == 0.0  # one node: no tree
    assert tree_latency(a, b, 8, 2) == pytest.approx(2 * (7 * b + 1 * a), rel=1e-15)
    assert tree_latency(a, b, 8, 128) == pytest.approx(2 * (7 * b + 7 * a), rel=1e-15)
    assert tree_latency(a, b, 8, 3) == tree_latency(a, b, 8, 2)  # log2i: the levels of the tree, rounded down
    assert tree_latency(a, b, 1, 16) == pytest.approx(2 * 4 * a, rel=1e-15)  # a rank per node: no chain


def test_an_all_reduce_across_nodes_is_nccl_s_ring_or_tree_whichever_is_faster():
    intra, inter = resolve_interconnect("nvlink", "H100"), resolve_interconnect("infiniband-ndr", "H100")
    links = resolve_links(LEVELS, "H100", degrees=parse_strategy("dp", 1024), gpus_per_node=8, nics_per_node=8)
    dp = links["dp"]
    assert dp.tree_latency_s == pytest.approx(2 * (7 * intra.latency_s + 7 * inter.latency_s), rel=1e-12)
    assert links["tp"].tree_latency_s == 0.0 and links["pp"].tree_latency_s == 0.0  # unused groups: the node's link
    # a data-parallel bucket (25 MiB) on 128 nodes: the tree, whose latency is log2 of the nodes, not the ring's 2046 steps
    s = 25 * 2**20
    tree = 2 * s / (TREE_BUS_SHARE * 0.7 * dp.bytes_per_s) + dp.tree_latency_s  # NCCL's correction at 16-32 MiB
    assert allreduce_time(s, 1024, dp) == pytest.approx(tree, rel=1e-12)
    assert allreduce_time(s, 1024, dp, algorithm="ring") > 10 * tree
    # gigabytes on 8 nodes: the ring, whose bus bandwidth is the tree's over 0.92 (NCCL's tuning model); on 128 nodes
    # the ring's 2046 steps still cost more than the tree's lower bandwidth
    big = 8 * 2**30
    dp64 = resolve_links(LEVELS, "H100", degrees=parse_strategy("dp", 64), gpus_per_node=8)["dp"]
    assert allreduce_time(big, 64, dp64) == allreduce_time(big, 64, dp64, algorithm="ring") < 2 * big / (
        TREE_BUS_SHARE * dp64.bytes_per_s)
    assert allreduce_time(big, 1024, dp) < allreduce_time(big, 1024, dp, algorithm="ring")
    # inside one node (and on any link without a tree) the ring, to the bit
    node = resolve_links(LEVELS, "H100", degrees=parse_strategy("dp", 8), gpus_per_node=8)["dp"]
    assert node.tree_latency_s == 0.0
    assert allreduce_time(1.0, 8, node) == allreduce_time(1.0, 8, node, algorithm="ring")
    with pytest.raises(ValueError, match="nccl, ring, tree"):
        allreduce_time(1.0, 8, node, algorithm="double-binary")


def test_nccl_s_tree_correction_on_medium_messages():
    from perfmodel.step.collectives import tree_correction

    # NCCL's treeCorrectionFactor, Simple protocol, indexed by log2(bytes / 64): 64 B to 256 MiB, 1 beyond
    assert [tree_correction(2**k) for k in (5, 6, 13, 19, 25, 26, 27, 28, 29, 33)] == [
        1.0, .9, .8, .5, .7, .8, .9, .9, 1.0, 1.0]
    assert tree_correction(2**25 - 1) == .7 and tree_correction(2**25 + 1) == .7  # 32 MiB's power of two: index 19


def test_the_tree_s_ranks_per_node_on_every_path_that_leaves_the_node():
    intra, inter = resolve_interconnect("nvlink", "H100"), resolve_interconnect("infiniband-ndr", "H100")
    # tensor parallelism over 2 nodes: a chain of 8 on each, one level between them
    tp16 = resolve_links(LEVELS, "H100", degrees=parse_strategy("tp16", 16), gpus_per_node=8, nics_per_node=8)
    assert tp16["tp"].tree_latency_s == pytest.approx(2 * (7 * intra.latency_s + inter.latency_s), rel=1e-12)
    # one NIC per group (Ethernet unsaid): the same tree over its nodes
    eth = {"intra": "nvlink", "inter": "ethernet-100g"}
    e100 = resolve_interconnect("ethernet-100g", "H100")
    one = resolve_links(eth, "H100", degrees=parse_strategy("dp32-tp8", 256), gpus_per_node=8)
    assert one["dp"].tree_latency_s == pytest.approx(2 * 5 * e100.latency_s, rel=1e-12)
    # 12 ranks on 2 nodes (8 and 4): NCCL's nRanks / nNodes, an integer division, 6 a node
    dp12 = resolve_links(LEVELS, "H100", degrees=parse_strategy("dp12", 12), gpus_per_node=8, nics_per_node=8)
    assert dp12["dp"].tree_latency_s == pytest.approx(2 * (5 * intra.latency_s + inter.latency_s), rel=1e-12)
    # the ranks that hold the same experts, one per node on 8 nodes
    edp = resolve_links(LEVELS, "H100", degrees=parse_strategy("dp64-ep8", 64), gpus_per_node=8, nics_per_node=8)
    assert edp["edp"].tree_latency_s == pytest.approx(2 * 3 * inter.latency_s, rel=1e-12)


@pytest.mark.parametrize("bad", [-1e-6, math.nan, math.inf, True, "1"])
def test_a_tree_latency_must_be_a_finite_number_of_seconds(bad):
    with pytest.raises(ValueError, match="tree_latency_s"):
        Interconnect("x", 50.0, 1e-5, tree_latency_s=bad)


def test_ddp_over_a_hundred_nodes_is_not_latency_bound():
    """DDP's 25 MiB buckets over 128 nodes: NCCL's tree keeps each all-reduce's latency at log2 of the nodes, so the
    step's communication grows little from 8 to 128 nodes (the ring's 2(n - 1) steps made it ten times the step)."""
    w = pm.Workload(str(Path(GPT2)), input_shape=(1024,), batch_size=1, precision="bf16", optimizer="adam")
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in (64, 1024):
            out[n] = pm.predict(dataclasses.replace(w, batch_size=4 * n), pm.Cluster("H100", n_gpus=n, interconnect=LEVELS), "dp")
    assert out[1024].comm_total_s["dp"] < 2 * out[64].comm_total_s["dp"]
    assert out[1024].step_time_s < 1.2 * out[64].step_time_s


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_nics_per_node_must_be_a_positive_int(bad):
    with pytest.raises(ValueError, match="nics_per_node"):
        pm.Cluster("H100", n_gpus=16, nics_per_node=bad)
    with pytest.raises(ValueError, match="nics_per_node"):
        pm.predict_step_time(LLAMA, "H100", input_shape=(64,), batch_size=16, n_gpus=16, strategy="fsdp",
                             interconnect=LEVELS, nics_per_node=bad)


# ------------------------------------------------------------------ compute slowed by the communication under it


def test_overlap_slowdown_is_a_share_of_the_compute_under_the_hidden_communication():
    from perfmodel.step.collectives import OVERLAP_SLOWDOWN, overlap_slowdown

    assert OVERLAP_SLOWDOWN == 0.189  # the published mean (arXiv:2507.03114), not a fit
    assert overlap_slowdown(0.5, 2.0) == pytest.approx(0.189 * 0.5)  # bounded by the hidden communication
    assert overlap_slowdown(3.0, 2.0) == pytest.approx(0.189 * 2.0)  # and by the compute
    assert overlap_slowdown(-1e-18, 2.0) == 0.0
    with pytest.raises(ValueError, match="share of the compute's time"):
        overlap_slowdown(1.0, 1.0, share=-0.1)


def test_hidden_communication_slows_the_step_and_exposed_communication_does_not(monkeypatch):
    """DDP with its buckets overlapped: the all-reduce hidden under the backward pass slows it by the published share;
    without the overlap nothing is hidden and nothing slows; with the share set to 0 the step is compute + exposed."""
    from perfmodel.step import parallel

    kw = dict(input_shape=(1024,), batch_size=64, precision="bf16", optimizer="adam", n_gpus=8, strategy="dp")
    on = pm.predict_step_time(GPT2, "H100", **kw).iloc[0]
    hidden = on["comm_total_s"] - on["comm_s"]
    assert hidden > 0
    assert on["overlap_slowdown_s"] == pytest.approx(0.189 * min(hidden, on["compute_s"]), rel=1e-12)
    assert on["step_time_s"] == pytest.approx(on["compute_s"] + on["comm_s"] + on["overlap_slowdown_s"], rel=1e-12)
    off = pm.predict_step_time(GPT2, "H100", overlap_grad_reduce=False, **kw).iloc[0]
    assert off["overlap_slowdown_s"] == 0.0 and off["comm_s"] == pytest.approx(off["comm_total_s"])
    monkeypatch.setattr(parallel, "overlap_slowdown", lambda hidden, compute: 0.0)
    free = pm.predict_step_time(GPT2, "H100", **kw).iloc[0]
    assert free["step_time_s"] == pytest.approx(on["step_time_s"] - on["overlap_slowdown_s"], rel=1e-12)


def test_data_parallel_scaling_on_one_node_is_no_longer_perfect():
    """Eight GPUs of one node, DDP, the batch per GPU fixed: the samples per second per GPU fall below one GPU's by
    exactly the exposed all-reduce, the slowdown of the backward pass under the hidden one, and the clock of the
    slowest of the eight chips, which the step waits on (before: 1.00 whenever the all-reduce hid)."""
    from perfmodel.step.kernels import at_sustained_clock, training_clock

    one = pm.predict_step_time(GPT2, "H100", input_shape=(1024,), batch_size=8, precision="bf16", optimizer="adam").iloc[0]
    eight = pm.predict_step_time(GPT2, "H100", input_shape=(1024,), batch_size=64, precision="bf16", optimizer="adam",
                                 n_gpus=8, strategy="dp").iloc[0]
    # one GPU at the clock of the slowest of eight (a clocked part keeps the clock it is given)
    slowest = at_sustained_clock("H100", training_clock("H100", "bf16", n_gpus=8))
    one_slow = pm.predict_step_time(GPT2, slowest, input_shape=(1024,), batch_size=8, precision="bf16",
                                    optimizer="adam").iloc[0]
    assert eight["overlap_slowdown_s"] > 0
    assert eight["step_time_s"] == pytest.approx(one_slow["step_time_s"] + eight["comm_s"] + eight["overlap_slowdown_s"],
                                                 rel=1e-9)
    assert one["step_time_s"] < one_slow["step_time_s"] and one["step_time_s"] / eight["step_time_s"] < 1


def test_a_layout_that_spans_nodes_without_a_network_gets_its_gpus_reference_fabric_never_nvlink_across_nodes():
    from perfmodel.datasets import load_instance_networks
    from perfmodel.step.collectives import INTERCONNECTS
    from perfmodel.step.strategy import FALLBACK_INTER, REFERENCE_NETWORKS, default_network

    deg = parse_strategy("fsdp", 64)
    # an H100 cluster: the DGX H100's eight NDR rails, exactly as if they had been named
    assumed = resolve_links(None, "H100", degrees=deg)
    assert assumed == resolve_links(LEVELS, "H100", degrees=deg, nics_per_node=8)
    assert assumed["dp"].name == "8 x infiniband-ndr"
    assert resolve_links(None, "A100", degrees=deg)["dp"].name == "8 x infiniband-hdr"
    assert resolve_links(None, "B300", degrees=deg)["dp"].name == "16 x infiniband-ndr"  # 800 Gb/s per GPU
    assert resolve_links(None, "MI300X", degrees=deg)["dp"].name.endswith("x infiniband-ndr")
    assert resolve_links(None, "L40S", degrees=deg)["dp"].name == FALLBACK_INTER  # no reference fabric: one NIC a node
    # the caller's NIC count wins; a named network is never replaced; one node keeps the GPU's own link for every group
    assert resolve_links(None, "H100", degrees=deg, nics_per_node=4)["dp"].name == "4 x infiniband-ndr"
    assert resolve_links("nvlink", "H100", degrees=deg)["dp"].name == resolve_interconnect("nvlink", "H100").name
    one_node = parse_strategy("fsdp", 8)
    assert default_network("H100", one_node) is None
    assert resolve_links(None, "H100", degrees=one_node) == resolve_links("nvlink", "H100", degrees=one_node)
    # a GB200 NVL72 rack is one NVLink domain: 64 GPUs stay on NVLink, 144 leave the rack
    assert default_network("GB200", deg) is None
    assert resolve_links(None, "GB200", degrees=deg)["dp"] == resolve_interconnect("nvlink", "GB200")
    assert default_network("GB200", parse_strategy("fsdp", 144)).gpus_per_node == 72

    # the step: the same as with the network named, and basis says what was assumed
    kw = dict(input_shape=(128,), batch_size=64, precision="bf16", optimizer="adam-fused", n_gpus=64, strategy="fsdp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        unsaid = pm.predict_step_time(LLAMA, "H100", **kw).iloc[0]
        named = pm.predict_step_time(LLAMA, "H100", interconnect=LEVELS, nics_per_node=8, **kw).iloc[0]
        before = pm.predict_step_time(LLAMA, "H100", interconnect="nvlink", **kw).iloc[0]
    assert unsaid["step_time_s"] == named["step_time_s"] and unsaid["comm_total_s"] == named["comm_total_s"]
    assert unsaid["comm_total_s"] > before["comm_total_s"]  # NVLink across nodes was the old, too fast, default
    assert "no network given between the nodes of 8 GPUs" in unsaid["basis"] and "DGX H100" in unsaid["basis"]
    assert "no network given" not in named["basis"]

    # each reference's per-GPU rate is the fastest per-GPU network of that GPU's cloud instances in the shipped table
    nets = load_instance_networks()
    per_gpu = (nets["network_gbit_per_s"] / nets["gpus_per_instance"]).groupby(nets["gpu"]).max()
    for gpu in ("A100", "H100", "H200", "B200", "B300"):
        ref = REFERENCE_NETWORKS[gpu]
        assert ref.rails_per_gpu * INTERCONNECTS[ref.inter].bandwidth_gb_per_s * 8 == per_gpu[gpu], gpu
