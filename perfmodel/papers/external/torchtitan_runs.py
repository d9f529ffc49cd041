"""Published Llama training runs (torchtitan: tokens/s per GPU and peak memory under FSDP2) predicted from spec sheets.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from perfmodel.datasets._cache import cached_frame
from perfmodel.diagnostics.metrics import mape, percent_error
from perfmodel.papers._item import Item


ITEM = Item(
    paper="perfmodel",
    number="external benchmark (torchtitan's published Llama runs)",
    title=("Published Llama training runs (torchtitan: tokens/s per GPU and peak memory under FSDP2) predicted "
           "from spec sheets"),
    upstream="pytorch/torchtitan benchmarks/ and docs/performance.md",
    sources=(("pytorch/torchtitan: tokens/s per GPU and peak memory of Llama 3.1 8B/70B/405B and Llama 2 runs on "
              "8-512 H100, 64 A100-80GB and 32-64 H200 (perfmodel.datasets.load_torchtitan_runs)"),
             ("pytorch/ao: torchao's float8 README, its tensorwise microbenchmark examples and its end-to-end torchtitan "
              "Llama 3 8B runs on 8 H100 in BF16, tensorwise and rowwise Float8, held out "
              "(perfmodel.datasets.load_torchao_float8_checks)")),
    procedure=("Every published row is predicted with one pm.predict call (the run as a Workload, a Cluster and a "
               "Parallelism; its memory is pm.predict_memory's): the model's Hugging Face Llama config (sizes of the published models, "
               "MODEL_CONFIGS), sequence length (torchtitan's train config default 8192 where the table does not "
               "say), global batch = local batch x data-parallel degree, BF16 (fp8 for the Float8 rows), the "
               "fused Adam step, the row's layout: FSDP over all the GPUs, FSDP x TP (\"fsdp32-tp8\"), FSDP x TP x "
               "PP (\"fsdp8-tp8-pp8\", as many micro-batches as stages, torchtitan's default, the layers split at its "
               "generated split points (torchtitan_split), 1F1B or interleaved "
               "1F1B as the row says) or with context parallelism (\"fsdp4-cp2-tp8-pp8\", K and V exchanged at "
               "every query head, as torchtitan's Llama repeated them, PyTorch's ring attention's FP32 merges counted: "
               "perfmodel.step.trace.ring_attention_work), asynchronous TP where "
               "the row says, the GPU as the file describes it (torchtitan_gpu_spec: the Grand Teton H100 of the H100 files, "
               "96 GB HBM2e at 2.4 TB/s and a 500 W limit, its peak rates halfway between the H100 SXM5's and NVL's, "
               "the range the file's footnote gives, at the share of that clock a 500 W H100 sustains under GEMM load: the factor on "
               "its tensor-core rates with which perfmodel's GEMM model reproduces the BF16 GEMMs FBGEMM published for a "
               "500 W H100, pytorch/FBGEMM #2546, grand_teton_clock, less the shortfall of the slowest of the run's "
               "chips, on which a synchronous step waits: slowest_chip_clock, one chip's GEMMs and the chip-to-chip "
               "spread of a measured GH100 node; the H200 and the A100 as the catalog has them, the H200 "
               "at the share of its clock a 700 W GH100 sustains under GEMM load with its node busy, pm.Cluster's "
               "default, perfmodel.step.kernels.SUSTAINED_CLOCK_SHARE), 8 GPUs per node with NVLink inside and 8 "
               "NICs per node between nodes, one per GPU on its own rail (LINKS, nics_per_node=8), "
               "compile and activation checkpointing (full, torchtitan's per-operator selective policy, or its "
               "per-layer policy every other layer) as the row says, torch.compile compiling what that version "
               "of torchtitan compiled (each layer on its own, and the loss from April 2025: "
               "TORCHTITAN_COMPILE_SCOPE); tokens/s per GPU is a data-parallel rank's "
               "tokens over the step time and the GPUs of its model replica (tp x pp x cp), as torchtitan counts "
               "it. A row perfmodel cannot state would be listed with the reason (none is, today). Nothing "
               "is fitted on these rows. Scored: absolute % error of tokens/s per GPU and of peak memory (GiB) "
               "per row, their mean (MAPE), and the share of rows within 25 %. Beside them, held out: torchao's "
               "tensorwise microbenchmark examples (the speedup over BF16 of LayerNorm -> Linear -> Sigmoid, as "
               "perfmodel.step.float8_rowwise predicts its table) and torchao's end-to-end runs (tokens/s, the FP8 "
               "gains, peak memory) on the part their authors' logs show (the 96 GB 500 W H100 of torchtitan's own "
               "tables: torchao_e2e_gpu), the catalog H100 reported as an unscored alternative "
               "(torchao_float8_check), the rule of thumb beside each."),
    status="perfmodel analysis",
    notebook="notebooks/15-llama-training-plan.ipynb",
    test="tests/papers/test_torchtitan_runs.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]

_LLAMA3 = dict(model_type="llama", vocab_size=128256, max_position_embeddings=131072, rope_theta=500000.0,
               rms_norm_eps=1e-5, tie_word_embeddings=False, num_key_value_heads=8)
_LLAMA2 = dict(model_type="llama", vocab_size=32000, max_position_embeddings=4096, rms_norm_eps=1e-5,
               tie_word_embeddings=False)
#: Hugging Face configs of the published models' sizes (the models' config.json on the Hugging Face Hub:
#: meta-llama/Llama-3.1-8B, Meta-Llama-3-70B, Llama-3.1-405B, Llama-2-13b-hf, Llama-2-70b-hf; torchtitan's own llama3 / llama2
#: model args give the same dimensions). Llama 3 8B and Llama 3.1 8B share one shape.
MODEL_CONFIGS = {
    "Llama 3.1 8B": dict(_LLAMA3, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32),
    "Llama 3 8B": dict(_LLAMA3, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32),
    "Llama 3.1 70B": dict(_LLAMA3, hidden_size=8192, intermediate_size=28672, num_hidden_layers=80, num_attention_heads=64),
    "Llama 3 70B": dict(_LLAMA3, hidden_size=8192, intermediate_size=28672, num_hidden_layers=80, num_attention_heads=64),
    "Llama 3.1 405B": dict(_LLAMA3, hidden_size=16384, intermediate_size=53248, num_hidden_layers=126,
                           num_attention_heads=128),
    "Llama 2 13B": dict(_LLAMA2, hidden_size=5120, intermediate_size=13824, num_hidden_layers=40, num_attention_heads=40,
                        num_key_value_heads=40),
    "Llama 2 70B": dict(_LLAMA2, hidden_size=8192, intermediate_size=28672, num_hidden_layers=80, num_attention_heads=64,
                        num_key_value_heads=8),
}
#: links per GPU, an assumption where the tables do not say: H100 (Grand Teton) and H200 nodes with a 400 Gb/s NIC per
#: GPU (NDR-class RoCE/InfiniBand); the A100 cluster of docs/performance.md with 200 Gb/s per GPU (HDR-class, a DGX
#: A100's). Each GPU's NIC on its own rail: the rows are predicted with ``nics_per_node=8``.
LINKS = {"H100": {"intra": "nvlink", "inter": "infiniband-ndr"}, "H200": {"intra": "nvlink", "inter": "infiniband-ndr"},
         "A100-SXM4-80GB": {"intra": "nvlink", "inter": "infiniband-hdr"}}
#: what torchtitan's context parallelism exchanged in these runs: its Llama expanded K and V to every query head
#: before ``scaled_dot_product_attention`` (``repeat_kv``: torchtitan/models/llama/model.py at ba24697, the December
#: 2024 runs; torchtitan/models/llama3/model.py at 820504e, June 2025), and the context-parallel SDPA all-gathers the
#: K and V it is given (:attr:`perfmodel.Parallelism.context_parallel_kv`)
TORCHTITAN_CP_KV = "repeated"
#: what torch.compile compiled in each source's runs (:attr:`perfmodel.Workload.compile_scope`): torchtitan compiles each
#: TransformerBlock on its own (``apply_compile``, torchtitan/parallelisms/parallelize_llama.py at 9dec370, the December
#: 2024 runs; torchtitan/models/llama3/parallelize_llama.py at 820504e and e7c0cae, June 2025) and leaves the embedding,
#: final norm and output projection eager; the loss was compiled too from 2025-04-02 (bbb1b61; build_cross_entropy_loss
#: in torchtitan/components/loss.py at 820504e and e7c0cae), not at 9dec370 (train.py: "compiling loss function causes
#: CUDA errors, turning off for now", e8977b0 of 2024-12-18)
TORCHTITAN_COMPILE_SCOPE = {"benchmarks/llama3_h100_202412_torchtitan.md": "layers",
                            "benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md": "layers+loss",
                            "benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md": "layers+loss"}
#: torchtitan's train-config default sequence length (train_configs/llama3_8b.toml: seq_len = 8192)
DEFAULT_SEQ_LEN = 8192


def _text(v) -> str:
    return v if isinstance(v, str) else ""


def _why_not(r) -> str:
    if r.model not in MODEL_CONFIGS:
        return f"no config for {r.model}"
    if pd.notna(r.compile) and bool(r.compile) and r.source_file not in TORCHTITAN_COMPILE_SCOPE:
        return f"what torch.compile compiled in {r.source_file} is not known"
    return ""


def _strategy(r) -> str:
    """The perfmodel spelling of a row's layout: FSDP over the dp ranks (and the cp ranks with them), then cp, tp, pp."""
    fsdp, tp, pp, cp = int(r.fsdp), int(r.tp), int(r.pp), int(r.cp)
    parts = [f"fsdp{fsdp}"] + [f"{k}{v}" for k, v in (("cp", cp), ("tp", tp), ("pp", pp)) if v > 1]
    return "-".join(parts) if len(parts) > 1 else "fsdp"


