"""A GPU's PCIe generation is a generation, and a link perfmodel has no model of is never priced as another's."""
from __future__ import annotations

import math

import pytest

from perfmodel.datasets import GPUSpec, InvalidGPUSpecError, gpu_spec
from perfmodel._errors import UnknownNameError
from perfmodel.step.collectives import resolve_interconnect


def _pcie_card(gen):
    a10 = gpu_spec("A10")
    import dataclasses

    return dataclasses.replace(a10, gpu="my-card", pcie_generation=gen, nvlink_gb_per_s=0.0)


@pytest.mark.parametrize("bad", [0, 8, 99, 4.5, -3])
def test_a_generation_outside_pcie_is_refused(bad):
    with pytest.raises(InvalidGPUSpecError, match="pcie_generation must be"):
        _pcie_card(bad)


@pytest.mark.parametrize("gen", [1, 2, 6])
def test_a_generation_without_a_link_model_is_refused_not_clamped(gen):
    with pytest.raises(ValueError, match=f"PCIe generation {gen}, for which perfmodel has no link model"):
        resolve_interconnect(None, gpu=_pcie_card(gen))
    assert resolve_interconnect("pcie3", gpu=_pcie_card(gen)).name == "pcie3"  # the way out the message names


@pytest.mark.parametrize("gen", [3, 4, 5])
def test_known_generations_get_their_own_link(gen):
    assert resolve_interconnect(None, gpu=_pcie_card(gen)).name == f"pcie{gen}"
    assert isinstance(_pcie_card(gen), GPUSpec)


def test_amd_8_gpu_platforms_talk_over_infinity_fabric_not_pcie():
    """MI300X/MI325X/MI355X: 7 Infinity Fabric links to the other GPUs of the platform (896 / 1075.2 GB/s aggregate,
    the datasheets), halved per direction at the assumed efficiency; before, they fell back to PCIe 5 (63 GB/s)."""
    from perfmodel.datasets import gpu_spec
    from perfmodel.step.collectives import NCCL_EFFICIENCY, infinity_fabric

    for gpu, agg in (("MI300X", 896.0), ("MI325X", 896.0), ("MI355X", 1075.2)):
        link = resolve_interconnect(gpu=gpu)
        assert link.name == f"infinity-fabric ({gpu})" and link.bandwidth_gb_per_s == agg / 2
        assert link.efficiency == NCCL_EFFICIENCY and link == resolve_interconnect("xgmi", gpu=gpu) == infinity_fabric(gpu)
    for gpu in ("MI100", "MI210", "MI250"):  # bridged cards and dies: not modelled, their PCIe as before
        assert resolve_interconnect(gpu=gpu).name.startswith("pcie") and math.isnan(gpu_spec(gpu).infinity_fabric_gb_per_s)
    assert resolve_interconnect(gpu="H100").name == "nvlink (H100)" and gpu_spec("H100").infinity_fabric_gb_per_s == 0
    with pytest.raises(UnknownNameError, match="H100 has none"):
        resolve_interconnect("infinity-fabric", gpu="H100")
    with pytest.raises(UnknownNameError, match="MI210 has no Infinity Fabric"):
        infinity_fabric("MI210")


def test_an_mi300x_fsdp_step_no_longer_waits_on_pcie():
    transformers = pytest.importorskip("transformers")
    import perfmodel as pm

    cfg = transformers.LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=4, num_attention_heads=16,
                                   num_key_value_heads=8, vocab_size=32000)
    kw = dict(input_shape=(1024,), batch_size=8, precision="bf16", optimizer="adam", n_gpus=8, strategy="fsdp")
    out = pm.predict_step_time(cfg, ["MI300X"], **kw)
    pcie = pm.predict_step_time(cfg, ["MI300X"], interconnect="pcie5", **kw)
    assert out["interconnect"].iloc[0] == "infinity-fabric (MI300X)" and "infinity-fabric (MI300X)" in out["basis"].iloc[0]
    assert out["comm_total_s"].iloc[0] < pcie["comm_total_s"].iloc[0] / 5


