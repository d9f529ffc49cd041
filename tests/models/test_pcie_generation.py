"""A GPU's PCIe generation is a generation, and a link perfmodel has no model of is never priced as another's."""
from __future__ import annotations

import pytest

from perfmodel.datasets import GPUSpec, InvalidGPUSpecError, gpu_spec
from perfmodel.models.collectives import resolve_interconnect


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
