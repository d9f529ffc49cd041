"""Megatron-LM's weak-scaling runs (GPT 1.7B-1T on 32-3,072 A100, TP x PP x DP) predicted from spec sheets, in TFLOP/s per GPU.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from perfmodel.datasets._cache import cached_frame
from perfmodel.papers._item import Item

ITEM = Item(
    paper="perfmodel",
    number="external benchmark (Megatron-LM's weak-scaling runs, SC'21 Table 1)",
    title=("Megatron-LM's weak-scaling runs (GPT 1.7B-1T on 32-3,072 A100, TP x PP x DP) predicted from spec sheets, "
           "in TFLOP/s per GPU"),
    upstream="Narayanan et al., SC'21 (arXiv:2104.04473) Table 1; NVIDIA/Megatron-LM examples/sc21/run_table_1.sh",
    sources=("datasets/reference/megatron_sc21_table1.csv: the ten rows of Table 1 with the micro-batch, data-parallel "
             "implementation and virtual pipeline stages of the paper's artifact script (perfmodel.datasets."
             "load_megatron_runs)",),
    procedure=("Every row is one pm.predict call (the objects of pm.predict_step_time's keywords): a GPT-2-shaped Hugging Face config of the row's hidden "
               "size, layers and heads (MLP 4h, learned positions, tied embeddings, dropout 0.1), sequence 2048, "
               "vocabulary 51,200, the global batch, FP16 mixed precision, the fused Adam step, full activation "
               "recomputation, framework='megatron' without the distributed optimizer, without sequence parallelism "
               "and with the backward pass's tensor-parallel all-reduces in order (overlap_tp_backward=False: none of "
               "the three existed in Megatron-LM then; perfmodel.step.strategy.TP_BACKWARD_OVERLAP), the row's 'dpD-tpT-ppP' layout with global batch / dp / "
               "micro-batch micro-batches, the interleaved schedule with layers / pp / layers-per-virtual-stage chunks "
               "where the script sets it, gradients all-reduced under the backward pass with PyTorch DDP ('torch') and "
               "after it with Megatron's own ('local'), Megatron's fused kernels as stack='compile' and its attention "
               "as materialised scores (attn_implementation='eager'), on A100-SXM4-80GB in nodes of 8 with NVLink "
               "inside and 8 HDR InfiniBand NICs per node, one per GPU (Selene's DGX A100 nodes). The predicted "
               "step T gives TFLOP/s per GPU as the paper counts them (its Eq. 3, recomputation included): "
               "96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) / (T · n). The rule of thumb ((6N + 12·L·h·s) FLOPs per token "
               "at 40 % of the FP16 peak) is scored on the same rows the same way. Nothing is fitted on these rows. "
               "Scored: absolute % error per row, their mean (MAPE), the worst row."),
    status="perfmodel analysis",
    notebook="notebooks/17-llama-70b-layouts.ipynb",
    test="tests/papers/test_megatron_runs.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]

#: Megatron-LM's GPT vocabulary (padded) and the sequence length of every Table 1 run.
VOCAB = 51200
SEQ_LEN = 2048
GPU = "A100-SXM4-80GB"
LINKS = {"intra": "nvlink", "inter": "infiniband-hdr"}


def config(hidden: int, layers: int, heads: int) -> dict:
    """The GPT-2-shaped Hugging Face config of a Table 1 model: MLP 4h, learned positions, tied input/output
    embeddings, Megatron's vocabulary and sequence length, attention as materialised scores."""
    return dict(model_type="gpt2", n_embd=int(hidden), n_layer=int(layers), n_head=int(heads), n_positions=SEQ_LEN,
                vocab_size=VOCAB, attn_implementation="eager")


def paper_flops(batch: int, layers: int, hidden: int, seq: int = SEQ_LEN, vocab: int = VOCAB) -> float:
    """FLOPs of one iteration as Narayanan et al. count them (Eq. 3, with activation recomputation):
    ``96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h))``."""
    B, s, l, h, V = float(batch), float(seq), float(layers), float(hidden), float(vocab)
    return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))


