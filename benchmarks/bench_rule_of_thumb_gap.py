"""Where perfmodel and the rule of thumb part ways on the layouts a 64-1,024 GPU run is planned with.

Run: ``python benchmarks/bench_rule_of_thumb_gap.py [--gpu H100]``. No data is read and nothing is measured: for Llama 3
8B, 70B and 405B shapes (sequence 8,192) in BF16 and FP8, under Megatron-Core's 3D/4D layouts (micro-batch 1,
Transformer Engine kernels, distributed optimizer, sequence parallelism, interleaved 1F1B, TP overlap) and
torchtitan's FSDP/FSDP+TP (full activation checkpointing, torch.compile, torchao tensorwise Float8, the local batch in
one pass, or as many micro-batches as pipeline stages, as torchtitan's published runs did), it prints
perfmodel's step time next to the rule of thumb's — ``(6·N + 12·L·h·s)`` FLOPs per token at 40 % of the dense BF16 peak
(:func:`perfmodel.step.baselines.rule_of_thumb_step_time`, FP8 counted against the BF16 peak) — and the share of the
BF16 peak that perfmodel's step implies under the rule's FLOP count (``implied_mfu``: 0.40 means the two agree).

Why it exists: the rule of thumb is the bar every external score prints beside perfmodel; a planner's layouts where
perfmodel implies a utilisation far from what published runs of such layouts reach are where the step model (or its
GPU's clock and efficiency) is least trustworthy, and where a measurement is worth the most. There is no goal: the
numbers are a map of disagreement, not a score (no measured row is read). The published runs nearest these layouts
that perfmodel may see, Meta's Llama 3 405B runs on 8,192-16,384 700 W H100 (``external.llama3_paper_runs``), reach
0.38-0.43 of the BF16 peak, where perfmodel predicts 0.43-0.50 for them (under the rule of thumb's FLOP count; 0.48-0.56 at the datasheet clock).
"""
from __future__ import annotations

import argparse
import time
import warnings

LLAMA_8B = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
            "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072}
LLAMA_70B = dict(LLAMA_8B, hidden_size=8192, intermediate_size=28672, num_hidden_layers=80, num_attention_heads=64)
LLAMA_405B = dict(LLAMA_8B, hidden_size=16384, intermediate_size=53248, num_hidden_layers=126, num_attention_heads=128)

#: (name, config, GPUs, global batch, Megatron layout, virtual stages, Megatron's split of the layers, torchtitan layout).
#: 405B's 126 layers do not divide over 8 ranks x 8 chunks, which Megatron-Core refuses; its recipes then count the
#: embedding and the loss as a layer each (``--account-for-embedding/loss-in-pipeline-split``: 128 over 64 chunks).
CASES = [
    ("Llama 3 8B", LLAMA_8B, 64, 512, "dp16-cp2-tp2", 1, None, "fsdp"),
    ("Llama 3 70B", LLAMA_70B, 64, 128, "dp2-cp2-tp4-pp4", 5, None, "fsdp8-tp8"),
    ("Llama 3 405B", LLAMA_405B, 1024, 512, "dp8-cp2-tp8-pp8", 8, {"embedding": True, "loss": True}, "fsdp16-tp8-pp8"),
]


def _titan_micro_batches(layout: str) -> int:
    """torchtitan's micro-batches: the local batch in one pass without a pipeline (no gradient accumulation unless
    asked), as many micro-batches as pipeline stages with one (the default of the torchtitan that ran its published
    405B rows, ``pipeline_parallel_microbatches``, as ``external.torchtitan_runs`` predicts them; later torchtitan
    asks for the number, ``num_pp_microbatches``)."""
    import re

    pp = re.search(r"pp(\d+)", layout)
    return int(pp.group(1)) if pp else 1


def predict_or_refusal(pm, workload, cluster, how):
    """(prediction, None), or (None, the refusal's type and message) for a layout perfmodel refuses: a refusal is
    part of the map, never a crash."""
    try:
        return pm.predict(workload, cluster, how), None
    except Exception as e:
        return None, f"refused: {type(e).__name__}: {str(e)[:120]}"


def implied_mfu(rule_s: float, step_s: float) -> float:
    """The share of the BF16 peak a step of ``step_s`` implies under the rule of thumb's FLOP count (the rule's step
    ``rule_s`` is that count at 40 % of the peak)."""
    return 0.40 * rule_s / step_s


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", default="H100", help="catalog GPU (default H100)")
    a = ap.parse_args(argv)
    import perfmodel as pm
    from perfmodel.step.baselines import rule_of_thumb_step_time

    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    print(f"{'model':13s} {'GPUs':>5s} {'framework':9s} {'layout':18s} {'prec':4s} {'perfmodel s':>11s} "
          f"{'rule s':>7s} {'implied_mfu':>11s} {'GiB/GPU':>8s}")
    for name, cfg, n, gbs, megatron, vp, split, titan in CASES:
        cluster = pm.Cluster(a.gpu, n_gpus=n, gpus_per_node=8, interconnect={"intra": "nvlink", "inter": "infiniband-ndr"})
        rule = float(rule_of_thumb_step_time(cfg, a.gpu, input_shape=(8192,), batch_size=gbs, precision="bf16",
                                             n_gpus=n).iloc[0]["step_time_s"])
        for prec in ("bf16", "fp8"):
            runs = [("megatron", megatron,
                     pm.Workload(cfg, input_shape=(8192,), batch_size=gbs, precision=prec, optimizer="adam-fused", stack="te"),
                     pm.Parallelism(megatron, micro_batch_size=1, framework="megatron",
                                    pipeline_schedule="interleaved-1f1b" if "pp" in megatron else "1f1b",
                                    virtual_stages=vp, pipeline_layers=split, async_tp="tp" in megatron)),
                    ("torchtitan", titan,
                     pm.Workload(cfg, input_shape=(8192,), batch_size=gbs, precision=prec, optimizer="adam-fused",
                                 compile=True, fp8_recipe="tensorwise" if prec == "fp8" else None),
                     pm.Parallelism(titan, activation_checkpointing="full", micro_batches=_titan_micro_batches(titan),
                                    pipeline_schedule="interleaved-1f1b" if "pp" in titan else "1f1b",
                                    async_tp="tp" in titan))]
            for fw, layout, w, how in runs:
                p, refused = predict_or_refusal(pm, w, cluster, how)
                head = f"{name:13s} {n:5d} {fw:9s} {layout:18s} {prec:4s}"
                print(f"{head} {refused}" if refused else
                      f"{head} {p.step_time_s:11.2f} {rule:7.2f} {implied_mfu(rule, p.step_time_s):11.3f} "
                      f"{p.memory['total_bytes'] / 2**30:8.1f}")
    print(f"wall {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
