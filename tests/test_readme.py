"""Every number the README quotes is computed here from the data and compared with the README's text.

Each claim is a phrase template whose ``{}`` fields are filled with values computed by perfmodel from the data; the filled
phrase must appear in the README (whitespace-insensitive). A guard then finds every number in the README's prose and code
comments (outside the generated items table, the commands, file names, versions and commit ids): each must lie inside a
verified phrase, so a number added to the README without a check here fails the suite.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _readme() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    # the items table is generated and checked by tests/test_reproduce.py; the commands are run by CI
    text = re.sub(r"<!-- items-table -->.*?<!-- /items-table -->", "", text, flags=re.S)
    text = re.sub(r"<!-- (main|test)-command -->.*?<!-- /(main|test)-command -->", "", text, flags=re.S)
    # the examples' printed outputs are computed and compared by tests/test_readme_examples.py
    text = re.sub(r"<!-- (\w+)-example -->.*?<!-- /\1-example -->", "", text, flags=re.S)
    return re.sub(r"\s+", " ", text)


def _pct(x: float) -> str:
    return f"{x:.1f}"


def _speed_claims():
    from perfmodel import datasets as ds

    s = ds.load_speed_samples()
    per = s.groupby(["model", "gpu"], observed=True).size()
    assert per.nunique() == 1, "the speed samples are not balanced; the README phrase assumes they are"
    gpus = "/".join(sorted(s["gpu"].astype(str).unique()))
    yield "{} single-worker samples ({} CNNs × {} × {})", (len(s), s["model"].nunique(), gpus, int(per.iloc[0]))
    yield "a single-worker speed sample, {} CNNs × {} × {}", (s["model"].nunique(), gpus, int(per.iloc[0]))
    h = ds.load_heldout_speed_samples()
    yield "a K80 sample of the {} held-out CNNs ({})", (h["model"].nunique(), len(h))
    yield "one of the {} CNNs: FLOPs", (len(ds.load_model_metadata()),)
    yield "one of the {} speed CSVs", (sum(1 for n in ds.list_datasets(with_shape=False)["name"] if n.startswith("speed_file:")),)
    tb = ds.load_speed_tensorboard()
    exports = tb[["source_name", "gpu"]].drop_duplicates().shape[0]  # one TensorBoard export per (run, GPU)
    yield "a raw TensorBoard sample behind the speed samples ({}) | `CM:speed_data/0lat_*/` ({} exports)", (len(tb), exports)
    ts = ds.load_speed_timeseries()
    yield "a single-worker sample over time, {} CNNs × {}", (ts["model"].nunique(), "/".join(sorted(ts["gpu"].astype(str).unique())))
    st = ds.load_speed_supertable()
    lat = sorted(float(v) for v in st["latency_ms"].unique())
    yield "a sample with {} or {} ms latency ({})", (f"{lat[0]:g}", f"{lat[1]:g}", len(st))
    yield "per-(GPU, model) prediction error ({})", (len(ds.load_speed_prediction_errors()),)


def _data_claims():
    from perfmodel import datasets as ds

    runs = ds.load_cluster_runs()
    n_runs = runs[["model", "gpu", "n_workers", "n_ps"]].drop_duplicates().shape[0]
    yield "{} cluster-size runs ({}–{} workers, 1 or {} PS)", (n_runs, int(runs["n_workers"].min()), int(runs["n_workers"].max()),
                                                             int(runs["n_ps"].max()))
    yield "a cluster `global_step/sec` sample of one of {} runs", (n_runs,)
    yield "a checkpoint ({} / {} / {}) / a per-model summary ({} / {})", (
        len(ds.load_checkpoint_samples("whole")), len(ds.load_checkpoint_samples("training")), len(ds.load_checkpoint_samples("test")),
        len(ds.load_checkpoint_summary("ckpt")), len(ds.load_checkpoint_summary("aggregated")))
    yield "a VM start: provisioning, staging, booting **seconds** ({})", (len(ds.load_vm_startup()),)
    yield "an accuracy evaluation of a chief-rejoining run ({})", (len(ds.load_chief_rejoining()),)
    n_tr = sum(1 for n in ds.list_datasets(with_shape=False)["name"] if n.startswith("transcribed:"))
    yield "a value the authors hard-coded in a notebook ({} arrays)", (n_tr,)
    g = ds.load_gpu_catalog().set_index("gpu")
    lab = ds.load_neusight_labels()
    yield "end-to-end, forward, backward ms ({}: {} training, {} inference)", (len(lab), int((lab["mode"] == "train").sum()),
                                                                           int((lab["mode"] == "inf").sum()))
    yield "K80 {} / P100 {} peak FP32 TFLOPS", (f"{g.loc['K80', 'fp32_peak_tflops']:.3f}", f"{g.loc['P100', 'fp32_peak_tflops']:.3f}")


def _row(*cells) -> str:
    """One row of the README's accuracy table."""
    return "| " + " | ".join(cells) + " |"


