"""The GPU catalog (one row per device, sourced), GPU names (NeuSight's and everyday spellings), GPU specs and precisions."""
from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import perfmodel.datasets as ds
from perfmodel._errors import UnknownNameError
from perfmodel.datasets import GPUSpec, InvalidGPUSpecError, UnsupportedPrecisionError, canonical_gpu, gpu_spec, peak_tflops

NEUSIGHT = "sitar-lab/NeuSight/scripts/asplos"
RATES = ["fp32_peak_tflops", "tf32_peak_tflops", "fp16_peak_tflops", "bf16_peak_tflops"]


@pytest.fixture(scope="module")
def cat() -> pd.DataFrame:
    return ds.load_gpu_catalog().set_index("gpu")


# --- the catalog -------------------------------------------------------------------------------------------------------

def test_one_row_per_device_with_every_column(cat):
    assert list(cat.index) == list(ds.CATALOG_GPU_IDS) and cat.index.is_unique and len(cat) == 40
    assert cat["device_name"].is_unique
    for col in ["fp32_peak_tflops", "memory_gib", "memory_bandwidth_gb_per_s", "sm_count", "cuda_cores", "clock_ghz", "l2_mib",
                "pcie_generation", "tdp_w"]:
        assert (cat[col] > 0).all(), col
    assert (cat["nvlink_gb_per_s"] >= 0).all() and set(cat["pcie_generation"]) == {3, 4, 5, 6}  # 6: Blackwell Ultra
    for src in ["fp32_tflops_source", "tensor_tflops_source", "bandwidth_source", "architecture_source", "interconnect_source"]:
        assert cat[src].str.len().gt(20).all(), src  # every group of values names where it comes from
    # a vendor document is cited for every value group (the paper-era K80/P100 FP32 rates cite CM-DARE's data, as before)
    vendor = cat["vendor"].map({"NVIDIA": "NVIDIA", "AMD": "AMD"})
    for src in ["tensor_tflops_source", "bandwidth_source", "architecture_source", "interconnect_source"]:
        assert all(v in s for v, s in zip(vendor, cat[src])), src


def test_paper_era_ids_keep_their_device_and_values(cat):
    """K80/P100 as CM-DARE's data; V100 = GCE's SXM2 16 GB; A100 = SXM4 40 GB; H100 = SXM5 80 GB (values of the first catalog)."""
    want = {  # gpu: fp32_peak_tflops, memory_gib, memory_bandwidth_gb_per_s, cuda_cores, clock_ghz, form factor
        "K80": (4.113, 12, 240, 2496, 0.824, "one of the two GK210 dies"),
        "P100": (9.526, 16, 732, 3584, 1.329, "PCIe 16 GB"),
        "V100": (15.667, 16, 900, 5120, 1.53, "SXM2 16 GB"),
        "T4": (8.1, 16, 320, 2560, 1.59, "PCIe 16 GB"),
        "L4": (30.3, 24, 300, 7424, 2.04, "PCIe 24 GB"),
        "A100": (19.5, 40, 1555, 6912, 1.41, "SXM4 40 GB"),
        "H100": (66.9, 80, 3350, 16896, 1.98, "SXM5 80 GB"),
    }
    assert set(want) == set(ds.GPU_IDS)
    for g, (tf, mem, bw, cores, clock, form) in want.items():
        r = cat.loc[g]
        assert (r["fp32_peak_tflops"], r["memory_gib"], r["memory_bandwidth_gb_per_s"], r["cuda_cores"], r["clock_ghz"]) == \
            (tf, mem, bw, cores, clock), g
        assert r["form_factor"].startswith(form), g
    assert cat.loc["V100", "device_name"] == "Tesla V100-SXM2-16GB" and cat.loc["A100", "device_name"] == "NVIDIA A100-SXM4-40GB"
    assert cat.loc["H100", "device_name"] == "NVIDIA H100 80GB HBM3"


def test_precision_units_exist_where_the_hardware_has_them(cat):
    no_bf16 = ["K80", "P4", "P100", "P100-SXM2", "V100", "V100-SXM2-32GB", "V100-PCIe-16GB", "V100-PCIe-32GB", "T4"]
    assert cat.loc[no_bf16, "bf16_peak_tflops"].isna().all() and cat.loc[no_bf16, "tf32_peak_tflops"].isna().all()
    assert cat.loc[["K80", "P4"], "fp16_peak_tflops"].isna().all()
    assert cat.loc[["MI100", "MI210", "MI250"], "tf32_peak_tflops"].isna().all()  # CDNA/CDNA2: no TF32
    assert cat.loc[cat["vendor"] == "NVIDIA", "fp32_matrix_tflops"].isna().all()
    has = cat[RATES[1:]].notna()
    # every Ampere/Ada/Hopper/Blackwell part and CDNA 3 has all three (CDNA 4's MI355X has no TF32)
    assert has.loc[~cat.index.isin(no_bf16 + ["MI100", "MI210", "MI250", "MI355X"])].all().all()
    # tensor rates are at or above FP32 where present (GeForce, L40 and A10G: TF32 at the FP32 rate); TF32 is half of FP16
    # on Ampere/Ada/Hopper/Blackwell (dense, no sparsity)
    for col in RATES[1:]:
        sub = cat[cat[col].notna()]
        assert (sub[col] >= sub["fp32_peak_tflops"]).all(), col
    nv = cat[(cat["vendor"] == "NVIDIA") & cat["fp16_peak_tflops"].notna()]
    assert (nv["fp16_peak_tflops"] > nv["fp32_peak_tflops"]).all()
    tc = cat[cat["tf32_peak_tflops"].notna()]
    np.testing.assert_allclose(tc["fp16_peak_tflops"] / tc["tf32_peak_tflops"], 2, rtol=0.02)
    # datasheet known answers (dense)
    assert cat.loc["A100-PCIe-80GB", RATES].tolist() == [19.5, 156, 312, 312]
    assert cat.loc["H100", RATES].tolist() == [66.9, 494.7, 989.4, 989.4]
    assert cat.loc["L4", RATES].tolist() == [30.3, 60, 121, 121]
    assert cat.loc["V100-PCIe-32GB", ["fp32_peak_tflops", "fp16_peak_tflops"]].tolist() == [14, 112]
    assert cat.loc["T4", "fp16_peak_tflops"] == 65 and cat.loc["P100", "fp16_peak_tflops"] == 18.7


