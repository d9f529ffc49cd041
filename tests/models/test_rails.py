"""With ``nics_per_node``, a process group that leaves its node carries its collectives over the node's NICs, each on
its own rail: its share of them (the node's NICs times its share of the node's ranks), never faster than the node's
own link. Without it, one NIC carries each group that leaves its node (the predictions so far, unchanged)."""
from __future__ import annotations

import warnings

import pytest

import perfmodel as pm
from perfmodel.step.collectives import resolve_interconnect
from perfmodel.step.strategy import parse_strategy, rail_link, ranks_per_node, resolve_links

LEVELS = {"intra": "nvlink", "inter": "infiniband-ndr"}
LLAMA = dict(model_type="llama", vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False)


@pytest.mark.parametrize("strategy,n,want", [
    ("fsdp", 64, {"tp": 1, "cp": 1, "dp": 8, "pp": 1}),
    ("dp8-tp8", 64, {"tp": 8, "cp": 1, "dp": 1, "pp": 1}),
    ("fsdp8-tp2", 16, {"tp": 2, "cp": 1, "dp": 4, "pp": 1}),
    ("fsdp4-cp2-tp8", 64, {"tp": 8, "cp": 1, "dp": 1, "pp": 1}),
    ("dp2-tp2-pp4", 16, {"tp": 2, "cp": 1, "dp": 2, "pp": 2}),
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
    tp8 = resolve_links(LEVELS, "H100", degrees=parse_strategy("dp8-tp8", 64), gpus_per_node=8, nics_per_node=8)
    assert tp8["dp"] == inter and tp8["tp"] == intra  # one rank of each dp group per node: its own rail
    one = resolve_links(LEVELS, "H100", degrees=parse_strategy("fsdp", 64), gpus_per_node=8, nics_per_node=1)
    assert one["dp"] == inter  # one NIC for the node: the ring crosses it once per node
    shared = resolve_links(LEVELS, "H100", degrees=parse_strategy("fsdp8-tp2", 16), gpus_per_node=8, nics_per_node=1)
    assert shared["dp"].bytes_per_s == pytest.approx(inter.bytes_per_s / 2)  # two dp groups of a node share its NIC
    unsaid = resolve_links(LEVELS, "H100", degrees=parse_strategy("fsdp8-tp2", 16), gpus_per_node=8)
    assert unsaid["dp"] == inter and unsaid["tp"] == intra  # without nics_per_node: one NIC per group, as before


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
    assert unsaid.step_time_s == out[1].step_time_s  # one NIC per group: the predictions so far
    assert "8 x infiniband-ndr" in out[8].basis and "2 x infiniband-ndr" in out[2].basis
    assert "infiniband" not in inside.basis  # a group inside one node never uses the NICs


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_nics_per_node_must_be_a_positive_int(bad):
    with pytest.raises(ValueError, match="nics_per_node"):
        pm.Cluster("H100", n_gpus=16, nics_per_node=bad)
    with pytest.raises(ValueError, match="nics_per_node"):
        pm.predict_step_time(LLAMA, "H100", input_shape=(64,), batch_size=16, n_gpus=16, strategy="fsdp",
                             interconnect=LEVELS, nics_per_node=bad)
