"""torchtitan's published Llama runs: every row is either predicted by one perfmodel call or listed with its reason,
and the scores are computed from the rows."""
from __future__ import annotations

import numpy as np
import pytest

from perfmodel.papers.external import torchtitan_runs as item


@pytest.fixture(scope="module")
def data():
    return item.data()


def test_every_published_row_is_predicted_or_says_why(data):
    from perfmodel.datasets import load_torchtitan_runs

    assert len(data) == len(load_torchtitan_runs())
    done = data["skipped"] == ""
    assert data.loc[done, "predicted_tokens_per_s"].gt(0).all()
    assert data.loc[~done, "predicted_tokens_per_s"].isna().all() and data.loc[~done, "skipped"].str.len().gt(10).all()
    # the FSDP-only H100 runs of Table 1 (8 GPUs) and Table 3 (128 GPUs) are all stated, and FSDP x TP without async TP
    fsdp_h100 = data[(data["gpu"] == "H100") & data["table"].str.startswith(("Table 1", "Table 3"))]
    assert len(fsdp_h100) == 6 and (fsdp_h100["skipped"] == "").all()
    from perfmodel.datasets import load_torchtitan_runs

    raw = load_torchtitan_runs()
    # every layout is stated: 2D, async TP, 3D with PP (1F1B and interleaved), 4D with CP, per-layer selective
    # checkpointing, and torchao's tensorwise and rowwise Float8
    assert done.all()
    rowwise = (raw["float8_recipe"].fillna("") == "rowwise").to_numpy()
    for layout in ((raw["pp"] > 1), (raw["cp"] > 1), raw["async_tp"].fillna(False).astype(bool),
                   raw["selective_ac"].fillna("") == "layer", rowwise):
        assert np.asarray(layout).sum() >= 2


def test_rowwise_float8_rows_run_the_rowwise_recipe(data):
    """torchao's rowwise Float8 (the async-TP files' rowwise rows): no FP8 all-gather and a weight cast per
    micro-batch, so each is predicted slower than the same layout with tensorwise Float8."""
    from perfmodel.datasets import load_torchtitan_runs

    raw = load_torchtitan_runs()
    rowwise = (raw["float8_recipe"].fillna("") == "rowwise").to_numpy()
    tensorwise = (raw["float8_recipe"].fillna("") == "tensorwise").to_numpy()
    assert rowwise.sum() == 4
    for f, model in raw.loc[rowwise, ["source_file", "model"]].drop_duplicates().itertuples(index=False):
        for asy in (False, True):
            pick = ((raw["source_file"] == f) & (raw["model"] == model)
                    & (raw["async_tp"].fillna(False).astype(bool) == asy)).to_numpy()
            r = data.loc[pick & rowwise, "predicted_tokens_per_s"]
            t = data.loc[pick & tensorwise, "predicted_tokens_per_s"]
            assert len(r) == len(t) == 1 and r.iloc[0] < t.iloc[0]


def test_layouts_move_the_prediction_the_way_torchtitan_measured(data):
    """The interleaved schedule beats 1F1B (Table 5), async TP beats vanilla TP (the async-TP tables), and a longer
    context lowers tokens/s per GPU (Tables 2 and 6): the direction of every published comparison."""
    five = data[data["table"].str.startswith("Table 5")].set_index("source_file", append=True)
    assert len(five) == 2 and five["predicted_tokens_per_s"].iloc[1] > five["predicted_tokens_per_s"].iloc[0]
    for tab in ("Table 2", "Table 6"):
        ctx = data[data["table"].str.startswith(tab)].sort_values("seq_len")
        assert len(ctx) == 4 and ctx["predicted_tokens_per_s"].is_monotonic_decreasing
    a = data[data["source_file"].str.contains("asyncTP") & (data["skipped"] == "")]
    vanilla, asy = a.iloc[0::2]["predicted_tokens_per_s"].to_numpy(), a.iloc[1::2]["predicted_tokens_per_s"].to_numpy()
    assert len(a) == 12 and (asy > vanilla).all()


def test_async_tp_gains_pair_each_run_with_its_vanilla_twin(data):
    """The runs published with and without async TP (Table 4 and the async-TP file): their measured and predicted
    speed-ups, each pair the same run but for async TP; the summary's error is computed from them."""
    g = item.async_tp_gains(data)
    assert len(g) == 7 and (g["measured_gain"] > 1).all() and (g["predicted_gain"] > 1).all()
    a = data[data["async_tp"] & (data["skipped"] == "")]
    # the 3D and 4D runs of Tables 5 and 6 use async TP throughout (no vanilla twin); every other async run has one
    assert len(a[~a["table"].str.startswith(("Table 5", "Table 6"))]) == len(g)
    n = item.summary(data).set_index("quantity")["value"]
    assert n["async_tp_pairs"] == 7
    assert n["async_tp_gain_mean_abs_error"] == pytest.approx((g["predicted_gain"] - g["measured_gain"]).abs().mean())
    assert n["rule_of_thumb_async_tp_gain_mean_abs_error"] == pytest.approx((g["measured_gain"] - 1).abs().mean())


