"""NCCL link fit: the shipped parameters are rebuilt from Vidur's data, the held-out errors are computed from the rows,
and bad input raises errors that say what was expected."""
from __future__ import annotations

import json

import numpy as np
import pytest

from perfmodel._errors import UnknownNameError
from perfmodel.step import collectives
from perfmodel.step.collectives import allreduce_time, p2p_time, resolve_interconnect
from perfmodel.papers.external import vidur_nccl as item


@pytest.fixture(scope="module")
def data():
    return item.data()


def test_shipped_parameters_are_rebuilt_from_the_data(tmp_path):
    out = collectives.rebuild(tmp_path / "nccl_links.json")
    assert json.loads((tmp_path / "nccl_links.json").read_text()) == out
    assert out == collectives.fitted_params()


def test_fitted_link_carries_the_fit_and_resolve_interconnect_uses_it():
    p = collectives.fitted_params()["links"]
    nv = resolve_interconnect("nvlink", "H100")
    assert (nv.bandwidth_gb_per_s, nv.efficiency, nv.latency_s) == (450.0, p["nvlink"]["efficiency"], p["nvlink"]["latency_s"])
    assert resolve_interconnect(None, "A100-SXM4-80GB") == collectives.fitted_link("nvlink", "A100-SXM4-80GB")
    # each InfiniBand fabric with its own system's fit: NDR on the DGX H100 cluster's rows, HDR on the DGX A100 one's
    ib = resolve_interconnect("infiniband-ndr")
    assert (ib.bandwidth_gb_per_s, ib.efficiency, ib.latency_s) == (50.0, p["infiniband-ndr"]["efficiency"], p["infiniband-ndr"]["latency_s"])
    hdr = resolve_interconnect("infiniband_hdr")
    assert (hdr.bandwidth_gb_per_s, hdr.efficiency, hdr.latency_s) == (25.0, p["infiniband-hdr"]["efficiency"], p["infiniband-hdr"]["latency_s"])
    assert p["infiniband-ndr"]["systems"] == ["h100_dgx"] and p["infiniband-hdr"]["systems"] == ["a100_dgx"]
    f = collectives.collective_frame()
    own = f[(f["link"] == "infiniband") & (f["system"] == "h100_dgx")]
    assert p["infiniband-ndr"]["n_rows"] == len(own) and p["infiniband"]["n_rows"] == int((f["link"] == "infiniband").sum())
    # no measurement: the assumed NCCL_EFFICIENCY stays
    assert resolve_interconnect("pcie4").efficiency == 0.75 and resolve_interconnect("ethernet-100g").efficiency == 0.75


def test_bad_input_says_what_was_expected():
    with pytest.raises(UnknownNameError, match=r"unknown link kind 'nvswitch'\. Expected one of: nvlink, infiniband-hdr"):
        collectives.fitted_link("nvswitch")
    with pytest.raises(ValueError, match=r"fitted_link\('nvlink'\) takes its bandwidth from the GPU's catalog row: pass gpu="):
        collectives.fitted_link("nvlink")
    with pytest.raises(UnknownNameError, match=r"GPU L4 has no NVLink in the catalog"):
        collectives.fitted_link("nvlink", "L4")
    link = resolve_interconnect("infiniband-hdr")
    with pytest.raises(ValueError, match=r"nbytes \(message size in bytes\) must be a finite number >= 0; got -1"):
        allreduce_time(-1, 4, link)
    with pytest.raises(ValueError, match=r"nbytes \(message size in bytes\) must be a finite number >= 0; got nan"):
        p2p_time(float("nan"), link)


def test_frame_links_and_bandwidths(mirror):
    f = collectives.collective_frame()
    assert set(f["link"]) == {"nvlink", "infiniband", "pcie"}
    bw = f.groupby(["system", "link"], observed=True)["link_gb_per_s"].unique().map(list).to_dict()
    assert bw == {("a100_dgx", "infiniband"): [25.0], ("a100_dgx", "nvlink"): [300.0], ("h100_dgx", "infiniband"): [50.0],
                  ("h100_dgx", "nvlink"): [450.0], ("a100_pairwise_nvlink", "nvlink"): [300.0], ("a100_pairwise_nvlink", "pcie"): [31.5],
                  ("h100_pairwise_nvlink", "nvlink"): [300.0], ("h100_pairwise_nvlink", "pcie"): [63.0]}
    # the copy of the A100 send/recv file under h100_pairwise_nvlink is not scored as an H100 measurement
    assert not ((f["system"] == "h100_pairwise_nvlink") & (f["collective"] == "send_recv")).any()


def test_held_out_errors_are_computed_from_the_rows(data):
    assert set(data["direction"]) == {"a100_to_h100", "h100_to_a100"}
    assert (data.loc[data["direction"] == "a100_to_h100", "gpu"].astype(str).str.startswith("H100")).all()
    err = 100 * (data["predicted_s"] - data["measured_s"]).abs() / data["measured_s"]
    np.testing.assert_allclose(data["abs_error_pct"], err, rtol=1e-12)
    s = item.summary(data)
    r = s[(s["direction"] == "a100_to_h100") & (s["link"] == "nvlink") & (s["collective"] == "all_reduce") & (s["band"] == "ge_1mib")].iloc[0]
    g = data[(data["direction"] == "a100_to_h100") & (data["link"] == "nvlink") & (data["collective"] == "all_reduce")
             & (data["message_bytes"] >= 2**20)]
    assert r["n_rows"] == len(g) and r["median_ape_pct"] == pytest.approx(g["abs_error_pct"].median(), rel=1e-12)
    assert r["time_weighted_ape_pct"] == pytest.approx(100 * (g["predicted_s"] - g["measured_s"]).abs().sum() / g["measured_s"].sum(), rel=1e-12)
    n = item.numbers().set_index("quantity")["reproduced"]
    assert n["a100_to_h100_nvlink_all_reduce_ge_1mib_median_ape_pct"] == pytest.approx(r["median_ape_pct"], rel=1e-12)
    # the held-out fit is not the shipped one (that one saw the H100 rows too)
    assert n["fit_a100_nvlink_efficiency"] != collectives.fitted_params()["links"]["nvlink"]["efficiency"]


def test_figure_draws_measured_and_predicted_per_link(data):
    import matplotlib.pyplot as plt

    fig = item.figure(data)
    assert len(fig.axes) == 3 and all(ax.get_xscale() == "log" for ax in fig.axes)
    assert sum(len(ax.lines) for ax in fig.axes) == 2 * data[data["direction"] == "a100_to_h100"].groupby(
        ["system", "collective", "n_gpus", "devices_per_node"], observed=True).ngroups
    plt.close(fig)
