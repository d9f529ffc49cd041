"""A user's fitted-model artifact (``PERFMODEL_OP_MODEL=<file>``, ``perfmodel fit --out <file>``) whose ``.sha256``
matches its bytes is still checked for structure before any tree walker touches it: a hash proves that the file was
not altered after it was written, not that it is well-formed. Every malformed file is refused with one ArtifactError
that names the file; none crashes the process, reads out of bounds or yields a non-finite prediction."""
from __future__ import annotations

import io
import json
import os
import stat
import struct
import zipfile
import zlib

import numpy as np
import pandas as pd
import pytest

import perfmodel.step.op_latency as ol
from perfmodel.step import _artifact
from perfmodel.step._artifact import ArtifactError, TreeEnsemble


# --------------------------------------------------------------------------------------------------- a small artifact


def _design(n=6):
    ops = pd.DataFrame({"op_class": "matmul", "b": 1, "m": [64, 128, 256, 512, 1024, 2048][:n],
                        "n": [64, 256, 128, 512, 2048, 1024][:n], "k": [32, 64, 128, 256, 512, 4096][:n]})
    gpus = ["H100", "A100-PCIe-40GB", "T4", "H100", "A100-PCIe-40GB", "T4"][:n]
    return ol.op_design(ol.op_work(ops), ol.gpu_columns(gpus))


