"""Benchmark of an LLM training-step prediction: Llama 3.1 8B, BF16, FlashAttention (sdpa), FSDP on 8 H100 with
selective activation checkpointing — the README's quick-tour call — in a fresh process.

Run: ``python benchmarks/bench_llama.py [--repeat N]``. Prints, per run, ``process s`` (interpreter start and imports
included), ``call s`` (the first ``predict_step_time`` call: building the model on meta, tracing one step, the
half-precision operator model, memory) and ``again s`` (a second call with ``activation_checkpointing="full"``, the
trace memoised), and the peak RSS (MiB). No data is read: the predictor ships in the package. No goal is set yet; the
numbers say what a planner sweeping LLM layouts pays per call.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time

SCRIPT = r"""
import resource, time, warnings
warnings.simplefilter("ignore")
t0 = time.perf_counter()
import perfmodel as pm
llama = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
         "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072}
kw = dict(input_shape=(8192,), batch_size=16, precision="bf16", optimizer="adam-fused", n_gpus=8, strategy="fsdp",
          gpus_per_node=8, interconnect={"intra": "nvlink", "inter": "infiniband-ndr"})
t1 = time.perf_counter()
r = pm.predict_step_time(llama, "H100", activation_checkpointing="selective", **kw).iloc[0]
t2 = time.perf_counter()
pm.predict_step_time(llama, "H100", activation_checkpointing="full", **kw)
t3 = time.perf_counter()
print(f"imports {t1 - t0:.2f} s  call {t2 - t1:.2f} s  again {t3 - t2:.2f} s  "
      f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB  "
      f"step {r['step_time_s']:.3f} s  memory {r['memory_per_gpu_bytes'] / 2**30:.1f} GiB")
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="fresh processes to time")
    args = ap.parse_args()
    for i in range(args.repeat):
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True).stdout.strip()
        print(f"run {i + 1}: process {time.perf_counter() - t:.2f} s  {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
