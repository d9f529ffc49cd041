"""The parsing layer gives a DataFrame or one of the documented errors — never garbage (DESIGN.md conventions 4–5)."""
from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfmodel._errors import DataFormatError, NotADataFileError
from perfmodel.datasets._io import parse_csv

DOCUMENTED = (DataFormatError, NotADataFileError)


def test_crlf_no_trailing_newline_and_bom():
    df = parse_csv(b"\xef\xbb\xbfa,b\r\n1,2\r\n3,4", source="x.csv", numeric_columns=["a", "b"])
    assert list(df.columns) == ["a", "b"]
    assert df["b"].tolist() == [2.0, 4.0]


def test_html_page_is_refused_with_the_fix():
    html = b"\n\n<!DOCTYPE html>\n<html lang='en'><head><title>GitHub</title></head><body>chunk_summary.csv</body></html>"
    with pytest.raises(NotADataFileError, match=r"chunk_summary.csv is an HTML page, not a CSV table .* get the raw file"):
        parse_csv(html, source="chunk_summary.csv")


def test_empty_file_is_refused():
    with pytest.raises(NotADataFileError, match=r"x.csv is empty \(0 data bytes\); expected a CSV table with a header row"):
        parse_csv(b"  \r\n", source="x.csv")


def test_binary_is_refused():
    with pytest.raises(NotADataFileError, match=r"x.csv holds binary data \(NUL bytes\)"):
        parse_csv(b"SQLite format 3\x00\x10\x00", source="x.csv")


def test_non_utf8_is_a_format_error():
    with pytest.raises(DataFormatError, match=r"x.csv is not UTF-8 text"):
        parse_csv(b"a,b\n\xff\xfe,1\n", source="x.csv")


def test_missing_column_lists_expected_and_found():
    with pytest.raises(DataFormatError, match=r"x.csv lacks the column\(s\) \['Step'\]; expected at least \['Wall time', 'Step'\], found \['Wall time', 'Value'\]"):
        parse_csv(b"Wall time,Value\n1,2\n", source="x.csv", required_columns=["Wall time", "Step"])


def test_text_in_numeric_column():
    with pytest.raises(DataFormatError, match=r"x.csv: column 'Value' must be numeric"):
        parse_csv(b"Step,Value\n1,2\n2,abc\n", source="x.csv", numeric_columns=["Value"])


def test_ragged_rows_are_a_format_error():
    with pytest.raises(DataFormatError, match=r"x.csv could not be parsed as CSV"):
        parse_csv(b"a,b\n1,2\n3,4,5,6\n", source="x.csv")


_csvish = st.lists(
    st.lists(st.one_of(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8),
                       st.floats(allow_nan=True).map(str), st.integers().map(str)), min_size=0, max_size=5),
    max_size=8,
).map(lambda rows: "\r\n".join(",".join(r) for r in rows))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.binary(max_size=300), _csvish.map(lambda s: s.encode("utf-8")), st.text(max_size=300).map(lambda s: s.encode("utf-8"))))
def test_malformed_input_gives_only_documented_errors(data):
    try:
        df = parse_csv(data, source="fuzz.csv", required_columns=["Step", "Value"], numeric_columns=["Step", "Value"])
    except DOCUMENTED:
        return
    assert isinstance(df, pd.DataFrame)
    assert {"Step", "Value"} <= set(df.columns)
    assert df["Step"].dtype == float and df["Value"].dtype == float


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.floats(0, 1e3, allow_nan=False)), min_size=1, max_size=20),
       st.sampled_from(["\n", "\r\n"]), st.booleans())
def test_valid_tensorboard_exports_roundtrip(rows, eol, trailing):
    text = "Wall time,Step,Value" + eol + eol.join(f"{1.5e9 + i},{s},{v!r}" for i, (s, v) in enumerate(rows)) + (eol if trailing else "")
    df = parse_csv(text.encode(), source="tb.csv", required_columns=["Wall time", "Step", "Value"], numeric_columns=["Step", "Value"])
    assert df["Step"].tolist() == [float(s) for s, _ in rows]
    assert df["Value"].tolist() == [v for _, v in rows]
