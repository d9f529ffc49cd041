"""plan_cloud: today's GPU prices, the search over GPU x count x batch x strategy x spot, its errors and its choices."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("transformers")

import perfmodel as pm
from perfmodel import datasets as ds
from perfmodel._errors import UnknownNameError
from perfmodel.datasets.reference import GPU_PRICE_COLUMNS, load_gpu_prices
from perfmodel.step.strategy import StrategyError
from perfmodel.planning import PlanInfeasibleError, cheapest_within_deadline, fastest_within_budget, plan_cloud

CFG = dict(model_type="gpt2", n_layer=4, n_embd=256, n_head=8, vocab_size=1000, n_positions=128, bos_token_id=0, eos_token_id=0)
# a user's own table for the tests (not quotes): one 8-GPU and one 1-GPU instance type, with spot prices
PRICES = pd.DataFrame(dict(provider=["aws", "gcp"], region=["us-east-1", "us-central1"], instance_type=["big", "small"],
                           gpu=["A100", "L4"], gpus_per_instance=[8, 1], on_demand_usd_per_h=[32.0, 0.8],
                           spot_usd_per_h=[12.0, 0.3], price_date=["test", "test"]))
KW = dict(prices=PRICES, input_shape=(128,), steps=20000, n_gpus=(1, 2), batch_sizes=(8, 16), strategies=("dp", "fsdp"))


@pytest.fixture(scope="module")
def frame():
    return plan_cloud(CFG, **KW)


def test_gpu_price_table_is_sourced_and_listed():
    p = load_gpu_prices()
    assert tuple(p.columns) == GPU_PRICE_COLUMNS and len(p) >= 2
    assert p["source_url"].str.startswith("https://").all() and p["price_date"].str.len().gt(0).all()
    assert set(p["gpu"]) <= set(ds.CATALOG_GPU_IDS)
    row = p.set_index(["provider", "region", "instance_type"]).loc[("aws", "us-east-1", "p5.48xlarge")]
    assert (row["gpu"], row["gpus_per_instance"], row["on_demand_usd_per_h"]) == ("H100", 8, 55.04)
    assert "gpu_prices" in set(ds.list_datasets(with_shape=False)["name"])


def test_plan_rows_columns_and_costs(frame):
    assert {"time_h", "cost_usd", "memory_per_gpu_bytes", "fits", "expected_revocations", "feasible", "pareto", "extrapolated"} <= set(frame.columns)
    # one GPU: one "single" row per batch, GPU, price row and spot/on-demand; two GPUs: dp and fsdp
    assert len(frame) == 2 * 2 * 2 * (1 + 2)
    assert set(frame.loc[frame["n_gpus"] == 1, "strategy"]) == {"single"}
    # whole instances are paid: 2 A100 rent one 8-GPU instance; 2 L4 two 1-GPU instances
    a = frame[(frame["gpu"] == "A100") & (frame["n_gpus"] == 2) & ~frame["spot"]].iloc[0]
    assert a["n_instances"] == 1 and a["usd_per_h"] == 32.0
    l4 = frame[(frame["gpu"] == "L4") & (frame["n_gpus"] == 2) & frame["spot"]].iloc[0]
    assert l4["n_instances"] == 2 and l4["usd_per_h"] == pytest.approx(0.6)
    # the run is billed, the wait for spot capacity is not
    np.testing.assert_allclose(frame["cost_usd"], frame["usd_per_h"] * (frame["time_h"] - frame["capacity_wait_h"]))
    # spot rows pay revocations and checkpoints; on-demand rows only the hardware failures of their GPUs, which on
    # two GPUs for a few hours are a restart from scratch far less than a second on average (test_cloud_failures)
    sp, od = frame[frame["spot"]], frame[~frame["spot"]]
    assert (sp["restart_overhead_h"] > 0).all() and (sp["time_h"] > sp["compute_time_h"]).all()
    assert (od["expected_revocations"] == 0).all() and od["checkpoint_s"].isna().all()
    assert ((od["restart_overhead_h"] > 0) & (od["restart_overhead_h"] < 1e-3 * od["compute_time_h"])).all()
    assert sp["extrapolated"].str.contains("spot lifetimes of").all()
    # how far each GPU lies outside what the kernels were learned on at bf16 (the step predictor's phrases): the L4's
    # GEMM peak lies below the A40 and A100 the half-precision GEMM model was fitted on, the A100's inside
    from perfmodel.datasets import gpu_spec
    from perfmodel.step.kernels import _extrapolation_notes

    for g, rows in frame.groupby("gpu"):
        want = "; ".join(_extrapolation_notes(gpu_spec(g), "bf16"))
        assert rows["extrapolated"].str.startswith(want).all() if want else ~rows["extrapolated"].str.contains("GEMM").any()
    assert frame.loc[frame["gpu"] == "L4", "extrapolated"].str.contains("bf16 GEMM peak").all()
    assert not frame.loc[frame["gpu"] == "A100", "extrapolated"].str.contains("bf16|FP32").any()


def test_noise_scale_plans_time_to_the_same_target():
    f = plan_cloud(CFG, **{**KW, "b_simple": 16.0, "reference_batch": 8})
    steps = f.drop_duplicates("batch_size").set_index("batch_size")["steps"]
    assert steps[8] == 20000 and steps[16] == pytest.approx(20000 * (1 + 16 / 16) / (1 + 16 / 8))


def test_a_gpu_without_a_price_says_which_rows_exist():
    with pytest.raises(ValueError, match=r"No price for GPU H100: the price table has aws us-east-1 big \(8xA100\); gcp us-central1 "
                                         r"small \(1xL4\)\. Pass prices= \(Python\) or --prices FILE"):
        plan_cloud(CFG, **{**KW, "gpus": ["H100"]})


def test_shipped_table_has_no_t4_price():
    with pytest.raises(ValueError, match=r"No price for GPU T4: the price table has aws us-east-1 p4d.24xlarge \(8xA100\)"):
        plan_cloud(CFG, gpus=["T4"], input_shape=(128,), steps=10)


def test_unknown_interconnect():
    with pytest.raises(UnknownNameError, match=r"Unknown interconnect 'warp-drive'. Expected one of: nvlink, infinity-fabric, pcie3"):
        plan_cloud(CFG, **{**KW, "interconnect": "warp-drive"})


def test_a_strategy_that_does_not_divide_the_model():
    # 8 heads do not split over 3 GPUs: nothing is left, predict_step_time's reason is raised
    with pytest.raises(StrategyError, match=r"strategy='tp' over 3 GPUs does not divide gpt2: attention heads = 8"):
        plan_cloud(CFG, **{**KW, "n_gpus": (3,), "strategies": ("tp",), "batch_sizes": (6,)})


def test_strategies_that_do_not_divide_are_skipped_and_listed():
    f = plan_cloud(CFG, **{**KW, "n_gpus": (3,), "strategies": ("tp", "pp"), "batch_sizes": (6,)})
    assert set(f["strategy"]) == {"pp"}
    skipped = pd.DataFrame(f.attrs["skipped"])
    assert (skipped["strategy"] == "tp").all() and skipped["reason"].str.contains("attention heads = 8").all()


def test_no_amount_of_training_plans_the_default_samples_in_every_face():
    """pm.plan, plan_cloud and `perfmodel plan-cloud` plan DEFAULT_SAMPLES when neither steps nor samples is given
    (pm.plan raised while the command planned 320,000 samples: two faces, two defaults)."""
    import perfmodel as pm
    from perfmodel.cli import _default_samples
    from perfmodel.planning.cloud import DEFAULT_SAMPLES

    kw = {k: v for k, v in KW.items() if k != "steps"}
    f = plan_cloud(CFG, **kw)
    assert (f["steps"] == np.ceil(DEFAULT_SAMPLES / f["batch_size"])).all()
    g = pm.plan(CFG, gpus=sorted(set(PRICES["gpu"])), world="cloud", **kw)
    assert g.drop(columns="basis").equals(f) and (g["basis"] == "cloud").all()
    pd.testing.assert_frame_equal(f, plan_cloud(CFG, **kw, samples=DEFAULT_SAMPLES))
    assert _default_samples() == DEFAULT_SAMPLES
    with pytest.raises(ValueError, match=r"b_simple= needs steps="):
        plan_cloud(CFG, **kw, b_simple=10.0, reference_batch=8)


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"b_simple and reference_batch go together"):
        plan_cloud(CFG, **{**KW, "b_simple": 10.0})
    with pytest.raises(ValueError, match=r"prices lacks the columns \['gpus_per_instance'"):
        plan_cloud(CFG, **{**KW, "prices": PRICES.drop(columns="gpus_per_instance")})


def test_spot_only_needs_a_spot_price():
    no_spot = PRICES.assign(spot_usd_per_h=np.nan)
    with pytest.raises(ValueError, match=r"No candidate is left: no spot price for aws us-east-1 big"):
        plan_cloud(CFG, **{**KW, "prices": no_spot, "spot": True})


def test_choices_say_why(frame):
    deadline = float(frame["time_h"].median())
    c = cheapest_within_deadline(frame, deadline)
    ok = frame[(frame["time_h"] <= deadline) & frame["fits"]]
    assert c["cost_usd"] == ok["cost_usd"].min()
    assert c["why"].startswith(f"cheapest of the {len(ok)} candidates that fit in GPU memory and finish within {deadline:g} h: ")
    assert "next: " in c["why"]
    budget = float(frame["cost_usd"].median())
    fb = fastest_within_budget(frame, budget)
    assert fb["time_h"] == frame[(frame["cost_usd"] <= budget) & frame["fits"]]["time_h"].min()
    assert fb["why"].startswith("fastest of the ")
    with pytest.raises(PlanInfeasibleError, match=r"No candidate that fits in GPU memory would finish within 1e-09 h\. The closest: "):
        cheapest_within_deadline(frame, 1e-9)


def test_memory_that_does_not_fit_is_never_feasible(frame):
    f = frame.copy()
    f.loc[f["gpu"] == "L4", "fits"] = False  # as if L4 were too small
    c = fastest_within_budget(f, 1e9)
    assert c["gpu"] == "A100" or c["fits"]


@settings(max_examples=8, deadline=None)
@given(a=st.floats(1e-4, 1.0), b=st.floats(1e-4, 1.0))
def test_feasible_set_monotone_in_deadline(a, b):
    lo, hi = sorted((a, b))
    f_lo = plan_cloud(CFG, **KW, deadline_h=lo)
    f_hi = plan_cloud(CFG, **KW, deadline_h=hi)
    key = ["gpu", "n_gpus", "strategy", "batch_size", "spot", "instance_type"]
    lo_set = set(map(tuple, f_lo.loc[f_lo["feasible"], key].to_numpy()))
    hi_set = set(map(tuple, f_hi.loc[f_hi["feasible"], key].to_numpy()))
    assert lo_set <= hi_set


@settings(max_examples=8, deadline=None)
@given(a=st.floats(1e-4, 5.0), b=st.floats(1e-4, 5.0))
def test_feasible_set_monotone_in_budget(a, b):
    lo, hi = sorted((a, b))
    f_lo = plan_cloud(CFG, **KW, budget_usd=lo)
    f_hi = plan_cloud(CFG, **KW, budget_usd=hi)
    key = ["gpu", "n_gpus", "strategy", "batch_size", "spot", "instance_type"]
    assert set(map(tuple, f_lo.loc[f_lo["feasible"], key].to_numpy())) <= set(map(tuple, f_hi.loc[f_hi["feasible"], key].to_numpy()))


def test_memory_monotone_in_batch(frame):
    for _, g in frame.groupby(["gpu", "n_gpus", "strategy", "spot", "instance_type"]):
        mem = g.sort_values("batch_size")["memory_per_gpu_bytes"].to_numpy()
        assert (np.diff(mem) >= 0).all()


def test_cli_plan_cloud_with_a_user_price_file(tmp_path, capsys):
    import json

    from perfmodel.cli import main

    (tmp_path / "config.json").write_text(json.dumps(CFG))
    PRICES.to_csv(tmp_path / "prices.csv", index=False)
    argv = ["plan-cloud", str(tmp_path / "config.json"), "--input-shape", "128", "--n-gpus", "1,2", "--batch-sizes", "8,16",
            "--strategies", "dp,fsdp", "--steps", "20000", "--prices", str(tmp_path / "prices.csv")]
    assert main([*argv, "--deadline-h", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Pareto front of 24 candidates (20000 steps):") and "cheapest within the deadline:" in out
    assert "why: cheapest of the " in out
    assert main([*argv, "--gpus", "H100"]) == 1
    assert "perfmodel: No price for GPU H100: the price table has aws us-east-1 big (8xA100)" in capsys.readouterr().err
    assert main(["plan-cloud", str(tmp_path / "missing.json")]) == 2
    assert "perfmodel plan-cloud: model" in capsys.readouterr().err


def test_spot_rows_say_how_often_the_traces_held_that_many_instances():
    """p_hold_instances is the traces' share of time holding at least the rented instance count (spot rows only)."""
    import math

    from perfmodel.planning import cloud

    a = ds.spot_availability()
    p1, note1 = cloud._p_hold("aws", 1)
    assert p1 == pytest.approx(a[(a["cloud"] == "aws") & (a["n"] == 1)]["p_at_least_n"].mean())
    assert "trace(s) of" in note1
    p16, _ = cloud._p_hold("aws", 16)
    assert p16 == pytest.approx(a[(a["cloud"] == "aws") & (a["n"] == 16)]["p_at_least_n"].mean()) and p16 < p1
    p_none, note = cloud._p_hold("aws", 17)
    assert math.isnan(p_none) and "holding them is not estimated" in note


