"""Meta's Llama 3 405B pre-training runs (8,192-16,384 H100 at 700 W, TP x CP x PP x DP) predicted from spec sheets, in BF16 teraFLOP/s per GPU.
"""

from __future__ import annotations

import dataclasses
import warnings

import pandas as pd

from perfmodel.datasets._cache import cached_frame
from perfmodel.papers._item import Item
from perfmodel.papers.external.megatron_runs import published_beside_predicted, with_errors

ITEM = Item(
    paper="perfmodel",
    number="external benchmark (Meta's Llama 3 405B pre-training runs, the Llama 3 paper's Table 4)",
    title=("Meta's Llama 3 405B pre-training runs (8,192-16,384 H100 at 700 W, TP x CP x PP x DP) predicted from spec "
           "sheets, in BF16 teraFLOP/s per GPU"),
    upstream=("Grattafiori et al. (Llama Team, AI @ Meta), The Llama 3 Herd of Models (arXiv:2407.21783), Table 4 and "
              "Section 3.3"),
    sources=("datasets/reference/llama3_herd_table4.csv: the three 405B runs of Table 4 (layout, sequence, batch per "
             "data-parallel rank, BF16 TFLOP/s per GPU and MFU) with Section 3.3's hardware "
             "(perfmodel.datasets.load_llama3_runs)",),
    procedure=("Every row is one pm.predict call: Llama 3.1 405B's Hugging Face config (torchtitan_runs.MODEL_CONFIGS), "
               "the row's sequence, global batch = dp x batch per dp rank in micro-batches of one sequence, BF16 mixed "
               "precision, the fused Adam step, on the catalog H100 (SXM5 80GB, the 700 W part the paper names) at "
               "the share of its datasheet clock it sustains under training's GEMM load (pm.Cluster's default clock: "
               "perfmodel.step.kernels.SUSTAINED_CLOCK_SHARE, from a published matmul benchmark, not these runs) in nodes of 8 with NVLink inside and a 400 Gb/s NIC per GPU on its own rail "
               "(infiniband-ndr, nics_per_node=8; the run's fabric is RoCE at that rate). Section 3.3.2's execution "
               "as near as perfmodel states it: parameters kept whole over data parallel, optimizer states sharded "
               "(the paper's FSDP without resharding after the forward pass; framework='megatron' with its "
               "distributed optimizer, which accumulates each rank's FP32 gradients whole over the micro-batches "
               "and reduce-scatters them once per step, §3.3.4's 'FP32 gradient accumulation ... over multiple "
               "micro-batches'), "
               "sequence-sharded tensor parallelism, context parallelism that all-gathers the grouped K and V, the "
               "interleaved 1F1B schedule with the embedding and the loss each counted as a layer (the 'balanced "
               "pipeline': one fewer transformer layer on the first and last stage), 128 layer slots over 16 stages "
               "of 8 one-layer chunks (virtual_stages=8), fused kernels (stack='te'), no TP overlap (the paper names "
               "none). The paper's teraFLOP/s are converted to a step with the rule of thumb's FLOP count (6N + "
               "12·L·h·s per token, PaLM's model FLOPs: the paper does not print its count; a causal count, half the attention FLOPs, "
               "would shorten the published steps by about 4 % at 8K and 29 % at 128K tokens, and is reported "
               "beside it), and perfmodel's step back "
               "to teraFLOP/s with the same count. The rule of thumb ((6N + 12·L·h·s) FLOPs per token at 40 % of the "
               "BF16 peak) is scored on the same rows. Nothing is fitted on these rows. Scored: absolute % error of "
               "TFLOP/s per GPU per row, their mean (MAPE), the worst row, and whether the run is predicted to fit in "
               "its 80 GB (all three ran). Scored beside it, the paper's 'shards ... gradients' read literally "
               "(Parallelism(shard_gradients=True), ZeRO-2: each micro-batch's FP32 gradients reduce-scattered into "
               "the rank's shard, 11-12 GiB fewer per GPU, one reduce-scatter per micro-batch, 16-32 a step, instead of one)."),
    status="perfmodel analysis",
    notebook="notebooks/17-llama-70b-layouts.ipynb",
    test="tests/papers/test_llama3_paper_runs.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]

#: the GPU the paper names (H100 SXM5 80GB HBM3 at its 700 W TDP): the catalog's H100, at the clock it sustains
GPU = "H100"
#: NVLink inside the 8-GPU server, a 400 Gb/s NIC per GPU between servers (Section 3.3.1: RoCE at 400 Gbps)
LINKS = {"intra": "nvlink", "inter": "infiniband-ndr"}
#: Section 3.3.2's balanced pipeline: the embedding and the loss each take a layer's slot (126 + 2 = 128 slots)
PIPELINE_LAYERS = {"embedding": True, "loss": True}


def run(r):
    """The ``(workload, cluster, parallelism)`` of one row of :func:`perfmodel.datasets.load_llama3_runs`."""
    import perfmodel as pm
    from perfmodel.papers.external.torchtitan_runs import MODEL_CONFIGS

    tp, cp, pp, dp, n = int(r.tp), int(r.cp), int(r.pp), int(r.dp), int(r.n_gpus)
    if n != tp * cp * pp * dp:
        raise ValueError(f"{r.model}: {n} GPUs is not tp x cp x pp x dp = {tp} x {cp} x {pp} x {dp}.")
    cfg = MODEL_CONFIGS["Llama 3.1 405B"]
    slots = cfg["num_hidden_layers"] + 2
    if slots % pp:
        raise ValueError(f"{r.model}: {slots} layer slots do not divide over {pp} pipeline stages.")
    w = pm.Workload(cfg, input_shape=(int(r.seq_len),), batch_size=dp * int(r.batch_size_per_dp), precision="bf16",
                    optimizer="adam-fused", stack="te")
    c = pm.Cluster(GPU, n_gpus=n, gpus_per_node=8, interconnect=LINKS, nics_per_node=8)
    layout = "-".join(f"{k}{v}" for k, v in (("dp", dp), ("cp", cp), ("tp", tp), ("pp", pp)) if v > 1)
    p = pm.Parallelism(layout, micro_batch_size=1, framework="megatron", pipeline_schedule="interleaved-1f1b",
                       virtual_stages=slots // pp, pipeline_layers=PIPELINE_LAYERS)
    return w, c, p


def _rule_and_flops(w, n: int) -> tuple[float, float]:
    """(the rule of thumb's step, the step's FLOPs under its count) of the workload ``w`` on ``n`` GPUs."""
    from perfmodel.step.baselines import rule_of_thumb_step_time

    r = rule_of_thumb_step_time(w.model, GPU, input_shape=w.input_shape, batch_size=w.batch_size, precision="bf16",
                                n_gpus=n).iloc[0]
    step = float(r["step_time_s"])
    return step, step * float(r["mfu"]) * float(r["peak_tflops"]) * 1e12 * n


def causal_attention_savings(w) -> float:
    """FLOPs of a step of ``w`` that the rule of thumb's count includes and a causal count does not: half of its
    attention FLOPs (:func:`perfmodel.step.baselines.attention_flops_per_token`) over the step's tokens."""
    from perfmodel.step.baselines import attention_flops_per_token

    return 0.5 * attention_flops_per_token(w.model, w.input_shape) * int(w.input_shape[0]) * int(w.batch_size)


@cached_frame
def data() -> pd.DataFrame:
    """One row per published run: the layout, the published and predicted BF16 TFLOP/s per GPU (and steps), the rule
    of thumb's, their absolute % errors, the predicted memory per GPU and whether it fits. Computed once per process
    and data source; callers get copies."""
    import perfmodel as pm
    from perfmodel.datasets import load_llama3_runs
    from perfmodel.models import ExtrapolationWarning
    from perfmodel.step.step_time import OutOfMemoryWarning

    rows = []
    for r in load_llama3_runs().itertuples(index=False):
        w, c, p = run(r)
        n = int(r.n_gpus)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExtrapolationWarning)
            warnings.simplefilter("ignore", OutOfMemoryWarning)
            f = pm.predict(w, c, p).to_frame().iloc[0]
            # the paper's words read literally: gradients sharded, so reduce-scattered (in FP32, §3.3.4) every
            # micro-batch (ZeRO-2)
            z = pm.predict(w, c, dataclasses.replace(p, shard_gradients=True)).to_frame().iloc[0]
        rule, F = _rule_and_flops(w, n)
        t = float(f["step_time_s"])
        # the causal count: half of the rule's 12·L·h·s attention FLOPs per token (a causal mask skips half the scores)
        F_causal = F - causal_attention_savings(w)
        causal_step = F_causal / (float(r.tflops_per_gpu) * 1e12 * n)
        rows.append(dict(model=r.model, n_gpus=n, strategy=p.strategy, seq_len=int(r.seq_len),
                         micro_batches=int(r.batch_size_per_dp), virtual_stages=p.virtual_stages,
                         published_tflops=float(r.tflops_per_gpu), published_step_s=F / (float(r.tflops_per_gpu) * 1e12 * n),
                         predicted_step_s=t, predicted_tflops=F / (t * n) / 1e12, rule_of_thumb_step_s=rule,
                         rule_of_thumb_tflops=F / (rule * n) / 1e12, bubble_s=float(f["bubble_s"]),
                         comm_s=float(f["comm_s"]), predicted_memory_gib=float(f["memory_per_gpu_bytes"]) / 2**30,
                         fits=bool(f["fits"]), predicted_step_zero2_s=float(z["step_time_s"]),
                         predicted_tflops_zero2=F / (float(z["step_time_s"]) * n) / 1e12,
                         predicted_memory_zero2_gib=float(z["memory_per_gpu_bytes"]) / 2**30,
                         fits_zero2=bool(z["fits"]), published_step_causal_count_s=causal_step,
                         signed_error_causal_count_pct=100 * (causal_step / t - 1),
                         rule_of_thumb_signed_error_causal_count_pct=100 * (causal_step / rule - 1)))
    return with_errors(pd.DataFrame(rows), "published_tflops", "predicted_tflops", "rule_of_thumb_tflops")


def summary(d: pd.DataFrame | None = None) -> pd.DataFrame:
    """:func:`data`'s scores: rows, MAPE, worst row, mean signed error, the rule of thumb's MAPE, the share of runs
    predicted to fit, and each row's signed error (``quantity``, ``value``)."""
    d = data() if d is None else d
    vals = [("rows", float(len(d))), ("tflops_mape_pct", float(d["abs_error_pct"].mean())),
            ("tflops_worst_pct", float(d["abs_error_pct"].max())),
            ("tflops_mean_signed_pct", float(d["signed_error_pct"].mean())),
            ("rule_of_thumb_tflops_mape_pct", float(d["rule_of_thumb_abs_error_pct"].mean())),
            ("fitting_share", float(d["fits"].mean())),
            ("tflops_mape_causal_count_pct", float(d["signed_error_causal_count_pct"].abs().mean())),
            ("rule_of_thumb_tflops_mape_causal_count_pct",
             float(d["rule_of_thumb_signed_error_causal_count_pct"].abs().mean())),
            ("fitting_share_zero2", float(d["fits_zero2"].mean())),
            ("tflops_mape_zero2_pct",
             float((100 * (d["predicted_tflops_zero2"] / d["published_tflops"] - 1)).abs().mean())),
            ("tflops_mean_signed_zero2_pct",
             float((100 * (d["predicted_tflops_zero2"] / d["published_tflops"] - 1)).mean()))]
    vals += [(f"tflops_signed_error_pct ({r.n_gpus} GPUs, {r.strategy})", float(r.signed_error_pct))
             for r in d.itertuples(index=False)]
    return pd.DataFrame({"quantity": [k for k, _ in vals], "value": [v for _, v in vals]})


_WHAT = {"rows": "Table 4 runs (Llama 3 405B on 8,192-16,384 H100 at 700 W), every one predicted",
         "tflops_mape_pct": ("mean absolute % error of BF16 TFLOP/s per GPU (the rule of thumb's FLOP count over the "
                             "predicted step)"),
         "tflops_worst_pct": "largest absolute % error of TFLOP/s per GPU",
         "tflops_mean_signed_pct": "mean signed % error of TFLOP/s per GPU (positive: predicted faster)",
         "rule_of_thumb_tflops_mape_pct": ("the baseline on the same runs: MAPE of TFLOP/s per GPU by the rule of thumb, "
                                           "(6N + 12·L·h·s) FLOPs per token at 40 % of the BF16 peak "
                                           "(perfmodel.step.baselines.rule_of_thumb_step_time)"),
         "fitting_share": "share of the runs predicted to fit in the H100's 80 GB (all three ran)",
         "tflops_mape_causal_count_pct": ("the same MAPE had the paper counted causal attention (half the rule's "
                                          "12·L·h·s per token): its published steps shorter, by 4 % at 8K and 29 % at "
                                          "128K tokens"),
         "rule_of_thumb_tflops_mape_causal_count_pct": ("the rule of thumb's MAPE under that causal count (its step "
                                                        "unchanged, the published steps shorter)"),
         "fitting_share_zero2": ("share of the runs predicted to fit in 80 GB with the gradients sharded as the paper "
                                 "says (Parallelism(shard_gradients=True): each micro-batch's FP32 gradients "
                                 "reduce-scattered into the rank's shard, ZeRO-2)"),
         "tflops_mape_zero2_pct": ("MAPE of TFLOP/s per GPU (the rule's count) with the gradients so sharded: one "
                                   "FP32 reduce-scatter of the stage's gradients per micro-batch"),
         "tflops_mean_signed_zero2_pct": "mean signed % error of TFLOP/s per GPU with the gradients so sharded"}
_ROW = "signed % error of this run's TFLOP/s per GPU (positive: predicted faster)"
_UNITS = {"rows": "rows", "fitting_share": "ratio", "fitting_share_zero2": "ratio"}


def numbers() -> pd.DataFrame:
    """perfmodel's own results (no paper value): :func:`summary`'s scores, each with how it was computed."""
    from perfmodel.papers import _item

    rows = [dict(quantity=r.quantity, unit=_UNITS.get(r.quantity, "pct"), value=float(r.value),
                 protocol=f"{_WHAT.get(r.quantity, _ROW)}; "
                          + ("the same runs" if r.quantity.startswith("rule_of_thumb")
                             else "predicted by pm.predict from the GPU's spec sheet")
                          + ", nothing fitted on these runs (llama3_paper_runs.data)")
            for r in summary().itertuples(index=False)]
    return _item.item_results(__name__, rows)


def figure(data: pd.DataFrame | None = None, ax=None):
    """Published, predicted and rule-of-thumb BF16 TFLOP/s per GPU of each run (grouped bars); returns the Figure."""
    d = globals()["data"]() if data is None else data
    return published_beside_predicted(
        d, ("published_tflops", "published (Llama 3 paper, Table 4)"), "predicted_tflops", "rule_of_thumb_tflops",
        [f"{n:,} GPUs\n{s}" for n, s in zip(d["n_gpus"], d["strategy"])], ax=ax, ylabel="BF16 TFLOP/s per GPU",
        xlabel="GPUs, layout", title="Llama 3 405B pre-training on 700 W H100")