SOURCES = ["fp32_tflops_source", "tensor_tflops_source", "bandwidth_source", "architecture_source", "interconnect_source"]
VENDOR_SITE = {"NVIDIA": r"https://([a-z]+\.)*nvidia\.(com|cn)/", "AMD": r"https://www\.amd\.com/"}
#: Said in a source (and in the row's note) where NVIDIA publishes no datasheet for the part (H20, A10G): the values are
#: secondary, and the note says they are unverified.
NO_DATASHEET = "no public NVIDIA datasheet"
#: Parts with no tensor/matrix units for TF32 or BF16: Kepler, Pascal, Volta, Turing (NVIDIA before Ampere).
PRE_AMPERE = ("Kepler", "Pascal", "Volta", "Turing")


def test_every_value_group_cites_a_vendor_document_with_its_url(cat):
    """Each group of values names the vendor's datasheet or whitepaper and where to get it (the vendor's own site)."""
    for g, row in cat.iterrows():
        site = VENDOR_SITE[row["vendor"]]
        for col in SOURCES:
            src = row[col]
            if src.startswith(NO_DATASHEET):
                assert NO_DATASHEET in row["note"] and "unverified" in row["note"], (g, col)
                continue
            assert re.search(r"(datasheet|whitepaper|brochure)", src), (g, col)
            assert re.search(site, src), (g, col, src)
        assert re.search(site, row["architecture_source"]), g  # the architecture always cites the vendor
    assert set(cat.index[cat["note"].fillna("").str.contains(NO_DATASHEET)]) == {"A10G", "H20"}
    # the paper-era FP32 rates keep CM-DARE's values and quote the datasheet's figures beside them
    assert "CM-DARE data" in cat.loc["K80", "fp32_tflops_source"] and "8.73 TFLOPS per two-die board" in cat.loc["K80", "fp32_tflops_source"]
    assert "CM-DARE data" in cat.loc["P100", "fp32_tflops_source"] and "single precision 9.3 TFLOPS" in cat.loc["P100", "fp32_tflops_source"]


def test_values_no_vendor_document_states_are_marked_unverified(cat):
    """Where NVIDIA publishes no SM count, clock or L2 for a part, the note says 'unverified' and names the values."""
    unverified = set(cat.index[cat["note"].fillna("").str.contains("unverified")])
    assert unverified == {"P4", "V100-PCIe-16GB", "V100-PCIe-32GB", "T4", "A10", "A10G", "L4", "L40", "L40S", "RTX-4090",
                          "RTX-6000-Ada", "H100-NVL", "H800", "H20", "H200", "H200-NVL", "RTX-5090", "B200", "GB200", "B300", "GB300", "MI355X"}
    for g in ["A10", "A10G", "L4", "L40", "L40S", "RTX-6000-Ada", "H100-NVL", "H800", "H20", "H200", "B200", "GB200", "B300", "GB300"]:
        assert "l2_mib" in cat.loc[g, "note"], g


def test_dense_rates_are_ordered_and_exist_exactly_where_the_hardware_has_them(cat):
    """fp16 >= tf32 >= fp32 (dense, no sparsity); TF32/BF16 units from NVIDIA Ampere on; AMD CDNA has BF16, TF32 only on CDNA 3."""
    for g, r in cat.iterrows():
        rates = [r[c] for c in ("fp16_peak_tflops", "tf32_peak_tflops", "fp32_peak_tflops") if np.isfinite(r[c])]
        assert rates == sorted(rates, reverse=True), g
    old = cat["architecture"].str.startswith(PRE_AMPERE)
    amd = cat["vendor"] == "AMD"
    assert (cat["bf16_peak_tflops"].isna() == old).all()
    no_tf32_cdna = cat["architecture"].str.match(r"CDNA(\s|2|4)")  # CDNA, CDNA 2 and CDNA 4; CDNA 3 has TF32
    assert set(cat.index[amd & ~no_tf32_cdna]) == {"MI300X", "MI325X"}
    assert (cat["tf32_peak_tflops"].isna() == (old | no_tf32_cdna)).all()
    assert (cat["fp32_matrix_tflops"].notna() == amd).all()
    # Ampere, Ada, Hopper and Blackwell tensor cores: BF16 at the FP16 rate, TF32 at half of it
    new = cat[~old & ~amd]
    assert (new["bf16_peak_tflops"] == new["fp16_peak_tflops"]).all()
    np.testing.assert_allclose(new["fp16_peak_tflops"] / new["tf32_peak_tflops"], 2, rtol=0.02)  # L4 121/60, L40S 362.05/183: vendor rounding