# --- robustness: whole numbers, price tables, a fixed amount of data, nothing that fits -----------------------------


@pytest.mark.parametrize("kw, match", [
    (dict(n_gpus=(2.5,)), r"n_gpus must be positive whole numbers \(GPU counts\); got 2\.5 in \[2\.5\]"),
    (dict(batch_sizes=(8, 16.7)), r"batch_sizes must be positive whole numbers \(global batch sizes, samples per step\); got 16\.7"),
    (dict(n_gpus=(True,)), r"n_gpus must be positive whole numbers"),
    (dict(batch_sizes=("8",)), r"batch_sizes must be positive whole numbers"),
    (dict(n_gpus=(0,)), r"n_gpus must be positive whole numbers"),
])
def test_fractional_counts_and_batches_are_refused_not_truncated(kw, match):
    with pytest.raises(ValueError, match=match):
        plan_cloud(CFG, **{**KW, **kw})


def test_integral_floats_are_accepted(frame):
    f = plan_cloud(CFG, **{**KW, "n_gpus": (1.0, np.int64(2)), "batch_sizes": (8.0, 16)})
    assert f["n_gpus"].tolist() == frame["n_gpus"].tolist() and f["batch_size"].tolist() == frame["batch_size"].tolist()


def test_conflicting_duplicate_price_rows_are_refused():
    dup = pd.concat([PRICES, PRICES.iloc[[0]].assign(on_demand_usd_per_h=30.0)], ignore_index=True)
    with pytest.raises(ValueError, match=r"prices: aws us-east-1 big \(8xA100\) is listed 2 times with different prices "
                                         r"\(on-demand \$32/h spot \$12/h, on-demand \$30/h spot \$12/h\)\. Expected one price"):
        plan_cloud(CFG, **{**KW, "prices": dup})
    from perfmodel.planning.cloud import check_gpu_prices

    assert len(check_gpu_prices(pd.concat([PRICES, PRICES.iloc[[0]]]))) == len(PRICES)  # an exact repeat is harmless


