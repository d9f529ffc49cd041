"""Canonical ids for models, GPUs and regions (DESIGN.md convention 3)."""
from __future__ import annotations

import re

import pytest

from perfmodel import datasets as ds
from perfmodel._errors import UnknownNameError


@pytest.mark.parametrize(
    "spelling, cid",
    [
        ("Shake Large", "shake-shake-big"), ("Shake large", "shake-shake-big"), ("shakebig", "shake-shake-big"),
        ("Shake Shake Big", "shake-shake-big"), ("shakesbigp100ps2", "shake-shake-big"), ("ShakeShake Large", "shake-shake-big"),
        ("Shake 64 32d", "shake-shake-64-32d"), ("Shake mid 32d", "shake-shake-64-32d"), ("shake mid 32d", "shake-shake-64-32d"),
        ("shake64_d32", "shake-shake-64-32d"), ("Shake small 32D", "shake-shake-small-32d"), ("shakemid", "shake-shake-64"),
        ("Shake 64", "shake-shake-64"), ("Res15", "resnet-15"), ("ResNet-32", "resnet-32"), ("res32k80", "resnet-32"),
        ("custom9", "custom-resnet-9"), ("Custom ResNet 10", "custom-resnet-10"), ("Custom10", "custom-resnet-10"),
        ("cus3", "custom-resnet-3"), ("Shake Shake Small", "shake-shake-small"), ("shakesmall80", "shake-shake-small"),
    ],
)
def test_every_upstream_spelling_maps_to_one_id(spelling, cid):
    assert ds.canonical_model(spelling) == cid


def test_twenty_models_four_held_out():
    assert len(ds.MODEL_IDS) == 20 and len(set(ds.MODEL_IDS)) == 20
    assert ds.HELD_OUT_MODEL_IDS == ("custom-resnet-9", "custom-resnet-10", "shake-shake-small-32d", "shake-shake-64-32d")
    assert ds.model_info("Shake Large").hidden_size == 96 and ds.model_info("custom8").layer_sizes == (16, 20, 16)


def test_unknown_model_lists_valid_ids():
    with pytest.raises(UnknownNameError, match=r"Unknown model 'ResNet-50'. Expected one of: resnet-15, resnet-32, custom-resnet-1, .*shake-shake-64-32d\. Spellings used upstream"):
        ds.canonical_model("ResNet-50")


def test_gpus_and_regions():
    assert ds.canonical_gpu("p100") == "P100" and ds.canonical_gpu("Tesla K80") == "K80"
    assert ds.canonical_region("us-east1-c") == "us-east1" and ds.canonical_region("euwest4") == "europe-west4"
    assert ds.canonical_region("euro") == "europe-west1" and ds.canonical_region("asia") == "asia-east1"
    assert ds.region_of_zone("europe-west1-b") == "europe-west1"
    with pytest.raises(UnknownNameError, match=r"Unknown GPU 'A1000'. Expected one of: K80, P4, P100, P100-SXM2, V100, .*, A10G, A40, RTX-A6000, L4, .*, H100, H100-PCIe, H100-NVL, H800, H20, H200, H200-NVL, RTX-5090, B200, GB200, B300, GB300, MI100, MI210, MI250, MI300X, MI325X, MI355X\. Device names .* are accepted too; a GPU that is not in the catalog can be passed as a perfmodel.datasets.GPUSpec\. Did you mean 'A100'"):
        ds.canonical_gpu("A1000")
    with pytest.raises(UnknownNameError, match=r"Unknown region 'mars-1'. Expected one of: us-east1, us-central1, us-west1, europe-west1, europe-west4, asia-east1"):
        ds.canonical_region("mars-1")
    with pytest.raises(UnknownNameError, match=r"Unknown zone 'us-south9-a'"):
        ds.region_of_zone("us-south9-a")


@pytest.mark.parametrize("fn, name, suggestion", [
    (ds.canonical_gpu, "V10", "'V100'"),
    (ds.canonical_gpu, "A1000", "'A100'"),
    (ds.canonical_model, "resnet-23", "'resnet-32'"),
    (ds.canonical_model, "shake-shake-bigg", "'shake-shake-big'"),
    (ds.canonical_model, "Shake Larg", "'shake-shake-big'"),  # matched through an upstream spelling, suggested by its id
    (ds.canonical_region, "us-est1", "'us-east1'"),
    (ds.canonical_region, "europe-west5", "'europe-west4'"),
])
def test_unknown_names_suggest_the_closest(fn, name, suggestion):
    with pytest.raises(UnknownNameError, match=rf"Unknown \w+ '{name}'\. Expected one of: .*\. Did you mean [^?]*{suggestion}"):
        fn(name)


