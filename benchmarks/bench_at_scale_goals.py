"""The goals of the at-scale work (multi-node LLM pretraining: FSDP, Megatron-style TP x PP x DP x CP, FP8), measured:
each printed met or not, with perfmodel's number, the rule of thumb's on the same rows, and where the number comes from.

The goals, as the work states them:

* torchtitan's published runs: tokens/s MAPE <= 10 %, no run worse than 25 %, peak memory MAPE <= 10 %;
* the Megatron papers' rows (Narayanan et al. SC'21 Table 1, Korthikanti et al. 2022): <= 10 % in TFLOPs per GPU
  (MFU for Korthikanti's);
* published multi-node runs <= 15 %, and better than the rule of thumb on every set (the blind set is not visible
  here; the visible multi-node stand-in is Meta's Llama 3 paper, printed as published and with causal attention
  counted);
* data-parallel scaling efficiency on one node within 0.03 of the published runs (NeuSight's labels that have their
  single-GPU label);
* NeuSight's 4-GPU labels stay <= 7.7 % (NeuSight's own published error on them).

Beside them, with no goal of their own, the collectives the layouts rest on: published multi-node nccl-tests bus
bandwidths (all-reduce and all-gather, and the all-to-all of an expert-parallel dispatch).

Every number is computed by the external items (``perfmodel reproduce --only external.<name>`` shows them with their
protocol); nothing is read from a file of results. The rule of thumb is ``(6·N + 12·L·h·s)`` FLOPs per token at 40 %
of the dense peak (:func:`perfmodel.step.baselines.rule_of_thumb_step_time`). A row is "met" when perfmodel's number
reaches the goal; "better than the rule" compares the two on the same rows.

Run: ``PERFMODEL_DATA=../shared/datasets python benchmarks/bench_at_scale_goals.py`` (a few minutes; a benchmark, not
a test).
"""
from __future__ import annotations

import warnings

import pandas as pd

#: (goal, threshold or None, the external item, perfmodel's quantity, the rule of thumb's quantity or None); every
#: quantity is an error or a gap: lower is better
GOALS = [
    ("torchtitan: tokens/s MAPE", 10.0, "torchtitan_runs", "tokens_mape_pct", "rule_of_thumb_tokens_mape_pct"),
    ("torchtitan: worst run", 25.0, "torchtitan_runs", "tokens_worst_pct", None),
    ("torchtitan: peak memory MAPE", 10.0, "torchtitan_runs", "memory_mape_pct", None),
    ("torchao end-to-end Float8 runs: tokens/s MAPE", None, "torchtitan_runs", "torchao_e2e_tokens_mape_pct",
     "torchao_e2e_rule_of_thumb_tokens_mape_pct"),
    ("torchao tensorwise microbenchmarks: speed-up MAPE", None, "torchtitan_runs",
     "torchao_tensorwise_microbenchmark_speedup_mape_pct",
     "torchao_tensorwise_microbenchmark_rule_of_thumb_speedup_mape_pct"),
    ("Megatron SC'21 Table 1: TFLOPs/GPU MAPE", 10.0, "megatron_runs", "tflops_mape_pct",
     "rule_of_thumb_tflops_mape_pct"),
    ("Korthikanti et al. 2022: MFU MAPE", 10.0, "megatron_recompute_runs", "mfu_mape_pct",
     "rule_of_thumb_mfu_mape_pct"),
    ("Llama 3 paper (multi-node, visible): TFLOPs/GPU MAPE as published", 15.0, "llama3_paper_runs",
     "tflops_mape_pct", "rule_of_thumb_tflops_mape_pct"),
    ("Llama 3 paper: the same, causal attention counted", 15.0, "llama3_paper_runs",
     "tflops_mape_causal_count_pct", "rule_of_thumb_tflops_mape_causal_count_pct"),
    ("NeuSight 4-GPU labels: MAPE", 7.7, "neusight_distributed_benchmark", "all_perfmodel_mape_pct",
     "all_rule_of_thumb_mape_pct"),
    # the collectives under the layouts (no goal of their own, no rule of thumb: the topology's check)
    ("multi-node nccl-tests, all-reduce and all-gather: bus bandwidth MAPE", None, "nccl_multinode",
     "all_all_busbw_mape_pct", None),
    ("multi-node nccl-tests, all-to-all (expert parallel's dispatch): bus bandwidth MAPE", None, "nccl_multinode",
     "alltoall_all_busbw_mape_pct", None),
]