def test_a_region_that_matches_nothing_and_a_table_without_rows():
    with pytest.raises(ValueError, match=r"No price for GPU A100 in the regions \['mars-1'\]: its price rows are in "
                                         r"\['us-east-1'\]\. Pass one of those regions"):
        plan_cloud(CFG, **{**KW, "regions": ["mars-1"]})
    with pytest.raises(ValueError, match=r"prices has the columns but no rows: there is nothing to rent"):
        plan_cloud(CFG, **{**KW, "prices": PRICES.iloc[:0]})


@pytest.mark.parametrize("content, match", [
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", r"holds binary data \(NUL bytes; or UTF-16 without a mark\), not a UTF-8 CSV"),
    ("provider,region\naws,s\u00e3o-paulo\n".encode("latin-1"), r"is not UTF-8 \(byte 0xe3 at offset \d+; latin-1 or cp1252\?\)"),
    ("provider,region\naws,x\n".encode("utf-16"), r"holds UTF-16 text, not a UTF-8 CSV"),
])
def test_price_files_in_other_encodings_are_clear_errors(tmp_path, content, match):
    from perfmodel._errors import NotADataFileError
    from perfmodel.planning.cloud import read_gpu_prices

    f = tmp_path / "p.csv"
    f.write_bytes(content)
    with pytest.raises(NotADataFileError, match=match + r".*Expected a UTF-8 CSV file with the columns provider, region, "
                                                        r"instance_type, gpu"):
        read_gpu_prices(f)


