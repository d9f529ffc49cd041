"""Published multi-node nccl-tests against the rail model: every predicted bus bandwidth is the collective time perfmodel
prices for that group, the scores are computed from the rows, and the transcribed table is what its source says."""
from __future__ import annotations

import numpy as np
import pytest

from perfmodel.datasets import load_nccl_tests_p5
from perfmodel.papers.external import nccl_multinode as item
from perfmodel.step.collectives import allgather_time, allreduce_time, fitted_params, resolve_interconnect


@pytest.fixture(scope="module")
def data():
    return item.data()


def test_the_transcribed_table():
    t = load_nccl_tests_p5()
    assert len(t) == 115 and set(t["collective"]) == {"all_reduce", "all_gather", "alltoall"}
    assert sorted(t["nodes"].unique()) == [2, 4, 8, 16, 32] and (t["n_gpus"] == 8 * t["nodes"]).all()
    assert (t["message_bytes"] >= 32 * 2**20).all() and t["message_bytes"].max() == 8 * 2**30
    a2a = t["collective"] == "alltoall"
    assert a2a.sum() == 35 and t.loc[a2a, "message_bytes"].max() == 2 * 2**30
    assert t.loc[~a2a, "source"].str.startswith("crazyguitar/aws-gpu-communication-benchmark@fd167f9").all()
    assert t.loc[a2a, "source"].str.startswith("crazyguitar/aws-gpu-communication-benchmark@a77f70d").all()
    # a value of the source's all-to-all table: 2 nodes, 2048 MB at 79.25 GB/s out-of-place bus bandwidth
    r = t[a2a & (t["nodes"] == 2) & (t["message_bytes"] == 2048 * 2**20)]
    assert r["busbw_gb_per_s"].tolist() == [79.25]
    # a value of the source's table: 2 nodes, all-reduce of 8192 MiB at 477.71 GB/s bus bandwidth
    r = t[(t["collective"] == "all_reduce") & (t["nodes"] == 2) & (t["message_bytes"] == 8192 * 2**20)]
    assert r["busbw_gb_per_s"].tolist() == [477.71]


def test_a_row_is_the_rail_model_s_collective_time(data):
    ndr, nv = fitted_params()["links"]["infiniband-ndr"], fitted_params()["links"]["nvlink"]
    intra = resolve_interconnect("nvlink", "H100")
    r = data[(data["collective"] == "all_gather") & (data["nodes"] == 8) & (data["message_bytes"] == 2**30)].iloc[0]
    # 64 ranks on 8 nodes: 8 NICs of 50 GB/s at the NDR efficiency; 7 of the ring's 63 steps at the network's latency
    t = 63 / 64 * 2**30 / (8 * 50e9 * ndr["efficiency"]) + 7 * ndr["latency_s"] + 56 * nv["latency_s"]
    assert r["predicted_busbw_gb_per_s"] == pytest.approx(63 / 64 * 2**30 / t / 1e9, rel=1e-9)
    assert r["link_gb_per_s"] == 400.0 and r["efficiency"] == ndr["efficiency"]
    assert intra.bandwidth_gb_per_s * intra.efficiency > 8 * 50 * ndr["efficiency"]  # the NICs bound it, not NVLink
    # the baselines: the line rate, and one pooled InfiniBand fit with every step at the network's latency
    assert (data["line_rate_busbw_gb_per_s"] == 400.0).all()
    pooled = fitted_params()["links"]["infiniband"]
    a = data[(data["collective"] == "all_reduce") & (data["nodes"] == 4) & (data["message_bytes"] == 2**31)].iloc[0]
    tp = 2 * 31 / 32 * 2**31 / (400e9 * pooled["efficiency"]) + 2 * 31 * pooled["latency_s"]
    assert a["pooled_fit_busbw_gb_per_s"] == pytest.approx(2 * 31 / 32 * 2**31 / tp / 1e9, rel=1e-9)


def test_an_all_to_all_row_is_the_expert_parallel_dispatch_through_each_gpu_s_nic(data):
    ndr, nv = fitted_params()["links"]["infiniband-ndr"], fitted_params()["links"]["nvlink"]
    r = data[(data["collective"] == "alltoall") & (data["nodes"] == 16) & (data["message_bytes"] == 2**30)].iloc[0]
    # 128 ranks, 8 per node: each GPU sends 120/128 of its message off its node through its own 50 GB/s NIC (the
    # rest over NVLink at the same time), a latency per peer: the network's for the 120 off the node, NVLink's for 7
    t = 120 / 128 * 2**30 / (50e9 * ndr["efficiency"]) + 120 * ndr["latency_s"] + 7 * nv["latency_s"]
    assert r["predicted_busbw_gb_per_s"] == pytest.approx(127 / 128 * 2**30 / t / 1e9, rel=1e-9)
    # priced as the ring's collectives are, on the node's 8 NICs, it would be several times too fast
    assert r["ring_link_busbw_gb_per_s"] > 4 * r["measured_busbw_gb_per_s"] > 4 * r["predicted_busbw_gb_per_s"]
    gathers = data[data["collective"] == "all_gather"]
    assert (gathers["ring_link_busbw_gb_per_s"] == gathers["predicted_busbw_gb_per_s"]).all()


