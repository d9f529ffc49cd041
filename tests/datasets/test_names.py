"""Canonical ids for models, GPUs and regions (DESIGN.md convention 3)."""
from __future__ import annotations

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
    with pytest.raises(UnknownNameError, match=r"Unknown GPU 'A6000'. Expected one of: K80, P4, P100, P100-SXM2, V100, .*, H100, H100-PCIe, H100-NVL, H200, MI100, MI210, MI250\. Device names .* are accepted too; a GPU that is not in the catalog can be passed as a perfmodel.datasets.GPUSpec\. Did you mean 'A100'"):
        ds.canonical_gpu("A6000")
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
