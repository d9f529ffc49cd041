"""Campaign resume keys on (canonical model, batch size, threads, input shape, device, precision)."""
from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import perfmodel.measure as M
import perfmodel.measure.campaign as C
from perfmodel.datasets import canonical_model
from perfmodel.datasets.names import MODELS


def test_alias_is_not_measured_twice_and_a_new_shape_is(tmp_path):
    """Real (tiny) measurements: 'Res15' then 'resnet-15' is one model; another input shape is another configuration;
    checkpoints are keyed on the canonical id too."""
    out, ck = tmp_path / "s.csv", tmp_path / "ck.csv"
    kw = dict(out=out, batch_sizes=(2,), threads=(1,), steps=1, warmup=0, progress=False, checkpoint_out=ck, checkpoint_repeats=1)
    assert M.measure_campaign(["Res15"], **kw)["measured"] == 1
    r = M.measure_campaign(["resnet-15", "RESNET_15"], **kw)
    assert (r["measured"], r["skipped"]) == (0, 1)
    r = M.measure_campaign(["resnet-15"], input_shape=(3, 16, 16), **kw)
    assert (r["measured"], r["skipped"]) == (1, 0)
    d = M.read_rows(out)
    assert d["model"].tolist() == ["resnet-15", "resnet-15"] and d["input_shape"].tolist() == ["3x32x32", "3x16x16"]
    assert M.read_rows(ck)["model"].tolist() == ["resnet-15"]  # one checkpoint row: the alias was recognised


def _fake_rows(model, input_shape, *, batch_size, steps, warmup, threads, device, precision="float32", **_):
    """measure_step_time's rows without timing anything (the bookkeeping is what is tested)."""
    n = warmup + steps
    return pd.DataFrame({"model": canonical_model(model), "device": device, "device_name": "fake", "batch_size": batch_size,
                         "input_shape": "x".join(map(str, input_shape)), "step": range(n), "warmup": [i < warmup for i in range(n)],
                         "step_time_s": 0.01, "speed_steps_per_s": 100.0, "images_per_s": 100.0 * batch_size, "outlier": False,
                         "threads": threads, "precision": precision, "optimizer": "sgd-momentum", "torch_version": "x",
                         "python_version": "x", "cpu": "x", "timestamp_utc": "x"})[M.STEP_COLUMNS]


_SPELLINGS = [(a, m.id) for m in MODELS for a in (m.id, *m.aliases)]
_shapes = st.sampled_from([(3, 32, 32), (3, 64, 64), (3, 16, 24)])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=st.lists(st.tuples(st.sampled_from(_SPELLINGS), _shapes), min_size=1, max_size=4),
       second=st.lists(st.tuples(st.sampled_from(_SPELLINGS), _shapes), min_size=1, max_size=4),
       precision=st.sampled_from(["float32", "float64"]))
def test_resume_property(tmp_path_factory, monkeypatch, first, second, precision):
    """After any campaigns, a campaign measures exactly the (canonical model, shape, precision) configurations not
    yet in the file, whatever the spelling; every row carries the canonical id."""
    monkeypatch.setattr(C, "measure_step_time", _fake_rows)
    out = tmp_path_factory.mktemp("resume") / "s.csv"
    done = set()
    for runs in (first, second):
        for (spelling, cid), shape in runs:
            r = M.measure_campaign([spelling], out=out, batch_sizes=(2,), threads=(1,), input_shape=shape, steps=1, warmup=0,
                                   progress=False, precision=precision)
            key = (cid, "x".join(map(str, shape)))
            assert (r["measured"], r["skipped"]) == ((0, 1) if key in done else (1, 0))
            done.add(key)
    d = M.read_rows(out)
    assert set(d["model"]) <= {m.id for m in MODELS} and len(d) == len(done)
    assert set(zip(d["model"], d["input_shape"].astype(str))) == done


def test_device_and_precision_are_part_of_the_key(tmp_path, monkeypatch):
    monkeypatch.setattr(C, "measure_step_time", _fake_rows)
    out = tmp_path / "s.csv"
    kw = dict(out=out, batch_sizes=(2, 4), threads=(1,), steps=1, warmup=0, progress=False)
    assert M.measure_campaign(["resnet-15"], **kw)["measured"] == 2
    assert M.measure_campaign(["resnet-15"], precision="float64", **kw)["measured"] == 2
    assert M.measure_campaign(["resnet-15"], precision="float64", **kw)["measured"] == 0
    assert M.measure_campaign(["resnet-15"], batch_sizes=(2, 8), threads=(1,), out=out, steps=1, progress=False)["measured"] == 1


def test_campaign_refuses_bad_input_before_measuring(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(C, "measure_step_time", lambda *a, **k: calls.append(a))
    with pytest.raises(ValueError, match=r"input_shape \(3, 32\) does not fit the zoo CNN 'resnet-15': expected \(3, height, width\)"):
        M.measure_campaign(["resnet-15"], out=tmp_path / "s.csv", input_shape=(3, 32), steps=1, progress=False)
    with pytest.raises(ValueError, match=r"Unknown model 'resnet-16'. Expected one of: resnet-15"):
        M.measure_campaign(["resnet-16"], out=tmp_path / "s.csv", steps=1, progress=False)
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    with pytest.raises(M.MeasurementFileError, match=r"has the columns \['a', 'b'\]"):
        M.measure_campaign(["resnet-15"], out=tmp_path / "other.csv", steps=1, progress=False)
    assert calls == []
