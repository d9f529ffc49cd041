"""Megatron-LM's end-to-end runs with full and with selective recomputation (GPT 22B-1T on 8-512 A100, TP x PP) predicted from spec sheets, in iteration time and model FLOPs utilization.
"""

from __future__ import annotations

import warnings

import pandas as pd

from perfmodel.datasets._cache import cached_frame
from perfmodel.papers._item import Item
from perfmodel.papers.external.megatron_runs import (GPU, LINKS, SEQ_LEN, VOCAB, config, published_beside_predicted,
                                                     with_errors)

ITEM = Item(
    paper="perfmodel",
    number="external benchmark (Megatron-LM's sequence parallelism and selective recomputation, Korthikanti et al. 2022)",
    title=("Megatron-LM's end-to-end runs with full and with selective recomputation (GPT 22B-1T on 8-512 A100, "
           "TP x PP) predicted from spec sheets, in iteration time and model FLOPs utilization"),
    upstream=("Korthikanti et al., Reducing Activation Recomputation in Large Transformer Models (MLSys 2023, "
              "arXiv:2205.05198) Tables 3 and 4; NVIDIA/Megatron-LM README (MFU and HFU of the same configurations)"),
    sources=("datasets/reference/megatron_korthikanti_table4.csv: the four models of Table 3, each with its Table 4 "
             "iteration time under full recomputation and under sequence parallelism with selective recomputation "
             "(perfmodel.datasets.load_megatron_recompute_runs)",),
    procedure=("Every row is one pm.predict call: a GPT-2-shaped Hugging Face config of the row's hidden size, layers "
               "and heads (MLP 4h, learned positions, tied embeddings, dropout 0.1), sequence 2048, vocabulary 51,200, "
               "the global batch, BF16 mixed precision, the fused Adam step, framework='megatron' with a "
               "data-parallel size of one ('tpT-ppP'), global batch / micro-batch micro-batches on the 1F1B schedule, "
               "Megatron's fused kernels as stack='compile' and its attention as materialised scores "
               "(attn_implementation='eager'), on A100-SXM4-80GB in nodes of 8 with NVLink inside and 8 HDR "
               "InfiniBand NICs per node (Selene's DGX A100 nodes). The 'full recompute' rows: "
               "activation_checkpointing='full' without sequence parallelism; the 'present work' rows: "
               "activation_checkpointing='attention' (Megatron's selective recomputation of the core attention) "
               "with sequence parallelism. The predicted step T gives the model FLOPs utilization as the paper counts "
               "it (Section 6: 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)) model FLOPs per iteration, over T · n · 312 "
               "TFLOP/s). The rule of thumb ((6N + 12·L·h·s) FLOPs per token at 40 % of the BF16 peak) is scored on "
               "the same rows the same way; it does not see the recomputation, so it answers the same for both rows "
               "of a model. Nothing is fitted on these rows. Scored: absolute % error of the MFU per row (that of "
               "the iteration time's inverse), their mean (MAPE), the worst row, and the speed-up of selective over "
               "full recomputation per model against the paper's."),
    status="perfmodel analysis",
    notebook="notebooks/17-llama-70b-layouts.ipynb",
    test="tests/papers/test_megatron_recompute_runs.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]

#: the A100's dense BF16 tensor-core peak the paper's utilization is counted against (FLOP/s).
PEAK_FLOPS = 312e12


def model_flops(batch: int, layers: int, hidden: int, seq: int = SEQ_LEN, vocab: int = VOCAB) -> float:
    """Model FLOPs of one iteration as Korthikanti et al. count them (Section 6, no recomputation counted):
    ``72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h))``."""
    B, s, l, h, V = float(batch), float(seq), float(layers), float(hidden), float(vocab)
    return 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h))