@pytest.mark.parametrize("gpu, column, value", [
    # NVIDIA H100 Tensor Core GPU datasheet (2024), p. 2, H100 NVL column (tensor figures with sparsity, halved)
    ("H100-NVL", "fp32_peak_tflops", 60), ("H100-NVL", "tf32_peak_tflops", 417.5), ("H100-NVL", "bf16_peak_tflops", 835.5),
    ("H100-NVL", "memory_gib", 94), ("H100-NVL", "memory_bandwidth_gb_per_s", 3900), ("H100-NVL", "nvlink_gb_per_s", 600),
    ("H100-NVL", "pcie_generation", 5),
    # NVIDIA H100 Tensor Core GPU Architecture whitepaper v1.04, Table 3 (dense): H100 SXM5 and H100 PCIe
    ("H100", "tf32_peak_tflops", 494.7), ("H100", "fp16_peak_tflops", 989.4), ("H100", "sm_count", 132), ("H100", "l2_mib", 50),
    ("H100-PCIe", "sm_count", 114), ("H100-PCIe", "tf32_peak_tflops", 378), ("H100-PCIe", "fp16_peak_tflops", 756),
    # NVIDIA H200 datasheet, H200 SXM column
    ("H200", "memory_bandwidth_gb_per_s", 4800), ("H200", "memory_gib", 141), ("H200", "tdp_w", 700),
    # NVIDIA A100 Tensor Core GPU datasheet: 80GB SXM 2039 GB/s, 80GB PCIe 1935 GB/s, 40GB PCIe 250 W; whitepaper: 40 MB L2
    ("A100-SXM4-80GB", "memory_bandwidth_gb_per_s", 2039), ("A100-PCIe-80GB", "memory_bandwidth_gb_per_s", 1935),
    ("A100-PCIe-40GB", "tdp_w", 250), ("A100", "tf32_peak_tflops", 156), ("A100", "l2_mib", 40),
    # NVIDIA L40S datasheet; NVIDIA L4 datasheet; NVIDIA A10 datasheet
    ("L40S", "fp32_peak_tflops", 91.6), ("L40S", "fp16_peak_tflops", 362.05), ("L40S", "memory_bandwidth_gb_per_s", 864),
    ("L4", "memory_bandwidth_gb_per_s", 300), ("L4", "tdp_w", 72), ("A10", "tf32_peak_tflops", 62.5), ("A10", "tdp_w", 150),
    # NVIDIA Tesla V100 datasheet (SXM2 / PCIe columns); V100 whitepaper Table 1: 6144 KB L2
    ("V100-SXM2-32GB", "fp32_peak_tflops", 15.7), ("V100-PCIe-16GB", "fp16_peak_tflops", 112), ("V100", "nvlink_gb_per_s", 300),
    ("V100", "l2_mib", 6),
    # NVIDIA Tesla P100 datasheets (NVLink and PCIe); NVIDIA Tesla P4 and T4 datasheets; NVIDIA Tesla K80 datasheet (per die)
    ("P100-SXM2", "fp16_peak_tflops", 21.2), ("P100-SXM2", "nvlink_gb_per_s", 160), ("P100", "tdp_w", 250),
    ("P4", "fp32_peak_tflops", 5.5), ("P4", "memory_bandwidth_gb_per_s", 192), ("T4", "fp16_peak_tflops", 65), ("T4", "tdp_w", 70),
    ("K80", "memory_bandwidth_gb_per_s", 240), ("K80", "tdp_w", 300),
    # AMD Instinct MI100 / MI210 datasheets; MI200 series datasheet (MI250 module, halved per die)
    ("MI100", "bf16_peak_tflops", 92.3), ("MI100", "memory_bandwidth_gb_per_s", 1228.8), ("MI210", "fp32_matrix_tflops", 45.3),
    ("MI210", "fp16_peak_tflops", 181), ("MI250", "fp32_peak_tflops", 22.65), ("MI250", "memory_bandwidth_gb_per_s", 1638.4),
    # NVIDIA HGX B200 (per GPU, dense: the sparse figures halved); GB200 NVL72 per GPU; GB300 NVL72 per GPU
    ("B200", "bf16_peak_tflops", 2250), ("B200", "fp8_peak_tflops", 4500), ("B200", "fp4_peak_tflops", 9000),
    ("B200", "memory_gib", 180), ("B200", "nvlink_gb_per_s", 1800), ("B200", "tdp_w", 1000),
    ("GB200", "bf16_peak_tflops", 2500), ("GB200", "fp8_peak_tflops", 5000), ("GB200", "fp4_peak_tflops", 10000),
    ("GB200", "nvlink_gb_per_s", 1800), ("GB300", "fp4_peak_tflops", 15000), ("GB300", "bf16_peak_tflops", 2500),
    # NVIDIA H800 (H100 SXM compute, 400 GB/s NVLink); H20 (secondary, unverified); L40 and RTX 6000 Ada datasheets
    ("H800", "bf16_peak_tflops", 989.5), ("H800", "nvlink_gb_per_s", 400), ("H20", "bf16_peak_tflops", 148),
    ("H20", "fp8_peak_tflops", 296), ("H20", "memory_gib", 96), ("H20", "memory_bandwidth_gb_per_s", 4000),
    ("L40", "fp32_peak_tflops", 90.5), ("L40", "fp16_peak_tflops", 181.05), ("L40", "memory_bandwidth_gb_per_s", 864),
    ("RTX-6000-Ada", "fp32_peak_tflops", 91.1), ("RTX-6000-Ada", "memory_bandwidth_gb_per_s", 960),
    # GeForce (Ada whitepaper, RTX Blackwell whitepaper): FP16/BF16 with FP32 accumulate
    ("RTX-4090", "fp32_peak_tflops", 82.6), ("RTX-4090", "bf16_peak_tflops", 165.2), ("RTX-4090", "memory_bandwidth_gb_per_s", 1008),
    ("RTX-5090", "memory_gib", 32), ("RTX-5090", "memory_bandwidth_gb_per_s", 1792), ("RTX-5090", "sm_count", 170),
    # AWS A10G (secondary, unverified): 24 GB at 600 GB/s, 80 SMs, 70 TFLOPS FP16 with FP32 accumulate
    ("A10G", "memory_gib", 24), ("A10G", "memory_bandwidth_gb_per_s", 600), ("A10G", "sm_count", 80), ("A10G", "bf16_peak_tflops", 70),
    # AMD Instinct MI300X / MI325X / MI355X datasheets (dense)
    ("MI300X", "bf16_peak_tflops", 1307.4), ("MI300X", "fp8_peak_tflops", 2614.9), ("MI300X", "memory_gib", 192),
    ("MI300X", "memory_bandwidth_gb_per_s", 5300), ("MI300X", "sm_count", 304), ("MI300X", "l2_mib", 32),
    ("MI325X", "memory_gib", 256), ("MI325X", "memory_bandwidth_gb_per_s", 6000), ("MI325X", "bf16_peak_tflops", 1307.4),
    ("MI355X", "memory_gib", 288), ("MI355X", "memory_bandwidth_gb_per_s", 8000), ("MI355X", "fp8_peak_tflops", 5033.2),
])
def test_datasheet_known_answers(cat, gpu, column, value):
    assert cat.loc[gpu, column] == value