def _small_bundle():
    """An operator model of 4 small trees per ensemble over the model's 9 features (pooled, plus one GPU of its own)."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(0)
    F = rng.normal(size=(300, 9))
    y = 0.3 * F[:, 0] - 0.2 * F[:, 3] + 0.1 * F[:, 8]
    X = _design()
    key = ol.OpLatencyModel._gpu_keys(X)[0]
    m = ol.OpLatencyModel(max_iter=4, max_leaf_nodes=4)
    m.classes_ = ["matmul"]
    m.models_ = {"matmul": _artifact.from_sklearn(HistGradientBoostingRegressor(max_iter=4, max_leaf_nodes=4).fit(F, y))}
    m.gpu_models_ = {(key, "matmul"): _artifact.from_sklearn(HistGradientBoostingRegressor(max_iter=3, max_leaf_nodes=3)
                                                              .fit(F, -y))}
    m.training_devices_, m.n_training_rows_, m.provenance_ = ["H100"], {"matmul": 300}, "a test"
    m.launch_overhead_s_, m.launch_overhead_pooled_s_ = {(key, "matmul"): 2e-5}, {"matmul": 3e-5}
    return {"model": m, "scores": pd.Series({"H100": 0.1}), "logo_predictions": np.ones(3), "key": "k", "step_scores": None}


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """(path, header, arrays, predictions) of a valid small artifact written by save_bundle."""
    path = tmp_path_factory.mktemp("small") / "op.npz"
    ol.save_bundle(_small_bundle(), path)
    header, arrays = _artifact.load(path)
    pred = ol.load_bundle(path)["model"].predict(_design())
    assert np.isfinite(pred).all() and (pred > 0).all()
    return path, dict(header), arrays, pred


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data, compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def _npy(a) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asarray(a), allow_pickle=False)
    return buf.getvalue()


def _members(header, arrays) -> dict[str, bytes]:
    return {"header.json": json.dumps(header).encode(), **{f"{k}.npy": _npy(v) for k, v in arrays.items()}}


def _write(path, data: bytes):
    """The file and a .sha256 beside it that matches its bytes: only the structure can be wrong."""
    path.write_bytes(data)
    path.with_name(path.name + ".sha256").write_text(f"{_artifact.sha256_of(data)}  {path.name}\n")
    return path


def _write_artifact(path, header, arrays):
    return _write(path, _zip(_members(header, arrays)))


def _refused(path, *match):
    with pytest.raises(ArtifactError) as info:
        ol.load_bundle(path)
    msg = str(info.value)
    assert str(path) in msg, msg
    for m in match:
        assert m in msg, msg
    return msg


# ------------------------------------------------------------------------------------------------ 1. indices in range


def test_a_split_on_a_feature_the_model_does_not_have_is_refused(small, tmp_path):
    """bundle_from_arrays checks the splits against the 9 columns of op_latency._features."""
    path, header, arrays, _ = small
    assert ol._features(_design()).shape[1] == 9
    a = dict(arrays)
    f = a["tree0/feature"].copy()
    f[0] = 8  # the last feature: a valid split
    a["tree0/feature"] = f
    assert np.isfinite(ol.load_bundle(_write_artifact(tmp_path / "f8.npz", header, a))["model"].predict(_design())).all()
    for bad in (9, 10**9):
        a = dict(arrays)
        f = a["tree0/feature"].copy()
        f[0] = bad  # the root of the first tree is a split
        a["tree0/feature"] = f
        _refused(_write_artifact(tmp_path / f"f{bad}.npz", header, a), "feature", "9 features", "perfmodel fit")


def test_a_child_in_another_tree_is_refused(small, tmp_path):
    path, header, arrays, _ = small
    a = dict(arrays)
    off, left = a["tree0/offsets"], a["tree0/left"].copy()
    left[0] = off[2] + 1  # the first tree's root points into the second tree
    a["tree0/left"] = left
    _refused(_write_artifact(tmp_path / "child.npz", header, a), "child", "its own tree")


def test_the_walkers_never_read_past_the_features_given():
    ens = TreeEnsemble(0.0, [0, 3], [5, 0, 0], [0.5, 0, 0], [1, 0, 0], [2, 0, 0], [0, 1, 2], [False, True, True], [True] * 3)
    for method in ("auto", "numpy"):
        with pytest.raises(ValueError, match="splits on feature 5"):
            ens.predict(np.zeros((4, 5)), method=method)
        assert ens.predict(np.zeros((4, 6)), method=method).tolist() == [1.0] * 4
    with pytest.raises(ArtifactError, match="its own tree"):
        TreeEnsemble(0.0, [0, 3, 4], [0, 0, 0, 0], [0.5, 0, 0, 0], [1, 0, 0, 0], [3, 0, 0, 0], [0, 1, 2, 3],
                     [False, True, True, True], [True] * 4)


def test_wrong_dtypes_and_shapes_are_refused(small, tmp_path):
    path, header, arrays, _ = small
    cases = {"dtype": ("tree0/threshold", arrays["tree0/threshold"].astype(np.float32)),
             "2-D": ("tree0/value", arrays["tree0/value"][:, None]),
             "flag": ("tree0/is_leaf", arrays["tree0/is_leaf"].view(np.uint8) * 2),
             "length": ("tree0/right", arrays["tree0/right"][:-1]),
             "missing": ("tree0/missing_left", None)}
    for what, (name, value) in cases.items():
        a = dict(arrays)
        if value is None:
            del a[name]
        else:
            a[name] = value
        _refused(_write_artifact(tmp_path / f"{what}.npz", header, a), name, "perfmodel fit")
    bool_as_byte = dict(arrays)
    raw = arrays["tree0/is_leaf"].copy()
    raw.view(np.uint8)[raw.view(np.uint8) == 1] = 7  # a bool that is neither 0 nor 1
    bool_as_byte["tree0/is_leaf"] = raw
    _refused(_write_artifact(tmp_path / "bool.npz", header, bool_as_byte), "tree0/is_leaf")


# ----------------------------------------------------------------------------------------------- 2. finite, bounded


def test_non_finite_or_huge_values_are_refused(small, tmp_path):
    path, header, arrays, _ = small
    h = json.loads(json.dumps(header))
    h["trees"][0]["baseline"] = float("nan")
    _refused(_write_artifact(tmp_path / "nanbase.npz", h, arrays), "baseline", "finite")
    for name, v in (("value", 300.0), ("value", np.inf), ("value", np.nan), ("threshold", np.nan)):
        a = dict(arrays)
        x = a[f"tree0/{name}"].copy()
        x[a["tree0/is_leaf"] if name == "value" else ~a["tree0/is_leaf"]] = v
        a[f"tree0/{name}"] = x
        _refused(_write_artifact(tmp_path / f"{name}{v}.npz", header, a), name)
    h = json.loads(json.dumps(header))
    h["launch_overhead_pooled_s"]["matmul"] = float("inf")
    _refused(_write_artifact(tmp_path / "overhead.npz", h, arrays), "launch_overhead_pooled_s")


def test_the_largest_output_allowed_stays_finite():
    """The bound on |baseline| + Σ max |leaf| keeps 10 ** prediction x any roofline time finite."""
    assert 10.0 ** _artifact.MAX_ABS_OUTPUT * 1e30 < np.finfo(float).max
    ok = TreeEnsemble(1.0, [0, 1], [0], [0.0], [0], [0], [_artifact.MAX_ABS_OUTPUT - 1], [True], [True])
    assert np.isfinite(10 ** ok.predict(np.zeros((1, 1))))
    with pytest.raises(ArtifactError, match="could not occur"):
        TreeEnsemble(1.0, [0, 1], [0], [0.0], [0], [0], [_artifact.MAX_ABS_OUTPUT], [True], [True])


# ------------------------------------------------------------------------------------- 3. sizes bounded, header form


def test_a_zip_bomb_header_is_refused_before_it_is_read(small, tmp_path, monkeypatch):
    path, header, arrays, _ = small
    members = _members(header, arrays)
    members["header.json"] = members["header.json"] + b" " * (_artifact.MAX_HEADER_BYTES + 1)  # deflates to a few kB
    data = _zip(members)
    assert len(data) < 200_000
    # and one whose header declares 2 GiB (the central directory's uncompressed size, as a bomb would)
    members = _members(header, arrays)
    bomb = bytearray(_zip(members))
    cd = bytes(bomb).find(b"PK\x01\x02")  # the central directory's first entry: header.json
    struct.pack_into("<I", bomb, cd + 24, 2**31)
    read = []
    real_open = zipfile.ZipFile.open
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, name, *a, **k: read.append(getattr(name, "filename", name))
                        or real_open(self, name, *a, **k))
    for name, d in (("big.npz", data), ("bomb.npz", bytes(bomb))):
        read.clear()
        _refused(_write(tmp_path / name, d), "header.json", "MiB")
        assert "header.json" not in read  # refused from the sizes the ZIP declares, before inflating a byte


def test_a_member_inflating_past_its_declared_size_is_refused_in_bounded_memory(tmp_path):
    """A header.json that declares 100 bytes and inflates to 50 MiB: read no further than declared, then refused."""
    import tracemalloc

    data = bytearray(_zip({"header.json": b"{" + b" " * (50 * 2**20) + b"}"}))
    struct.pack_into("<I", data, data.find(b"PK\x03\x04") + 22, 100)  # the local header's uncompressed size
    struct.pack_into("<I", data, data.find(b"PK\x01\x02") + 24, 100)  # the central directory's
    path = _write(tmp_path / "lie.npz", bytes(data))
    tracemalloc.start()
    try:
        _refused(path, "ZIP cannot be read")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, peak / 2**20


def test_an_array_claiming_a_huge_shape_is_refused(small, tmp_path):
    path, header, arrays, _ = small
    members = _members(header, arrays)
    raw = members["tree0/value.npy"]
    members["tree0/value.npy"] = raw.replace(f"'shape': ({len(arrays['tree0/value'])},)".encode(),
                                             b"'shape': (1000000000000,)")
    assert members["tree0/value.npy"] != raw
    _refused(_write(tmp_path / "shape.npz", _zip(members)), "tree0/value", "shape")


@pytest.mark.parametrize("change", ["list", "no_trees", "unknown_param", "tree_not_dict", "no_format", "not_json",
                                    "deep", "class_without_pooled"])
def test_a_malformed_header_is_one_clear_error(small, tmp_path, change):
    path, header, arrays, _ = small
    h = json.loads(json.dumps(header))
    if change == "list":
        h = [h]
    elif change == "no_trees":
        del h["trees"]
    elif change == "unknown_param":
        h["params"]["max_depth_of_doom"] = 3
    elif change == "tree_not_dict":
        h["trees"][0] = "tree0"
    elif change == "no_format":
        del h["format"]
    elif change == "class_without_pooled":
        h["classes"] = ["matmul", "conv"]
    members = _members(h, arrays)
    if change == "not_json":
        members["header.json"] = b"\xff{not json"
    elif change == "deep":
        members["header.json"] = b"[" * 200_000 + b"]" * 200_000
    msg = _refused(_write(tmp_path / f"{change}.npz", _zip(members)), "perfmodel fit")
    assert "Traceback" not in msg


# ----------------------------------------------------------------------------------------------------- 4. unreadable


def test_an_unreadable_artifact_is_an_artifact_error(small, tmp_path, monkeypatch):
    path, *_ = small
    real_open = open

    def deny(file, *a, **k):
        if str(file).endswith(".npz"):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *a, **k)

    monkeypatch.setattr(_artifact, "open", deny, raising=False)
    _refused(path, "cannot be read", "Permission denied")
    monkeypatch.undo()

    def deny_side(file, *a, **k):
        if str(file).endswith(".sha256"):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *a, **k)

    monkeypatch.setattr(_artifact, "open", deny_side, raising=False)
    _refused(path, "cannot be read", ".sha256")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads any file")
def test_an_artifact_without_read_permission_is_an_artifact_error(small, tmp_path):
    path, *_ = small
    mine = _write(tmp_path / "locked.npz", path.read_bytes())
    mine.chmod(0)
    try:
        _refused(mine, "cannot be read")
    finally:
        mine.chmod(0o644)


# ------------------------------------------------------------------------------------------ 5. permissions, one step


def test_save_writes_files_others_can_read(tmp_path):
    path = tmp_path / "op.npz"
    ol.save_bundle(_small_bundle(), path)
    for p in (path, path.with_name("op.npz.sha256")):
        assert stat.S_IMODE(p.stat().st_mode) == 0o644


def test_a_crash_at_any_step_of_save_leaves_a_pair_that_loads(small, tmp_path, monkeypatch):
    """save replaces the .sha256 (listing both hashes), then the file, then the .sha256 (the new hash only): killed
    after any rename, the folder holds the previous model or the new one, each with a .sha256 that accepts it."""
    _, _, _, old_pred = small
    path = tmp_path / "op.npz"
    ol.save_bundle(_small_bundle(), path)
    new = _small_bundle()
    new["model"].launch_overhead_pooled_s_ = {"matmul": 7e-5}
    new_pred = None
    real_replace = os.replace
    seen = set()
    for crash_after in range(0, 4):
        ol.save_bundle(_small_bundle(), path)  # the previous model, whole
        calls = []

        def replace(src, dst, *a, **k):
            if len(calls) == crash_after:
                raise KeyboardInterrupt("killed")
            calls.append(dst)
            return real_replace(src, dst, *a, **k)

        monkeypatch.setattr(_artifact.os, "replace", replace)
        try:
            ol.save_bundle(new, path)
        except KeyboardInterrupt:
            pass
        monkeypatch.setattr(_artifact.os, "replace", real_replace)
        pred = ol.load_bundle(path)["model"].predict(_design())
        which = "old" if np.array_equal(pred, old_pred) else "new"
        if which == "new":
            new_pred = pred if new_pred is None else new_pred
            assert np.array_equal(pred, new_pred)
        seen.add(which)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["op.npz", "op.npz.sha256"]  # no temp file left
        assert _artifact.recorded_sha256(path) == _artifact.sha256_of(path.read_bytes())
    assert seen == {"old", "new"}
    assert len(_artifact.recorded_sha256s(path)) == 1  # a finished save lists the new hash only


def test_a_reader_racing_a_save_sees_a_matching_pair(small, tmp_path, monkeypatch):
    """A reader that read the old file and then the finished save's .sha256 reads both again."""
    path = tmp_path / "op.npz"
    ol.save_bundle(_small_bundle(), path)
    old = path.read_bytes()
    new = _small_bundle()
    new["model"].launch_overhead_pooled_s_ = {"matmul": 7e-5}
    real = _artifact._read_bounded
    calls = []

    def stale_then_fresh(p, *a, **k):
        calls.append(p)
        if len(calls) == 1:  # the reader reads the old file, then the writer runs to completion
            ol.save_bundle(new, path)
            return old
        return real(p, *a, **k)

    monkeypatch.setattr(_artifact, "_read_bounded", stale_then_fresh)
    b = ol.load_bundle(path)
    assert b["model"].launch_overhead_pooled_s_ == {"matmul": 7e-5}


