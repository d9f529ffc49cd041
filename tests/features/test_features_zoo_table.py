"""The shipped zoo feature table is what the code computes: `python -m perfmodel.features.zoo_table` regenerates it
byte for byte."""
from importlib import resources

from perfmodel.features import FEATURE_COLUMNS, load_zoo_features
from perfmodel.features.zoo_table import main


def test_regenerating_gives_the_committed_file_byte_for_byte(tmp_path, capsys):
    committed = (resources.files("perfmodel._data") / "features" / "zoo_features.csv").read_bytes()
    out = tmp_path / "zoo_features.csv"
    assert main([str(out)]) == 0
    assert f"wrote {out} (20 rows)" in capsys.readouterr().out
    assert out.read_bytes() == committed
    shipped = load_zoo_features()
    assert tuple(shipped.columns) == FEATURE_COLUMNS and shipped.shape == (20, len(FEATURE_COLUMNS))