def grand_teton_clock() -> float:
    """The share of its datasheet clock the Grand Teton H100 (500 W) sustains under GEMM load:
    :func:`perfmodel.step.kernels.sustained_clock` of the part the file describes (:func:`torchtitan_gpu_spec`) on the
    BF16 GEMMs FBGEMM published for a 500 W H100 (:func:`perfmodel.datasets.load_published_gemms`; not these runs)."""
    from perfmodel.step.kernels import grand_teton_h100_clock

    return grand_teton_h100_clock()


def grand_teton_run_clock(n_gpus: int) -> float:
    """The share of its datasheet clock a run on ``n_gpus`` Grand Teton H100s is predicted at: :func:`grand_teton_clock`
    (one chip's GEMMs) less the expected shortfall of the slowest of the run's chips, on which a synchronous step waits
    (:func:`perfmodel.step.kernels.slowest_chip_clock`, the spread of the H100's measured GH100 node)."""
    from perfmodel.datasets.llm_runs import GRAND_TETON_H100
    from perfmodel.step.kernels import slowest_chip_clock

    return slowest_chip_clock(grand_teton_clock(), GRAND_TETON_H100["base"], int(n_gpus))


def published_gemm_check() -> pd.DataFrame:
    """FBGEMM's published GEMMs of a 500 W H100 (:func:`perfmodel.datasets.load_published_gemms`) beside perfmodel's
    GEMM model on the Grand Teton part at its datasheet clock and at :func:`grand_teton_clock`: the BF16 rows set the
    clock, the FP8 rows check it. Columns: ``precision``, ``kernel``, ``m``, ``n``, ``k``, ``measured_tflops``,
    ``datasheet_clock_tflops``, ``sustained_clock_tflops``, ``error_pct`` (at the sustained clock), ``fitted``."""
    from perfmodel.datasets import load_published_gemms
    from perfmodel.datasets.llm_runs import torchtitan_gpu_spec
    from perfmodel.step.kernels import at_sustained_clock, gemm_seconds

    part = torchtitan_gpu_spec("H100 96GB HBM2e 500W power limit")
    g = load_published_gemms()
    out = g[["precision", "kernel", "m", "n", "k"]].assign(measured_tflops=g["tflops"].astype(float))
    flops = 2.0 * g["m"].to_numpy(float) * g["n"].to_numpy(float) * g["k"].to_numpy(float)
    clocked = at_sustained_clock(part, grand_teton_clock())
    for col, spec in (("datasheet_clock_tflops", part), ("sustained_clock_tflops", clocked)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out[col] = flops / gemm_seconds(g, spec) / 1e12
    out["error_pct"] = 100 * (out["sustained_clock_tflops"] / out["measured_tflops"] - 1)
    out["fitted"] = out["precision"] == "bf16"
    return out


def _settings(r) -> tuple:
    """(sequence length, activation checkpointing, precision, compile, FP8 recipe or "") of a published run as
    perfmodel states them."""
    seq = int(r.seq_len) if pd.notna(r.seq_len) else DEFAULT_SEQ_LEN
    # not stated (the H200 runs): torchtitan's train-config default, selective per-operator
    ac = _text(r.activation_checkpointing) or "selective"
    ac = {"none": False, "full": "full", "selective": "layer" if _text(r.selective_ac) == "layer" else "selective"}[ac]
    prec = "fp8" if (pd.notna(r.float8) and bool(r.float8)) else "bf16"
    comp = bool(r.compile) if pd.notna(r.compile) else False
    return seq, ac, prec, comp, (_text(r.float8_recipe) or "tensorwise") if prec == "fp8" else ""


def _predict(r, compile_scope: str | None = None):
    """(the GPU's spec, the share of its clock it runs at, the :class:`perfmodel.Prediction`) of a published run, its
    compiled part :data:`TORCHTITAN_COMPILE_SCOPE`'s for its source unless ``compile_scope`` says another."""
    import perfmodel as pm
    from perfmodel.datasets.llm_runs import torchtitan_gpu_spec
    from perfmodel.models import ExtrapolationWarning
    from perfmodel.step.step_time import OutOfMemoryWarning

    seq, ac, prec, comp, recipe = _settings(r)
    spec = torchtitan_gpu_spec(r.source_gpu)  # the part the file describes (the Grand Teton H100: 2.4 TB/s, 500 W)
    clock = _run_clock(spec, int(r.n_gpus))
    pp = int(r.pp)
    run = pm.Workload(MODEL_CONFIGS[r.model], input_shape=(seq,), batch_size=int(r.local_batch_size) * int(r.fsdp),
                      precision=prec, optimizer="adam-fused", compile=comp, fp8_recipe=recipe or None,
                      compile_scope=(compile_scope or TORCHTITAN_COMPILE_SCOPE[r.source_file]) if comp else None)
    on = _cluster(spec, int(r.n_gpus), LINKS[r.gpu])
    # torchtitan's default with a pipeline: as many micro-batches as pipeline stages, its generated split points
    interleaved = pp > 1 and "interleaved" in _text(r.pp_schedule).lower()
    how = pm.Parallelism(_strategy(r), activation_checkpointing=ac,
                         pipeline_layers=(torchtitan_split(MODEL_CONFIGS[r.model]["num_hidden_layers"], pp,
                                                           2 if interleaved else 1) if pp > 1 else None),
                         async_tp=bool(r.async_tp) if pd.notna(r.async_tp) else False,
                         micro_batches=pp if pp > 1 else None,
                         pipeline_schedule="interleaved-1f1b" if interleaved else "1f1b",
                         context_parallel_kv=TORCHTITAN_CP_KV)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        warnings.simplefilter("ignore", OutOfMemoryWarning)
        return spec, clock, pm.predict(run, on, how)


def torchtitan_split(n_layers: int, pp: int, chunks: int) -> tuple:
    """The layers of each model chunk of each pipeline rank as torchtitan splits them when its config gives no split
    points (``generate_split_points``, torchtitan/parallelisms/pipelining_utils.py at 9dec370, the commit of the 405B
    runs, whose config sets none): ``pp·chunks`` stages, the first ``n_layers // stages`` layers, each middle one a
    layer more while the remainder lasts, the last what is left; stage ``c`` on rank ``c mod pp``. For
    :attr:`perfmodel.Parallelism.pipeline_layers` (Llama 3.1 405B's 126 layers over 8 x 2 stages: 7, 8 x 14, 7)."""
    stages = pp * chunks
    base, extra = divmod(int(n_layers), stages)
    sizes = [base] + [base + (i < extra) for i in range(stages - 2)]
    sizes.append(int(n_layers) - sum(sizes))
    return tuple(tuple(sizes[c] for c in range(s, stages, pp)) for s in range(pp))


def _tokens_per_s(r, seq: int, p) -> float:
    """torchtitan's tokens/s per GPU of a prediction: a data-parallel rank's tokens over the step time and the GPUs of
    its model replica (its tp x pp x cp ranks)."""
    return int(r.local_batch_size) * seq / (int(r.tp) * int(r.pp) * int(r.cp)) / p.step_time_s


@cached_frame
def compile_scope_check() -> pd.DataFrame:
    """What torch.compile compiled, run by run: the first compiled run of each source that publishes its memory
    predicted under each :data:`perfmodel._workload.COMPILE_SCOPES`, beside the measurement and the scope its
    torchtitan version compiled (:data:`TORCHTITAN_COMPILE_SCOPE`). Columns: ``source_file``, ``table``, ``model``,
    ``gpu``, ``n_gpus``, ``precision``, ``compile_scope``, ``torchtitan_compiled`` (the scope is that version's),
    ``measured_tokens_per_s``, ``predicted_tokens_per_s``, ``measured_memory_gib``, ``predicted_memory_gib``."""
    from perfmodel._workload import COMPILE_SCOPES
    from perfmodel.datasets import load_torchtitan_runs

    runs = load_torchtitan_runs()
    picked = runs[runs["compile"].fillna(False).astype(bool) & runs["memory_gib"].notna()].groupby(
        "source_file", sort=False).head(1)
    rows = []
    for r in picked.itertuples(index=False):
        seq, _, prec, _, _ = _settings(r)
        for scope in COMPILE_SCOPES:
            _, _, p = _predict(r, scope)
            rows.append(dict(source_file=r.source_file, table=r.table, model=r.model, gpu=r.gpu, n_gpus=int(r.n_gpus),
                             precision=prec, compile_scope=scope,
                             torchtitan_compiled=scope == TORCHTITAN_COMPILE_SCOPE[r.source_file],
                             measured_tokens_per_s=float(r.tokens_per_s_per_gpu),
                             predicted_tokens_per_s=_tokens_per_s(r, seq, p),
                             measured_memory_gib=float(r.memory_gib), predicted_memory_gib=p.memory["total_bytes"] / 2**30))
    return pd.DataFrame(rows)


@cached_frame
def data() -> pd.DataFrame:
    """One row per published run: the measurement, the arguments perfmodel is called with, its prediction and the
    absolute % errors (NaN, with ``skipped`` saying why, for the rows a single call cannot state). Computed once per
    process and data source (``numbers`` and ``figure`` both read it); callers get copies."""
    from perfmodel.datasets import load_torchtitan_runs
    from perfmodel.step.baselines import rule_of_thumb_step_time

    runs = load_torchtitan_runs()
    rows = []
    for r in runs.itertuples(index=False):
        why = _why_not(r)
        seq, ac, prec, comp, recipe = _settings(r)
        row = dict(source_file=r.source_file, table=r.table, model=r.model, gpu=r.gpu, n_gpus=int(r.n_gpus),
                   tp=int(r.tp), local_batch_size=int(r.local_batch_size), seq_len=seq, seq_len_stated=pd.notna(r.seq_len),
                   activation_checkpointing=str(ac), precision=prec, compile=comp, fp8_recipe=recipe,
                   async_tp=bool(r.async_tp) if pd.notna(r.async_tp) else False,
                   measured_tokens_per_s=float(r.tokens_per_s_per_gpu), measured_memory_gib=float(r.memory_gib) if pd.notna(r.memory_gib) else np.nan,
                   predicted_tokens_per_s=np.nan, predicted_memory_gib=np.nan, rule_of_thumb_tokens_per_s=np.nan,
                   sustained_clock=np.nan, skipped=why)
        if not why:
            spec, clock, p = _predict(r)
            row["sustained_clock"] = clock
            dp = int(r.fsdp)
            row["predicted_tokens_per_s"] = _tokens_per_s(r, seq, p)
            row["predicted_memory_gib"] = p.memory["total_bytes"] / 2**30
            rule = rule_of_thumb_step_time(MODEL_CONFIGS[r.model], spec, input_shape=(seq,),
                                           batch_size=int(r.local_batch_size) * dp, precision=prec,
                                           n_gpus=int(r.n_gpus)).iloc[0]
            # the rule spreads the global batch over every GPU: tokens/s per GPU = global tokens / GPUs / step
            row["rule_of_thumb_tokens_per_s"] = int(r.local_batch_size) * dp * seq / int(r.n_gpus) / float(rule["step_time_s"])
        rows.append(row)
    out = pd.DataFrame(rows)
    out["tokens_abs_error_pct"] = (100 * (out["predicted_tokens_per_s"] - out["measured_tokens_per_s"]).abs()
                                   / out["measured_tokens_per_s"])
    out["rule_of_thumb_tokens_abs_error_pct"] = (100 * (out["rule_of_thumb_tokens_per_s"] - out["measured_tokens_per_s"]).abs()
                                                 / out["measured_tokens_per_s"])
    out["memory_abs_error_pct"] = (100 * (out["predicted_memory_gib"] - out["measured_memory_gib"]).abs()
                                   / out["measured_memory_gib"])
    return out


#: the columns that make two rows the same run but for asynchronous TP (:func:`async_tp_gains`)
_RUN_KEYS = ["source_file", "model", "gpu", "n_gpus", "local_batch_size", "seq_len", "activation_checkpointing",
             "precision", "compile", "fp8_recipe"]


def async_tp_gains(d: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each published run measured with and without asynchronous TP: the gain (tokens/s with async TP over without)
    measured and predicted. Columns: :data:`_RUN_KEYS`, ``measured_gain``, ``predicted_gain``, ``error`` (predicted −
    measured)."""
    d = data() if d is None else d
    d = d[d["skipped"] == ""]
    keys = [k for k in _RUN_KEYS if k in d.columns]
    van = d[~d["async_tp"]].set_index(keys)
    asy = d[d["async_tp"]].set_index(keys)
    both = asy.index.intersection(van.index)
    out = pd.DataFrame({
        "measured_gain": asy.loc[both, "measured_tokens_per_s"] / van.loc[both, "measured_tokens_per_s"],
        "predicted_gain": asy.loc[both, "predicted_tokens_per_s"] / van.loc[both, "predicted_tokens_per_s"]},
        index=both).reset_index()
    out["error"] = out["predicted_gain"] - out["measured_gain"]
    return out


def summary(d: pd.DataFrame | None = None) -> pd.DataFrame:
    """The scores of :func:`data`: tokens/s MAPE, worst row and share within 25 %; memory MAPE and share within 10 %;
    rows predicted and skipped (one row per quantity: ``quantity``, ``value``)."""
    d = data() if d is None else d
    t = d["tokens_abs_error_pct"].dropna()
    m = d["memory_abs_error_pct"].dropna()
    rowwise = (d.loc[t.index, "fp8_recipe"] == "rowwise").to_numpy()
    vals = [("rows", float(len(d))), ("rows_predicted", float(len(t))), ("rows_skipped", float((d["skipped"] != "").sum())),
            ("tokens_mape_pct", float(t.mean())), ("tokens_worst_pct", float(t.max())),
            ("tokens_within_25_pct_share", float((t <= 25).mean())),
            ("rule_of_thumb_tokens_mape_pct", float(d.loc[t.index, "rule_of_thumb_tokens_abs_error_pct"].mean())),
            ("rowwise_rows", float(rowwise.sum())), ("rowwise_tokens_mape_pct", float(t[rowwise].mean())),
            ("other_tokens_mape_pct", float(t[~rowwise].mean())),
            ("async_tp_pairs", float(len(g := async_tp_gains(d)))),
            ("async_tp_gain_mean_abs_error", float(g["error"].abs().mean()) if len(g) else np.nan),
            ("rule_of_thumb_async_tp_gain_mean_abs_error", float((g["measured_gain"] - 1).abs().mean()) if len(g) else np.nan),
            *_signed_by_tp(d, t.index),
            ("memory_rows", float(len(m))), ("memory_mape_pct", float(m.mean())),
            ("memory_within_10_pct_share", float((m <= 10).mean())),
            ("grand_teton_sustained_clock", grand_teton_clock() if (d["gpu"] == "H100").any() else np.nan)]
    return pd.DataFrame({"quantity": [k for k, _ in vals], "value": [v for _, v in vals]})


def _signed_by_tp(d: pd.DataFrame, predicted) -> list:
    """The mean signed % error of tokens/s per GPU (positive: predicted too fast) of the predicted runs with tensor
    parallelism and of the others, perfmodel's and the rule of thumb's: where the errors lean, not only how large."""
    d = d.loc[predicted]
    out = [("tp_rows", float((d["tp"] > 1).sum()))]
    for name, sel in (("tp", d["tp"] > 1), ("no_tp", d["tp"] <= 1)):
        for who, col in (("", "predicted_tokens_per_s"), ("rule_of_thumb_", "rule_of_thumb_tokens_per_s")):
            signed = 100 * (d.loc[sel, col] - d.loc[sel, "measured_tokens_per_s"]) / d.loc[sel, "measured_tokens_per_s"]
            out.append((f"{who}{name}_tokens_mean_signed_pct", float(signed.mean()) if sel.any() else np.nan))
    return out


#: torchtitan's compile scope when torchao's end-to-end float8 table was measured (torchtitan 0.0.2, March 2025: each
#: layer compiled, the loss eager until 2025-04-02, :data:`TORCHTITAN_COMPILE_SCOPE`)
TORCHAO_E2E_COMPILE_SCOPE = "layers"


def torchao_e2e_gpu():
    """The H100 torchao's end-to-end float8 runs ran on, as :func:`perfmodel.datasets.llm_runs.torchtitan_gpu_spec`
    predicts for it: the part whose memory the logs of those runs show. torchao's README names only "8xH100 GPUs";
    its authors' logs of the same runs (Llama 3 8B, 8 GPUs, batch 1, sequence 8192, compiled: the rows of
    :func:`perfmodel.datasets.load_torchtitan_memory_logs` of kind ``"torchao_e2e"``, two of which log the README's
    own peak memories) put each line's peak memory at a share of a 95.0 GiB device, which only the 96 GB H100 of
    torchtitan's own tables (Grand Teton, 500 W) holds (:func:`perfmodel.datasets.llm_runs.gpu_of_device_memory`;
    an 80 GB H100 reports 79.1 GiB).

    Raises
    ------
    DataFormatError
        When the logs disagree on the device's memory by more than 0.5 %, or none is of these runs.
    """
    from perfmodel._errors import DataFormatError
    from perfmodel.datasets import load_torchtitan_memory_logs
    from perfmodel.datasets.llm_runs import device_memory_gib, gpu_of_device_memory

    logs = load_torchtitan_memory_logs()
    mem = device_memory_gib(logs[logs["kind"] == "torchao_e2e"])
    if mem.empty or mem.max() > 1.005 * mem.min():
        raise DataFormatError(f"load_torchtitan_memory_logs: the logs of torchao's end-to-end runs imply device memories "
                              f"{sorted(mem.round(2))} GiB; expected one device (within 0.5 %).")
    return gpu_of_device_memory(float(mem.median()), "H100")


def _run_clock(spec, n_gpus: int) -> float:
    """The share of its datasheet clock a run on ``n_gpus`` of ``spec`` is predicted at: the Grand Teton H100 at
    :func:`grand_teton_run_clock` (FBGEMM's GEMMs ran on one chip; the run's synchronous step waits on the slowest of
    its chips); 1.0 for a catalog part, which pm.Cluster's default clock (the slowest chip's too) then sets."""
    from perfmodel.datasets.llm_runs import GRAND_TETON_H100

    return grand_teton_run_clock(int(n_gpus)) if spec.gpu == GRAND_TETON_H100["gpu"] else 1.0


def _cluster(spec, n_gpus: int, interconnect):
    """The cluster a torchtitan run on ``n_gpus`` of ``spec`` is predicted on: nodes of 8 with NVLink inside and a NIC
    per GPU on its own rail, at :func:`_run_clock`."""
    import perfmodel as pm

    clock = _run_clock(spec, n_gpus)
    return pm.Cluster(spec, n_gpus=int(n_gpus), gpus_per_node=8, nics_per_node=8, interconnect=interconnect,
                      clock=clock if clock != 1.0 else None)


@cached_frame
def torchao_float8_check() -> pd.DataFrame:
    """torchao's other published float8 measurements on an H100 (:func:`perfmodel.datasets.load_torchao_float8_checks`),
    held out: the two worked examples of its tensorwise microbenchmark (the speedup over BF16 of ``LayerNorm -> Linear
    -> Sigmoid``, forward and backward, compiled, as :mod:`perfmodel.step.float8_rowwise` predicts the row-wise table;
    a ratio, on the catalog H100: their source names no part) and its end-to-end torchtitan runs (Llama 3 8B, FSDP over
    8 GPUs with NVLink, local batch 1 at sequence 8192, per-operator selective checkpointing, compiled per layer with
    the loss eager, the fused Adam step; BF16, tensorwise, rowwise) on the part their logs show
    (:func:`torchao_e2e_gpu`: the 96 GB, 500 W H100 of torchtitan's own tables, at its clock as torchtitan's rows run
    it), each beside the rule of thumb (a speedup of 1: it has no FP8; tokens/s at 40 % of the dense BF16 peak of the
    same part).

    Returns
    -------
    DataFrame
        One row per measurement: ``kind``, ``recipe``, ``m``, ``k``, ``n``, ``measured`` and ``predicted`` (the
        speedup of a microbenchmark row, tokens/s per GPU of a training row), ``gpu`` (the part predicted),
        ``predicted_on_catalog_h100`` (a training row on the catalog H100, the 80 GB 700 W SXM5 at pm.Cluster's
        default clock: the part the README's "H100" would name without the logs, reported beside the score, not
        scored), ``rule_of_thumb``, ``measured_memory_gib`` / ``predicted_memory_gib`` (training rows),
        ``abs_error_pct``, ``rule_of_thumb_abs_error_pct``.
    """
    import perfmodel as pm
    from perfmodel.datasets import load_torchao_float8_checks
    from perfmodel.datasets.gpus import gpu_spec
    from perfmodel.models import ExtrapolationWarning
    from perfmodel.step.baselines import rule_of_thumb_step_time
    from perfmodel.step.float8_rowwise import calibration_frame
    from perfmodel.step.step_time import OutOfMemoryWarning

    catalog = "H100"
    part = torchao_e2e_gpu()
    rows = []
    checks = load_torchao_float8_checks()
    bench = checks[checks["kind"] == "microbenchmark"]
    if not (bench["recipe"] == "tensorwise").all():
        raise ValueError("load_torchao_float8_checks: its microbenchmark rows are torchao's tensorwise examples; got "
                         f"recipes {sorted(set(bench['recipe']))}.")
    subgraph = calibration_frame(bench, catalog, recipe="tensorwise").set_index(["m", "k", "n"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        warnings.simplefilter("ignore", OutOfMemoryWarning)
        for r in checks.itertuples(index=False):
            row = dict(kind=r.kind, recipe=r.recipe, m=r.m, k=r.k, n=r.n, measured_memory_gib=np.nan,
                       predicted_memory_gib=np.nan, predicted_on_catalog_h100=np.nan)
            if r.kind == "microbenchmark":
                t = subgraph.loc[(int(r.m), int(r.k), int(r.n))]
                row.update(gpu=catalog, measured=float(r.speedup), predicted=float(t["t_bf16"] / t["t_fp8"]), rule_of_thumb=1.0)
            else:
                seq, n_gpus, local = int(r.seq_len), int(r.n_gpus), int(r.local_batch_size)
                fp8 = r.recipe != "none"
                w = pm.Workload(MODEL_CONFIGS["Llama 3.1 8B"], input_shape=(seq,), batch_size=local * n_gpus,
                                precision="fp8" if fp8 else "bf16", optimizer="adam-fused", compile=True,
                                fp8_recipe=str(r.recipe) if fp8 else None, compile_scope=TORCHAO_E2E_COMPILE_SCOPE)
                how = pm.Parallelism("fsdp", activation_checkpointing="selective")
                p = pm.predict(w, _cluster(part, n_gpus, LINKS["H100"]), how)
                alt = pm.predict(w, _cluster(gpu_spec(catalog), n_gpus, LINKS["H100"]), how)
                rule = rule_of_thumb_step_time(MODEL_CONFIGS["Llama 3.1 8B"], part, input_shape=(seq,),
                                               batch_size=local * n_gpus, precision="bf16", n_gpus=n_gpus).iloc[0]
                row.update(gpu=part.gpu, measured=float(r.tokens_per_s), predicted=local * seq / p.step_time_s,
                           predicted_on_catalog_h100=local * seq / alt.step_time_s,
                           rule_of_thumb=local * seq / float(rule["step_time_s"]),
                           measured_memory_gib=float(r.peak_memory_gb),
                           predicted_memory_gib=p.memory["total_bytes"] / 2**30)
            rows.append(row)
    out = pd.DataFrame(rows)
    out["abs_error_pct"] = np.abs(percent_error(out["measured"], out["predicted"]))
    out["rule_of_thumb_abs_error_pct"] = np.abs(percent_error(out["measured"], out["rule_of_thumb"]))
    return out


def torchao_float8_gains(d: pd.DataFrame | None = None) -> pd.DataFrame:
    """The FP8 recipes' gains over BF16 in torchao's end-to-end runs (:func:`torchao_float8_check`), measured and
    predicted: ``recipe``, ``measured_gain``, ``predicted_gain``, ``error`` (predicted − measured)."""
    d = torchao_float8_check() if d is None else d
    t = d[d["kind"] == "training"].set_index("recipe")
    fp8 = [x for x in t.index if x != "none"]
    out = pd.DataFrame({"recipe": fp8,
                        "measured_gain": [t.loc[x, "measured"] / t.loc["none", "measured"] for x in fp8],
                        "predicted_gain": [t.loc[x, "predicted"] / t.loc["none", "predicted"] for x in fp8]})
    out["error"] = out["predicted_gain"] - out["measured_gain"]
    return out


def _torchao_numbers() -> list[dict]:
    d = torchao_float8_check()
    mb, tr = d[d["kind"] == "microbenchmark"], d[d["kind"] == "training"]
    g = torchao_float8_gains(d)
    src = ("torchao's float8 README (perfmodel.datasets.load_torchao_float8_checks), held out, the microbenchmark "
           "examples predicted on the catalog H100, the end-to-end runs on the 96 GB 500 W H100 their logs show "
           "(torchtitan_runs.torchao_e2e_gpu, torchtitan_runs.torchao_float8_check)")
    return [
        dict(quantity="torchao_tensorwise_microbenchmark_speedup_mape_pct", unit="pct", value=float(mb["abs_error_pct"].mean()),
             protocol=f"mean absolute % error of the speedup over BF16 of torchao's {len(mb)} tensorwise microbenchmark "
                      f"examples (LayerNorm -> Linear -> Sigmoid, fwd + bwd, compiled); {src}"),
        dict(quantity="torchao_tensorwise_microbenchmark_rule_of_thumb_speedup_mape_pct", unit="pct",
             value=float(mb["rule_of_thumb_abs_error_pct"].mean()),
             protocol=f"the baseline on the same examples: the rule of thumb has no FP8 (a speedup of 1); {src}"),
        dict(quantity="torchao_e2e_tokens_mape_pct", unit="pct", value=float(tr["abs_error_pct"].mean()),
             protocol=f"mean absolute % error of tokens/s per GPU of torchao's {len(tr)} end-to-end torchtitan runs "
                      f"(Llama 3 8B, 8 GPUs, BF16, tensorwise, rowwise); {src}"),
        dict(quantity="torchao_e2e_tokens_mape_pct_on_catalog_h100", unit="pct",
             value=mape(tr["measured"], tr["predicted_on_catalog_h100"]),
             protocol=f"the same runs predicted on the catalog H100 (SXM5 80GB, 700 W, pm.Cluster's default clock), the "
                      f"part the README's 'H100' would name without its authors' logs: an alternative reported beside "
                      f"the score, not scored; {src}"),
        dict(quantity="torchao_e2e_rule_of_thumb_tokens_mape_pct", unit="pct", value=float(tr["rule_of_thumb_abs_error_pct"].mean()),
             protocol=f"the baseline on the same runs: the rule of thumb, (6N + 12·L·h·s) FLOPs per token at 40 % of the "
                      f"dense BF16 peak of the part they ran on; {src}"),
        dict(quantity="torchao_e2e_fp8_gain_mean_abs_error", unit="ratio", value=float(g["error"].abs().mean()),
             protocol=f"mean absolute error of the FP8 recipes' gain over BF16 (tokens/s over the BF16 run's) on those "
                      f"runs, predicted against measured; {src}"),
        dict(quantity="torchao_e2e_rule_of_thumb_fp8_gain_mean_abs_error", unit="ratio",
             value=float((g["measured_gain"] - 1).abs().mean()),
             protocol=f"the baseline on the same runs: the rule of thumb has no FP8, so it predicts a gain of 1; {src}"),
        dict(quantity="torchao_e2e_memory_mape_pct", unit="pct",
             value=mape(tr["measured_memory_gib"], tr["predicted_memory_gib"]),
             protocol=f"mean absolute % error of peak memory per GPU on those runs (the README's GB read as "
                      f"torchtitan's logged GiB of max reserved memory); {src}"),
    ]


_UNITS = {"rows": "rows", "rows_predicted": "rows", "rows_skipped": "rows", "memory_rows": "rows", "rowwise_rows": "rows",
          "tp_rows": "rows",
          "async_tp_pairs": "rows", "async_tp_gain_mean_abs_error": "ratio",
          "rule_of_thumb_async_tp_gain_mean_abs_error": "ratio",
          "tokens_within_25_pct_share": "ratio", "memory_within_10_pct_share": "ratio", "grand_teton_sustained_clock": "ratio"}
_WHAT = {"rows": "published runs in torchtitan's tables", "rows_predicted": "runs one perfmodel call states",
         "rows_skipped": "runs listed with the reason they are not predicted",
         "tokens_mape_pct": "mean absolute % error of tokens/s per GPU over the predicted runs",
         "tokens_worst_pct": "largest absolute % error of tokens/s per GPU over the predicted runs",
         "tokens_within_25_pct_share": "share of the predicted runs within 25 % on tokens/s per GPU",
         "rule_of_thumb_tokens_mape_pct": ("the baseline on the same runs: mean absolute % error of tokens/s per GPU by the "
                                           "rule of thumb, (6N + 12·L·h·s) FLOPs per token at 40 % of the dense BF16 peak "
                                           "(perfmodel.step.baselines.rule_of_thumb_step_time)"),
         "rowwise_rows": ("predicted runs with torchao's rowwise Float8 (its GEMMs at the tensorwise FP8 rate, its costs "
                          "beyond them calibrated on torchao's row-wise microbenchmark: perfmodel.step.float8_rowwise)"),
         "rowwise_tokens_mape_pct": "mean absolute % error of tokens/s per GPU over the rowwise Float8 runs",
         "other_tokens_mape_pct": "mean absolute % error of tokens/s per GPU over the other runs (BF16, tensorwise Float8)",
         "async_tp_pairs": "runs published with and without asynchronous TP (the same layout, model and recipe)",
         "async_tp_gain_mean_abs_error": ("mean absolute error of the speed-up asynchronous TP gives those runs "
                                          "(tokens/s with it over without), predicted against measured"),
         "rule_of_thumb_async_tp_gain_mean_abs_error": ("the baseline on the same pairs: the rule of thumb has no "
                                                        "communication, so it predicts no speed-up (a gain of 1)"),
         "tp_rows": "predicted runs with tensor parallelism (torchtitan's TP 8 inside a node, with FSDP and pipelines across)",
         "tp_tokens_mean_signed_pct": ("mean signed % error of tokens/s per GPU over the runs with tensor parallelism "
                                       "(positive: predicted too fast)"),
         "rule_of_thumb_tp_tokens_mean_signed_pct": "the same by the rule of thumb",
         "no_tp_tokens_mean_signed_pct": ("mean signed % error of tokens/s per GPU over the runs without tensor "
                                          "parallelism (FSDP, with context parallelism in some; positive: predicted too fast)"),
         "rule_of_thumb_no_tp_tokens_mean_signed_pct": "the same by the rule of thumb",
         "memory_rows": "predicted runs with a published peak memory",
         "memory_mape_pct": "mean absolute % error of peak memory per GPU (GiB; torchtitan reports max reserved)",
         "memory_within_10_pct_share": "share of those runs within 10 % on peak memory",
         "grand_teton_sustained_clock": ("share of its datasheet clock one chip of the 500 W H100 of the H100 runs is "
                                         "predicted at (a run at its slowest chip's: slowest_chip_clock): "
                                         "the GEMM model reproduces the BF16 GEMMs FBGEMM published for a 500 W H100 "
                                         "(pytorch/FBGEMM pull request #2546; perfmodel.step.kernels.sustained_clock), "
                                         "not fitted on these runs")}


def numbers() -> pd.DataFrame:
    """perfmodel's own results (``COMPARISON_COLUMNS``, no paper value): :func:`summary`'s scores, each with how it was
    computed."""
    from perfmodel.papers import _item

    rows = [dict(quantity=r.quantity, unit=_UNITS.get(r.quantity, "pct"), value=float(r.value),
                 protocol=(_WHAT[r.quantity] if r.quantity == "grand_teton_sustained_clock" else
                           f"{_WHAT[r.quantity]}; " + ("the same runs and arguments" if r.quantity.startswith("rule_of_thumb")
                                                       else "predicted by pm.predict from the GPU's spec sheet")
                           + ", nothing fitted on these runs (torchtitan_runs.data)"))
            for r in summary().itertuples(index=False)]
    return _item.item_results(__name__, rows + _torchao_numbers())


def figure(data: pd.DataFrame | None = None, ax=None):
    """Predicted against measured tokens/s per GPU (one point per predicted run), the diagonal and ±25 %; returns the
    Figure."""
    import matplotlib.pyplot as plt

    d = globals()["data"]() if data is None else data
    d = d[d["skipped"] == ""]
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 5))
    for gpu, g in d.groupby("gpu"):
        ax.scatter(g["measured_tokens_per_s"], g["predicted_tokens_per_s"], label=gpu)
    lim = [0, 1.1 * float(np.nanmax(d[["measured_tokens_per_s", "predicted_tokens_per_s"]].to_numpy()))]
    ax.plot(lim, lim, color="black", lw=1)
    ax.fill_between(lim, [0.75 * v for v in lim], [1.25 * v for v in lim], color="grey", alpha=0.15, label="±25 %")
    ax.set(xlim=lim, ylim=lim, xlabel="measured tokens/s per GPU (torchtitan)", ylabel="predicted tokens/s per GPU",
           title="torchtitan's Llama runs")
    ax.legend()
    return ax.figure


def llama_8b_options(gpu: str = "H100", n_gpus: int = 8, *, local_batch_size: int = 2, seq_len: int = DEFAULT_SEQ_LEN) -> pd.DataFrame:
    """How long and how much memory a step of Llama 3.1 8B takes on ``n_gpus`` GPUs, for each choice an engineer weighs:
    BF16 or FP8, FSDP or FSDP with 2-way tensor parallelism, no / selective / full activation checkpointing, eager or
    ``torch.compile``. One row per choice with tokens/s per GPU, step time, memory per GPU and
    whether it fits (:func:`perfmodel.predict_step_time`)."""
    import itertools

    import perfmodel as pm
    from perfmodel.models import ExtrapolationWarning
    from perfmodel.step.step_time import OutOfMemoryWarning

    rows = []
    for prec, strat, ac, comp in itertools.product(("bf16", "fp8"), ("fsdp", f"fsdp{n_gpus // 2}-tp2"),
                                                   (False, "selective", "full"), (False, True)):
        tp = 2 if "tp" in strat else 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExtrapolationWarning)
            warnings.simplefilter("ignore", OutOfMemoryWarning)
            p = pm.predict_step_time(MODEL_CONFIGS["Llama 3.1 8B"], gpu, input_shape=(seq_len,),
                                     batch_size=local_batch_size * n_gpus // tp, precision=prec, optimizer="adam-fused",
                                     n_gpus=n_gpus, strategy=strat, activation_checkpointing=ac, compile=comp,
                                     gpus_per_node=8, nics_per_node=8, interconnect=LINKS.get(gpu)).iloc[0]
        per_gpu_tokens = local_batch_size * seq_len / tp  # a data-parallel rank's tokens over its replica's GPUs
        rows.append(dict(precision=prec, strategy=strat, activation_checkpointing=str(ac), compile=comp,
                         step_time_s=float(p["step_time_s"]), tokens_per_s_per_gpu=per_gpu_tokens / float(p["step_time_s"]),
                         memory_gib=float(p["memory_per_gpu_bytes"]) / 2**30, fits=bool(p["fits"])))
    return pd.DataFrame(rows)