def test_fp8_is_hopper_and_ada_only():
    """Dense FP8 tensor-core rates: half the datasheets' with-sparsity figures; none on Ampere and older."""
    assert gpu_spec("H100").fp8_peak_tflops == 1979 and gpu_spec("H200").fp8_peak_tflops == 1979
    assert gpu_spec("L4").fp8_peak_tflops == 242.5 and gpu_spec("L40S").fp8_peak_tflops == 733
    assert "fp8" not in gpu_spec("A100").precisions and "fp8" not in gpu_spec("MI250").precisions


#: The rows added for the GPUs sold for training today (Blackwell, Blackwell Ultra, Hopper export parts, Ada, GeForce, CDNA 3/4).
NEW_GPUS = ("A10G", "L40", "RTX-4090", "RTX-6000-Ada", "H800", "H20", "RTX-5090", "B200", "GB200", "B300", "GB300", "MI300X",
            "MI325X", "MI355X")
TENSOR = ["fp4_peak_tflops", "fp8_peak_tflops", "bf16_peak_tflops", "tf32_peak_tflops"]  # fastest first


def test_the_new_gpus_are_distinct_parts(cat):
    assert set(NEW_GPUS) <= set(ds.CATALOG_GPU_IDS) and len(set(NEW_GPUS)) == len(NEW_GPUS)
    assert cat.loc[list(NEW_GPUS), "device_name"].is_unique
    # parts of one family that are easily taken for each other differ in what the catalog holds
    for a, b, col in [("L40", "L40S", "bf16_peak_tflops"), ("A10", "A10G", "sm_count"), ("H100", "H800", "nvlink_gb_per_s"),
                      ("H100", "H20", "bf16_peak_tflops"), ("B200", "GB200", "bf16_peak_tflops"), ("B200", "B300", "fp4_peak_tflops"),
                      ("GB200", "GB300", "fp4_peak_tflops"), ("MI300X", "MI325X", "memory_gib")]:
        assert cat.loc[a, col] != cat.loc[b, col], (a, b, col)


def test_rates_are_dense_and_ordered_fp4_fp8_bf16_tf32(cat):
    """Every tensor rate is dense (sparse figures halved, and the source says so); FP4 >= FP8 >= BF16 >= TF32 where present."""
    for g, r in cat.iterrows():
        present = [r[c] for c in TENSOR if np.isfinite(r[c])]
        assert present == sorted(present, reverse=True), g
        if g in NEW_GPUS:
            assert re.search(r"dense|halved", r["tensor_tflops_source"]), g
            if np.isfinite(r["fp8_peak_tflops"]):
                assert re.search(r"dense|halved", r["fp8_tflops_source"]), g
    # dense figures, not the datasheets' with-sparsity ones (H100 SXM5: 989.4 dense, 1979 sparse)
    assert cat.loc["H100", "bf16_peak_tflops"] == 989.4 and cat.loc["B200", "bf16_peak_tflops"] == 2250
    assert cat.loc["GB200", ["bf16_peak_tflops", "fp8_peak_tflops", "fp4_peak_tflops"]].tolist() == [2500, 5000, 10000]
    np.testing.assert_allclose(cat.loc["MI355X", ["bf16_peak_tflops", "fp8_peak_tflops", "fp4_peak_tflops"]].tolist(),
                               [2516.6, 5033.2, 10066.3])


def test_fp4_is_blackwell_and_cdna4_only_and_spec_data(cat):
    """FP4 (NVFP4/MXFP4) rates: Blackwell and CDNA 4 only; a GPUSpec field, not a precision perfmodel predicts for."""
    fp4 = set(cat.index[cat["fp4_peak_tflops"].notna()])
    assert fp4 == {"RTX-5090", "B200", "GB200", "B300", "GB300", "MI355X"}
    assert gpu_spec("B200").fp4_peak_tflops == 9000 and math.isnan(gpu_spec("H100").fp4_peak_tflops)
    assert math.isnan(gpu_spec("H200").fp4_peak_tflops) and math.isnan(gpu_spec("L40S").fp4_peak_tflops)
    assert math.isnan(GPUSpec("x", 10, 500, 16, 40).fp4_peak_tflops) and GPUSpec("x", 10, 500, 16, 40, fp4_peak_tflops=50).fp4_peak_tflops == 50
    assert "fp4" not in ds.PRECISIONS and "fp4" not in gpu_spec("B200").precisions
    with pytest.raises(UnknownNameError, match=r"^Unknown precision 'fp4'"):
        peak_tflops("B200", "fp4")
    with pytest.raises(InvalidGPUSpecError, match=r"fp4_peak_tflops must be a positive finite number or NaN"):
        GPUSpec("x", 10, 500, 16, 40, fp4_peak_tflops=-1)