def _arguments(r) -> dict:
    tp, pp, n = int(r.tp), int(r.pp), int(r.n_gpus)
    dp = n // (tp * pp)
    kw = dict(input_shape=(SEQ_LEN,), batch_size=int(r.global_batch), precision="fp16", optimizer="adam-fused",
              n_gpus=n, strategy=f"dp{dp}-tp{tp}-pp{pp}", micro_batches=int(r.global_batch) // dp // int(r.micro_batch),
              activation_checkpointing="full", framework="megatron", distributed_optimizer=False,
              sequence_parallel=False, overlap_grad_reduce=str(r.ddp) == "torch", stack="compile", gpus_per_node=8,
              interconnect=LINKS)
    if pd.notna(r.layers_per_virtual_stage):
        kw.update(pipeline_schedule="interleaved-1f1b",
                  virtual_stages=int(r.layers) // pp // int(r.layers_per_virtual_stage))
    return kw


@cached_frame
def data() -> pd.DataFrame:
    """One row per published run: the layout, the published and predicted TFLOP/s per GPU, the rule of thumb's, their
    absolute % errors and the predicted step and memory per GPU. Computed once per process and data source
    (``numbers`` and ``figure`` both read it); callers get copies."""
    import dataclasses

    import perfmodel as pm
    from perfmodel._run import keyword_run
    from perfmodel.datasets import load_megatron_runs
    from perfmodel.models import ExtrapolationWarning
    from perfmodel.step.baselines import rule_of_thumb_step_time
    from perfmodel.step.step_time import OutOfMemoryWarning

    rows = []
    for r in load_megatron_runs().itertuples(index=False):
        cfg = config(r.hidden_size, r.layers, r.attention_heads)
        kw = _arguments(r)
        w, (c,), how = keyword_run(cfg, GPU, **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExtrapolationWarning)
            warnings.simplefilter("ignore", OutOfMemoryWarning)
            # the input gradients' all-reduces after the weight-gradient GEMMs: Megatron-LM overlapped them from
            # August 2021 (cf7efd4), after these runs
            p = pm.predict(w, c, dataclasses.replace(how, overlap_tp_backward=False)).to_frame().iloc[0]
        rule = rule_of_thumb_step_time(cfg, GPU, input_shape=(SEQ_LEN,), batch_size=int(r.global_batch),
                                       precision="fp16", n_gpus=int(r.n_gpus)).iloc[0]
        F = paper_flops(int(r.global_batch), int(r.layers), int(r.hidden_size))
        n = int(r.n_gpus)
        rows.append(dict(model=r.model, n_gpus=n, strategy=kw["strategy"], micro_batches=kw["micro_batches"],
                         virtual_stages=kw.get("virtual_stages", 1), overlap_grad_reduce=kw["overlap_grad_reduce"],
                         global_batch=int(r.global_batch), published_tflops_per_gpu=float(r.tflops_per_gpu),
                         predicted_step_s=float(p["step_time_s"]), bubble_s=float(p["bubble_s"]),
                         comm_s=float(p["comm_s"]),
                         predicted_tflops_per_gpu=F / (float(p["step_time_s"]) * n) / 1e12,
                         rule_of_thumb_tflops_per_gpu=F / (float(rule["step_time_s"]) * n) / 1e12,
                         predicted_memory_gib=float(p["memory_per_gpu_bytes"]) / 2**30, fits=bool(p["fits"])))
    return with_errors(pd.DataFrame(rows), "published_tflops_per_gpu", "predicted_tflops_per_gpu",
                       "rule_of_thumb_tflops_per_gpu")


def with_errors(out: pd.DataFrame, published: str, predicted: str, rule: str) -> pd.DataFrame:
    """``out`` with ``abs_error_pct`` and ``signed_error_pct`` of column ``predicted`` against ``published`` (positive:
    predicted higher) and ``rule_of_thumb_abs_error_pct`` of column ``rule``."""
    pub = out[published]
    out["abs_error_pct"] = 100 * (out[predicted] - pub).abs() / pub
    out["signed_error_pct"] = 100 * (out[predicted] - pub) / pub
    out["rule_of_thumb_abs_error_pct"] = 100 * (out[rule] - pub).abs() / pub
    return out


def summary(d: pd.DataFrame | None = None) -> pd.DataFrame:
    """:func:`data`'s scores: rows, MAPE, worst row, mean signed error, the rule of thumb's MAPE (``quantity``,
    ``value``)."""
    d = data() if d is None else d
    vals = [("rows", float(len(d))), ("tflops_mape_pct", float(d["abs_error_pct"].mean())),
            ("tflops_worst_pct", float(d["abs_error_pct"].max())),
            ("tflops_mean_signed_pct", float(d["signed_error_pct"].mean())),
            ("tflops_within_10_pct_share", float((d["abs_error_pct"] <= 10).mean())),
            ("rule_of_thumb_tflops_mape_pct", float(d["rule_of_thumb_abs_error_pct"].mean()))]
    vals += [(f"tflops_signed_error_pct ({r.model}, {r.strategy})", float(r.signed_error_pct))
             for r in d.itertuples(index=False)]
    return pd.DataFrame({"quantity": [k for k, _ in vals], "value": [v for _, v in vals]})


_WHAT = {"rows": "Table 1 runs (GPT 1.7B-1T, 32-3,072 A100), every one predicted",
         "tflops_mape_pct": "mean absolute % error of TFLOP/s per GPU (the paper's Eq. 3 over the predicted step)",
         "tflops_worst_pct": "largest absolute % error of TFLOP/s per GPU",
         "tflops_mean_signed_pct": "mean signed % error of TFLOP/s per GPU (positive: predicted faster)",
         "tflops_within_10_pct_share": "share of the runs within 10 % on TFLOP/s per GPU",
         "rule_of_thumb_tflops_mape_pct": ("the baseline on the same runs: mean absolute % error of TFLOP/s per GPU by the "
                                           "rule of thumb, (6N + 12·L·h·s) FLOPs per token at 40 % of the FP16 peak "
                                           "(perfmodel.step.baselines.rule_of_thumb_step_time)")}

_ROW = "signed % error of this run's TFLOP/s per GPU (positive: predicted faster)"


def numbers() -> pd.DataFrame:
    """perfmodel's own results (no paper value): :func:`summary`'s scores, each with how it was computed."""
    from perfmodel.papers import _item

    rows = [dict(quantity=r.quantity, unit={"rows": "rows", "tflops_within_10_pct_share": "ratio"}.get(r.quantity, "pct"),
                 value=float(r.value),
                 protocol=f"{_WHAT.get(r.quantity, _ROW)}; " + ("the same runs" if r.quantity.startswith("rule_of_thumb")
                                                       else "predicted by pm.predict_step_time from the GPU's spec sheet")
                          + ", nothing fitted on these runs (megatron_runs.data)")
            for r in summary().itertuples(index=False)]
    return _item.item_results(__name__, rows)


def figure(data: pd.DataFrame | None = None, ax=None):
    """Published, predicted and rule-of-thumb TFLOP/s per GPU of each run (grouped bars, the runs by size); returns the
    Figure."""
    d = globals()["data"]() if data is None else data
    return published_beside_predicted(
        d, ("published_tflops_per_gpu", "published (SC'21 Table 1)"), "predicted_tflops_per_gpu",
        "rule_of_thumb_tflops_per_gpu", [f"{m.split()[-1]}\n{n}" for m, n in zip(d["model"], d["n_gpus"])], ax=ax,
        ylabel="TFLOP/s per GPU", xlabel="model, GPUs", title="Megatron-LM's weak-scaling runs on A100")


def published_beside_predicted(d: pd.DataFrame, published: tuple, predicted: str, rule: str, ticks, *, ax=None,
                               **labels):
    """Three grouped bars per row of ``d``: the ``published`` column (``(column, legend label)``), perfmodel's
    ``predicted`` one and the rule of thumb's ``rule`` one, ``ticks`` under them, ``labels`` (``ylabel``, ``xlabel``,
    ``title``) set on the Axes (a new one of 8 x 3.5 inches when ``ax`` is None); returns the Figure."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.5))
    x = np.arange(len(d))
    for k, (col, label) in enumerate((published, (predicted, "perfmodel"), (rule, "rule of thumb"))):
        ax.bar(x + (k - 1) * 0.27, d[col], width=0.27, label=label)
    ax.set_xticks(x, list(ticks), fontsize=8)
    ax.set(**labels)
    ax.legend(fontsize=8)
    return ax.figure