def _item_link(item: str) -> str:
    paper, name = item.split(".")
    return f"[`{item}`](perfmodel/papers/{paper}/{name}.py)"


def _result_claims():
    from perfmodel.figures import cpu_lomo_data
    from perfmodel.planning import validate_against_icac

    v = validate_against_icac()
    d = cpu_lomo_data()
    paper = d[(d["features"] == "FLOPs (the paper's single feature)") & (d["fit"] == "linear")]["mape_pct"]
    best = d.groupby(["batch_size", "threads"])["mape_pct"].min()
    from perfmodel.figures import neusight_benchmark_summary

    b = neusight_benchmark_summary().set_index("gpu")
    from perfmodel.papers.external._neusight import neusight_benchmark_data

    nd = neusight_benchmark_data()
    rule = nd[(nd["mode"] == "train") & (nd["status"] == "predicted")]["rule_of_thumb_abs_error_pct"].mean()
    nb = _item_link("external.neusight_benchmark")
    yield _row("a training step on one GPU", "NeuSight's {} training labels (A100-80GB, H100, L4, V100)",
               "{} % MAPE (A100-80GB {} %, H100 {} %, L4 {} %, V100 {} %)",
               "NeuSight {} %, a roofline {} %, the rule of thumb {} %", nb), (
        int(b.loc["all", "n_labels"]), *(_pct(b.loc[g, "perfmodel_mape_pct"]) for g in ("all", "A100-PCIe-80GB", "H100", "L4",
                                                                                      "V100-PCIe-32GB")),
        _pct(b.loc["all", "neusight_mape_pct"]), _pct(b.loc["all", "roofline_mape_pct"]), _pct(rule))
    i = neusight_benchmark_summary(mode="inf").set_index("gpu")
    rule_inf = nd[(nd["mode"] == "inf") & (nd["status"] == "predicted")]["rule_of_thumb_abs_error_pct"].mean()
    yield _row("an inference step on one GPU (`inference=True`)", "NeuSight's {} inference labels", "{} % MAPE",
               "NeuSight {} %, the rule of thumb {} %", nb), (
        int(i.loc["all", "n_labels"]), _pct(i.loc["all", "perfmodel_mape_pct"]), _pct(i.loc["all", "neusight_mape_pct"]),
        _pct(rule_inf))
    yield _row("the 80 % interval (`alpha=0.2`)", "the same labels", "covers {} % of the training and {} % of the inference labels",
               "—", nb), (f"{b.loc['all', 'interval_coverage'] * 100:.0f}", f"{i.loc['all', 'interval_coverage'] * 100:.0f}")
    from perfmodel.papers.external._neusight import neusight_amd_benchmark_data

    amd = neusight_amd_benchmark_data()
    at = neusight_benchmark_summary(amd).set_index("gpu")
    ai = neusight_benchmark_summary(amd, mode="inf").set_index("gpu")
    yield _row("a step on AMD GPUs (FP32 GEMMs at the matrix-core rate)",
               "NeuSight's {} AMD training and {} inference labels (MI100, MI210, MI250)", "{} % and {} % MAPE",
               "NeuSight {} % and {} %, the rule of thumb {} % and {} %", nb), (
        int(at.loc["all", "n_labels"]), int(ai.loc["all", "n_labels"]), _pct(at.loc["all", "perfmodel_mape_pct"]),
        _pct(ai.loc["all", "perfmodel_mape_pct"]), _pct(at.loc["all", "neusight_mape_pct"]), _pct(ai.loc["all", "neusight_mape_pct"]),
        *(_pct(amd[(amd["mode"] == m) & (amd["status"] == "predicted")]["rule_of_thumb_abs_error_pct"].mean())
          for m in ("train", "inf")))
    from perfmodel.papers.external.neusight_distributed_benchmark import neusight_distributed_summary

    dd = neusight_distributed_summary().set_index("value")
    from perfmodel.papers.external import neusight_distributed_benchmark as ndb

    sc = ndb.scaling()
    dp = sc[sc["strategy"] == "dp"]
    worst = float(dp["difference"].abs().max())
    yield _row("a step on four GPUs (data, tensor and pipeline parallel)",
               "NeuSight's {} four-GPU training labels, predicted from the single-GPU model",
               "{} % MAPE; scaling efficiency against the {} labels that have their single-GPU label: data parallel "
               "within {} (goal {}, {}; {} with the single-GPU step as measured: the rest is the single-GPU "
               "prediction's error), tensor and pipeline within {}", "NeuSight {} %, the rule of thumb {} %",
               _item_link("external.neusight_distributed_benchmark")), (
        int(dd.loc["all", "n_labels"]), _pct(dd.loc["all", "perfmodel_mape_pct"]), len(sc), f"{worst:.3f}",
        f"{ndb.SCALING_GOAL:g}", "met" if worst <= ndb.SCALING_GOAL else "not met",
        f"{float(dp['difference_single_measured'].abs().max()):.3f}",
        f"{float(sc.loc[sc['strategy'] != 'dp', 'difference'].abs().max()):.3f}", _pct(dd.loc["all", "neusight_mape_pct"]),
        _pct(ndb.numbers().set_index("quantity").loc["all_rule_of_thumb_mape_pct", "reproduced"]))
    yield _row("the time and cost of a plan", "ICAC'19's measured clusters", "time {} %, cost {} % MAPE", "—",
               _item_link("beyond.plan_validation")), (_pct(v["time_ape_pct"].mean()), _pct(v["cost_ape_pct"].mean()))
    yield _row("a step on a CPU, of a CNN never measured", "the bundled CPU measurements of the twenty CNNs, {} batch-size × "
               "thread configurations", "{}–{} % MAPE (the best of three feature sets, leave-one-model-out)",
               "CM-DARE's method (one linear fit on FLOPs) {}–{} %", _item_link("beyond.cpu_step_time_lomo")), (
        len(best), _pct(best.min()), _pct(best.max()), _pct(paper.min()), _pct(paper.max()))
    from perfmodel.step.op_latency import TRAINING_GPUS

    words = {4: "four", 5: "five", 6: "six"}
    yield "microbenchmarks of {} training GPUs (P4, P100, T4, V100, A100-40GB)", (words.get(len(TRAINING_GPUS), len(TRAINING_GPUS)),)


