"""``perfmodel fit``: rebuild the shipped operator model from the data, or refit it with your own measurements."""
from __future__ import annotations

from perfmodel.cli._common import _print_frame


def _cmd_fit(args) -> int:
    from pathlib import Path

    import perfmodel.step.op_latency as ol
    from perfmodel.step import op_fit as of
    extra = None
    if args.with_:
        import pandas as pd

        extra = pd.concat([ol.load_op_rows(p) for p in args.with_], ignore_index=True)
    out = Path(args.out) if args.out else None
    b = of.fit_op_model(extra, out=out, progress=not args.quiet, force=args.force,
                        extra_name=", ".join(args.with_) if args.with_ else None)
    verb = "fitted and wrote" if b["fitted"] else "already up to date:"
    print(f"{verb} {b['path']} (sha256 {b['sha256']})")
    print(f"fitted on: {b['model'].provenance_}")
    half = b.get("half") or {}
    if half.get("half_gemm") or half.get("half_memory"):
        from perfmodel.step.bandwidth import MIN_OWN_ROWS

        mem = (f"{half['half_memory']} memory-bound rows give " + ", ".join(half["own_bandwidth"]) + " a bandwidth "
               "efficiency of its own" if half.get("own_bandwidth") else
               f"{half['half_memory']} memory-bound rows refit nothing (fewer than {MIN_OWN_ROWS} of a class on one GPU)")
        print(f"half precision: {half['half_gemm']} BF16/FP16 GEMM rows refit the GEMM model; {mem}"
              + (": written beside it: " + ", ".join(str(p) for p in half["paths"]) if half["paths"] else ""))
    if half.get("half_unused"):
        print(f"{half['half_unused']} half-precision convolution rows refit nothing: convolutions in half precision are "
              "predicted from the FP32/TF32-learned model at the half-precision peak")
    print("leave-one-GPU-out calibration |log(sum predicted / sum measured)|:")
    _print_frame(b["scores"].rename_axis("gpu").reset_index())
    if extra is None:
        shipped = ol.load_bundle(ol.shipped_artifact_path(), sha256=ol.SHIPPED_SHA256)
        same = b["sha256"] == ol.SHIPPED_SHA256
        print("identical to the shipped model (same bytes)" if same else
              "differs from the shipped model: largest relative difference of the training rows' predictions "
              f"{_max_rel(shipped, b, ol):.3g}")
    else:
        print(f"use it: export {ol.ENV_OP_MODEL}={b['path']}")
    return 0


def _max_rel(a, b, ol) -> float:
    import numpy as np

    X = ol.neusight_op_frame("train", devices=ol.TRAINING_GPUS)
    pa, pb = a["model"].predict_in_stream(X), b["model"].predict_in_stream(X)
    return float(np.max(np.abs(pb / pa - 1)))


def add_parser(sub, fmt) -> None:
    fit = sub.add_parser("fit", formatter_class=fmt,
                         help="rebuild the shipped operator model from the data, or refit it with your own measurements")
    fit.add_argument("--with", dest="with_", action="append", metavar="CSV",
                     help="operator measurements in NeuSight's microbenchmark schema (device, op, latency_ms, shape columns; what `perfmodel measure ops --out` writes); repeatable")
    fit.add_argument("--out", default=None, metavar="FILE",
                     help="where to write the fitted model (default: <cache>/fitted/op_latency-user.npz); "
                          "point PERFMODEL_OP_MODEL at it to predict with it")
    fit.add_argument("--force", action="store_true", help="refit even when the file already holds this fit, and replace a "
                     "file at --out that holds something else")
    fit.add_argument("--quiet", action="store_true", help="no progress bar")
    fit.set_defaults(func=_cmd_fit)