def test_an_all_reduce_row_is_nccl_s_ring_or_tree_whichever_its_tuning_model_finds_faster(data):
    ndr, nv = fitted_params()["links"]["infiniband-ndr"], fitted_params()["links"]["nvlink"]
    bw = 8 * 50e9 * ndr["efficiency"]
    reduces = data[data["collective"] == "all_reduce"]
    assert (reduces["predicted_busbw_gb_per_s"] >= reduces["ring_link_busbw_gb_per_s"]).all()
    # 256 ranks on 32 nodes, 32 MiB: the tree, a chain through each node's 8 ranks and 5 levels over the nodes, its
    # bandwidth NCCL's 0.92 of the ring's times its correction for a 32 MiB message, 0.7
    r = reduces[(reduces["nodes"] == 32) & (reduces["message_bytes"] == 32 * 2**20)].iloc[0]
    t = 2 * 2**25 / (0.92 * 0.7 * bw) + 2 * (7 * nv["latency_s"] + 5 * ndr["latency_s"])
    assert r["predicted_busbw_gb_per_s"] == pytest.approx(2 * 255 / 256 * 2**25 / t / 1e9, rel=1e-9)
    # NCCL's ring alone: 2 x 31 of its 510 steps leave a node
    ring = 2 * 255 / 256 * 2**25 / bw + 2 * 31 * ndr["latency_s"] + 2 * 224 * nv["latency_s"]
    assert r["ring_link_busbw_gb_per_s"] == pytest.approx(2 * 255 / 256 * 2**25 / ring / 1e9, rel=1e-9)
    # 16 ranks on 2 nodes, 8 GiB: the ring, whose bus bandwidth is the tree's over 0.92
    r = reduces[(reduces["nodes"] == 2) & (reduces["message_bytes"] == 8 * 2**30)].iloc[0]
    assert r["predicted_busbw_gb_per_s"] == r["ring_link_busbw_gb_per_s"]


def test_predictions_use_the_library_s_collectives(data):
    from perfmodel.step.strategy import resolve_links

    r = data.iloc[0]
    link = resolve_links(item.LINKS, "H100", degrees={"dp": int(r["n_gpus"])}, gpus_per_node=8, nics_per_node=8)["dp"]
    f = allreduce_time if r["collective"] == "all_reduce" else allgather_time
    n = int(r["n_gpus"])
    factor = (2 if r["collective"] == "all_reduce" else 1) * (n - 1) / n
    assert r["predicted_busbw_gb_per_s"] == pytest.approx(factor * r["message_bytes"] / f(r["message_bytes"], n, link) / 1e9, rel=1e-12)


def test_scores_are_computed_from_the_rows(data):
    err = 100 * (data["predicted_busbw_gb_per_s"] - data["measured_busbw_gb_per_s"]).abs() / data["measured_busbw_gb_per_s"]
    np.testing.assert_allclose(data["abs_error_pct"], err, rtol=1e-12)
    s = item.summary(data).set_index(["collective", "band"])
    a2a = data["collective"] == "alltoall"
    rings = ~a2a  # "all": the all-reduces and all-gathers
    assert s.loc[("all", "all"), "n_rows"] == 80
    assert s.loc[("all", "all"), "mape_pct"] == pytest.approx(err[rings].mean(), rel=1e-12)
    big = data["message_bytes"] >= 256 * 2**20
    assert s.loc[("all", "ge_256mib"), "mape_pct"] == pytest.approx(err[big & rings].mean(), rel=1e-12)
    assert s.loc[("all_gather", "all"), "n_rows"] == 35 and s.loc[("all_reduce", "all"), "n_rows"] == 45
    assert s.loc[("alltoall", "all"), "n_rows"] == 35
    assert s.loc[("alltoall", "all"), "mape_pct"] == pytest.approx(err[a2a].mean(), rel=1e-12)
    assert s.loc[("alltoall", "all"), "mape_pct"] < s.loc[("alltoall", "all"), "ring_link_mape_pct"]
    n = item.numbers().set_index("quantity")["reproduced"]
    assert n["all_all_busbw_mape_pct"] == pytest.approx(err[rings].mean(), rel=1e-12)
    assert n["alltoall_all_busbw_mape_pct"] == pytest.approx(err[a2a].mean(), rel=1e-12)
    ring_err = 100 * (data["ring_link_busbw_gb_per_s"] - data["measured_busbw_gb_per_s"]).abs() / data["measured_busbw_gb_per_s"]
    reduces = data["collective"] == "all_reduce"
    assert n["all_reduce_all_ring_only_busbw_mape_pct"] == pytest.approx(ring_err[reduces].mean(), rel=1e-12)
    assert n["all_all_ring_only_busbw_mape_pct"] == pytest.approx(ring_err[rings].mean(), rel=1e-12)
    assert n["ndr_efficiency"] == fitted_params()["links"]["infiniband-ndr"]["efficiency"]
    # the model beats the line rate on every band (a 400 GB/s ring without latency is far from NCCL's bus bandwidth)
    assert (s["mape_pct"] < s["line_rate_mape_pct"]).all()


def test_figure(data):
    import matplotlib

    matplotlib.use("Agg")
    fig = item.figure(data)
    assert len(fig.axes) == 3