def test_context_parallel_exchanges_the_repeated_kv_torchtitan_gave_sdpa():
    """torchtitan's Llama of these runs repeated K and V before SDPA: its CP rows exchange them at every query head."""
    assert item.TORCHTITAN_CP_KV == "repeated"
    assert "every query head" in item.ITEM.procedure


def test_pipelines_split_the_layers_as_torchtitan_generates_its_split_points():
    """No split points in the 405B runs' config: torchtitan's generated ones, the first stage shortest, the middle
    ones a layer longer while the remainder lasts, the last what is left; stage c on rank c mod pp."""
    assert item.torchtitan_split(126, 8, 1) == ((15,), (16,), (16,), (16,), (16,), (16,), (16,), (15,))
    assert item.torchtitan_split(126, 8, 2) == ((7, 8),) + ((8, 8),) * 6 + ((8, 7),)
    assert item.torchtitan_split(80, 8, 2) == ((5, 5),) * 8
    assert item.torchtitan_split(10, 4, 1) == ((2,), (3,), (3,), (2,))
    from perfmodel.datasets import load_torchtitan_runs

    raw = load_torchtitan_runs()
    r = raw[(raw["model"] == "Llama 3.1 405B") & (raw["pp_schedule"].astype(str) == "1F1B")].iloc[0]
    assert "transformer layers per pipeline rank 15, 16 x 6, 15" in item._predict(r)[2].basis
    assert "generated split points" in item.ITEM.procedure


def test_numbers_are_computed_from_the_rows(data):
    n = item.summary(data).set_index("quantity")["value"]
    t = data["tokens_abs_error_pct"].dropna()
    assert n["tokens_mape_pct"] == pytest.approx(t.mean()) and n["tokens_worst_pct"] == pytest.approx(t.max())
    assert n["rows_predicted"] + n["rows_skipped"] == n["rows"] == len(data)
    m = data["memory_abs_error_pct"].dropna()
    assert n["memory_mape_pct"] == pytest.approx(m.mean()) and n["memory_rows"] == len(m)
    assert np.isfinite(n.to_numpy()).all()
    own = item.numbers().set_index("quantity")["reproduced"]
    assert own["tokens_mape_pct"] == pytest.approx(n["tokens_mape_pct"])


def test_where_the_errors_lean_is_reported_by_layout_for_perfmodel_and_the_rule(data):
    """The signed errors (positive: predicted too fast) of the runs with and without tensor parallelism, each beside
    the rule of thumb's: each mean is of its own rows, and the two groups are every predicted run."""
    n = item.summary(data).set_index("quantity")["value"]
    d = data[data["skipped"] == ""]
    tp = d["tp"] > 1
    assert n["tp_rows"] == tp.sum() and 0 < tp.sum() < len(d)
    for who, col in (("", "predicted_tokens_per_s"), ("rule_of_thumb_", "rule_of_thumb_tokens_per_s")):
        signed = 100 * (d[col] - d["measured_tokens_per_s"]) / d["measured_tokens_per_s"]
        assert n[f"{who}tp_tokens_mean_signed_pct"] == pytest.approx(signed[tp].mean(), rel=1e-12)
        assert n[f"{who}no_tp_tokens_mean_signed_pct"] == pytest.approx(signed[~tp].mean(), rel=1e-12)
    # a signed mean is never larger than the mean absolute error of the same rows
    assert abs(n["tp_tokens_mean_signed_pct"]) <= d.loc[tp, "tokens_abs_error_pct"].mean() + 1e-9


def test_more_gpus_never_shorten_a_step_but_for_the_sharded_optimizer():
    """Table 1 (8 GPUs) against Table 3 (128 GPUs), same per-GPU configuration: FSDP's collectives leave the node, so
    every part of the step is at least as long on 128 GPUs, but the optimizer, which steps a 16 times smaller FP32
    shard there (its 8-GPU step is the longer one). The measured runs are 2-3 % faster per GPU on 8; the slowest of
    128 chips against the slowest of 8 (slowest_chip_clock) accounts for about a point of it."""
    from perfmodel.datasets import load_torchtitan_runs

    runs = load_torchtitan_runs()
    pairs = {}
    for r in runs.itertuples(index=False):
        if str(r.table).startswith(("Table 1", "Table 3")):
            p = item._predict(r)[2]
            pairs.setdefault(int(r.n_gpus), []).append((p.step_time_s, p.breakdown["optimizer"]))
    assert len(pairs[8]) == len(pairs[128]) == 3
    for (s8, o8), (s128, o128) in zip(pairs[8], pairs[128]):
        assert o128 < o8
        assert s128 - o128 >= s8 - o8