def _llm_claims():
    from perfmodel.step import collectives
    from perfmodel.papers.external import torchtitan_runs, vidur_h100_ops

    v = vidur_h100_ops.data()
    v = v[(v["protocol"] == "leave-h100-out") & (v["operator"] == "all")].set_index("predictor")
    vi = _item_link("external.vidur_h100_ops")
    h = float(v.loc["half_precision", "time_weighted_ape_pct"])
    goal = vidur_h100_ops.GOAL_PCT
    yield _row("half-precision kernels", "Vidur's FP16 operators of the H100 (learned on the A40 and A100 only)",
               "{} % time-weighted (goal {} %, {})",
               "the FP32-learned model at the tensor-core peak {} %, a roofline {} %, the rule of thumb {} %", vi), (
        _pct(h), f"{goal:g}", "met" if h <= goal else "not met",
        *(_pct(v.loc[p, "time_weighted_ape_pct"]) for p in ("baseline", "roofline", "rule_of_thumb")))
    c = vidur_h100_ops.calibration().set_index("measured_family")
    yield _row("the same, one model family's GEMMs measured on the H100 and refitted", "the other families' H100 GEMMs",
               "{} % time-weighted (mean over Vidur's {} families)", "the shipped model {} %", vi), (
        _pct(c.loc["mean", "calibrated_time_weighted_ape_pct"]), len(c) - 1, _pct(c.loc["mean", "shipped_time_weighted_ape_pct"]))
    from perfmodel.step.float8_rowwise import overheads

    fr = overheads()
    yield "On that table the speedup over BF16 errs {} % without the calibration and {} % with it (fitted there)", (
        _pct(fr["uncalibrated_speedup_mape_pct"]), _pct(fr["speedup_mape_pct"]))
    x = vidur_h100_ops.numbers().set_index("quantity")["reproduced"]
    yield _row("BF16 GEMMs of the H100 at its datasheet clock", "OpenXLA's measured GEMMs of an SXM-class H100 ({} shapes, "
               "held out)", "{} % time-weighted (the clock that removes the bias: {})", "the rule of thumb {} %", vi), (
        len(vidur_h100_ops.xla_gemm_check()), _pct(x["xla_h100_bf16_gemm_time_weighted_ape_pct"]),
        f"{x['xla_h100_sustained_clock']:.2f}", _pct(x["xla_h100_bf16_gemm_rule_of_thumb_time_weighted_ape_pct"]))
    links = collectives.fitted_params()["links"]
    yield "(NVLink {}, InfiniBand {} on the DGX H100 cluster's NDR fabric and {} on the DGX A100 cluster's HDR one;", (
        f"{links['nvlink']['efficiency']:.2f}", f"{links['infiniband-ndr']['efficiency']:.2f}",
        f"{links['infiniband-hdr']['efficiency']:.2f}")
    from perfmodel.papers.external import nccl_multinode

    q = nccl_multinode.summary().set_index(["collective", "band"])
    yield _row("the bus bandwidth of a collective across nodes (rail-optimised, a NIC per GPU)",
               "published nccl-tests on {} to {} H100 (AWS p5, {} all-reduce and all-gather rows, 32 MiB to 8 GiB)",
               "{} % MAPE ({} % on the {} rows of 256 MiB and more)",
               "the NICs' line rate {} %, one InfiniBand fit for both of Vidur's clusters {} %, the all-reduces as "
               "NCCL's ring alone (without its tree) {} %",
               _item_link("external.nccl_multinode")), (
        int(nccl_multinode.data()["n_gpus"].min()), int(nccl_multinode.data()["n_gpus"].max()),
        int(q.loc[("all", "all"), "n_rows"]), _pct(q.loc[("all", "all"), "mape_pct"]), _pct(q.loc[("all", "ge_256mib"), "mape_pct"]),
        int(q.loc[("all", "ge_256mib"), "n_rows"]), _pct(q.loc[("all", "all"), "line_rate_mape_pct"]),
        _pct(q.loc[("all", "all"), "pooled_fit_mape_pct"]), _pct(q.loc[("all", "all"), "ring_link_mape_pct"]))
    a2a = nccl_multinode.data()
    a2a = a2a[a2a["collective"] == "alltoall"]
    yield _row("an expert-parallel all-to-all across nodes (a mixture of experts' dispatch: each GPU's off-node share "
               "through its own NIC)",
               "published nccl-tests on {} to {} H100 (AWS p5, {} all-to-all rows, 32 MiB to 2 GiB)",
               "{} % MAPE, predicted slower ({} % on the {} rows of 256 MiB and more)",
               "priced as a ring on the node's NICs {} %, the NICs' line rate {} %",
               _item_link("external.nccl_multinode")), (
        int(a2a["n_gpus"].min()), int(a2a["n_gpus"].max()), int(q.loc[("alltoall", "all"), "n_rows"]),
        _pct(q.loc[("alltoall", "all"), "mape_pct"]), _pct(q.loc[("alltoall", "ge_256mib"), "mape_pct"]),
        int(q.loc[("alltoall", "ge_256mib"), "n_rows"]), _pct(q.loc[("alltoall", "all"), "ring_link_mape_pct"]),
        _pct(q.loc[("alltoall", "all"), "line_rate_mape_pct"]))
    n = torchtitan_runs.summary().set_index("quantity")["value"]
    yield _row("tokens/s per GPU and peak memory of multi-GPU Llama pretraining",
               "torchtitan's published runs that one call can state ({} of {}: every layout, tensorwise and rowwise Float8; H100, H200, A100)",
               "{} % MAPE (worst {} %; the {} rowwise Float8 runs {} %, the other {} runs {} %); peak memory {} % on "
               "the {} runs that publish it",
               "the rule of thumb {} % ({})", _item_link("external.torchtitan_runs")), (
        int(n["rows_predicted"]), int(n["rows"]), _pct(n["tokens_mape_pct"]), _pct(n["tokens_worst_pct"]),
        int(n["rowwise_rows"]), _pct(n["rowwise_tokens_mape_pct"]), int(n["rows_predicted"] - n["rowwise_rows"]),
        _pct(n["other_tokens_mape_pct"]),
        _pct(n["memory_mape_pct"]), int(n["memory_rows"]), _pct(n["rule_of_thumb_tokens_mape_pct"]),
        _verdict(n["tokens_mape_pct"], n["rule_of_thumb_tokens_mape_pct"]))
    a = {r["quantity"]: r["value"] for r in torchtitan_runs._torchao_numbers()}
    yield _row("the same, and FP8's gain over BF16", "torchao's end-to-end Float8 runs (Llama 3 8B on 8 H100: BF16, "
               "tensorwise, rowwise; held out)", "{} % MAPE on the 96 GB 500 W H100 their logs show ({} % on the "
               "catalog 80 GB H100); FP8's gain within {}; peak memory {} %",
               "the rule of thumb {} % ({}); its gain (none) off by {}", _item_link("external.torchtitan_runs")), (
        _pct(a["torchao_e2e_tokens_mape_pct"]), _pct(a["torchao_e2e_tokens_mape_pct_on_catalog_h100"]),
        f"{a['torchao_e2e_fp8_gain_mean_abs_error']:.2f}", _pct(a["torchao_e2e_memory_mape_pct"]),
        _pct(a["torchao_e2e_rule_of_thumb_tokens_mape_pct"]),
        _verdict(a["torchao_e2e_tokens_mape_pct"], a["torchao_e2e_rule_of_thumb_tokens_mape_pct"]),
        f"{a['torchao_e2e_rule_of_thumb_fp8_gain_mean_abs_error']:.2f}")
    yield ("on the {} runs torchtitan published with and without it, the speed-up it gives is predicted within {} on "
           "average (the rule of thumb, which predicts none, {})"), (
        int(n["async_tp_pairs"]), f"{n['async_tp_gain_mean_abs_error']:.2f}",
        f"{n['rule_of_thumb_async_tp_gain_mean_abs_error']:.2f}")
    yield ("Tensor parallelism does not tilt perfmodel's errors as it tilts the rule of thumb's: the mean signed error of tokens/s is {} % on torchtitan's {} "
           "runs with it and {} % on the {} without it (positive: predicted too fast; the rule of thumb {} % and {} %)"), (
        f"{n['tp_tokens_mean_signed_pct']:+.1f}", int(n["tp_rows"]), f"{n['no_tp_tokens_mean_signed_pct']:+.1f}",
        int(n["rows_predicted"] - n["tp_rows"]), f"{n['rule_of_thumb_tp_tokens_mean_signed_pct']:+.1f}",
        f"{n['rule_of_thumb_no_tp_tokens_mean_signed_pct']:+.1f}")
    from perfmodel.papers.external import megatron_runs

    g = megatron_runs.summary().set_index("quantity")["value"]
    yield _row("TFLOP/s per GPU of Megatron-LM's 3D-parallel GPT runs",
               "Narayanan et al.'s {} weak-scaling runs (SC'21 Table 1: GPT 1.7B to 1T on 32 to 3,072 A100)",
               "{} % MAPE (worst {} %)", "the rule of thumb {} % ({})", _item_link("external.megatron_runs")), (
        int(g["rows"]), _pct(g["tflops_mape_pct"]), _pct(g["tflops_worst_pct"]), _pct(g["rule_of_thumb_tflops_mape_pct"]),
        _verdict(g["tflops_mape_pct"], g["rule_of_thumb_tflops_mape_pct"]))
    from perfmodel.papers.external import megatron_recompute_runs

    k = megatron_recompute_runs.summary().set_index("quantity")["value"]
    yield _row("the same with sequence parallelism and selective recomputation (`activation_checkpointing=\"attention\"`)",
               "Korthikanti et al.'s {} end-to-end runs (GPT 22B to 1T on 8 to 512 A100, full and selective recomputation)",
               "{} % MAPE of the MFU (worst {} %); speed-up of selective over full recomputation {}x (published {}x)",
               "the rule of thumb {} % ({})", _item_link("external.megatron_recompute_runs")), (
        int(k["rows"]), _pct(k["mfu_mape_pct"]), _pct(k["mfu_worst_pct"]), f"{k['predicted_speedup_mean']:.2f}",
        f"{k['published_speedup_mean']:.2f}", _pct(k["rule_of_thumb_mfu_mape_pct"]),
        _verdict(k["mfu_mape_pct"], k["rule_of_thumb_mfu_mape_pct"]))
    from perfmodel.papers.external import torchtitan_runs
    from perfmodel.step.kernels import SUSTAINED_CLOCK_SHARE, training_clock

    t = torchtitan_runs.data()
    yield "(" + "{} for the GH100 die, {} for the B200)", (f"{SUSTAINED_CLOCK_SHARE['H200']:.3f}",
                                                           f"{SUSTAINED_CLOCK_SHARE['B200']:.3f}")
    yield "{} on 8 H100s, {} on 1,024;", tuple(f"{training_clock('H100', 'bf16', n_gpus=n):.3f}" for n in (8, 1024))
    from perfmodel.step.kernels import burst_clock_share, mamf_check

    mamf = mamf_check().set_index(["gpu", "precision"])
    mi = mamf.loc[("MI300X", "bf16")]
    yield "(MI300X: {} TFLOPS measured, {} predicted)", (f"{mi['measured_tflops']:.1f}", f"{mi['predicted_tflops_datasheet']:.1f}")
    yield "reaches it ({}, {}, {}:", tuple(f"{burst_clock_share(g):.3f}" for g in ("MI300X", "MI325X", "MI355X"))
    assert (mamf["predicted_over_measured"] > 1).groupby(level="gpu").all().loc[["MI300X", "MI325X", "MI355X"]].all()
    from perfmodel.step.strategy import mesh_allreduce_check, resolve_links

    from perfmodel.step.collectives import infinity_fabric

    fabric = infinity_fabric("MI300X")
    tp2 = resolve_links(None, "MI300X", degrees={"tp": 2})["tp"]
    assert tp2.bandwidth_gb_per_s * fabric.mesh_peers == fabric.bandwidth_gb_per_s  # one link of them
    yield "directly to each of the {} others", (fabric.mesh_peers,)
    yield "tensor parallelism over {} of them one link of {},", (2, fabric.mesh_peers)
    rccl = mesh_allreduce_check().set_index("n_gpus")
    yield "is predicted at {} GB/s of bus bandwidth on 2 GPUs ({} measured) and {} on 8 ({} measured).", tuple(
        f"{rccl.loc[n, c]:.1f}" for n in (2, 8) for c in ("predicted_busbw_gb_per_s", "measured_busbw_gb_per_s"))
    yield "torchtitan's H200 rows, never fitted on, come out within {} % of their tokens/s", (
        _pct(t.loc[t["gpu"] == "H200", "tokens_abs_error_pct"].max()),)
    from perfmodel.papers.external import llama3_paper_runs

    m = llama3_paper_runs.summary().set_index("quantity")["value"]
    yield _row("TFLOP/s per GPU of 4D-parallel Llama pretraining at the largest scale, on 700 W H100",
               "the Llama 3 paper's {} Llama 3 405B pre-training runs (Table 4: TP x CP x PP x DP, BF16)",
               "{} % MAPE of TFLOP/s per GPU (worst {} %, mean signed {} %: {}) under the rule's FLOP count, {} % under a causal one (the rule of thumb {} %); {} of {} predicted to fit in 80 GB ({} of {} with the gradients sharded every micro-batch, `shard_gradients=True`, then {} % MAPE, mean signed {} %)",
               "the rule of thumb {} % ({})", _item_link("external.llama3_paper_runs")), (
        int(m["rows"]), _pct(m["tflops_mape_pct"]), _pct(m["tflops_worst_pct"]), f"{m['tflops_mean_signed_pct']:+.1f}",
        "predicted too fast" if m["tflops_mean_signed_pct"] > 0 else "predicted too slow",
        _pct(m["tflops_mape_causal_count_pct"]), _pct(m["rule_of_thumb_tflops_mape_causal_count_pct"]), round(m["fitting_share"] * m["rows"]), int(m["rows"]),
        round(m["fitting_share_zero2"] * m["rows"]), int(m["rows"]), _pct(m["tflops_mape_zero2_pct"]),
        f"{m['tflops_mean_signed_zero2_pct']:+.1f}", _pct(m["rule_of_thumb_tflops_mape_pct"]),
        _verdict(m["tflops_mape_pct"], m["rule_of_thumb_tflops_mape_pct"]))