def test_amd_infinity_fabric_is_not_nvlink_and_l2_is_the_total(cat):
    """As the MI100-MI250 rows: nvlink_gb_per_s 0 for AMD (Infinity Fabric in the source); CDNA 3/4 L2 = 4 MB per XCD x 8."""
    amd = cat[cat["vendor"] == "AMD"]
    assert (amd["nvlink_gb_per_s"] == 0).all() and amd["interconnect_source"].str.contains("Infinity Fabric").all()
    assert (cat.loc[["MI300X", "MI325X", "MI355X"], "l2_mib"] == 32).all()
    assert cat.loc[["MI300X", "MI325X", "MI355X"], "note"].str.contains("Infinity Cache").all()
    assert cat.loc[["B200", "GB200", "B300", "GB300"], "nvlink_gb_per_s"].eq(1800).all()
    # their peer-to-peer links of an 8-GPU platform (7 links; 896 GB/s aggregate, MI355X 7 x 153.6): what carries
    # their collectives; NVIDIA rows 0, the bridged CDNA 1/2 cards not modelled (empty)
    assert cat.loc[["MI300X", "MI325X", "MI355X"], "infinity_fabric_gb_per_s"].tolist() == [896, 896, 1075.2]
    assert (cat.loc[cat["vendor"] == "NVIDIA", "infinity_fabric_gb_per_s"] == 0).all()
    assert cat.loc[["MI100", "MI210", "MI250"], "infinity_fabric_gb_per_s"].isna().all()


def test_geforce_rates_are_the_fp32_accumulate_ones(cat):
    """PyTorch trains with FP32 accumulation: GeForce cards run it at half their FP16-accumulate tensor rate."""
    for g in ("RTX-4090", "RTX-5090"):
        assert "FP32 accumulate" in cat.loc[g, "note"]
        assert cat.loc[g, "bf16_peak_tflops"] == pytest.approx(2 * cat.loc[g, "fp32_peak_tflops"], rel=0.01)


def test_the_h100_nvl_is_its_own_part():
    s = gpu_spec("NVIDIA H100 NVL")
    assert s.gpu == "H100-NVL" and s.precisions == ("fp32", "tf32", "fp16", "bf16", "fp8")
    assert (s.memory_gib, s.memory_bandwidth_gb_per_s, s.sm_count, s.pcie_generation) == (94.0, 3900.0, 132, 5)
    assert canonical_gpu("H100") == "H100" and canonical_gpu("H100 PCIe") == "H100-PCIe"  # the NVL takes no one's name


def test_pcie_and_sxm_parts_are_apart_where_they_differ(cat):
    pairs = [("A100-PCIe-80GB", "A100-SXM4-80GB"), ("H100-PCIe", "H100"), ("V100-PCIe-16GB", "V100"), ("P100", "P100-SXM2")]
    for pcie, sxm in pairs:
        a, b = cat.loc[pcie], cat.loc[sxm]
        assert a["form_factor"].startswith("PCIe") and b["form_factor"].startswith("SXM")
        assert a["fp32_peak_tflops"] < b["fp32_peak_tflops"] or a["memory_bandwidth_gb_per_s"] < b["memory_bandwidth_gb_per_s"]
        assert a["tdp_w"] < b["tdp_w"]
    assert cat.loc["A100-PCIe-80GB", "memory_bandwidth_gb_per_s"] == 1935 and cat.loc["A100-SXM4-80GB", "memory_bandwidth_gb_per_s"] == 2039
    assert cat.loc["H100-PCIe", ["sm_count", "memory_bandwidth_gb_per_s"]].tolist() == [114, 2000]
    assert cat.loc[["T4", "L4", "L40S", "A10", "P4", "K80"], "nvlink_gb_per_s"].eq(0).all()
    assert cat.loc[["V100", "A100", "H100", "H200"], "nvlink_gb_per_s"].tolist() == [300, 600, 900, 900]


def test_neusight_device_configs_agree_or_the_note_says_why(cat, mirror):
    """NeuSight's device configs (cross-check only): bandwidth within 3 %, FP32 within 4 %, SMs equal or explained."""
    folder = mirror / NEUSIGHT / "data" / "device_configs"
    files = sorted(p for p in folder.glob("*.json") if not p.stem.endswith("_TP"))  # _TP: two H100s summed, not a device
    assert len(files) == 12
    for p in files:
        conf = json.loads(p.read_text())
        g = canonical_gpu(p.stem)
        assert canonical_gpu(conf["Device"]) == g
        row = cat.loc[g]
        assert conf["Mem_Bw"] == pytest.approx(row["memory_bandwidth_gb_per_s"], rel=0.03), g
        fp32 = conf.get("SingleFLOPs", conf.get("SingleFLOPsVEC")) / 1000
        assert fp32 == pytest.approx(row["fp32_peak_tflops"], rel=0.04), g
        if conf["Num_Sm"] != row["sm_count"]:
            assert g in ("P4", "L4") and "SMs" in row["note"], g


