"""Llama 3 405B's production layouts on 8,192 and 16,384 H100 (700 W) beside perfmodel, over the settings the paper leaves open.

Run: ``python benchmarks/bench_llama3_paper_layouts.py``. Nothing is measured and nothing is fitted. The three rows are
the ones Meta reports for Llama 3 405B pre-training (Dubey et al., "The Llama 3 Herd of Models", arXiv 2407.21783,
Table 4; the same numbers on P. Balaji's SC'24 slide): TP 8, PP 16, DP 64 / 128 at sequence 8,192 and TP 8, CP 16,
PP 16, DP 8 at sequence 131,072, 16M tokens per batch, BF16, on H100 SXM parts at 700 W in Grand Teton servers with
400 Gb/s per GPU (RoCE). The paper gives 430, 400 and 380 TFLOPs per GPU (43 %, 41 % and 38 % BF16 MFU).

Why a map and not a score: the rows run Meta's own 4D-parallel training stack, and the table does not state the
number of interleaved stages per pipeline rank, the recomputation or the kernels. perfmodel has no such framework, so
each row is predicted under Megatron-Core's execution (``framework="megatron"``: distributed optimizer, sequence
parallelism, interleaved 1F1B) for one, two and four model chunks per rank and for full recomputation, each with the
layers split evenly and as the paper splits them (its first and last pipeline stages a layer shorter,
``pipeline_layers``: 7, 8 x 14, 7), with the memory each needs beside it. Picking the setting that lands nearest the paper's number would be fitting on the row;
the spread is what the unknowns cost. The rule of thumb (``(6·N + 12·L·h·s)`` FLOPs per token at 40 % of the dense BF16
peak) is printed beside, and every utilisation is the rule's FLOP count over the step time and the BF16 peak
(``implied_mfu``), the paper's as it reports it.

What it showed when it was written (perfmodel at the commit that adds this file): without recomputation perfmodel's
utilisation spans 0.29-0.51 over the chunk counts (0.22-0.34 with full recomputation) where the paper reports
0.38-0.43, so at these layouts perfmodel's 700 W H100 is not systematically faster than the paper's runs (on
small-pipeline layouts with many micro-batches, ``bench_rule_of_thumb_gap.py``, it implies 0.61-0.65). Under
Megatron's execution every setting without recomputation needs 83-113 GiB per GPU with the layers split evenly, more
than the parts' 80 GB. With the paper's split of the layers (added later: ``Parallelism.pipeline_layers``) the steps are
0.3-0.9 % shorter (the 8-layer ranks set the pace either way; the first and last ranks' embedding and head no longer
sit on top of 8 layers) and one chunk per rank without recomputation needs 77.7-78.0 GiB, within 80 GB (the CUDA
context and fragmentation not counted); two and four chunks need 81.7 GiB where a step has as many micro-batches as
ranks (16: the interleaved warm-up then holds every micro-batch, as 1F1B's does; ``memory.pipeline_in_flight``) and
95-108 GiB at DP 64 (32 micro-batches). Megatron's distributed optimizer
keeps the FP32 main gradients whole on each rank, where the paper describes FSDP-style sharding of the gradients
over data parallel; perfmodel does not model that sharding, so the paper's memory is not checked here.
"""
from __future__ import annotations

import argparse
import dataclasses
import time
import warnings

from bench_rule_of_thumb_gap import LLAMA_405B, implied_mfu, predict_or_refusal  # the script's own folder

#: (GPUs, layout, sequence, TFLOPs per GPU the paper reports): arXiv 2407.21783 Table 4
ROWS = [(8192, "dp64-tp8-pp16", 8192, 430.0), (16384, "dp128-tp8-pp16", 8192, 400.0),
        (16384, "dp8-cp16-tp8-pp16", 131072, 380.0)]
#: tokens per batch (16M)
TOKENS_PER_BATCH = 16 * 2**20
#: the paper's balancing of the pipeline: "we reduce one Transformer layer each from the first and the last stages"
#: (arXiv 2407.21783 §3.3.2), 126 layers over 16 ranks as 7, 8 x 14, 7 (each rank's layers spread over its chunks)
PAPER_STAGES = (7,) + (8,) * 14 + (7,)
#: the settings the paper leaves open: (model chunks per pipeline rank, recomputation)
SETTINGS = [(1, False), (2, False), (4, False), (1, "full"), (2, "full")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", default="H100", help="catalog GPU (default H100, the 700 W SXM part)")
    a = ap.parse_args(argv)
    import perfmodel as pm
    from perfmodel.datasets import gpu_spec
    from perfmodel.step.baselines import rule_of_thumb_step_time

    warnings.simplefilter("ignore")
    peak = gpu_spec(a.gpu).bf16_peak_tflops
    t0 = time.perf_counter()
    print(f"{'GPUs':>6s} {'layout':18s} {'seq':>7s} {'chunks':>6s} {'recompute':9s} {'stages':6s} {'perfmodel s':>11s} {'rule s':>7s} "
          f"{'implied_mfu':>11s} {'paper_mfu':>9s} {'GiB/GPU':>8s}")
    for n, layout, seq, tflops in ROWS:
        batch = TOKENS_PER_BATCH // seq
        cluster = pm.Cluster(a.gpu, n_gpus=n, gpus_per_node=8, interconnect={"intra": "nvlink", "inter": "infiniband-ndr"})
        rule = float(rule_of_thumb_step_time(LLAMA_405B, a.gpu, input_shape=(seq,), batch_size=batch, precision="bf16",
                                             n_gpus=n).iloc[0]["step_time_s"])
        work = pm.Workload(LLAMA_405B, input_shape=(seq,), batch_size=batch, precision="bf16", optimizer="adam-fused")
        for chunks, ac in SETTINGS:
            how = pm.Parallelism(layout, micro_batch_size=1, framework="megatron", activation_checkpointing=ac,
                                 pipeline_schedule="interleaved-1f1b" if chunks > 1 else "1f1b",
                                 virtual_stages=chunks if chunks > 1 else None)
            for stages in ("even", "paper"):
                p, refused = predict_or_refusal(pm, work, cluster, how if stages == "even" else
                                                dataclasses.replace(how, pipeline_layers=PAPER_STAGES))
                head = f"{n:6d} {layout:18s} {seq:7d} {chunks:6d} {str(ac):9s} {stages:6s}"
                print(f"{head} {refused}" if refused else
                      f"{head} {p.step_time_s:11.2f} {rule:7.2f} {implied_mfu(rule, p.step_time_s):11.3f} "
                      f"{tflops / peak:9.3f} {p.memory['total_bytes'] / 2**30:8.1f}")
    print(f"wall {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
