"""Regenerate ``datasets/features/zoo_features.csv``: features of the twenty zoo CNNs (batch 1, 3×32×32).

Run ``python -m perfmodel.features.zoo_table [OUT]`` (default: the project's ``datasets/features/zoo_features.csv``).
The output is deterministic: counts are integers, sizes are written with 12 significant digits.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

__all__ = ["zoo_features", "render", "main"]


def zoo_features() -> pd.DataFrame:
    """Compute the feature table of the twenty zoo CNNs (one row per CNN, :data:`perfmodel.features.FEATURE_COLUMNS`)."""
    from perfmodel.features import extract
    from perfmodel.zoo import INPUT_SHAPE, list_models

    return pd.concat([extract(m, INPUT_SHAPE, batch_size=1) for m in list_models()], ignore_index=True)


def render(df: pd.DataFrame) -> str:
    """CSV text of ``df`` with LF line endings and floats written with 12 significant digits (deterministic)."""
    return df.to_csv(index=False, lineterminator="\n", float_format="%.12g")


def main(argv: list[str] | None = None) -> int:
    """Write the zoo feature table.

    Parameters
    ----------
    argv : list of str, optional
        ``[OUT]``: output path (default: ``datasets/features/zoo_features.csv`` of this checkout).

    Returns
    -------
    int
        Exit status 0.
    """
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0]) if argv else Path(__file__).resolve().parents[2] / "datasets" / "features" / "zoo_features.csv"
    text = render(zoo_features())
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".csv.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
    print(f"wrote {out} ({text.count(chr(10)) - 1} rows)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