def test_a_name_far_from_every_id_gets_no_suggestion():
    with pytest.raises(UnknownNameError) as info:
        ds.canonical_gpu("Radeon")
    assert "Did you mean" not in str(info.value)


@pytest.mark.parametrize("name", ["us-east-1", "eu-west-2", "ap-southeast-1", "us-west-2b", "US-EAST-1"])
def test_aws_region_names_are_refused_not_mapped_to_gce(name):
    with pytest.raises(UnknownNameError, match=rf"^'{name}' is an AWS region name; .*Google Compute Engine regions \(us-east1, .*"
                                               r"AWS regions are not mapped to GCE regions"):
        ds.canonical_region(name)
    assert ds.canonical_region("us-east1") == "us-east1" and ds.canonical_region("useast1") == "us-east1"


#: GPU names as device queries, clouds and benchmark tables print them, each with the catalog part it is (where it says
#: less than the part, the documented default: SXM before PCIe, the smaller memory first).
REAL_GPU_SPELLINGS = [
    # nvidia-smi / torch.cuda.get_device_name
    ("NVIDIA H100 80GB HBM3", "H100"), ("NVIDIA H100 PCIe", "H100-PCIe"), ("NVIDIA H100 NVL", "H100-NVL"),
    ("NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"), ("NVIDIA A100-SXM4-40GB", "A100"), ("NVIDIA A100-PCIE-40GB", "A100-PCIe-40GB"),
    ("NVIDIA A100 80GB PCIe", "A100-PCIe-80GB"), ("Tesla V100-SXM2-16GB", "V100"), ("Tesla V100-SXM2-32GB", "V100-SXM2-32GB"),
    ("Tesla V100-PCIE-16GB", "V100-PCIe-16GB"), ("Tesla V100-PCIE-32GB", "V100-PCIe-32GB"), ("Tesla P100-PCIE-16GB", "P100"),
    ("Tesla P100-SXM2-16GB", "P100-SXM2"), ("Tesla K80", "K80"), ("Tesla P4", "P4"), ("Tesla T4", "T4"), ("NVIDIA L4", "L4"),
    ("NVIDIA L40S", "L40S"), ("NVIDIA A10", "A10"), ("NVIDIA H200", "H200"), ("NVIDIA H100 Tensor Core GPU", "H100"),
    ("NVIDIA A40", "A40"), ("NVIDIA RTX A6000", "RTX-A6000"), ("NVIDIA H200 NVL", "H200-NVL"),
    # ROCm (torch.cuda.get_device_name on ROCm, rocm-smi product names)
    ("AMD Instinct MI210", "MI210"), ("AMD Instinct MI100", "MI100"), ("AMD Instinct MI250", "MI250"),
    # datasheet / benchmark-table spellings (MLPerf system descriptions, vendor tables)
    ("H100 80GB PCIe Gen5", "H100-PCIe"), ("H100 PCIe Gen 5", "H100-PCIe"), ("A100 80GB PCIe Gen4", "A100-PCIe-80GB"),
    ("H100 SXM5 80GB HBM3", "H100"), ("NVIDIA H100-SXM5-80GB", "H100"), ("NVIDIA H100-PCIe-80GB", "H100-PCIe"),
    ("NVIDIA H200-SXM-141GB", "H200"), ("NVIDIA A100 PCIe 40GB", "A100-PCIe-40GB"), ("NVIDIA Tesla V100 PCIe 16 GB", "V100-PCIe-16GB"),
    ("A100-SXM-80GB", "A100-SXM4-80GB"), ("A100 80GiB SXM4", "A100-SXM4-80GB"),
    # AWS instance GPUs (p4d: A100 40GB SXM4; p4de: A100 80GB; p5: H100 80GB SXM5; p3: V100 16GB SXM2; g4dn: T4; g6: L4)
    ("A100 40GB", "A100"), ("A100 80GB", "A100-SXM4-80GB"), ("H100 80GB", "H100"), ("V100 16GB", "V100"), ("T4", "T4"),
    ("L4", "L4"), ("L40S 48GB", "L40S"), ("H200 141GB", "H200"),
    # Google Cloud accelerator types
    ("nvidia-tesla-a100", "A100"), ("nvidia-a100-80gb", "A100-SXM4-80GB"), ("nvidia-h100-80gb", "H100"),
    ("nvidia-h100-mega-80gb", "H100"), ("nvidia-h200-141gb", "H200"), ("nvidia-l4", "L4"), ("nvidia-tesla-t4", "T4"),
    ("nvidia-tesla-v100", "V100"), ("nvidia-tesla-p100", "P100"), ("nvidia-tesla-p4", "P4"), ("nvidia-tesla-k80", "K80"),
    # SkyPilot / Lambda accelerator names
    ("A100-80GB", "A100-SXM4-80GB"), ("H100-SXM", "H100"), ("H100-MEGA", "H100"), ("V100-32GB", "V100-SXM2-32GB"),
    ("A100-80G", "A100-SXM4-80GB"), ("A100", "A100"), ("H100", "H100"), ("L40S", "L40S"),
    # Lambda / RunPod names of the professional GA102 boards and the PCIe H200
    ("A6000", "RTX-A6000"), ("RTX A6000", "RTX-A6000"), ("A40", "A40"), ("H200 NVL", "H200-NVL"), ("H200-NVL-141GB", "H200-NVL"),
    # GPUs sold for training today: nvidia-smi / rocm-smi names, cloud catalogs (AWS p6-b200, g5; GCP a4 / a4x; SkyPilot,
    # RunPod), MLPerf system descriptions and vendor tables
    ("NVIDIA B200", "B200"), ("B200", "B200"), ("HGX B200", "B200"), ("NVIDIA B200-SXM-180GB", "B200"), ("nvidia-b200", "B200"),
    ("B200 180GB", "B200"), ("GB200", "GB200"), ("NVIDIA GB200", "GB200"), ("GB200 NVL72", "GB200"), ("nvidia-gb200", "GB200"),
    ("B300", "B300"), ("NVIDIA B300 SXM6 AC", "B300"), ("HGX B300", "B300"), ("GB300", "GB300"), ("NVIDIA GB300", "GB300"),
    ("GB300 NVL72", "GB300"), ("NVIDIA H20", "H20"), ("H20", "H20"), ("H20 96GB", "H20"), ("H800", "H800"),
    ("NVIDIA H800", "H800"), ("H800 SXM5 80GB", "H800"), ("A10G", "A10G"), ("NVIDIA A10G", "A10G"), ("a10g", "A10G"),
    ("L40", "L40"), ("NVIDIA L40", "L40"), ("L40 48GB", "L40"), ("RTX 4090", "RTX-4090"), ("NVIDIA GeForce RTX 4090", "RTX-4090"),
    ("RTX4090", "RTX-4090"), ("GeForce RTX 4090 24GB", "RTX-4090"), ("RTX 5090", "RTX-5090"), ("NVIDIA GeForce RTX 5090", "RTX-5090"),
    ("RTX5090", "RTX-5090"), ("RTX 6000 Ada", "RTX-6000-Ada"), ("NVIDIA RTX 6000 Ada Generation", "RTX-6000-Ada"),
    ("RTX6000-Ada", "RTX-6000-Ada"), ("MI300X", "MI300X"), ("AMD Instinct MI300X", "MI300X"), ("AMD Instinct MI300X OAM", "MI300X"),
    ("MI325X", "MI325X"), ("AMD Instinct MI325X", "MI325X"), ("MI355X", "MI355X"), ("AMD Instinct MI355X", "MI355X"),
]