def test_a_group_on_an_infinity_fabric_board_has_the_links_among_its_own_gpus():
    """Every MI300X links directly to each of the 7 others: 2 GPUs have one 64 GB/s link, 8 have seven. RCCL's measured
    4 GiB all-reduce (47.7 GB/s of bus bandwidth on 2 GPUs, 312.9 on 8) is reproduced within 8 % at the assumed
    efficiency (nothing fitted on it); before, 2 GPUs were given all seven links."""
    import perfmodel as pm
    from perfmodel.datasets import load_rccl_allreduce
    from perfmodel.step.collectives import allreduce_time, infinity_fabric, mesh_link
    from perfmodel.step.strategy import resolve_links

    from perfmodel.step.strategy import mesh_allreduce_check

    measured = load_rccl_allreduce()
    assert list(measured["n_gpus"]) == [2, 8] and list(measured["busbw_gb_per_s"]) == [47.671, 312.912]
    check = mesh_allreduce_check()
    assert list(check["measured_busbw_gb_per_s"]) == list(measured["busbw_gb_per_s"])
    assert check["predicted_busbw_gb_per_s"].to_numpy() == pytest.approx(measured["busbw_gb_per_s"].to_numpy(), rel=0.08)
    for r in check.itertuples():  # by hand: the ring's bus bandwidth is the link's effective rate, less its latency
        link = resolve_links(None, "MI300X", degrees={"dp": r.n_gpus})["dp"]
        size = r.payload_gib * 2**30
        assert r.predicted_busbw_gb_per_s == pytest.approx(
            size / allreduce_time(size, r.n_gpus, link) * 2 * (r.n_gpus - 1) / r.n_gpus / 1e9, rel=1e-12)
        assert r.predicted_busbw_gb_per_s < link.bytes_per_s / 1e9
    fabric = infinity_fabric("MI300X")
    assert fabric.mesh_peers == 7 and fabric.bandwidth_gb_per_s == 448
    # tensor parallel over 2 and 4 of the board, data parallel over the rest; a pipeline's send has one link
    links = resolve_links(None, "MI300X", degrees={"tp": 2, "dp": 4, "pp": 1, "cp": 1})
    assert links["tp"].bandwidth_gb_per_s == 64 and links["dp"].bandwidth_gb_per_s == 3 * 64
    assert resolve_links(None, "MI300X", degrees={"tp": 4, "pp": 2})["pp"].bandwidth_gb_per_s == 64
    assert resolve_links(None, "MI300X", degrees={"dp": 8})["dp"] == fabric  # the whole board: all seven
    assert "1 of its 7 direct links" in links["tp"].name and links["tp"].mesh_peers == 0  # a share is not split again
    assert mesh_link(links["tp"], 2) == links["tp"]
    nvlink = resolve_links(None, "H100", degrees={"tp": 2, "dp": 4})  # a switch: every GPU has its whole bandwidth
    assert nvlink["tp"] == nvlink["dp"] == resolve_interconnect(gpu="H100")
    # across boards the ring is bounded by its ranks' links on each board
    cross = resolve_links({"intra": None, "inter": "infiniband-ndr"}, "MI300X", degrees={"tp": 2, "dp": 8},
                          gpus_per_node=8, nics_per_node=8)
    assert cross["dp"].bytes_per_s <= mesh_link(fabric, 4).bytes_per_s and cross["tp"].bandwidth_gb_per_s == 64
    with pytest.raises(ValueError, match="ranks must be"):
        mesh_link(fabric, 0)
    with pytest.raises(ValueError, match="mesh_peers must be"):
        pm.step.collectives.Interconnect("x", 10.0, mesh_peers=-1)
    # a step with tensor parallelism over 2 of the board now pays for its one link
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=4, num_attention_heads=16,
                                   num_key_value_heads=8, vocab_size=32000)
    kw = dict(input_shape=(1024,), batch_size=8, precision="bf16", optimizer="adam", n_gpus=8)
    tp2 = pm.predict_step_time(cfg, ["MI300X"], strategy="dp4-tp2", **kw)
    tp8 = pm.predict_step_time(cfg, ["MI300X"], strategy="tp8", **kw)
    assert "1 of its 7 direct links" in tp2["basis"].iloc[0] and "direct links" not in tp8["interconnect"].iloc[0]