def run(r):
    """The ``(workload, cluster, parallelism)`` of one row of :func:`perfmodel.datasets.load_megatron_recompute_runs`."""
    import perfmodel as pm

    tp, pp, n = int(r.tp), int(r.pp), int(r.n_gpus)
    if n != tp * pp:
        raise ValueError(f"{r.model}: {n} GPUs is not tp x pp = {tp} x {pp}; the paper's runs have a data-parallel "
                         "size of one.")
    w = pm.Workload(dict(config(r.hidden_size, r.layers, r.attention_heads), activation_function="gelu"), input_shape=(SEQ_LEN,),
                    batch_size=int(r.global_batch), precision="bf16", optimizer="adam-fused", stack="compile")
    c = pm.Cluster(GPU, n_gpus=n, gpus_per_node=8, interconnect=LINKS, nics_per_node=8)
    p = pm.Parallelism(f"tp{tp}-pp{pp}" if pp > 1 else f"tp{tp}", micro_batches=int(r.global_batch) // int(r.micro_batch),
                       activation_checkpointing="full" if r.recompute == "full" else "attention",
                       framework="megatron", distributed_optimizer=False, sequence_parallel=bool(r.sequence_parallel))
    return w, c, p


@cached_frame
def data() -> pd.DataFrame:
    """One row per published run: the layout, the published and predicted iteration time and MFU, the rule of thumb's,
    their absolute % errors and the predicted memory per GPU. Computed once per process and data source; callers get
    copies."""
    import perfmodel as pm
    from perfmodel.datasets import load_megatron_recompute_runs
    from perfmodel.models import ExtrapolationWarning
    from perfmodel.step.baselines import rule_of_thumb_step_time
    from perfmodel.step.step_time import OutOfMemoryWarning

    rows = []
    for r in load_megatron_recompute_runs().itertuples(index=False):
        w, c, p = run(r)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExtrapolationWarning)
            warnings.simplefilter("ignore", OutOfMemoryWarning)
            f = pm.predict(w, c, p).to_frame().iloc[0]
        rule = rule_of_thumb_step_time(w.model, GPU, input_shape=(SEQ_LEN,), batch_size=int(r.global_batch),
                                       precision="bf16", n_gpus=int(r.n_gpus)).iloc[0]
        F, n, t = model_flops(int(r.global_batch), int(r.layers), int(r.hidden_size)), int(r.n_gpus), float(r.iteration_time_s)
        rows.append(dict(model=r.model, experiment=r.experiment, n_gpus=n, strategy=p.strategy,
                         micro_batches=p.micro_batches, activation_checkpointing=p.checkpointing,
                         sequence_parallel=bool(r.sequence_parallel), published_step_s=t,
                         predicted_step_s=float(f["step_time_s"]), recompute_s=float(f["recompute_s"]),
                         bubble_s=float(f["bubble_s"]), comm_s=float(f["comm_s"]),
                         rule_of_thumb_step_s=float(rule["step_time_s"]),
                         published_mfu_pct=100 * F / (t * n * PEAK_FLOPS),
                         predicted_mfu_pct=100 * F / (float(f["step_time_s"]) * n * PEAK_FLOPS),
                         rule_of_thumb_mfu_pct=100 * F / (float(rule["step_time_s"]) * n * PEAK_FLOPS),
                         predicted_memory_gib=float(f["memory_per_gpu_bytes"]) / 2**30,
                         predicted_activations_gib=float(f["activations_bytes"]) / 2**30, fits=bool(f["fits"])))
    return with_errors(pd.DataFrame(rows), "published_mfu_pct", "predicted_mfu_pct", "rule_of_thumb_mfu_pct")