def test_price_file_with_a_byte_order_mark_and_header_only(tmp_path):
    from perfmodel.planning.cloud import read_gpu_prices

    f = tmp_path / "p.csv"
    f.write_bytes(b"\xef\xbb\xbf" + PRICES.to_csv(index=False).encode())
    assert read_gpu_prices(f)["provider"].tolist() == ["aws", "gcp"]
    f.write_text(",".join(PRICES.columns) + "\n")
    with pytest.raises(ValueError, match="prices has the columns but no rows"):
        read_gpu_prices(f)


def test_a_fixed_amount_of_data_sets_the_steps_per_batch(frame):
    f = plan_cloud(CFG, **{**KW, "steps": None, "samples": 100})
    assert (f["steps"] == np.ceil(100 / f["batch_size"])).all()  # 13 steps at batch 8, 7 at batch 16
    assert set(zip(f["batch_size"], f["steps"])) == {(8, 13.0), (16, 7.0)}
    # the same data: batch 16 does not pay twice the steps of batch 8 any more
    with pytest.raises(ValueError, match=r"Give exactly one of steps= .* and samples="):
        plan_cloud(CFG, **{**KW, "samples": 100})
    with pytest.raises(ValueError, match=r"samples= and b_simple= do not go together"):
        plan_cloud(CFG, **{**KW, "steps": None, "samples": 100, "b_simple": 8.0, "reference_batch": 8})
    with pytest.raises(ValueError, match=r"samples must be positive whole numbers"):
        plan_cloud(CFG, **{**KW, "steps": None, "samples": 99.5})


