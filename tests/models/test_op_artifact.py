"""The shipped operator model: read from a pinned, code-free artifact, never fitted at prediction time; rebuilt bit for bit
by `perfmodel fit`; a user's refit written once under a lock, whatever the number of processes."""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import pandas as pd
import pytest

import perfmodel as pm

import perfmodel.step.op_latency as ol
from perfmodel.step import op_fit as of
from perfmodel.step import _artifact
from perfmodel.step._artifact import ArtifactError, TreeEnsemble


@pytest.fixture
def fresh_default(monkeypatch):
    """No model in the process memo, and any fit raises: whatever answers was read from the artifact."""
    monkeypatch.setattr(ol, "_DEFAULT", {})
    monkeypatch.delenv(ol.ENV_OP_MODEL, raising=False)

    def refuse(*a, **k):
        raise AssertionError("the operator model was fitted at prediction time")

    monkeypatch.setattr(ol.OpLatencyModel, "fit", refuse)
    monkeypatch.setattr(of, "fit_bundle", refuse)


def test_first_prediction_reads_the_shipped_model_and_fits_nothing(fresh_default):
    import perfmodel as pm

    b = ol.fitted_bundle()
    assert b["model"].training_devices_ == sorted(ol.TRAINING_GPUS)
    assert "NeuSight microbenchmarks" in b["model"].provenance_ and "no test GPU" in b["model"].provenance_
    assert set(b["scores"].index) == set(ol.TRAINING_GPUS) and (b["scores"] >= 0).all()
    r = pm.predict_step_time("resnet-32", ["H100"], input_shape=(3, 32, 32), batch_size=128)
    assert r["step_time_s"].iloc[0] > 0


def test_shipped_model_was_fitted_on_the_registered_data():
    """Its key is the hash of the code version and of every NeuSight training file's registered sha256: a change in
    either makes this fail until the artifact is rebuilt (`perfmodel fit --out perfmodel/step/fitted/op_latency.npz`)."""
    header, _ = _artifact.load(ol.shipped_artifact_path(), sha256=ol.SHIPPED_SHA256)
    assert header["key"] == ol._cache_key()
    assert header["model_version"] == ol.MODEL_VERSION
    assert header["format"] == _artifact.FORMAT


def test_a_tampered_artifact_is_refused(tmp_path):
    path = tmp_path / "op.npz"
    data = bytearray(ol.shipped_artifact_path().read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match=r"op.npz has sha256 .*, expected .*: it was altered or truncated"):
        ol.load_bundle(path, sha256=ol.SHIPPED_SHA256)
    path.write_bytes(ol.shipped_artifact_path().read_bytes()[:1000])
    with pytest.raises(ArtifactError, match="altered or truncated"):
        ol.load_bundle(path, sha256=ol.SHIPPED_SHA256)
    with pytest.raises(ArtifactError, match=r"has no op.npz.sha256 beside it"):
        ol.load_bundle(path)