def test_figure(data):
    import matplotlib

    matplotlib.use("Agg")
    fig = item.figure(data)
    assert fig.axes[0].get_xlabel().startswith("measured tokens/s")


def test_the_500w_h100_runs_at_the_clock_its_published_gemms_give(data):
    """The Grand Teton H100's rows run at the share of its clock with which the GEMM model reproduces FBGEMM's BF16
    GEMMs of a 500 W H100 (not these runs, one chip), less the expected shortfall of the slowest of the run's chips;
    the other parts at their datasheet clock; the rule of thumb at the peak."""
    from perfmodel.datasets import load_published_gemms
    from perfmodel.datasets.llm_runs import torchtitan_gpu_spec
    from perfmodel.step.kernels import chip_spread, expected_slowest, sustained_clock

    f = sustained_clock(torchtitan_gpu_spec("H100 96GB HBM2e 500W power limit"), load_published_gemms())
    assert 0.6 < f < 1 and item.grand_teton_clock() == f
    h100 = (data["gpu"] == "H100").to_numpy()
    want = [f * (1 - chip_spread("H100") * expected_slowest(int(n))) for n in data.loc[h100, "n_gpus"]]
    assert data.loc[h100, "sustained_clock"].to_numpy() == pytest.approx(want, rel=1e-12)
    by_n = data.loc[h100].groupby("n_gpus")["sustained_clock"].first()
    assert by_n.is_monotonic_decreasing and by_n.index.is_monotonic_increasing and by_n.iloc[0] < f
    assert (data.loc[~h100, "sustained_clock"] == 1.0).all()
    n = item.summary(data).set_index("quantity")["value"]
    assert n["grand_teton_sustained_clock"] == f


def test_the_published_gemms_beside_the_model_at_both_clocks():
    """At the datasheet clock the model is faster than every published GEMM of the 500 W part; at the sustained clock
    the fitted BF16 rows have no bias left and the FP8 rows (not fitted) are within 10 %."""
    c = item.published_gemm_check()
    assert len(c) == 6 and set(c["precision"]) == {"bf16", "fp8"} and (c["fitted"] == (c["precision"] == "bf16")).all()
    assert (c["datasheet_clock_tflops"] > c["measured_tflops"]).all()
    bf16 = c[c["fitted"]]
    assert abs(np.log(bf16["sustained_clock_tflops"] / bf16["measured_tflops"]).mean()) < 0.005
    assert c.loc[~c["fitted"], "error_pct"].abs().max() < 10


def test_each_source_is_predicted_with_what_its_torchtitan_compiled_and_its_memory_says_so():
    """The December 2024 runs' loss was eager (its compile turned off on 2024-12-18), the June 2025 ones' compiled:
    for the first compiled run of each source that publishes memory, the scope its version compiled is the one whose
    predicted memory is nearest the measurement, and the scored rows use it."""
    from perfmodel._workload import COMPILE_SCOPES
    from perfmodel.papers.external import torchtitan_runs

    c = torchtitan_runs.compile_scope_check()
    assert set(c["compile_scope"]) == set(COMPILE_SCOPES) and c["source_file"].nunique() == 2
    for src, g in c.groupby("source_file"):
        err = (g["predicted_memory_gib"] - g["measured_memory_gib"]).abs()
        assert err[g["torchtitan_compiled"]].iloc[0] == pytest.approx(err.min()), src  # ("model" saves as "layers+loss")
        assert err[g["torchtitan_compiled"]].iloc[0] < err.max() - 5  # the other loss is GiBs off
        used = g[g["torchtitan_compiled"]].iloc[0]
        row = torchtitan_runs.data().query("source_file == @src and compile").iloc[0]
        assert row["predicted_memory_gib"] == pytest.approx(used["predicted_memory_gib"])
        assert row["predicted_tokens_per_s"] == pytest.approx(used["predicted_tokens_per_s"])


