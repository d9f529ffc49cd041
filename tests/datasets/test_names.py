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
    with pytest.raises(UnknownNameError, match=r"Unknown GPU 'A6000'. Expected one of: K80, P100, V100, T4, L4, A100, H100"):
        ds.canonical_gpu("A6000")
    with pytest.raises(UnknownNameError, match=r"Unknown region 'mars-1'. Expected one of: us-east1, us-central1, us-west1, europe-west1, europe-west4, asia-east1"):
        ds.canonical_region("mars-1")
    with pytest.raises(UnknownNameError, match=r"Unknown zone 'us-south9-a'"):
        ds.region_of_zone("us-south9-a")