def speedups(d: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per model: the iteration time under full recomputation over that under selective recomputation with sequence
    parallelism, published and predicted."""
    d = data() if d is None else d
    full = d[d["experiment"] == "full recompute"].set_index("model")
    sel = d[d["experiment"] == "present work"].set_index("model")
    return pd.DataFrame({"published": full["published_step_s"] / sel["published_step_s"],
                         "predicted": full["predicted_step_s"] / sel["predicted_step_s"]}).loc[full.index]


def summary(d: pd.DataFrame | None = None) -> pd.DataFrame:
    """:func:`data`'s scores: rows, MAPE of the MFU (all rows, and each experiment), worst row, mean signed error, the
    rule of thumb's MAPE, the mean speed-up of selective over full recomputation (published and predicted), and each
    row's signed error (``quantity``, ``value``)."""
    d = data() if d is None else d
    sp = speedups(d)
    sel = d["experiment"] == "present work"
    vals = [("rows", float(len(d))), ("mfu_mape_pct", float(d["abs_error_pct"].mean())),
            ("mfu_worst_pct", float(d["abs_error_pct"].max())),
            ("mfu_mean_signed_pct", float(d["signed_error_pct"].mean())),
            ("selective_mfu_mape_pct", float(d.loc[sel, "abs_error_pct"].mean())),
            ("full_recompute_mfu_mape_pct", float(d.loc[~sel, "abs_error_pct"].mean())),
            ("rule_of_thumb_mfu_mape_pct", float(d["rule_of_thumb_abs_error_pct"].mean())),
            ("published_speedup_mean", float(sp["published"].mean())),
            ("predicted_speedup_mean", float(sp["predicted"].mean())),
            ("selective_rows_fitting_share", float(d.loc[sel, "fits"].mean()))]
    vals += [(f"mfu_signed_error_pct ({r.model}, {r.experiment})", float(r.signed_error_pct))
             for r in d.itertuples(index=False)]
    return pd.DataFrame({"quantity": [k for k, _ in vals], "value": [v for _, v in vals]})


_WHAT = {"rows": "Table 4 runs (GPT 22B-1T on 8-512 A100, full and selective recomputation), every one predicted",
         "mfu_mape_pct": "mean absolute % error of the model FLOPs utilization (the paper's count over the predicted step)",
         "mfu_worst_pct": "largest absolute % error of the model FLOPs utilization",
         "mfu_mean_signed_pct": "mean signed % error of the model FLOPs utilization (positive: predicted faster)",
         "selective_mfu_mape_pct": "MAPE of the MFU on the four runs with sequence parallelism and selective recomputation",
         "full_recompute_mfu_mape_pct": "MAPE of the MFU on the four runs with full recomputation",
         "rule_of_thumb_mfu_mape_pct": ("the baseline on the same runs: MAPE of the MFU by the rule of thumb, "
                                        "(6N + 12·L·h·s) FLOPs per token at 40 % of the BF16 peak "
                                        "(perfmodel.step.baselines.rule_of_thumb_step_time)"),
         "published_speedup_mean": "mean over the four models of the published full-recompute over selective iteration time",
         "predicted_speedup_mean": "the same ratio of the predicted iteration times",
         "selective_rows_fitting_share": "share of the selective-recomputation runs predicted to fit in 80 GB (all ran)"}

_ROW = "signed % error of this run's model FLOPs utilization (positive: predicted faster)"
_UNITS = {"rows": "rows", "published_speedup_mean": "ratio", "predicted_speedup_mean": "ratio",
          "selective_rows_fitting_share": "ratio"}


def numbers() -> pd.DataFrame:
    """perfmodel's own results (no paper value): :func:`summary`'s scores, each with how it was computed."""
    from perfmodel.papers import _item

    rows = [dict(quantity=r.quantity, unit=_UNITS.get(r.quantity, "pct"), value=float(r.value),
                 protocol=f"{_WHAT.get(r.quantity, _ROW)}; "
                          + ("the same runs" if r.quantity.startswith("rule_of_thumb")
                             else "the paper's iteration times" if r.quantity.startswith("published")
                             else "predicted by pm.predict from the GPU's spec sheet")
                          + ", nothing fitted on these runs (megatron_recompute_runs.data)")
            for r in summary().itertuples(index=False)]
    return _item.item_results(__name__, rows)


def figure(data: pd.DataFrame | None = None, ax=None):
    """Published, predicted and rule-of-thumb MFU of each run (grouped bars: the models, full then selective
    recomputation); returns the Figure."""
    d = globals()["data"]() if data is None else data
    short = {"full recompute": "full", "present work": "SP+sel."}
    return published_beside_predicted(
        d, ("published_mfu_pct", "published (Korthikanti et al. Table 4)"), "predicted_mfu_pct", "rule_of_thumb_mfu_pct",
        [f"{m.split()[-1]}\n{short[e]}" for m, e in zip(d["model"], d["experiment"])], ax=ax,
        ylabel="model FLOPs utilization (%)", xlabel="model, recomputation",
        title="Megatron-LM with full and selective recomputation on A100")