@pytest.mark.parametrize("name, gpu", REAL_GPU_SPELLINGS)
def test_real_gpu_spellings_resolve(name, gpu):
    assert ds.canonical_gpu(name) == gpu


def test_the_list_of_real_spellings_is_long_and_covers_the_catalog():
    assert len(REAL_GPU_SPELLINGS) >= 30
    assert {g for _, g in REAL_GPU_SPELLINGS} == set(ds.CATALOG_GPU_IDS)


def test_a_bare_a100_is_the_sxm4_40gb_as_documented():
    """An ambiguous name keeps its documented reading (SXM first, smaller memory first), never another chip's part."""
    assert ds.canonical_gpu("A100") == ds.canonical_gpu("NVIDIA A100-SXM4-40GB") == "A100"
    assert ds.canonical_gpu("A100 PCIe") == "A100-PCIe-40GB" and ds.canonical_gpu("V100") == "V100"


@pytest.mark.parametrize("name, message", [
    # GPUs the catalog does not have: refused with the part they are often taken for, never mapped to it
    ("NVIDIA A800", r"A800 is not in the catalog: pass a perfmodel\.datasets\.GPUSpec with its datasheet numbers\. It is not the "
                    r"catalog's 'A100' \(a different part\); pass that id to accept its numbers anyway\."),
    ("AMD Instinct MI250X", r"MI250X is not in the catalog: .* It is not the catalog's 'MI250' \(a different part\)"),
    ("Tesla V100S-PCIE-32GB", r"V100S is not in the catalog: .* It is not the catalog's 'V100-PCIe-32GB'"),
    ("Quadro RTX 6000", r"RTX6000 is not in the catalog: .* It is not the catalog's 'RTX-6000-Ada'"),  # Turing, 24 GB
    ("RTX 6000", r"RTX6000 is not in the catalog: .* It is not the catalog's 'RTX-6000-Ada'"),
    ("NVIDIA B100", r"B100 is not in the catalog: .* It is not the catalog's 'B200'"),
    ("AMD Instinct MI350X", r"MI350X is not in the catalog: .* It is not the catalog's 'MI355X'"),
    ("NVIDIA GH200 480GB", r"GH200 is not in the catalog: .* It is not the catalog's 'H100' or 'H200'"),
    ("AMD Instinct MI300A", r"MI300A is not in the catalog: pass a perfmodel\.datasets\.GPUSpec with its datasheet numbers\.$"),
    # parts of catalogued chips that the catalog does not list
    ("NVIDIA H800 PCIe", r"The catalog's H800 parts are 'H800'"), ("H20 141GB", r"The catalog's H20 parts are 'H20'"),
    # ROCm's one name for two GPUs
    ("AMD Instinct MI250X / MI250", r"'AMD Instinct MI250X / MI250' names more than one GPU \(MI250X, MI250\); pass one of them\. "
                                    r"ROCm reports MI250 and MI250X dies alike .* 104 compute units per die on an MI250 \(pass 'MI250'\)"),
    # a PCIe generation the part does not have, a MIG slice, an instance with a GPU count
    ("A100 PCIe Gen5", r"The catalog's A100 parts are 'A100' or 'A100-SXM4-80GB' or 'A100-PCIe-40GB' or 'A100-PCIe-80GB'"),
    ("NVIDIA A100-SXM4-40GB MIG 1g.5gb", r"The catalog's A100 parts are"),
    ("8x H100 SXM5", r"The catalog's H100 parts are"),
])
def test_gpus_not_in_the_catalog_are_refused_with_close_matches(name, message):
    with pytest.raises(UnknownNameError, match=rf"^Unknown GPU '{re.escape(name)}'\. Expected one of: K80, .*, MI355X\. .*{message}"):
        ds.canonical_gpu(name)