def test_steps_at_several_batch_sizes_warn():
    with pytest.warns(UserWarning, match=r"steps=20000 at every batch size: batch 16 processes 2x the data of batch 8"):
        plan_cloud(CFG, **KW)


def test_nothing_fits_says_why_in_gib(frame):
    none = frame.assign(fits=False, feasible=False, pareto=False)
    with pytest.raises(PlanInfeasibleError, match=r"Nothing fits in GPU memory: every one of the 24 candidates needs more memory "
                                                  r"per GPU than its GPU has\. The closest, .* needs \d+\.\d GiB per GPU of "
                                                  r"\d+\.\d GiB; the largest need is \d+\.\d GiB") as ei:
        cheapest_within_deadline(none, 10)
    assert "nan" not in str(ei.value)
    with pytest.raises(ValueError, match=r"The plan has no rows to choose from \(an empty frame\)"):
        fastest_within_budget(frame.iloc[:0], 10)


def _cli_argv(tmp_path):
    import json

    (tmp_path / "config.json").write_text(json.dumps(CFG))
    PRICES.to_csv(tmp_path / "prices.csv", index=False)
    return ["plan-cloud", str(tmp_path / "config.json"), "--input-shape", "128", "--n-gpus", "1,2", "--batch-sizes", "8,16",
            "--strategies", "dp,fsdp", "--prices", str(tmp_path / "prices.csv")]


