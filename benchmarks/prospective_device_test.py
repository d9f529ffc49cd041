"""The prospective device test: perfmodel's single-GPU predictions committed first, then measured on the GPU, then scored.

Three steps, in this order (each ``--help`` says more):

1. ``python benchmarks/prospective_device_test.py predict --out benchmarks/prospective/predictions.csv`` — here, on any
   machine, no data read: perfmodel's step time, interval and memory of every run of :data:`PLAN` (Llama and GPT-2
   configs in BF16 with SDPA, TF32 and FP32, with and without the optimizer) and the GEMM model's time of every GEMM of
   :data:`GEMMS`, on each ``--gpu`` (default the H100 and H200 of the catalog), with the rule of thumb beside the
   steps. The file is committed **before** anything is measured: that commit is the registration.
2. ``python benchmarks/prospective_device_test.py measure --out-dir DIR`` — on the GPU (about 5 minutes on an H100, by perfmodel's own step predictions and the GEMM loops' length):
   every run with :func:`perfmodel.measure.measure_llm_step` and every GEMM held for ``--gemm-seconds`` with
   :func:`perfmodel.measure.measure_sustained_gemms` (SM clock and power sampled throughout), then
   ``perfmodel measure ops --classes matmul`` in BF16 (skip with ``--no-ops``); CSVs under ``DIR`` (``llm_steps.csv``,
   ``gemms.csv``, ``ops_bf16.csv``, ``environment.txt``). A run that does not fit or fails is written to
   ``failures.csv`` with its error and the others go on. Needs torch with CUDA and transformers, not the rest of
   perfmodel's dependencies (``PYTHONPATH=.`` from a checkout will do).
3. ``python benchmarks/prospective_device_test.py score --predictions ... --measured-dir DIR`` — the error of every
   registered prediction against its measurement (median of the timed steps; the peak reserved memory), the rule of
   thumb's beside it, the share of its datasheet clock the part sustained under the large BF16 GEMMs (:data:`CLOCK_MIN_DIM`)
   (:func:`perfmodel.step.kernels.sustained_clock`) with the SM clock and power NVML saw, and the step predictions
   again at that measured clock (no step time is fitted: the clock comes from the GEMMs alone). Writes
   ``DIR/scores.csv``.

Why: the largest open question of the at-scale goals is the clock and efficiency a 700 W Hopper part sustains in a
training step (``benchmarks/bench_rule_of_thumb_gap.py``); this answers it for one GPU with perfmodel's own harness,
and checks the single-GPU half-precision step and memory models on a GPU they were not fitted on.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

_LLAMA = {"model_type": "llama", "vocab_size": 128256, "max_position_embeddings": 131072, "rope_theta": 500000.0,
          "rms_norm_eps": 1e-5, "num_key_value_heads": 8}
#: Llama 3.2 1B's shape (meta-llama/Llama-3.2-1B config.json: tied embeddings)
LLAMA_1B = dict(_LLAMA, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                tie_word_embeddings=True)
#: Llama 3 8B's layer shape (meta-llama/Meta-Llama-3-8B) with 8 of its 32 layers: its GEMMs, on one GPU
LLAMA_8B_8L = dict(_LLAMA, hidden_size=4096, intermediate_size=14336, num_hidden_layers=8, num_attention_heads=32,
                   tie_word_embeddings=False)
#: GPT-2 large (openai-community/gpt2-large config.json), NeuSight's model
GPT2_LARGE = {"model_type": "gpt2", "n_layer": 36, "n_embd": 1280, "n_head": 20, "n_positions": 1024, "vocab_size": 50257}

#: (run, config, seq_len, batch_size, precision, attention, optimizer); every run sized to fit an 80 GB H100 by
#: perfmodel's own memory prediction (the largest, 55 GiB; a run that does not fit is logged, not lost)
PLAN = [
    ("llama1b-bf16-sdpa-none", LLAMA_1B, 2048, 4, "bf16", "sdpa", "none"),
    ("llama1b-bf16-sdpa-adamfused", LLAMA_1B, 2048, 4, "bf16", "sdpa", "adam-fused"),
    ("llama1b-tf32-sdpa-none", LLAMA_1B, 2048, 4, "tf32", "sdpa", "none"),
    ("llama1b-tf32-sdpa-adamfused", LLAMA_1B, 2048, 4, "tf32", "sdpa", "adam-fused"),
    ("llama1b-fp32-sdpa-none", LLAMA_1B, 2048, 4, "fp32", "sdpa", "none"),
    ("llama1b-fp32-sdpa-adamfused", LLAMA_1B, 2048, 4, "fp32", "sdpa", "adam-fused"),
    ("llama8b8l-bf16-sdpa-adamfused", LLAMA_8B_8L, 4096, 2, "bf16", "sdpa", "adam-fused"),
    ("gpt2large-bf16-sdpa-adamfused", GPT2_LARGE, 1024, 4, "bf16", "sdpa", "adam-fused"),
    ("gpt2large-fp32-eager-none", GPT2_LARGE, 1024, 4, "fp32", "eager", "none"),
]
#: GEMMs held for seconds: (precision, m, n, k), an m x k input times a k x n weight; "fp8" with fast accumulation (the
#: forward GEMMs of FP8 training), "fp8-split" with split accumulation (its backward GEMMs)
GEMMS = [("bf16", 8192, 6144, 4096), ("bf16", 8192, 14336, 4096), ("bf16", 8192, 4096, 14336), ("bf16", 8192, 8192, 8192),
         ("bf16", 4096, 4096, 4096), ("tf32", 8192, 8192, 8192), ("tf32", 4096, 4096, 4096), ("fp32", 4096, 4096, 4096),
         ("fp8", 8192, 14336, 4096), ("fp8", 8192, 8192, 8192), ("fp8-split", 8192, 14336, 4096),
         ("fp8-split", 8192, 8192, 8192),
         # a tensor-parallel rank's share of Llama 3 8B's linears at TP 8 (wq, wo, w1), 16,384 tokens: the shapes where
         # torchtitan's FP8 gain falls short of perfmodel's
         ("bf16", 16384, 512, 4096), ("bf16", 16384, 4096, 512), ("bf16", 16384, 1792, 4096),
         ("fp8", 16384, 512, 4096), ("fp8", 16384, 4096, 512), ("fp8", 16384, 1792, 4096),
         # and its backward GEMMs (split accumulation in FP8): the weight gradients of wq and w1, a long reduction over
         # the 16,384 tokens into a small output (few tiles), and the input gradient of wq
         ("bf16", 512, 4096, 16384), ("fp8-split", 512, 4096, 16384), ("bf16", 1792, 4096, 16384),
         ("fp8-split", 1792, 4096, 16384), ("fp8-split", 16384, 4096, 512)]
#: the BF16 GEMMs the sustained clock is found from: every dimension at least this (the layer's GEMMs at 8,192 tokens
#: and the square ones); the tensor-parallel shard shapes are scored against it, not used to find it
CLOCK_MIN_DIM = 4096
STEPS, WARMUP = 8, 3


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                             cwd=Path(__file__).resolve().parent)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True,
                               cwd=Path(__file__).resolve().parent).stdout.strip()
        return out.stdout.strip() + ("+uncommitted" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def gemm_predictions(gemms, gpu):
    """perfmodel's GEMM model's time (s) of each row of ``gemms`` (``precision`` of :data:`GEMMS`, ``m``, ``n``, ``k``) on
    ``gpu`` at its datasheet clock: FP8 rows at the FP8 rate, the split-accumulation ones as perfmodel times an FP8
    backward GEMM (:data:`perfmodel.step.op_latency.FP8_SPLIT_ACCUMULATION_SLOWDOWN` on Ada and Hopper)."""
    import numpy as np

    from perfmodel.step.kernels import gemm_work, kernel_seconds

    label = gemms["precision"].astype(str).to_numpy()
    prec = np.where(np.char.startswith(label.astype(str), "fp8"), "fp8", label)
    work = gemm_work(gemms.assign(precision=prec))
    work.loc[label == "fp8-split", "phase"] = "backward"
    t = np.empty(len(gemms))
    for p in dict.fromkeys(prec):
        at = prec == p
        t[at] = np.asarray(kernel_seconds(work[at].reset_index(drop=True), gpu, str(p)), dtype=float)
    return t


def cmd_predict(a) -> int:
    import warnings

    import pandas as pd

    import perfmodel as pm
    out = Path(a.out)
    if out.exists():
        print(f"predict: {out} exists; a registration is never overwritten (choose a new name)", file=sys.stderr)
        return 2
    warnings.simplefilter("ignore")
    commit, now = _commit(), dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    rows = []
    for gpu in a.gpu:
        for run, cfg, seq, b, prec, attn, opt in PLAN:
            c = dict(cfg, attn_implementation=attn)
            o = None if opt == "none" else opt
            p = pm.predict_step_time(c, gpu, input_shape=(seq,), batch_size=b, precision=prec, optimizer=o).iloc[0]
            rule = pm.rule_of_thumb_step_time(c, gpu, input_shape=(seq,), batch_size=b, precision=prec).iloc[0]
            mem = pm.predict_memory(c, gpu, input_shape=(seq,), batch_size=b, precision=prec, optimizer=o).iloc[0]
            rows.append(dict(kind="llm_step", run=run, gpu=gpu, seq_len=seq, batch_size=b, precision=prec, attention=attn,
                             optimizer=opt, m=None, n=None, k=None, predicted_s=float(p["step_time_s"]),
                             lower_s=float(p["lower_s"]), upper_s=float(p["upper_s"]),
                             predicted_memory_gib=float(mem["total_bytes"]) / 2**30,
                             rule_of_thumb_s=float(rule["step_time_s"]), perfmodel_commit=commit, predicted_utc=now))
        g = pd.DataFrame(GEMMS, columns=["precision", "m", "n", "k"])
        t = gemm_predictions(g, gpu)
        for r, s in zip(g.itertuples(index=False), t):
            rows.append(dict(kind="gemm", run=f"gemm-{r.precision}-{r.m}x{r.n}x{r.k}", gpu=gpu, precision=r.precision,
                             m=r.m, n=r.n, k=r.k, predicted_s=float(s), perfmodel_commit=commit, predicted_utc=now))
    df = pd.DataFrame(rows)
    for c in ("seq_len", "batch_size", "m", "n", "k"):
        df[c] = df[c].astype("Int64")
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False)
    print(df.drop(columns=["perfmodel_commit", "predicted_utc"]).to_string(index=False))
    print(f"predict: {len(df)} predictions of perfmodel {commit} written to {out}: commit it before measuring")
    return 0


def cmd_measure(a) -> int:
    import pandas as pd

    from perfmodel.measure.llm import measure_llm_step, measure_sustained_gemms
    from perfmodel.measure.store import append_rows

    d = Path(a.out_dir)
    d.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    env = subprocess.run(["nvidia-smi", "-q"], capture_output=True, text=True).stdout if a.device.startswith("cuda") else ""
    (d / "environment.txt").write_text(f"perfmodel {_commit()}\n{' '.join(sys.argv)}\n{env}")
    fails = []
    runs = [p for p in PLAN if not a.runs or p[0] in a.runs]
    for run, cfg, seq, b, prec, attn, opt in runs:
        try:
            measure_llm_step(cfg, seq_len=seq, batch_size=b, precision=prec, optimizer=opt, attention=attn, device=a.device,
                             steps=a.steps, warmup=a.warmup, name=run, out=d / "llm_steps.csv")
            print(f"measure: {run} done ({time.perf_counter() - t0:.0f} s)", flush=True)
        except Exception as exc:  # noqa: BLE001 - one run's failure must not lose the others
            fails.append(dict(run=run, error=f"{type(exc).__name__}: {exc}"[:2000]))
            traceback.print_exc()
    for prec in dict.fromkeys(p for p, *_ in GEMMS):
        shapes = [(m, n, k) for p, m, n, k in GEMMS if p == prec]
        try:
            measure_sustained_gemms(shapes, precision=prec, seconds=a.gemm_seconds, device=a.device, out=d / "gemms.csv")
            print(f"measure: GEMMs {prec} done ({time.perf_counter() - t0:.0f} s)", flush=True)
        except Exception as exc:  # noqa: BLE001
            fails.append(dict(run=f"gemms-{prec}", error=f"{type(exc).__name__}: {exc}"[:2000]))
            traceback.print_exc()
    if a.ops:
        r = subprocess.run([sys.executable, "-m", "perfmodel", "measure", "ops", "--device", a.device, "--precision", "bf16",
                            "--classes", "matmul", "--out", str(d / "ops_bf16.csv"), "--quiet"], capture_output=True, text=True)
        print(r.stdout[-2000:], r.stderr[-2000:])
        if r.returncode:
            fails.append(dict(run="ops-bf16", error=r.stderr[-2000:]))
    if fails:
        append_rows(pd.DataFrame(fails), d / "failures.csv")
    print(f"measure: {len(runs)} runs, {len(GEMMS)} GEMMs, {len(fails)} failures in {time.perf_counter() - t0:.0f} s -> {d}")
    return 0


def _pct(pred, meas):
    return (pred / meas - 1.0) * 100.0


def cmd_score(a) -> int:
    import numpy as np
    import pandas as pd

    import warnings

    import perfmodel as pm
    from perfmodel.datasets import canonical_gpu
    from perfmodel.step.kernels import at_sustained_clock, sustained_clock

    warnings.simplefilter("ignore")
    pred = pd.read_csv(a.predictions)
    d = Path(a.measured_dir)
    steps = pd.read_csv(d / "llm_steps.csv")
    gemms = pd.read_csv(d / "gemms.csv") if (d / "gemms.csv").exists() else pd.DataFrame()
    gpu = canonical_gpu(str(steps["device_name"].iloc[0]))
    p = pred[pred["gpu"] == gpu]
    if not len(p):
        print(f"score: the predictions hold no row of {gpu} (the GPU the measurements ran on); registered: "
              f"{sorted(pred['gpu'].unique())}", file=sys.stderr)
        return 2
    rows = []
    clock, clock_note = None, "no BF16 GEMM measured"
    if len(gemms):
        bf = gemms[gemms["precision"] == "bf16"]
        big = bf[bf[["m", "n", "k"]].min(axis=1) >= CLOCK_MIN_DIM]
        bf = big if len(big) else bf  # the clock from the large GEMMs, where the GEMM model is checked (OpenXLA, FBGEMM)
        if len(bf):
            clock = sustained_clock(gpu, bf[["m", "n", "k", "ms", "precision"]])
            clock_note = (f"{clock:.3f} of the datasheet clock (BF16 GEMMs; NVML: SM {bf['sm_clock_mhz'].median():.0f} MHz, "
                          f"{bf['power_w'].median():.0f} W of {bf['power_limit_w'].median():.0f} W)")
        for g in gemms.itertuples(index=False):
            label = "fp8-split" if getattr(g, "accumulation", "") == "split" else g.precision
            q = p[(p["kind"] == "gemm") & (p["m"] == g.m) & (p["n"] == g.n) & (p["k"] == g.k) & (p["precision"] == label)]
            if len(q):
                rows.append(dict(kind="gemm", run=q["run"].iloc[0], measured=g.ms / 1e3, predicted=float(q["predicted_s"].iloc[0]),
                                 error_pct=_pct(float(q["predicted_s"].iloc[0]), g.ms / 1e3), sm_clock_mhz=g.sm_clock_mhz,
                                 power_w=g.power_w))
    timed = steps[~steps["warmup"].astype(bool)]
    for run, grp in timed.groupby("model", sort=False):
        q = p[(p["kind"] == "llm_step") & (p["run"] == run)]
        if not len(q):
            continue
        q = q.iloc[0]
        meas = float(grp["step_time_s"].median())
        row = dict(kind="llm_step", run=run, measured=meas, predicted=q["predicted_s"], error_pct=_pct(q["predicted_s"], meas),
                   rule_of_thumb_error_pct=_pct(q["rule_of_thumb_s"], meas),
                   within_interval=bool(q["lower_s"] <= meas <= q["upper_s"]),
                   memory_measured_gib=float(grp["peak_reserved_gib"].max()), memory_predicted_gib=q["predicted_memory_gib"],
                   memory_error_pct=_pct(q["predicted_memory_gib"], float(grp["peak_reserved_gib"].max())),
                   sm_clock_mhz=float(grp["sm_clock_mhz"].median()), power_w=float(grp["power_w"].median()))
        if clock is not None:
            cfg = next(c for r, c, *_ in PLAN if r == run)
            c = dict(cfg, attn_implementation=q["attention"])
            again = pm.predict_step_time(c, at_sustained_clock(gpu, clock), input_shape=(int(q["seq_len"]),),
                                         batch_size=int(q["batch_size"]), precision=q["precision"],
                                         optimizer=None if q["optimizer"] == "none" else q["optimizer"]).iloc[0]
            row["error_at_measured_clock_pct"] = _pct(float(again["step_time_s"]), meas)
        rows.append(row)
    out = pd.DataFrame(rows)
    pd.set_option("display.width", 200)
    print(out.round(3).to_string(index=False))
    s = out[out["kind"] == "llm_step"]
    if len(s):
        print(f"\nsteps on {gpu}: perfmodel MAPE {s['error_pct'].abs().mean():.1f} %, rule of thumb "
              f"{s['rule_of_thumb_error_pct'].abs().mean():.1f} %, {int(s['within_interval'].sum())}/{len(s)} inside the "
              f"interval; memory MAPE {s['memory_error_pct'].abs().mean():.1f} %")
        if "error_at_measured_clock_pct" in s:
            print(f"at the clock the GEMMs sustained: MAPE {s['error_at_measured_clock_pct'].abs().mean():.1f} %")
    g = out[out["kind"] == "gemm"]
    if len(g):
        print(f"GEMMs: MAPE {g['error_pct'].abs().mean():.1f} %; sustained clock {clock_note}")
    path = d / "scores.csv"
    if path.exists():
        path = d / f"scores-{dt.datetime.now(dt.timezone.utc).strftime('%Y%m%dT%H%M%SZ')}.csv"
    out.to_csv(path, index=False)
    print(f"score: written to {path}")
    return 0 if np.isfinite(out["error_pct"]).all() else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    pr = sub.add_parser("predict", help="register perfmodel's predictions of the plan (run here, commit the file)")
    pr.add_argument("--out", required=True, help="CSV to write (never overwritten)")
    pr.add_argument("--gpu", action="append", default=None, help="catalog GPU (repeatable; default H100 and H200)")
    me = sub.add_parser("measure", help="measure the plan on this machine's GPU")
    me.add_argument("--out-dir", required=True, help="folder for the CSVs (appended to, never overwritten)")
    me.add_argument("--device", default="cuda")
    me.add_argument("--steps", type=int, default=STEPS, help="timed steps per run")
    me.add_argument("--warmup", type=int, default=WARMUP, help="warm-up steps per run")
    me.add_argument("--gemm-seconds", type=float, default=6.0, help="seconds each GEMM is held")
    me.add_argument("--runs", nargs="*", default=None, help="only these runs of the plan")
    me.add_argument("--no-ops", dest="ops", action="store_false", help="skip perfmodel measure ops")
    sc = sub.add_parser("score", help="score the registered predictions against the measurements")
    sc.add_argument("--predictions", required=True)
    sc.add_argument("--measured-dir", required=True)
    a = ap.parse_args(argv)
    if a.cmd == "predict":
        a.gpu = a.gpu or ["H100", "H200"]
        return cmd_predict(a)
    return cmd_measure(a) if a.cmd == "measure" else cmd_score(a)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
