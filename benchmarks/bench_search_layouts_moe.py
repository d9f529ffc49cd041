"""Benchmark of ``perfmodel.planning.search_layouts`` on a mixture of experts at scale: every Megatron layout of a
DeepSeek-V3-shaped model (61 layers, the first 3 dense, 256 routed experts of which 8 per token, latent attention;
sequence 4,096, global batch 4,096, BF16) on 1,024 H100s in nodes of 8, with all-to-all dispatch.

Run: ``PERFMODEL_DATA=../shared/datasets python benchmarks/bench_search_layouts_moe.py``. Prints the number of layouts,
the wall time of the first search (every trace made) and of a second identical search (the traces memoised), and the
fastest layout that fits. There is no goal: the time is what a user planning such a run waits. Run it alone (a
second CPU-heavy job on a 2-core machine doubles the time).
"""
from __future__ import annotations

import time
import warnings

#: DeepSeek-V3's published config.json (deepseek-ai/DeepSeek-V3), the fields perfmodel reads
DEEPSEEK_V3 = dict(model_type="deepseek_v3", architectures=["DeepseekV3ForCausalLM"], hidden_size=7168,
                   intermediate_size=18432, moe_intermediate_size=2048, num_hidden_layers=61, first_k_dense_replace=3,
                   num_attention_heads=128, num_key_value_heads=128, n_routed_experts=256, n_shared_experts=1,
                   num_experts_per_tok=8, n_group=8, topk_group=4, kv_lora_rank=512, q_lora_rank=1536,
                   qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, vocab_size=129280,
                   max_position_embeddings=4096, tie_word_embeddings=False)


def main() -> None:
    import perfmodel as pm

    warnings.simplefilter("ignore")
    run = pm.Workload(DEEPSEEK_V3, input_shape=(4096,), batch_size=4096, precision="bf16", optimizer="adam")
    cluster = pm.Cluster("H100", n_gpus=1024, interconnect={"intra": "nvlink", "inter": "infiniband-ndr"})
    t = time.perf_counter()
    first = pm.planning.search_layouts(run, cluster, frameworks=("megatron",), moe_dispatcher="alltoall")
    t1 = time.perf_counter() - t
    t = time.perf_counter()
    pm.planning.search_layouts(run, cluster, frameworks=("megatron",), moe_dispatcher="alltoall")
    t2 = time.perf_counter() - t
    print(f"layouts {len(first)} ({int(first['fits'].sum())} fit)")
    print(f"first search  {t1:.1f} s")
    print(f"second search {t2:.1f} s")
    best = first[first["fits"]].head(1)
    print(best[["strategy", "virtual_stages", "activation_checkpointing", "step_time_s", "memory_per_gpu_bytes"]]
          .to_string(index=False))


if __name__ == "__main__":
    main()