def test_cli_plans_a_fixed_amount_of_data_and_prints_gib(tmp_path, capsys):
    from perfmodel.cli import main

    argv = _cli_argv(tmp_path)
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out.startswith("Pareto front of 24 candidates (320000 samples; steps = ceil(samples / batch)):")
    header = out.splitlines()[1].split()
    assert {"steps", "mem_gib_per_gpu", "gpu_gib", "fits"} <= set(header) and "memory_per_gpu_bytes" not in header
    assert "at every batch size" not in err
    assert main([*argv, "--tokens", "1280000"]) == 0  # 10000 sequences of 128
    assert "(1280000 tokens = 10000 sequences of 128; steps = ceil(samples / batch))" in capsys.readouterr().out
    assert main([*argv, "--steps", "20000"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("Pareto front of 24 candidates (20000 steps):")
    assert err.count("at every batch size") == 1 and "--steps 20000 is the same step count at every batch size" in err
    assert main([*argv, "--steps", "20000", "--b-simple", "16", "--reference-batch", "8"]) == 0
    out, err = capsys.readouterr()
    assert "(20000 steps at batch 8, rescaled by B_simple = 16)" in out and "at every batch size" not in err
    assert main([*argv, "--samples", "10", "--steps", "5"]) == 2
    assert "give one of --steps, --samples and --tokens" in capsys.readouterr().err
    assert main([*argv, "--b-simple", "16"]) == 2
    assert "--b-simple needs --steps and --reference-batch" in capsys.readouterr().err
    assert main([*argv, "--n-gpus", "2.5"]) == 2
    assert "--n-gpus must be comma-separated whole numbers like 1,2,4; got '2.5'." in capsys.readouterr().err


def test_cli_marks_what_does_not_fit_and_says_when_nothing_does(tmp_path, capsys, monkeypatch):
    import perfmodel.planning as planning
    from perfmodel.cli import main
    from perfmodel.planning.plan import mark_feasible

    real = planning.plan_cloud

    def squeezed(*a, which=lambda f: f["batch_size"] == 16, **k):
        f = real(*a, **k)
        f.loc[which(f), "fits"] = False
        return mark_feasible(f, deadline_h=k.get("deadline_h"), budget_usd=k.get("budget_usd"), ok=f["fits"])

    monkeypatch.setattr(planning, "plan_cloud", squeezed)
    argv = _cli_argv(tmp_path)
    assert main([*argv, "--deadline-h", "100"]) == 0
    out = capsys.readouterr().out
    assert "12 of 24 candidates do not fit in GPU memory (fits = NO; never feasible, never chosen): up to " in out
    front = out.split("\n\n")[0]
    assert "NO (out of memory)" not in front and " 16 " not in front.split("\n", 2)[2]  # batch 16 rows left out of the front
    assert "why: cheapest of the 12 candidates that fit in GPU memory" in out
    monkeypatch.setattr(planning, "plan_cloud", lambda *a, **k: squeezed(*a, which=lambda f: f["fits"] == f["fits"], **k))
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("perfmodel plan-cloud: Nothing fits in GPU memory: every one of the 24 candidates")
    assert "nan" not in err and "GiB" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("content, match", [
    (b"\x00\x01\x02binary", "holds binary data"),
    ("provider,region\naws,s\u00e3o\n".encode("latin-1"), "is not UTF-8"),
    ("a,b\n1,2\n".encode("utf-16"), "holds UTF-16 text"),
    (b"provider,region,instance_type,gpu,gpus_per_instance,on_demand_usd_per_h,spot_usd_per_h\n", "has the columns but no rows"),
])
def test_cli_price_file_errors_are_one_line(tmp_path, capsys, content, match):
    from perfmodel.cli import main

    argv = _cli_argv(tmp_path)
    (tmp_path / "prices.csv").write_bytes(content)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and match in err, err


def test_plan_shows_progress_on_request_only(frame, capsys, monkeypatch):
    import sys

    from perfmodel.cli import main

    plan_cloud(CFG, **KW, progress=True)
    err = capsys.readouterr().err
    assert "perfmodel plan-cloud: 100%" in err and "6/6" in err
    plan_cloud(CFG, **KW)
    assert "100%" not in capsys.readouterr().err
    import tempfile
    from pathlib import Path

    argv = _cli_argv(Path(tempfile.mkdtemp()))
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "perfmodel plan-cloud: 100%" in err and "100%" not in out
    assert main([*argv, "--quiet"]) == 0
    assert "100%" not in capsys.readouterr().err


def test_checkpoint_extrapolation_is_one_summarised_warning():
    """Every candidate whose state lies outside the checkpoint fit used to warn on its own (one line per size)."""
    import warnings

    from perfmodel._extrapolation import ExtrapolationWarning

    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        f = plan_cloud(CFG, **{**KW, "steps": None, "samples": 10**6, "n_gpus": (8,), "strategies": ("fsdp", "tp", "pp"), "batch_sizes": (8, 16, 32)})
    ck = [str(w.message) for w in rec if issubclass(w.category, ExtrapolationWarning) and "heckpoint" in str(w.message)]
    assert len(ck) == 1, ck
    assert ck[0].startswith("plan_cloud: the checkpoint time of ") and "extrapolates CM-DARE's Duration ~ Size fit (fitted on " in ck[0]
    n = int(ck[0].split("checkpoint time of ")[1].split()[0])
    assert n == f["extrapolated"].str.contains("checkpoint time: CM-DARE's Duration ~ Size fit").sum() > 1


def test_megatron_execution_plans_dp_with_the_distributed_optimizer_and_skips_fsdp(frame):
    mega = plan_cloud(CFG, **{**KW, "n_gpus": (2,), "framework": "megatron"})
    skipped = pd.DataFrame(mega.attrs["skipped"])
    assert set(mega["strategy"]) == {"dp"} and (skipped["strategy"] == "fsdp").all()
    assert skipped["reason"].str.contains("Megatron-Core shards the optimizer").all()
    torch_dp = frame[(frame["strategy"] == "dp") & (frame["n_gpus"] == 2)]
    key = ["gpu", "batch_size", "spot", "instance_type"]
    both = mega.merge(torch_dp, on=key, suffixes=("_mega", "_torch"))
    assert len(both) == len(mega) > 0
    for r in both.itertuples(index=False):  # each candidate's memory is Megatron's (FP32 main gradients, sharded Adam)
        m = pm.predict_memory(CFG, r.gpu, batch_size=int(r.batch_size), n_gpus=2, strategy="dp", precision="bf16",
                              optimizer="adam", input_shape=(128,), framework="megatron").iloc[0]
        assert r.memory_per_gpu_bytes_mega == pytest.approx(float(m["total_bytes"]), rel=1e-12)
        assert r.memory_per_gpu_bytes_mega != pytest.approx(r.memory_per_gpu_bytes_torch, rel=1e-6)
        assert r.step_time_s_mega != pytest.approx(r.step_time_s_torch, rel=1e-9)
    with pytest.raises(UnknownNameError, match=r"Unknown framework 'jax'"):
        plan_cloud(CFG, **{**KW, "framework": "jax"})


@pytest.mark.parametrize("stack", ["compile", "te"])
def test_a_kernel_family_is_planned_as_predict_step_time_predicts_it(stack, tmp_path, capsys):
    """stack= reaches every candidate's step and memory (a one-GPU row equals predict_step_time and predict_memory with
    that stack), changes the plan against eager kernels, and --stack says the same on the command line."""
    import json
    import warnings

    kw = dict(KW, n_gpus=(1,), batch_sizes=(8,), strategies=("dp",), gpus=["A100"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = plan_cloud(CFG, **kw, stack=stack)
        eager = plan_cloud(CFG, **kw)
        step = pm.predict_step_time(CFG, "A100", input_shape=(128,), batch_size=8, precision="bf16", optimizer="adam",
                                    stack=stack)
        mem = pm.predict_memory(CFG, "A100", input_shape=(128,), batch_size=8, precision="bf16", optimizer="adam",
                                stack=stack)
    assert (plan["step_time_s"] == step["step_time_s"].iloc[0]).all()
    assert (plan["memory_per_gpu_bytes"] == mem["total_bytes"].iloc[0]).all()
    assert not np.allclose(plan["step_time_s"].to_numpy(), eager["step_time_s"].to_numpy())
    from perfmodel.cli import main

    (tmp_path / "config.json").write_text(json.dumps(CFG))
    PRICES.to_csv(tmp_path / "prices.csv", index=False)
    argv = ["plan-cloud", str(tmp_path / "config.json"), "--input-shape", "128", "--n-gpus", "1", "--batch-sizes", "8",
            "--steps", "20000", "--prices", str(tmp_path / "prices.csv"), "--gpus", "A100", "--stack", stack]
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith("Pareto front of")


def test_mixes_are_refused_with_another_kernel_family():
    with pytest.raises(ValueError, match=r"mixes= are predicted with eager kernels only .* got stack='compile'"):
        plan_cloud(CFG, **dict(KW, gpus=["A100"]), mixes=["A100:1+L4:1"], stack="compile")
    with pytest.raises(ValueError, match="stack"):
        plan_cloud(CFG, **KW, stack="jax")


BLACKWELL_PRICES = pd.DataFrame(dict(provider=["aws", "aws"], region=["us-east-1", "us-east-1"], instance_type=["b", "h"],
                                     gpu=["B200", "H100"], gpus_per_instance=[8, 8], on_demand_usd_per_h=[80.0, 40.0],
                                     spot_usd_per_h=[30.0, 15.0], price_date=["test", "test"]))


def test_an_fp8_recipe_is_planned_as_predict_predicts_it(tmp_path, capsys):
    """fp8_recipe= reaches every candidate's step and memory (a one-GPU row equals pm.predict's for a Workload that says
    the recipe), changes the plan against the family's default, is refused where a GPU cannot run it, at another
    precision and with mixes, and --fp8-recipe says the same on the command line."""
    import json
    import warnings

    from perfmodel.datasets import UnsupportedPrecisionError

    kw = dict(prices=BLACKWELL_PRICES, input_shape=(128,), steps=20000, n_gpus=(1,), batch_sizes=(8,), strategies=("dp",),
              gpus=["B200"], precision="fp8", optimizer="adam", stack="te")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = plan_cloud(CFG, **kw, fp8_recipe="nvfp4")
        default = plan_cloud(CFG, **kw)
        same = plan_cloud(CFG, **kw, fp8_recipe="delayed")  # the family's default, said
        p = pm.predict(pm.Workload(CFG, input_shape=(128,), batch_size=8, precision="fp8", optimizer="adam", stack="te",
                                   fp8_recipe="nvfp4"), pm.Cluster("B200"), pm.Parallelism("dp"))
    assert (plan["step_time_s"] == p.step_time_s).all()
    assert (plan["memory_per_gpu_bytes"] == p.memory["total_bytes"]).all()
    assert not np.allclose(plan["step_time_s"].to_numpy(), default["step_time_s"].to_numpy())
    assert same["step_time_s"].tolist() == default["step_time_s"].tolist()
    with pytest.raises(UnsupportedPrecisionError, match="H100 lack"):
        plan_cloud(CFG, **dict(kw, gpus=["H100"]), fp8_recipe="nvfp4")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        both = plan_cloud(CFG, **dict(kw, gpus=["B200", "H100"]), fp8_recipe="nvfp4")  # the H100 left out, said why
    assert set(both["gpu"]) == {"B200"} and both["step_time_s"].tolist() == plan["step_time_s"].tolist()
    assert any("H100 lack" in s["reason"] and "H100" in s["strategy"] for s in both.attrs["skipped"])
    with pytest.raises(ValueError, match="precision='bf16'"):
        plan_cloud(CFG, **dict(kw, precision="bf16"), fp8_recipe="nvfp4")
    with pytest.raises(ValueError, match="mixes= take no FP8 recipe"):
        plan_cloud(CFG, **dict(kw, stack=None, gpus=["B200"]), mixes=["B200:1+H100:1"], fp8_recipe="rowwise")
    from perfmodel.cli import main

    (tmp_path / "config.json").write_text(json.dumps(CFG))
    BLACKWELL_PRICES.to_csv(tmp_path / "prices.csv", index=False)
    argv = ["plan-cloud", str(tmp_path / "config.json"), "--input-shape", "128", "--n-gpus", "1", "--batch-sizes", "8",
            "--steps", "20000", "--prices", str(tmp_path / "prices.csv"), "--gpus", "B200", "--precision", "fp8",
            "--stack", "te", "--fp8-recipe", "nvfp4"]
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith("Pareto front of")
    assert main([*argv[:-1], "mxfp8", "--gpus", "H100"]) != 0
    assert "H100 lack" in capsys.readouterr().err


def test_the_command_line_refuses_mixes_with_a_kernel_family_or_a_recipe_in_its_own_words(tmp_path, capsys):
    import json

    from perfmodel.cli import main

    (tmp_path / "config.json").write_text(json.dumps(CFG))
    base = ["plan-cloud", str(tmp_path / "config.json"), "--input-shape", "128", "--mixes", "A100:1+L4:1"]
    assert main([*base, "--stack", "compile"]) == 2
    err = capsys.readouterr().err
    assert "--mixes are predicted with eager PyTorch kernels only; got --stack compile" in err and "stack=" not in err
    assert main([*base, "--precision", "fp8", "--fp8-recipe", "rowwise"]) == 2
    assert "--mixes take no FP8 recipe" in capsys.readouterr().err