#: Names that differ by one letter or digit and name different parts (a lookup must never cross them).
NEAR_NAMES = [
    ("L40", "L40"), ("L40S", "L40S"), ("NVIDIA L40", "L40"), ("NVIDIA L40S", "L40S"),
    ("A10", "A10"), ("A10G", "A10G"), ("NVIDIA A10", "A10"), ("NVIDIA A10G", "A10G"),
    ("H100", "H100"), ("H800", "H800"), ("H20", "H20"), ("H200", "H200"), ("NVIDIA H100 80GB HBM3", "H100"), ("NVIDIA H20", "H20"),
    ("B200", "B200"), ("GB200", "GB200"), ("B300", "B300"), ("GB300", "GB300"), ("HGX B200", "B200"), ("GB200 NVL72", "GB200"),
    ("RTX 4090", "RTX-4090"), ("RTX 5090", "RTX-5090"), ("RTX 6000 Ada", "RTX-6000-Ada"),
    ("MI300X", "MI300X"), ("MI325X", "MI325X"), ("MI355X", "MI355X"), ("MI250", "MI250"),
]


@pytest.mark.parametrize("name, gpu", NEAR_NAMES)
def test_near_names_are_never_confused(name, gpu):
    assert ds.canonical_gpu(name) == gpu


def test_every_new_gpu_resolves_from_its_everyday_spellings():
    want = {"B200": ["NVIDIA B200", "B200", "HGX B200"], "GB200": ["GB200", "NVIDIA GB200"], "B300": ["B300"],
            "GB300": ["GB300"], "H20": ["NVIDIA H20"], "H800": ["H800", "NVIDIA H800"], "A10G": ["A10G", "NVIDIA A10G"],
            "L40": ["L40", "NVIDIA L40"], "RTX-4090": ["RTX 4090", "NVIDIA GeForce RTX 4090"],
            "RTX-5090": ["RTX 5090", "NVIDIA GeForce RTX 5090"], "RTX-6000-Ada": ["RTX 6000 Ada", "NVIDIA RTX 6000 Ada Generation"],
            "MI300X": ["MI300X", "AMD Instinct MI300X"], "MI325X": ["MI325X"], "MI355X": ["MI355X"]}
    for gpu, names in want.items():
        assert gpu in ds.CATALOG_GPU_IDS
        for n in [*names, gpu, gpu.lower(), *(x.replace(" ", "_") for x in names)]:  # NeuSight-style underscores too
            assert ds.canonical_gpu(n) == gpu, n


def test_no_catalogued_gpu_is_in_the_near_miss_table():
    """A GPU the catalog now has is never refused as 'not in the catalog' (the table only names uncatalogued parts)."""
    from perfmodel.datasets.names import _GPU_CHIPS, _NOT_IN_CATALOG

    assert not set(_NOT_IN_CATALOG) & set(_GPU_CHIPS)
    assert all(set(near) <= set(ds.CATALOG_GPU_IDS) for near in _NOT_IN_CATALOG.values())