def test_nvlink_bridged_pcie_cards_talk_over_pcie_beyond_their_pair():
    """An NVLink bridge joins 2 PCIe cards (A100 PCIe, A40, RTX A6000, H100 PCIe, H100 NVL; the H200 NVL's 2-way
    bridge): a group inside one pair has the bridge, a ring or a pipeline reaching another pair crosses the cards' PCIe
    at its pace, as Vidur's 4-GPU all-reduces on such nodes ran; before, every group had the bridge's NVLink."""
    from perfmodel.step.collectives import NVLINK_BRIDGE_GPUS, Interconnect, bridged_link, fitted_link
    from perfmodel.step.strategy import resolve_links

    for gpu, gen in (("A100-PCIe-80GB", 4), ("H100-NVL", 5), ("H100-PCIe", 5), ("A40", 4)):
        link = resolve_interconnect(gpu=gpu)
        assert link.domain_gpus == NVLINK_BRIDGE_GPUS[gpu] == 2 and link.beyond == fitted_link(f"pcie{gen}")
        links = resolve_links(None, gpu, degrees={"tp": 2, "dp": 4})
        assert links["tp"].bandwidth_gb_per_s == link.bandwidth_gb_per_s and links["tp"].domain_gpus == 0
        assert links["dp"].bandwidth_gb_per_s == fitted_link(f"pcie{gen}").bandwidth_gb_per_s
        assert f"between nvlink ({gpu}) blocks of 2" in links["dp"].name
        pair = resolve_links(None, gpu, degrees={"dp": 2})["dp"]  # data parallel over one pair: the bridge
        assert pair.bandwidth_gb_per_s == link.bandwidth_gb_per_s
        pipe = resolve_links(None, gpu, degrees={"tp": 2, "pp": 2})["pp"]  # the stages sit on two pairs
        assert pipe.bandwidth_gb_per_s == fitted_link(f"pcie{gen}").bandwidth_gb_per_s
    # NVSwitch parts are untouched: every group has the whole NVLink
    sxm = resolve_links(None, "A100", degrees={"tp": 2, "dp": 4})
    assert sxm["tp"] == sxm["dp"] == resolve_interconnect(gpu="A100") and resolve_interconnect(gpu="A100").domain_gpus == 0
    assert bridged_link(resolve_interconnect(gpu="H100"), 8) == resolve_interconnect(gpu="H100")
    with pytest.raises(ValueError, match="needs the link between the blocks"):
        Interconnect("bridge", 300.0, domain_gpus=2)
    # a data-parallel step over 4 bridged cards pays PCIe for its gradients; over 2 the bridge
    transformers = pytest.importorskip("transformers")
    import perfmodel as pm

    cfg = transformers.LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=4, num_attention_heads=16,
                                   num_key_value_heads=8, vocab_size=32000)
    kw = dict(input_shape=(1024,), precision="bf16", optimizer="adam", strategy="dp")
    four = pm.predict_step_time(cfg, ["A100-PCIe-80GB"], batch_size=8, n_gpus=4, **kw)
    two = pm.predict_step_time(cfg, ["A100-PCIe-80GB"], batch_size=4, n_gpus=2, **kw)
    assert "between nvlink (A100-PCIe-80GB) blocks of 2" in four["basis"].iloc[0]
    assert "pcie4" not in two["interconnect"].iloc[0] and four["comm_total_s"].iloc[0] > 5 * two["comm_total_s"].iloc[0]
