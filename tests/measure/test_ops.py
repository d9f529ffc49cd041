"""`perfmodel measure ops` / measure_ops: operator microbenchmarks in NeuSight's schema, appended never overwritten,
read back by load_op_rows (precision flowing into the features) and refitted by fit_op_model."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import perfmodel.step.op_latency as ol
from perfmodel.step import op_fit as of
from perfmodel.cli import main
from perfmodel.measure import MeasurementFileError
from perfmodel.measure.ops import OP_COLUMNS, SHAPE_COLUMNS, check_precision, measure_ops, op_grid

QUICK = ["measure", "ops", "--device", "cpu", "--quick", "--repeats", "2", "--warmup", "1"]


@pytest.fixture(scope="module")
def quick_rows() -> pd.DataFrame:
    return measure_ops("cpu", sizes="quick", repeats=2, warmup=1)


def test_quick_cpu_run_gives_rows_in_neusight_schema(quick_rows):
    df = quick_rows
    assert list(df.columns) == OP_COLUMNS
    assert len(df) == 21 and set(df["op"]) == set(ol.NEUSIGHT_OP_CLASS)  # every op NeuSight measures
    lat = df["latency_ms"].to_numpy(float)
    assert np.isfinite(lat).all() and (lat > 0).all() and (df["latency_min_ms"] <= df["latency_ms"]).all()
    assert df["device"].str.startswith("CPU: ").all() and (df["source_name"] == df["device"]).all()
    assert set(df["precision"]) == {"fp32"} and set(df["dtype"]) == {"float32"} and set(df["timer"]) == {"perf_counter"}
    assert (df["torch_version"] == torch.__version__).all() and df["timestamp_utc"].str.endswith("Z").all()
    mm = df[df["op"] == "bmm"]
    assert mm[["b", "m", "n", "k"]].notna().all().all() and mm[["h", "in_channels"]].isna().all().all()


def test_default_grid_has_enough_rows_per_class_for_a_gpu_model_of_its_own():
    g = op_grid()
    per_class = g["op"].map(ol.NEUSIGHT_OP_CLASS).value_counts()
    assert set(per_class.index) == set(ol.OP_CLASSES)
    assert (per_class >= ol.OpLatencyModel().min_gpu_rows).all(), per_class
    assert list(g.columns) == ["op", *SHAPE_COLUMNS]
    w = ol.op_work(g.assign(op_class=g["op"].map(ol.NEUSIGHT_OP_CLASS)))
    assert (w["flops"] <= 1e11 * 1.001).all()
    only = op_grid("quick", classes=("softmax", "gelu"))
    assert list(only["op"]) == ["softmax", "softmax", "gelu"]
    mine = op_grid([{"op": "bmm", "b": 1, "m": 8, "n": 8, "k": 8}])
    assert mine.loc[0, "stride"] is pd.NA and mine.loc[0, "k"] == 8
    with pytest.raises(ValueError, match=r"classes must name operator classes .* got 'attention'"):
        op_grid(classes=("attention",))
    with pytest.raises(ValueError, match=r"needs the dimensions \['b', 'm', 'n', 'k'\]"):
        op_grid([{"op": "bmm", "b": 1, "m": 8, "n": 8}])


def test_cli_writes_then_appends_never_overwrites_and_refuses_other_columns(tmp_path, capsys):
    out = tmp_path / "ops.csv"
    assert main(QUICK + ["--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "21 operator shapes timed on CPU: " in text and f"perfmodel fit --with {out}" in text
    first = out.read_bytes()
    assert main(QUICK + ["--out", str(out), "--classes", "layernorm"]) == 0
    assert out.read_bytes().startswith(first)  # the first run's rows kept byte for byte
    back = pd.read_csv(out)
    assert list(back.columns) == OP_COLUMNS and len(back) == 23
    other = tmp_path / "mine.csv"
    other.write_text("model,step_time_s\nresnet-32,0.1\n")
    capsys.readouterr()
    assert main(QUICK + ["--out", str(other)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("perfmodel: ") and "has the columns ['model', 'step_time_s']" in err and len(err.splitlines()) == 1
    assert other.read_text() == "model,step_time_s\nresnet-32,0.1\n"
    with pytest.raises(MeasurementFileError, match="write to a new file"):
        measure_ops("cpu", sizes="quick", repeats=1, out=other)


def test_sky_writes_a_task_yaml_that_parses_and_names_the_command(tmp_path, capsys, monkeypatch):
    yaml = pytest.importorskip("yaml")
    monkeypatch.chdir(tmp_path)
    assert main(["measure", "ops", "--sky", "A100-80GB:1", "--precision", "bf16", "--yaml", "task.yaml"]) == 0
    text = capsys.readouterr().out
    task = yaml.safe_load((tmp_path / "task.yaml").read_text())
    assert task["resources"]["accelerators"] == "A100-80GB:1"
    assert "pip install" in task["setup"] and "perfmodel" in task["setup"]
    assert "perfmodel measure ops --device cuda --precision bf16 --out ~/perfmodel-ops/ops.csv" in task["run"]
    for line in ("sky launch -c perfmodel-ops task.yaml", "rsync -Pavz perfmodel-ops:~/perfmodel-ops/ops.csv ops-A100-80GB-bf16.csv",
                 "sky down perfmodel-ops", "perfmodel fit --with ops-A100-80GB-bf16.csv"):
        assert line in text
    assert not list(tmp_path.glob("*.csv"))  # nothing measured here
    before = (tmp_path / "task.yaml").read_bytes()
    assert main(["measure", "ops", "--sky", "--yaml", "task.yaml"]) == 1  # never overwritten
    assert "File exists (perfmodel never overwrites a file" in capsys.readouterr().err
    assert (tmp_path / "task.yaml").read_bytes() == before


def _as_gpu(rows: pd.DataFrame, path, **cols):
    """The CPU rows relabelled as measured on an H100 (a stand-in for a GPU run: the schema is the same)."""
    rows.assign(device="NVIDIA H100 80GB HBM3", source_name="NVIDIA H100 80GB HBM3", **cols).to_csv(path, index=False)
    return path


def test_rows_round_trip_through_load_op_rows_with_their_precision(quick_rows, tmp_path):
    fp32 = ol.load_op_rows(_as_gpu(quick_rows, tmp_path / "fp32.csv"))
    plain = ol.load_op_rows(_as_gpu(quick_rows.drop(columns="precision"), tmp_path / "plain.csv"))
    assert (fp32["precision"] == "fp32").all() and "precision" not in plain.columns  # kept: it says which model a row refits
    pd.testing.assert_frame_equal(fp32.drop(columns="precision"), plain)  # an fp32 row is featurised as NeuSight's are
    assert set(fp32["gpu"]) == {"H100"} and np.allclose(fp32["latency_s"], quick_rows["latency_ms"] / 1e3)
    bf16 = ol.load_op_rows(_as_gpu(quick_rows, tmp_path / "bf16.csv", precision="bf16"))
    assert np.allclose(bf16["bytes"], fp32["bytes"] / 2) and np.allclose(bf16["flops"], fp32["flops"])
    mm = bf16["op_class"].isin(["matmul", "conv"]).to_numpy()
    from perfmodel.datasets import peak_tflops

    assert np.allclose(bf16.loc[mm, "peak_flops_per_s"], peak_tflops("H100", "bf16") * 1e12)
    assert np.allclose(bf16.loc[~mm, "peak_flops_per_s"], peak_tflops("H100", "fp32") * 1e12)  # vector units
    with pytest.raises(ValueError, match=r"has precision\(s\) \['int8'\]; expected some of \['fp32', 'tf32', 'bf16', 'fp16'\]"):
        ol.load_op_rows(_as_gpu(quick_rows, tmp_path / "int8.csv", precision="int8"))
    cpu = tmp_path / "cpu.csv"
    quick_rows.to_csv(cpu, index=False)
    with pytest.raises(ValueError, match=r"has rows measured on a CPU \(CPU: .*\); the operator model predicts GPUs"):
        ol.load_op_rows(cpu)


def test_measured_rows_refit_the_operator_model(quick_rows, tmp_path):
    # Kept to seconds by a small fit: NeuSight's T4 rows only and 5 boosting iterations (the shipped model: five GPUs,
    # 300 iterations); min_gpu_rows 5 gives the 21 measured rows a model of their own where a class has 5 of them.
    csv = _as_gpu(quick_rows, tmp_path / "ops.csv", precision="fp32")
    b = of.fit_op_model(csv, out=tmp_path / "mine.npz", params={"max_iter": 5, "min_gpu_rows": 5}, devices=("T4",),
                        progress=False)
    assert b["fitted"] and b["model"].training_devices_ == ["H100", "T4"]
    assert "plus 21 user rows from" in b["model"].provenance_ and "(H100)" in b["model"].provenance_
    assert any(k.startswith("H100|") for k, _ in b["model"].gpu_models_)
    assert ol.load_bundle(tmp_path / "mine.npz")["model"].training_devices_ == ["H100", "T4"]
    assert not b["half"]["paths"]  # single-precision rows refit the FP32-learned model only


def test_measured_half_precision_rows_refit_the_half_precision_models(quick_rows, tmp_path):
    from perfmodel.step.half_precision import HALF_CLASSES, companion_paths

    csv = _as_gpu(quick_rows, tmp_path / "ops.csv", precision="bf16")
    b = of.fit_op_model(csv, out=tmp_path / "mine.npz", params={"max_iter": 5, "min_gpu_rows": 5}, devices=("P4", "T4"),
                        progress=False)
    assert "user rows" not in b["model"].provenance_ and b["model"].training_devices_ == ["P4", "T4"]
    gemms = int(quick_rows["op"].map(ol.NEUSIGHT_OP_CLASS).isin(HALF_CLASSES).sum())
    assert b["half"]["half_gemm"] == gemms > 0 and companion_paths(tmp_path / "mine.npz")["half"].is_file()
    assert b["half"]["half_unused"] == int((quick_rows["op"] == "conv").sum())


def test_bad_device_and_precision_are_clear_errors(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=r"device 'cuda' is not available: .* Use device 'cpu'"):
        measure_ops("cuda", sizes="quick")
    with pytest.raises(ValueError, match=r"precision must be one of \['fp32', 'tf32', 'bf16', 'fp16'\] .* got 'fp8'"):
        measure_ops("cpu", "fp8", sizes="quick")
    with pytest.raises(ValueError, match=r"precision 'tf32' is a mode of NVIDIA tensor cores .* Use fp32 there"):
        measure_ops("cpu", "tf32", sizes="quick")
    with pytest.raises(ValueError, match=r"repeats must be an integer ≥ 1; got 0"):
        measure_ops("cpu", sizes="quick", repeats=0)
    assert check_precision("cpu", "bfloat16") == "bf16"


def test_bf16_on_a_device_without_it_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda dev=None: (7, 5))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda dev=None: "Tesla T4")
    with pytest.raises(ValueError, match=r"precision 'bf16' is not available on 'Tesla T4' \(compute capability 7.5\): .* "
                                         r"Use fp16 or fp32"):
        check_precision("cuda:0", "bf16")
    assert check_precision("cuda:0", "fp16") == "fp16"

    def no_bf16(*a, **k):
        raise RuntimeError('"LayerNormKernelImpl" not implemented for \'BFloat16\'')

    monkeypatch.setattr(torch.nn.functional, "layer_norm", no_bf16)
    with pytest.raises(ValueError, match=r"precision 'bf16' is not available on device 'cpu' \(RuntimeError: .*\)\. Use fp32"):
        check_precision("cpu", "bf16")


def test_cli_errors_are_one_line(capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for argv, start in ((["measure", "ops", "--quick"], "perfmodel: device 'cuda' is not available"),
                        (QUICK + ["--precision", "int4"], "perfmodel: precision must be one of"),
                        (QUICK + ["--classes", "attention"], "perfmodel: classes must name operator classes")):
        assert main(argv) == 1
        err = capsys.readouterr().err.strip()
        assert err.startswith(start) and len(err.splitlines()) == 1 and "Traceback" not in err, err