# --- names -------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, gpu", [
    # NeuSight's label folders and device configs
    ("NVIDIA_H100_80GB_HBM3", "H100"), ("Tesla_V100-PCIE-32GB", "V100-PCIe-32GB"), ("NVIDIA_A100-SXM4-40GB", "A100"),
    ("NVIDIA_A100-PCIE-40GB", "A100-PCIe-40GB"), ("NVIDIA_A100_80GB_PCIe", "A100-PCIe-80GB"), ("NVIDIA_L4", "L4"),
    ("Tesla_P4", "P4"), ("Tesla_T4", "T4"), ("Tesla_P100-PCIE-16GB", "P100"), ("AMD_Instinct_MI100", "MI100"),
    ("AMD_Instinct_MI210", "MI210"), ("AMD_Instinct_MI250", "MI250"),
    # NeuSight's microbenchmark file stems
    ("Tesla P4", "P4"), ("Tesla P100-PCIE-16GB", "P100"), ("Tesla T4", "T4"), ("Tesla V100-PCIE-32GB", "V100-PCIe-32GB"),
    ("NVIDIA A100-PCIE-40GB", "A100-PCIe-40GB"), ("NVIDIA A100 80GB PCIe", "A100-PCIe-80GB"),
    # everyday spellings
    ("A100 80GB PCIe", "A100-PCIe-80GB"), ("H100 80GB SXM5", "H100"), ("h100-sxm", "H100"), ("Tesla V100-SXM2-16GB", "V100"),
    ("nvidia-l4", "L4"), ("H100 PCIe", "H100-PCIe"), ("a100 sxm4 80 GB", "A100-SXM4-80GB"), ("V100 32GB", "V100-SXM2-32GB"),
    ("v100-pcie", "V100-PCIe-16GB"), ("A100 PCIe", "A100-PCIe-40GB"), ("A100 80GB", "A100-SXM4-80GB"), ("NVIDIA H200", "H200"),
    ("l40s", "L40S"), ("NVIDIA A10", "A10"), ("MI250", "MI250"), ("NVIDIA H100 NVL", "H100-NVL"), ("H100 NVL", "H100-NVL"),
    ("h100-nvl-94gb", "H100-NVL"),
    # the ids and the paper-era spellings
    ("A100", "A100"), ("h100", "H100"), ("v100", "V100"), ("p100", "P100"), ("Tesla K80", "K80"), ("k", "K80"),
    ("a100_pcie_80gb", "A100-PCIe-80GB"),
])
def test_canonical_gpu_accepts_device_names_and_everyday_spellings(name, gpu):
    assert canonical_gpu(name) == gpu


def test_every_catalog_id_and_device_name_round_trips(cat):
    for g, row in cat.iterrows():
        assert canonical_gpu(g) == g and canonical_gpu(row["device_name"]) == g
        assert canonical_gpu(row["device_name"].replace(" ", "_")) == g  # NeuSight's folder spelling


def test_every_neusight_device_name_in_the_mirror_resolves(mirror):
    root = mirror / NEUSIGHT
    labels = [p.name for p in (root / "label").iterdir() if p.is_dir()]
    stems = {p.stem for d in ("train", "test") for p in (root / "data" / "dataset" / d).glob("collect/*/p2.1.0/*.csv")}
    assert len(labels) == 12 and len(stems) >= 6
    resolved = {n: canonical_gpu(n) for n in [*labels, *stems]}
    assert {resolved[n] for n in stems} >= {"P4", "P100", "T4", "V100-PCIe-32GB", "A100-PCIe-40GB"}  # NeuSight's training GPUs
    assert {resolved[n] for n in labels} >= {"H100", "L4", "A100-PCIe-80GB", "V100-PCIe-32GB"}


@pytest.mark.parametrize("name, close", [
    # a part the catalog does not have, a memory size no part has, two form factors, extra words: refused, never mapped
    # to a near part; the chip's catalogued parts are suggested
    ("H100 SXM 94GB", "The catalog's H100 parts are 'H100' or 'H100-PCIe' or 'H100-NVL'; did you mean one of them?"),
    ("V100 48GB", "The catalog's V100 parts are 'V100' or 'V100-SXM2-32GB' or 'V100-PCIe-16GB' or 'V100-PCIe-32GB'; did you mean"),
    ("A100 SXM4 PCIe", "The catalog's A100 parts are 'A100' or 'A100-SXM4-80GB' or 'A100-PCIe-40GB' or 'A100-PCIe-80GB'"),
    ("NVIDIA_H100_80GB_HBM3_TP", "The catalog's H100 parts are"),  # NeuSight's two-GPU tensor-parallel config, not a device
    ("H10", "Did you mean 'H100'"),  # no chip named: the closest ids
    ("Gaudi 3", None),
])
def test_unknown_gpu_names_are_refused_with_suggestions(name, close):
    with pytest.raises(UnknownNameError, match=rf"^Unknown GPU '{name}'\. Expected one of: K80, P4, .*, MI355X\. Device names .* a GPU "
                                               r"that is not in the catalog can be passed as a perfmodel\.datasets\.GPUSpec\.") as info:
        canonical_gpu(name)
    msg = str(info.value)
    assert (close in msg) if close else ("Did you mean" not in msg and "did you mean" not in msg)


# --- specs -------------------------------------------------------------------------------------------------------------

def test_gpu_spec_of_a_catalog_gpu_by_any_name(cat):
    s = gpu_spec("Tesla_V100-PCIE-32GB")
    assert isinstance(s, GPUSpec) and s.gpu == "V100-PCIe-32GB"
    assert (s.fp32_peak_tflops, s.fp16_peak_tflops, s.memory_gib, s.memory_bandwidth_gb_per_s, s.sm_count, s.l2_mib) == \
        (14.0, 112.0, 32.0, 900.0, 80, 6.0)
    assert math.isnan(s.bf16_peak_tflops) and s.precisions == ("fp32", "fp16") and s.pcie_generation == 3
    assert gpu_spec(s) is s
    for g in cat.index:  # the catalog row as a Series, as a one-row frame and as a dict give the same spec
        want = gpu_spec(g)
        assert gpu_spec(cat.loc[g].rename(None).to_frame().T.assign(gpu=g)) == want
        assert gpu_spec({"gpu": g, **cat.loc[g].to_dict()}) == want
        assert gpu_spec(want.to_dict()) == want