def _values(name: str) -> dict:
    import importlib

    mod = importlib.import_module(f"perfmodel.papers.external.{name}")
    n = mod.numbers()
    return dict(zip(n["quantity"], n["reproduced"].astype(float)))


def goal_table() -> pd.DataFrame:
    """One row per goal: ``goal``, ``threshold`` (None: no threshold of its own, only the rule of thumb to beat),
    ``perfmodel``, ``rule_of_thumb``, ``met`` (perfmodel within the threshold), ``better_than_rule``, ``source``."""
    from perfmodel.papers.external.neusight_distributed_benchmark import SCALING_GOAL

    cache = {item: _values(item) for item in dict.fromkeys([g[2] for g in GOALS] + ["neusight_distributed_benchmark"])}
    rows = []
    for goal, limit, item, ours, rule in GOALS:
        v = cache[item]
        if ours not in v or (rule is not None and rule not in v):
            missing = [q for q in (ours, rule) if q is not None and q not in v]
            raise KeyError(f"external.{item} no longer reports {missing}; update GOALS in this benchmark.")
        r = v[rule] if rule is not None else float("nan")
        rows.append(dict(goal=goal, threshold=limit, perfmodel=v[ours], rule_of_thumb=r,
                         met=(v[ours] <= limit) if limit is not None else None,
                         better_than_rule=(v[ours] < r) if rule is not None else None,
                         source=f"external.{item}: {ours}" + (f" vs {rule}" if rule else "")))
    v = cache["neusight_distributed_benchmark"]
    # the goal, then which prediction the gap comes from (a diagnostic: the single-GPU step taken as measured)
    for what, q, goal in (("data-parallel scaling efficiency on one node: largest |predicted - measured|",
                           "dp_scaling_efficiency_max_abs_difference", True),
                          ("  diagnostic, the single-GPU step as measured (the 4-GPU prediction's share of the gap)",
                           "dp_scaling_efficiency_max_abs_difference_single_measured", False)):
        rows.append(dict(goal=what, threshold=SCALING_GOAL if goal else None, perfmodel=v[q],
                         rule_of_thumb=float("nan"), met=(v[q] <= SCALING_GOAL) if goal else None,
                         better_than_rule=None, source=f"external.neusight_distributed_benchmark: {q}"))
    return pd.DataFrame(rows)


def _word(flag) -> str:
    return "—" if flag is None else ("met" if flag else "NOT met")


def main() -> None:
    warnings.simplefilter("ignore")
    t = goal_table()
    for r in t.itertuples(index=False):
        limit = "" if pd.isna(r.threshold) else f" (goal <= {r.threshold:g})"
        rule = "" if pd.isna(r.rule_of_thumb) else (f"; rule of thumb {r.rule_of_thumb:.3g} -> perfmodel "
                                                    f"{'better' if r.better_than_rule else 'NOT better'}")
        print(f"{r.goal}: {r.perfmodel:.3g}{limit} -> {_word(r.met)}{rule}   [{r.source}]")
    ruled = t[t["better_than_rule"].notna()]
    worse = ruled[~ruled["better_than_rule"].astype(bool)]
    print(f"better than the rule of thumb on every set: {'met' if worse.empty else 'NOT met'} "
          f"({len(ruled) - len(worse)} of {len(ruled)}; not on: {', '.join(worse['goal']) or 'none'})")
    print("the blind multi-node set (<= 15 %, every row expressible): not visible here")


if __name__ == "__main__":
    main()