def test_an_artifact_never_unpickles(tmp_path):
    """A pickled object array inside the ZIP (what np.savez writes for Python objects) is refused even when its
    hash is right: the loader reads arrays with allow_pickle=False."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("header.json", json.dumps({"format": _artifact.FORMAT}))
        inner = io.BytesIO()
        np.lib.format.write_array(inner, np.array([{"a": 1}], dtype=object), allow_pickle=True)
        z.writestr("evil.npy", inner.getvalue())
    path = tmp_path / "evil.npz"
    path.write_bytes(buf.getvalue())
    with pytest.raises(ArtifactError, match="is not a perfmodel fitted-model artifact"):
        _artifact.load(path, sha256=_artifact.sha256_of(buf.getvalue()))
    with pytest.raises(TypeError, match="holds Python objects"):
        _artifact.to_bytes({}, {"x": np.array([object()])})


def test_tree_ensemble_predicts_bit_for_bit_as_scikit_learn():
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 5))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) ** 2 + np.sin(np.nan_to_num(X[:, 1])) + rng.normal(scale=0.1, size=3000)
    est = HistGradientBoostingRegressor(max_iter=60, random_state=0).fit(X, y)
    ens = _artifact.from_sklearn(est)
    Xt = rng.normal(size=(500, 5))
    Xt[::7, 2] = np.nan
    assert np.array_equal(ens.predict(Xt), est.predict(Xt))
    assert np.array_equal(ens.predict(Xt, method="numpy"), est.predict(Xt))  # the NumPy walk, without scikit-learn's
    again = TreeEnsemble.from_arrays(ens.arrays("t"), "t", ens.baseline)
    assert np.array_equal(again.predict(Xt), est.predict(Xt))


def test_a_corrupt_tree_is_refused():
    with pytest.raises(ArtifactError, match="child index points outside"):
        TreeEnsemble(0.0, [0, 3], [0, 0, 0], [0.5, 0, 0], [1, 0, 0], [7, 0, 0], [0, 1, 2], [False, True, True], [True] * 3)


def test_rebuild_gives_the_shipped_artifact():
    """`perfmodel fit` (fit_bundle + save) rebuilds the shipped artifact from the data: the same header and the same
    arrays, bit for bit, with the scikit-learn release and floating-point arithmetic it was built with; on another CPU
    the same model in every aggregate (tests/models/_rebuild.py); with another release, the same predictions within
    2 % per operator."""
    import sklearn

    from _rebuild import check_rebuild

    header, arrays = _artifact.load(ol.shipped_artifact_path(), sha256=ol.SHIPPED_SHA256)
    rebuilt = of.fit_bundle()
    h2, a2 = ol.bundle_arrays(rebuilt)
    X = ol.neusight_op_frame("train", devices=ol.TRAINING_GPUS)
    shipped = ol.bundle_from_arrays(header, arrays)["model"].predict_in_stream(X)
    if header["sklearn_version"] == sklearn.__version__:
        check_rebuild(header, arrays, h2, a2, fmt=_artifact.FORMAT, shipped_pred=shipped,
                      rebuilt_pred=rebuilt["model"].predict_in_stream(X))
    else:  # pragma: no cover - another scikit-learn release in the environment
        assert np.max(np.abs(rebuilt["model"].predict_in_stream(X) / shipped - 1)) < 0.02


_CONCURRENT = """
import sys, perfmodel.step.op_fit as of
b = of.fit_op_model(out=sys.argv[1], params={"max_iter": 5, "min_gpu_rows": 50}, devices=("P4", "T4"), progress=False)
print("FITTED" if b["fitted"] else "READ", b["sha256"])
"""


def test_three_concurrent_refits_on_an_empty_cache_fit_once(tmp_path):
    out = tmp_path / "cache" / "op_latency-user.npz"
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    procs = [subprocess.Popen([sys.executable, "-c", _CONCURRENT, str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for _ in range(3)]
    results = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [r[1][-2000:] for r in results]
    words = sorted(r[0].split()[0] for r in results)
    assert words == ["FITTED", "READ", "READ"]
    assert len({r[0].split()[1] for r in results}) == 1  # every process got the same artifact
    assert sorted(p.name for p in out.parent.iterdir()) == ["op_latency-user.npz", "op_latency-user.npz.lock",
                                                            "op_latency-user.npz.sha256"]  # no temp file left
    b = ol.load_bundle(out)
    assert b["model"].training_devices_ == ["P4", "T4"]


def test_a_user_refit_is_used_when_named_and_records_its_data(tmp_path, monkeypatch):
    rows = ol.neusight_op_frame("train", devices=("T4",)).head(400)
    csv = tmp_path / "my_ops.csv"
    # NeuSight's schema back from the model rows: the device, the op, its shape and the latency in ms
    pd.DataFrame({"device": "Tesla T4", "op": "linear", "b": 1, "m": rows["dim_m"].astype(int), "n": rows["dim_n"].astype(int),
                  "k": rows["dim_k"].astype(int), "latency_ms": rows["latency_s"] * 1e3 * 1.5}).to_csv(csv, index=False)
    b = of.fit_op_model(csv, out=tmp_path / "mine.npz", params={"max_iter": 5, "min_gpu_rows": 50}, devices=("P4", "T4"),
                        progress=False)
    assert b["fitted"] and "plus 400 user rows from" in b["model"].provenance_
    again = of.fit_op_model(csv, out=tmp_path / "mine.npz", params={"max_iter": 5, "min_gpu_rows": 50}, devices=("P4", "T4"),
                            progress=False)
    assert not again["fitted"]
    monkeypatch.setattr(ol, "_DEFAULT", {})
    monkeypatch.setenv(ol.ENV_OP_MODEL, str(tmp_path / "mine.npz"))
    assert "plus 400 user rows" in ol.default_op_model().provenance_
    # the refit's data keeps the CSV's name, and every prediction's basis says it was refitted with it
    assert "my_ops.csv" in ol.default_op_model().provenance_ and "from a DataFrame" not in ol.default_op_model().provenance_
    from perfmodel.step.kernels import learned_on

    assert "refitted: " in learned_on("fp32") and "my_ops.csv" in learned_on("fp32")
    basis = pm.predict_step_time("resnet-32", "T4", batch_size=8)["basis"].iloc[0]
    assert "refitted: " in basis and "my_ops.csv" in basis


def test_bad_user_measurements_and_a_folder_in_the_way_are_clear_errors(tmp_path):
    bad = tmp_path / "ops.csv"
    bad.write_text("device,op,latency_ms\nTesla T4,conv3d,1.0\n")
    with pytest.raises(ValueError, match=r"has operators \['conv3d'\] the model does not know"):
        ol.load_op_rows(bad)
    bad.write_text("device,latency_ms\nTesla T4,1.0\n")
    with pytest.raises(ValueError, match=r"lacks the columns \['op'\]"):
        ol.load_op_rows(bad)
    (tmp_path / "dir.npz").mkdir()
    with pytest.raises(IsADirectoryError, match="a folder is there"):
        of.fit_op_model(out=tmp_path / "dir.npz", progress=False)


def test_cli_fit_refuses_a_bad_csv_in_one_line(tmp_path, capsys):
    from perfmodel.cli import main

    bad = tmp_path / "ops.csv"
    bad.write_bytes(b"\xff\xfe\x00\x01binary")
    assert main(["fit", "--with", str(bad), "--out", str(tmp_path / "o.npz")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("perfmodel: ") and len(err.strip().splitlines()) == 1


def test_a_refit_never_overwrites_a_file_it_was_not_asked_to_replace(tmp_path):
    mine = tmp_path / "results.npz"
    mine.write_bytes(b"a user's own file")
    kw = dict(params={"max_iter": 3, "min_gpu_rows": 50}, devices=("P4", "T4"), progress=False)
    with pytest.raises(FileExistsError, match=r"results.npz exists and is not this fit .*\(perfmodel fit --force\)"):
        of.fit_op_model(out=mine, **kw)
    assert mine.read_bytes() == b"a user's own file"
    b = of.fit_op_model(out=mine, force=True, **kw)
    assert b["fitted"] and ol.load_bundle(mine)["model"].training_devices_ == ["P4", "T4"]