def test_a_gpu_outside_the_catalog_as_a_spec():
    spec = {"gpu": "B200", "fp32_peak_tflops": 80.0, "memory_bandwidth_gb_per_s": 8000, "memory_gib": 180, "sm_count": 148,
            "bf16_peak_tflops": 2250.0, "fp16_peak_tflops": 2250.0, "tf32_peak_tflops": 1100.0}
    s = gpu_spec(spec)
    assert s.gpu == "B200" and s.precisions == ("fp32", "tf32", "fp16", "bf16") and peak_tflops(spec, "bf16") == 2250.0
    assert s.l2_mib == ds.DEFAULT_L2_MIB == 6.0 and math.isnan(s.nvlink_gb_per_s)  # L2 not given: the documented default
    assert peak_tflops(GPUSpec("x", 10, 500, 16, 40), "fp32") == 10.0
    assert GPUSpec("x", 10, 500, 16, 40, l2_mib=math.nan).l2_mib == 6.0 and GPUSpec("x", 10, 500, 16, 40, l2_mib=50).l2_mib == 50.0
    with pytest.raises(InvalidGPUSpecError, match=r"GPUSpec 'x': l2_mib must be a positive finite number or NaN .*\(MiB\); got -1\.0\."):
        GPUSpec("x", 10, 500, 16, 40, l2_mib=-1)


@pytest.mark.parametrize("bad, message", [
    ({"gpu": "B200", "fp32_peak_tflops": 80.0}, r"The GPU spec dict for 'B200' lacks the required field\(s\) \['memory_bandwidth_gb_per_s', "
                                                r"'memory_gib', 'sm_count'\]; a spec needs \['gpu', 'fp32_peak_tflops', "),
    ({"fp32_peak_tflops": 1, "memory_bandwidth_gb_per_s": 1, "memory_gib": 1, "sm_count": 1}, r"The GPU spec dict lacks the required field\(s\) \['gpu'\]"),
    ({"gpu": "x", "fp32_peak_tflops": 1, "memory_bandwidth_gb_per_s": 1, "memory_gib": 1, "sm_count": 1, "fp32_tflops": 3},
     r"The GPU spec dict for 'x' has unknown field\(s\) \['fp32_tflops'\]; known fields: \['gpu', 'fp32_peak_tflops'"),
    ({"gpu": "x", "fp32_peak_tflops": -1, "memory_bandwidth_gb_per_s": 1, "memory_gib": 1, "sm_count": 1},
     r"GPUSpec 'x': fp32_peak_tflops must be a positive finite number \(TFLOPS\); got -1\.0\."),
    ({"gpu": "x", "fp32_peak_tflops": 1, "memory_bandwidth_gb_per_s": "fast", "memory_gib": 1, "sm_count": 1},
     r"GPUSpec 'x': memory_bandwidth_gb_per_s must be a number \(GB/s\); got 'fast'\."),
    ({"gpu": "x", "fp32_peak_tflops": 1, "memory_bandwidth_gb_per_s": 1, "memory_gib": 1, "sm_count": 1.5},
     r"GPUSpec 'x': sm_count must be a whole number of SMs; got 1\.5\."),
    ({"gpu": "x", "fp32_peak_tflops": 1, "memory_bandwidth_gb_per_s": 1, "memory_gib": 1, "sm_count": True},
     r"GPUSpec 'x': sm_count must be a number \(a count\); got True\."),
    ({"gpu": "x", "fp32_peak_tflops": 1, "memory_bandwidth_gb_per_s": 1, "memory_gib": 1, "sm_count": 1, "bf16_peak_tflops": 0},
     r"GPUSpec 'x': bf16_peak_tflops must be a positive finite number or NaN \(unknown / no such unit\) \(TFLOPS\); got 0\.0\."),
    ({"gpu": "", "fp32_peak_tflops": 1, "memory_bandwidth_gb_per_s": 1, "memory_gib": 1, "sm_count": 1}, r"GPUSpec\.gpu must be a non-empty name; got ''\."),
    ({"gpu": "x", "fp32_peak_tflops": math.nan, "memory_bandwidth_gb_per_s": 1, "memory_gib": 1, "sm_count": 1},
     r"The GPU spec dict for 'x' lacks the required field\(s\) \['fp32_peak_tflops'\]"),
])
def test_invalid_specs_name_the_field(bad, message):
    with pytest.raises(InvalidGPUSpecError, match=message) as info:
        gpu_spec(bad)
    assert isinstance(info.value, ValueError)


def test_other_gpu_inputs_are_refused():
    with pytest.raises(InvalidGPUSpecError, match=r"A GPU spec frame must have exactly one row; got 40\."):
        gpu_spec(ds.load_gpu_catalog())
    with pytest.raises(TypeError, match=r"A GPU must be a name \(str\), a GPUSpec, a dict or a one-row DataFrame of GPU specs; got int 100\."):
        gpu_spec(100)
    with pytest.raises(UnknownNameError, match=r"Unknown GPU 'A5000'"):
        gpu_spec("A5000")


_positive = st.floats(min_value=1e-3, max_value=1e5, allow_nan=False, allow_infinity=False)


@settings(max_examples=40, deadline=None)
@given(fp32=_positive, bw=_positive, mem=_positive, sms=st.integers(1, 1000), bf16=st.none() | _positive, tf32=st.none() | _positive)
def test_any_valid_spec_round_trips_and_supports_exactly_its_rates(fp32, bw, mem, sms, bf16, tf32):
    d = {"gpu": "mine", "fp32_peak_tflops": fp32, "memory_bandwidth_gb_per_s": bw, "memory_gib": mem, "sm_count": sms}
    if bf16 is not None:
        d["bf16_peak_tflops"] = bf16
    if tf32 is not None:
        d["tf32_peak_tflops"] = tf32
    s = gpu_spec(d)
    assert gpu_spec(s.to_dict()) == s and gpu_spec(pd.DataFrame([d])) == s
    assert s.precisions == tuple(p for p, v in [("fp32", fp32), ("tf32", tf32), ("fp16", None), ("bf16", bf16)] if v is not None)
    assert peak_tflops(s, "fp32") == fp32
    with pytest.raises(UnsupportedPrecisionError, match=r"GPU 'mine' cannot run fp16"):
        peak_tflops(s, "fp16")