def _verdict(ours: float, rule: float) -> str:
    """How the README words perfmodel's error ``ours`` beside the rule of thumb's ``rule`` on the same rows."""
    return "perfmodel better" if ours < rule else "better than perfmodel"


def _claims():
    for gen in (_speed_claims, _data_claims, _result_claims, _llm_claims):
        for template, values in gen():
            yield template.format(*values)


@pytest.fixture(scope="module")
def verified() -> list[str]:
    return list(_claims())


def test_every_claim_is_in_the_readme(verified):
    text = _readme()
    missing = [c for c in verified if c not in text]
    assert not missing, "README phrases whose numbers do not match the data (phrase as computed):\n" + "\n".join(missing)


#: Numbers in the README that are not measurements, with the reason each is allowed.
_NOT_MEASUREMENTS = [
    (r"ICDCS 2020|ICAC 2019|2019 GCE|2018–19|ASPLOS'25|SC'21", "paper venues and years"),
    (r"Python ≥ 3\.10|torch==2\.13\.0|torch>=2\.2|Apache-2\.0|sha256", "versions, licences, hash names"),
    (r"`[^`]*`", "code spans: file names, commit ids, function names"),
    (r"§\s?[0-9.]+", "section numbers of the papers"),
    (r"ICAC'19|K80|P100|V100|H100|A100|L4\b|0lat_\w*", "names that contain digits"),
    (r"NN-<slug>|notebooks/\d\d-[\w-]+|\b0[0-9]-[a-z-]+", "notebook names"),
    (r"exits 1|exits? 0|exit status \d|≥ 1|1–8 workers|1–2 PS", "exit codes and CLI ranges"),
    (r"\d+ min\b|under a minute|\d+(\.\d+)? s\b", "timings, measured by the benchmarks, not data"),
    (r"--[a-z-]+ [0-9.,]+", "command-line examples"),
    (r"(?<= )[1-9]\. (?=\S)", "numbered-list markers"),
    (r"\b[a-z_]+=\(?\d+,?\)?", "keyword arguments in code examples"),
    (r"A100-40GB|A100-80GB|GPT2Config|ZeRO-[123]\b|Llama 3 paper", "names that contain digits"),
    (r"\b(January|February|March|April|May|June|July|August|September|October|November|December) 20\d\d\b",
     "dates (of a library's versions)"),
    (r"\b[57]00 W\b", "the power limit of a named part, as its sources (torchtitan's files, FBGEMM's pull request, the "
                       "Llama 3 paper) name it"),
    (r"\bA40\b|\bH200\b|\bFP(8|16|32)\b|FlashAttention-2|\bMI(100|210|250)\b|\bP4\b|\bT4\b|\b[BT]F(16|32)\b|GPT-2",
     "names that contain digits"),
]


def test_no_unverified_number_in_the_readme(verified):
    text = _readme()
    covered = np.zeros(len(text), dtype=bool)
    for c in verified:
        for m in re.finditer(re.escape(c), text):
            covered[m.start():m.end()] = True
    for pat, _ in _NOT_MEASUREMENTS:
        for m in re.finditer(pat, text):
            covered[m.start():m.end()] = True
    loose = [(m.group(), text[max(0, m.start() - 50):m.end() + 30]) for m in re.finditer(r"\d+(?:[.,]\d+)*", text)
             if not covered[m.start():m.end()].all()]
    assert not loose, ("numbers in the README that no test checks (add the phrase to tests/test_readme.py, computed from the "
                       "data, or remove it):\n" + "\n".join(f"{n!r} in …{ctx}…" for n, ctx in loose))
