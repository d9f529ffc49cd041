"""The shipped zoo feature table is what the code computes (regeneration is byte-identical)."""
from importlib import resources

from perfmodel.features.zoo_table import render, zoo_features


def test_regenerating_gives_the_committed_file():
    committed = (resources.files("perfmodel._data") / "features" / "zoo_features.csv").read_text(encoding="utf-8")
    assert render(zoo_features()) == committed