# --- precisions --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("gpu, precision, tflops", [
    ("A100", "bf16", 312.0), ("A100", "tf32", 156.0), ("H100", "tf32", 494.7), ("H100 80GB SXM5", "fp16", 989.4),
    ("NVIDIA_L4", "bf16", 121.0), ("V100", "fp32", 15.667), ("V100", "fp16", 125.0), ("Tesla T4", "fp16", 65.0),
    ("P100", "fp16", 18.7), ("K80", "fp32", 4.113), ("MI250", "bf16", 181.05), ("MI100", "bf16", 92.3),
    ("H100 NVL", "bf16", 835.5), ("L40S", "tf32", 183.0), ("A10", "fp16", 125.0), ("H200", "tf32", 494.5),
    ("A100", "bfloat16", 312.0), ("A100", "torch.float16", 312.0), ("L4", "FP32", 30.3), ("L4", "float32", 30.3),
])
def test_peak_tflops_known_answers(gpu, precision, tflops):
    assert peak_tflops(gpu, precision) == tflops


def test_peak_tflops_matches_the_catalog_or_refuses(cat):
    for g in cat.index:
        for p, col in ds.PRECISIONS.items():
            if np.isfinite(cat.loc[g, col]):
                assert peak_tflops(g, p) == cat.loc[g, col]
            else:
                with pytest.raises(UnsupportedPrecisionError, match=rf"^GPU '{g}' cannot run {p}: it has no "):
                    peak_tflops(g, p)


@pytest.mark.parametrize("gpu, precision, supported, needs", [
    ("V100", "bf16", "fp32, fp16", r"BF16 tensor/matrix cores \(NVIDIA Ampere and later, AMD MI100 onwards\)"),
    ("Tesla_V100-PCIE-32GB", "tf32", "fp32, fp16", r"TF32 tensor cores \(NVIDIA Ampere and later: A100, A10, L4, L40S, H100, H200, B200; AMD CDNA 3: MI300X, MI325X; not "
                                       r"CDNA 4's MI355X\)"),
    ("T4", "tf32", "fp32, fp16", "TF32 tensor cores"),
    ("P100", "bf16", "fp32, fp16", "BF16 tensor/matrix cores"),
    ("K80", "fp16", "fp32", "FP16 tensor/matrix cores or fast FP16 arithmetic"),
    ("MI210", "tf32", "fp32, fp16, bf16", "TF32 tensor cores"),
    ("MI355X", "tf32", "fp32, fp16, bf16, fp8", "TF32 tensor cores"),
    ("A10G", "fp8", "fp32, tf32, fp16, bf16", r"FP8 tensor/matrix cores \(NVIDIA Ada, Hopper and Blackwell"),
])
def test_a_precision_the_gpu_cannot_run_is_a_clear_error(gpu, precision, supported, needs):
    g = canonical_gpu(gpu)
    with pytest.raises(UnsupportedPrecisionError, match=rf"^GPU '{g}' cannot run {precision}: it has no {needs}[^.]*\. {g} supports "
                                                        rf"{supported}; pick one of these, or a GPU that has {precision}\.$") as info:
        peak_tflops(gpu, precision)
    assert isinstance(info.value, ValueError)


def test_an_unknown_precision_lists_the_valid_ones():
    with pytest.raises(UnknownNameError, match=r"^Unknown precision 'int8'\. Expected one of: fp32, tf32, fp16, bf16, fp8\.$"):
        peak_tflops("H100", "int8")
    with pytest.raises(UnknownNameError, match=r"^Unknown precision 'fp4'"):
        gpu_spec("H100").peak_tflops("fp4")
    assert gpu_spec("H100").peak_tflops("float8_e4m3fn") == 1979


def test_the_name_table_has_the_catalogs_pcie_generations(cat):
    """canonical_gpu checks a 'Gen4'/'Gen5' in a name against the part's host link: the table it reads agrees with the catalog."""
    from perfmodel.datasets.names import _GPU_NAMES

    assert {g.id: g.pcie_gen for g in _GPU_NAMES} == cat["pcie_generation"].astype(int).to_dict()


def test_matmuls_run_at_the_matrix_rate_where_the_vendor_blas_uses_matrix_cores_for_fp32(cat):
    """FP32 GEMMs on AMD CDNA run on the matrix cores (rocBLAS, MFMA): twice the vector rate; NVIDIA's on the CUDA cores."""
    for g in ("MI100", "MI210", "MI250"):
        assert ds.matmul_peak_tflops(g, "fp32") == cat.loc[g, "fp32_matrix_tflops"] == pytest.approx(2 * peak_tflops(g, "fp32"), rel=0.01)
        assert ds.matmul_peak_tflops(g, "bf16") == peak_tflops(g, "bf16")
    for g in cat.index[cat["vendor"] == "NVIDIA"]:
        assert math.isnan(cat.loc[g, "fp32_matrix_tflops"]) and ds.matmul_peak_tflops(g, "fp32") == peak_tflops(g, "fp32")
    assert ds.matmul_peak_tflops("A100", "tf32") == 156.0 and gpu_spec("MI210").matmul_peak_tflops("float32") == 45.3
    with pytest.raises(UnsupportedPrecisionError, match=r"GPU 'MI210' cannot run tf32: it has no TF32 tensor cores"):
        ds.matmul_peak_tflops("MI210", "tf32")


def test_gpu_columns_of_a_spec_of_its_required_fields_are_finite():
    """The per-operator model's GPU columns of GPUSpec's docstring example (no L2 given) are positive and finite."""
    from perfmodel.step.op_latency import gpu_columns

    cols = gpu_columns([GPUSpec("my-gpu", fp32_peak_tflops=40.0, memory_bandwidth_gb_per_s=1000.0, memory_gib=48, sm_count=100,
                                bf16_peak_tflops=300.0)])
    v = cols.drop(columns="gpu").to_numpy(float)
    assert np.isfinite(v).all() and (v > 0).all() and cols["l2_bytes"].item() == ds.DEFAULT_L2_MIB * 2**20