# ---------------------------------------------------------------------------------------------------------- fuzzing


def _mutate_header(h, rng):
    h = json.loads(json.dumps(h))
    junk = [None, -1, 0, 2**70, 1e308, float("nan"), float("-inf"), "x", [], {}, [1, 2], {"a": 1}, True, 1e-300, -0.0]
    nodes = []

    def walk(o, parent, key):
        nodes.append((parent, key))
        if isinstance(o, dict):
            for k in list(o):
                walk(o[k], o, k)
        elif isinstance(o, list):
            for i in range(len(o)):
                walk(o[i], o, i)

    walk(h, None, None)
    parent, key = nodes[rng.integers(len(nodes))]
    action = rng.integers(3)
    if parent is None:
        return junk[rng.integers(len(junk))]
    if action == 0 and isinstance(parent, dict):
        del parent[key]
    elif action == 1 and isinstance(parent, dict):
        parent[f"extra{rng.integers(9)}"] = junk[rng.integers(len(junk))]
    else:
        parent[key] = junk[rng.integers(len(junk))]
    return h


def test_fuzzed_artifacts_never_crash_nor_predict_non_finite(small, tmp_path):
    path, header, arrays, _ = small
    base = _members(header, arrays)
    names = sorted(n for n in base if n.endswith(".npy"))
    rng = np.random.default_rng(20240611)
    X = _design()
    outcomes = {"refused": 0, "finite": 0}
    for i in range(400):
        members = dict(base)
        kind = i % 4
        if kind in (0, 1):  # flip bytes in an array member (its .npy header or its numbers)
            name = names[rng.integers(len(names))]
            raw = bytearray(members[name])
            lo = 0 if kind == 0 else 128
            for _ in range(rng.integers(1, 4)):
                pos = int(rng.integers(lo, len(raw))) if len(raw) > lo else 0
                raw[pos] ^= 1 << int(rng.integers(8))
            members[name] = bytes(raw)
            data = _zip(members)
        elif kind == 2:  # a header field deleted, added or replaced by junk
            members["header.json"] = json.dumps(_mutate_header(header, rng)).encode()
            data = _zip(members)
        else:  # bytes of the ZIP itself
            raw = bytearray(_zip(members))
            for _ in range(rng.integers(1, 4)):
                raw[int(rng.integers(len(raw)))] ^= 1 << int(rng.integers(8))
            data = bytes(raw)
        p = _write(tmp_path / "fuzz.npz", data)
        try:
            model = ol.load_bundle(p)["model"]
        except ArtifactError as exc:
            assert str(p) in str(exc)
            outcomes["refused"] += 1
            continue
        pred = model.predict(X)
        assert np.isfinite(pred).all() and (pred > 0).all(), (i, pred)
        assert np.isfinite(model.predict_in_stream(X)).all()
        outcomes["finite"] += 1
    assert outcomes["refused"] > 50 and outcomes["finite"] > 20, outcomes


def test_valid_artifacts_load_as_before(small):
    """The shipped models pass every check and predict exactly what the fitted trees do."""
    import perfmodel.step.half_precision as hp

    ol.load_bundle(ol.shipped_artifact_path(), sha256=ol.SHIPPED_SHA256)
    hp.load_half_bundle()
    path, header, arrays, pred = small
    assert np.array_equal(ol.load_bundle(path)["model"].predict(_design()), pred)
    assert _artifact.MAX_ABS_OUTPUT >= 50  # the shipped models reach 7.4 in the worst case