def test_torchaos_other_float8_measurements_are_predicted_and_scored_beside_the_rule_of_thumb():
    """torchao's tensorwise microbenchmark examples and its end-to-end torchtitan runs (held out): every row predicted
    (the runs on the part their logs show), the scores computed from the rows, the rule of thumb beside them."""
    from perfmodel.datasets import load_torchao_float8_checks
    from perfmodel.diagnostics.metrics import mape

    raw = load_torchao_float8_checks()
    assert set(raw["kind"]) == {"microbenchmark", "training"} and raw["source"].str.contains("pytorch/ao").all()
    assert set(raw.loc[raw["kind"] == "training", "recipe"]) == {"none", "tensorwise", "rowwise"}
    d = item.torchao_float8_check()
    assert len(d) == len(raw) and d["predicted"].gt(0).all() and np.isfinite(d["abs_error_pct"]).all()
    mb, tr = d[d["kind"] == "microbenchmark"], d[d["kind"] == "training"]
    # the small shape is slower in float8 (torchao's example), the large one faster, in the measurement and the model
    small, large = mb.sort_values("m")["predicted"].to_numpy()
    assert small < 1 < large
    # the end-to-end runs on the part their logs show; the catalog 700 W H100 beside them is faster
    assert (tr["gpu"] == item.torchao_e2e_gpu().gpu).all() and (mb["gpu"] == "H100").all()
    assert tr["predicted_on_catalog_h100"].gt(tr["predicted"]).all()
    g = item.torchao_float8_gains(d).set_index("recipe")
    assert g.loc["tensorwise", "predicted_gain"] > g.loc["rowwise", "predicted_gain"]
    n = {r["quantity"]: r["value"] for r in item._torchao_numbers()}
    assert n["torchao_e2e_tokens_mape_pct"] == pytest.approx(mape(tr["measured"], tr["predicted"]))
    assert n["torchao_e2e_rule_of_thumb_tokens_mape_pct"] == pytest.approx(mape(tr["measured"], tr["rule_of_thumb"]))
    assert n["torchao_tensorwise_microbenchmark_speedup_mape_pct"] == pytest.approx(mape(mb["measured"], mb["predicted"]))
    assert n["torchao_e2e_fp8_gain_mean_abs_error"] == pytest.approx(g["error"].abs().mean())
    own = item.numbers().set_index("quantity")["reproduced"]
    assert own["torchao_e2e_tokens_mape_pct"] == pytest.approx(n["torchao_e2e_tokens_mape_pct"])
    assert n["torchao_e2e_tokens_mape_pct_on_catalog_h100"] == pytest.approx(
        mape(tr["measured"], tr["predicted_on_catalog_h100"]))


def test_torchaos_end_to_end_runs_ran_on_the_96_gb_h100_their_logs_show():
    """torchao's README says "8xH100"; its authors' logs of the same runs put the peak memory at a share of a 95.0 GiB
    device, which only the 96 GB (Grand Teton, 500 W) H100 holds; an 80 GB H100 logs 79.1 GiB."""
    from perfmodel.datasets import load_torchao_float8_checks, load_torchtitan_memory_logs
    from perfmodel.datasets.llm_runs import (
        GRAND_TETON_H100,
        VISIBLE_MEMORY_SHARE,
        device_memory_gib,
        gpu_of_device_memory,
        torchtitan_gpu_spec,
    )

    logs = load_torchtitan_memory_logs()
    assert logs["source"].str.contains("github.com/pytorch/").all()
    mem = device_memory_gib(logs)
    e2e = logs["kind"] == "torchao_e2e"
    assert mem[e2e].between(94.9, 95.1).all()
    # the README's peak memories are among the logged lines (the same runs)
    train = load_torchao_float8_checks().query("kind == 'training'")
    logged = set(zip(logs.loc[e2e, "recipe"], logs.loc[e2e, "logged_memory_gib"]))
    assert {("none", 47.65), ("rowwise", 47.79)} <= logged & set(zip(train["recipe"], train["peak_memory_gb"]))
    # the named 80 GB H100 reports a share of its memory within the visible range: the rule's evidence
    ref = mem[logs["device_named"].str.contains("H100 80GB")]
    assert len(ref) == 1 and VISIBLE_MEMORY_SHARE * 80 <= ref.iloc[0] <= 80
    assert item.torchao_e2e_gpu().gpu == GRAND_TETON_H100["gpu"]
    assert item.torchao_e2e_gpu().memory_gib == torchtitan_gpu_spec("H100 96GB HBM2e 500W power limit").memory_gib
    # 80 GB: the SXM5 or the PCIe card, memory cannot tell; between the parts: none; not a number: refused
    for bad in (ref.iloc[0], 86.0, float("nan"), -1.0):
        with pytest.raises(ValueError, match="GiB"):
            gpu_of_device_memory(bad, "H100")
    assert gpu_of_device_memory(92.0, "H100").gpu == "H100-NVL"
