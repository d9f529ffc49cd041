"""The bandwidth model of memory-bound kernels: monotone in bytes and bandwidth, the shipped JSON read without the
data and rebuilt from it, clear errors."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfmodel.step import bandwidth as bw
from perfmodel.step._artifact import ArtifactError
from perfmodel.step.op_latency import KERNEL_MIN_S

_HAS_NEUSIGHT = (Path(os.environ.get("PERFMODEL_DATA", "")) / "sitar-lab" / "NeuSight").is_dir()
needs_data = pytest.mark.skipif(not _HAS_NEUSIGHT, reason="needs NeuSight's microbenchmarks in the data mirror (PERFMODEL_DATA)")


def _rows(cls, nbytes, bandwidth):
    return pd.DataFrame({"op_class": cls, "bytes": nbytes, "bandwidth_bytes_per_s": bandwidth})


def test_shipped_model_is_read_without_the_data_and_is_monotone(monkeypatch):
    monkeypatch.setattr(bw, "_LOADED", {})
    monkeypatch.setattr(bw, "bandwidth_rows", lambda: (_ for _ in ()).throw(AssertionError("read the data")))
    m = bw.bandwidth_model()
    assert m.classes_ == sorted(bw.MEMORY_BOUND_CLASSES)
    assert m.training_devices_ == ["A100-PCIe-40GB", "P100", "P4", "T4", "V100-PCIe-32GB"] and "pooled" in m.provenance_
    assert all(0.3 < e < 1.2 for e in m.efficiency_.values())
    nbytes = np.logspace(3, 10, 50)
    for c in bw.MEMORY_BOUND_CLASSES:
        t = m.predict_in_stream(_rows(c, nbytes, 3.35e12))
        assert (np.diff(t) >= 0).all() and (t >= KERNEL_MIN_S).all()
        # more bandwidth never makes a kernel slower, and a large one scales with it
        t2 = m.predict_in_stream(_rows(c, nbytes, 8e12))
        assert (t2 <= t).all() and t2[-1] < 0.5 * t[-1]
        big = m.predict_in_stream(_rows(c, [4e9], 1e12))[0]
        assert big == pytest.approx(m.latency_s_[c] + 4e9 / (m.efficiency_[c] * 1e12))


def test_errors_say_what_was_wrong(tmp_path):
    m = bw.bandwidth_model()
    with pytest.raises(ValueError, match=r"not fitted on the operator class\(es\) \['matmul'\]"):
        m.predict_in_stream(_rows("matmul", [1e6], 1e12))
    with pytest.raises(ValueError, match=r"X lacks the columns \['bandwidth_bytes_per_s'\]"):
        m.predict_in_stream(pd.DataFrame({"op_class": ["softmax"], "bytes": [1.0]}))
    with pytest.raises(ValueError, match="must be positive and finite"):
        m.predict_in_stream(_rows("softmax", [np.nan], 1e12))
    with pytest.raises(TypeError, match="takes the DataFrame"):
        m.predict_in_stream(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="one positive, finite kernel time"):
        bw.BandwidthModel().fit(_rows("softmax", [1e6, 2e6], 1e12), [1e-5])
    bad = tmp_path / "bw.json"
    bad.write_text('{"latency_s": {"softmax": -1}, "efficiency": {"softmax": 0.5}}')
    with pytest.raises(ArtifactError, match="positive, finite latency_s and efficiency"):
        bw.load_bandwidth_bundle(bad)
    bad.write_text("[1, 2]")
    with pytest.raises(ArtifactError, match="not JSON of a perfmodel bandwidth model"):
        bw.load_bandwidth_bundle(bad)
    with pytest.raises(ArtifactError, match="altered or truncated"):
        bw.load_bandwidth_bundle(bad, sha256="0" * 64)


def test_memory_bound_kernels_in_half_precision_use_it():
    from perfmodel.step.kernels import kernel_seconds
    from perfmodel.step.op_latency import WORK_COLUMNS, step_design

    work = pd.DataFrame([("elementwise", 1e6, 6e8, 1e6 / 512, 5e7, 1, 1, 1), ("layernorm", 1e6, 2e8, 4096, 4096, 1, 4096, 1)],
                        columns=WORK_COLUMNS)
    t = kernel_seconds(work, "H100", "bf16")
    np.testing.assert_array_equal(t, bw.bandwidth_model().predict_in_stream(step_design(work, "H100", "bf16")))


@needs_data
def test_rebuild_gives_the_shipped_bytes_and_the_choice_was_made_on_training_gpus():
    b = bw.fit_bandwidth_bundle()
    assert bw._to_bytes(b) == bw.bandwidth_artifact_path().read_bytes()
    logo = b["leave_one_gpu_out_time_weighted_ape_pct"]
    assert set(logo) == {"A100-PCIe-40GB", "P100", "P4", "T4", "V100-PCIe-32GB"}
    assert np.mean(list(logo.values())) < 25
