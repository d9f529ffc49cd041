"""Loaders for NeuSight's published measurements (sitar-lab/NeuSight ``scripts/asplos/``, ASPLOS'25).

S. Lee, A. Phanishayee, D. Mahajan, "Forecasting GPU Performance for Deep Learning Training and Inference",
ASPLOS'25, doi:10.1145/3669940.3707265. The data are at commit ``6945927`` (MIT licence), registered file by file
with their sha256 in ``datasets/registry.csv`` and hash-checked on every load, like the cake-lab files.

How NeuSight measured (read from its code at the pinned commit; none of it is copied here):

* **End-to-end labels** (``neusight/Tracing/trace.py``, ``measure_e2e``): the Hugging Face model is built from the
  config in ``data/DLmodel_configs/`` (``from_config``, eager attention, FP32 weights), fed ``torch.ones`` token ids
  of shape ``(batch, seq_len)``; ``torch.backends.cudnn.allow_tf32 = False`` is set and matmul TF32 is PyTorch
  2.1's default (off), so every kernel runs in FP32 without TF32. A training step is the forward pass (timed), a
  cross-entropy loss on the logits (not timed), and ``loss.backward()`` (timed): **no optimizer step**. Each is
  timed with CUDA events over 25 repetitions and the **mean of the 5 fastest** is kept (``active = 25``,
  ``sample = 5``); ``e2e = fw + bwall``. Inference runs the forward under ``torch.no_grad``.
* **Fused inference** (``-fusion``, ``scripts/asplos/collect_label_fusion.py``): the same, with ``torch.compile``.
* **4-GPU runs** (``-dp4``, ``-tp4``, ``-pp4_1``, ``scripts/asplos/collect_label_distributed.py``): Megatron-LM through
  Hugging Face Accelerate on 4 GPUs; the batch in the file name is the *global* batch; the time from the start of the
  forward to the end of ``accelerator.backward`` (the optimizer step is run but not timed), mean of the 10 fastest
  of 50 steps; only ``e2e_latency`` is recorded.
* **Per-operator traces** (``neusight/Tracing/analysis.py``): a torch.fx graph of the model with **one** transformer
  layer (``n_layer``/``num_hidden_layers`` set to 1; Switch is traced whole), each node run alone on the GPU, forward,
  backward and gradient-accumulation time measured separately (mean of the 5 fastest of 25).
* **Microbenchmarks** (``neusight/Dataset/collect.py``): one PyTorch call (``torch.bmm``, ``nn.Linear``,
  ``nn.Conv2d``, element-wise ops, ``nn.LayerNorm``, ``nn.Softmax``) on FP32 tensors, forward only, timed with CUDA
  events, mean of the 5 fastest of 25; the kernel names and launch geometry come from the PyTorch profiler.
"""
from __future__ import annotations

import difflib
import json
import re

import numpy as np
import pandas as pd

from perfmodel._errors import DataFormatError, DataNotAvailableError, UnknownNameError
from perfmodel.datasets._cache import cached_frame
from perfmodel.datasets._registry import entry, keys_under, read_bytes, read_csv
from perfmodel.datasets._spec import DatasetSpec

__all__ = [
    "NEUSIGHT_COMMIT",
    "load_neusight_labels",
    "load_neusight_traces",
    "load_neusight_microbenchmarks",
    "load_neusight_devices",
    "load_neusight_model_configs",
    "neusight_model_config",
    "load_neusight_errors",
    "DATASETS",
]

NEUSIGHT_COMMIT = "6945927d9afcca2b9daf021f8395e53edc5b4eef"
_NS = "NS:"
_REPO = "sitar-lab/NeuSight/scripts/asplos"
_LABEL_DIR = f"{_REPO}/label"
_COLLECT = f"{_REPO}/data/dataset"

#: ``<model>-<train|inf>-<seq>-<batch>[-<option>]`` (``scripts/asplos/collect_label*.py``).
_LABEL_RE = re.compile(
    r"^(?P<model>[A-Za-z0-9_]+)-(?P<mode>train|inf)-(?P<seq>\d+)-(?P<batch>\d+)"
    r"(?:-(?P<option>fusion|dp(?P<dp>\d+)|tp(?P<tp>\d+)|pp(?P<pp>\d+)_(?P<mb>\d+)))?$"
)

#: The microbenchmark ops (folder names of ``dataset/train/collect/``) and what NeuSight ran for each.
MICROBENCHMARK_OPS = {
    "bmm": "torch.bmm of (b, m, n) by (b, n, k): n is the reduction dimension",
    "linear": "nn.Linear(n, k, bias=True) on a (b, m, n) input: n is the reduction dimension",
    "conv": "nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, bias=False) on (b, in_channels, input_size, input_size)",
    "add": "torch.add of two (b, h) tensors", "mul": "torch.mul of two (b, h) tensors",
    "div": "torch.div of two (b, h) tensors", "pow": "torch.pow of two (b, h) tensors",
    "addu": "torch.add of a (b, h) tensor and a Python scalar", "mulu": "torch.mul of a (b, h) tensor and a Python scalar",
    "divu": "torch.div of a (b, h) tensor by a Python scalar", "powu": "torch.pow of a (b, h) tensor to a Python scalar",
    "relu": "nn.ReLU on (b, h)", "gelu": "nn.GELU on (b, h)", "tanh": "torch.tanh on (b, h)",
    "ln": "nn.LayerNorm(h) on (b, h)", "softmax": "nn.Softmax on (b, h) (last dimension)",
}

#: Test-split files of ``dataset/test/`` read by :func:`load_neusight_microbenchmarks`. ``vec.csv`` is byte-identical
#: to ``habitat.csv``, and both hold exactly the rows of ``elem.csv`` + ``ln.csv`` + ``softmax.csv``: neither is read.
_TEST_FILES = ("bmm.csv", "linear.csv", "elem.csv", "ln.csv", "softmax.csv")

_SHAPE_COLUMNS = {
    "B": "b", "M": "m", "N": "n", "K": "k", "H": "h", "Input_Channel": "in_channels", "Output_Channel": "out_channels",
    "Kernel_Szie": "kernel_size", "Input_Size": "input_size", "Stride": "stride", "Padding": "padding",
}


def _unknown(what: str, got, valid) -> UnknownNameError:
    valid = list(valid)
    close = difflib.get_close_matches(str(got), [str(v) for v in valid], n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
    return UnknownNameError(f"Unknown {what} {got!r}.{hint} Expected one of: {', '.join(map(str, valid))}.")


def _read_json(key: str):
    data = read_bytes(key)
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataFormatError(f"{entry(key).key} is not valid UTF-8 JSON ({exc}); expected a JSON object.") from exc


def _device_id(name: str) -> str:
    """NeuSight's device folder name: ``torch.cuda.get_device_name()`` with spaces replaced by underscores."""
    return str(name).strip().replace(" ", "_")


def _parse_label_name(stem: str, key: str) -> dict:
    m = _LABEL_RE.match(stem)
    if m is None:
        raise DataFormatError(
            f"{key}: the file name {stem!r} does not follow NeuSight's <model>-<train|inf>-<seq>-<batch>[-fusion|-dpN|-tpN|-ppN_M] pattern."
        )
    opt = m["option"]
    n_gpus = int(m["dp"] or m["tp"] or m["pp"] or 1)
    return dict(model=m["model"], mode=m["mode"], seq_len=int(m["seq"]), batch_size=int(m["batch"]),
                parallel=opt if opt and opt != "fusion" else "none", fused=opt == "fusion", n_gpus=n_gpus)


def _label_keys() -> list[str]:
    return [k for k in keys_under(f"{_NS}label") if k.endswith(".json")]


@cached_frame
def load_neusight_labels() -> pd.DataFrame:
    """NeuSight's measured step latencies: one row per label file.

    One row per ``scripts/asplos/label/<GPU>/<model>-<train|inf>-<seq>-<batch>[-fusion|-dp4|-tp4|-pp4_1].json``
    (149 rows: 52 training, 97 inference; 26 single-GPU training rows on the test GPUs V100, A100-80GB-PCIe, L4 and
    H100). How NeuSight measured is in the module docstring: FP32 (TF32 off), forward + backward without an
    optimizer step, mean of the 5 fastest of 25 runs.

    Returns
    -------
    DataFrame
        ``device`` (NeuSight's folder name, kept verbatim: ``torch.cuda.get_device_name()`` with ``_`` for spaces,
        e.g. ``NVIDIA_H100_80GB_HBM3``, ``Tesla_V100-PCIE-32GB``, ``AMD_Instinct_MI250``), ``model`` (NeuSight's
        config name: ``bert_large``, ``gpt2_large``, ``gpt3_xl``, ``gpt3_27``, ``opt_13``, ``switchxl4``, and one
        ``switch4`` inference run on L4 that has no config upstream), ``mode`` (``train``/``inf``), ``seq_len``
        (tokens), ``batch_size`` (sequences; the global batch for the 4-GPU runs), ``parallel`` (``none``,
        ``dp4``, ``tp4``, ``pp4_1`` = 4 pipeline stages, 1 micro-batch), ``fused`` (inference under
        ``torch.compile``), ``n_gpus``, ``num_layers`` (the model's layer count as NeuSight recorded it; <NA> where
        it wrote 0: Switch, fused and 4-GPU runs), ``e2e_latency_ms``, ``fw_latency_ms``, ``bwall_latency_ms``
        (backward of the whole model; 0 for inference; NaN for the 4-GPU runs, which record only the end-to-end time
        and write 0 for the others), ``has_trace`` (a per-operator trace ``.csv`` is beside it upstream: not for
        fused or 4-GPU runs, nor for twelve Switch-XL runs whose traces are absent from the upstream repository),
        ``source_file`` (registry key).
    """
    rows = []
    keys = _label_keys()
    registered = set(keys_under(f"{_NS}label"))
    for key in keys:
        device, stem = key[len(_LABEL_DIR) + 1:].split("/")
        stem = stem[: -len(".json")]
        info = _parse_label_name(stem, key)
        d = _read_json(key)
        missing = [c for c in ("e2e_latency", "fw_latency", "bwall_latency", "num_layer") if c not in d]
        if missing:
            raise DataFormatError(f"{key} lacks the field(s) {missing}; expected e2e_latency, fw_latency, bwall_latency and num_layer (ms).")
        extra = sorted(set(d) - {"e2e_latency", "fw_latency", "bwall_latency", "num_layer"})
        if extra:
            raise DataFormatError(f"{key} has field(s) {extra} that perfmodel does not know; expected only e2e_latency, fw_latency, bwall_latency, num_layer.")
        multi = info["parallel"] != "none"
        rows.append(dict(
            device=device, **info,
            num_layers=int(d["num_layer"]) if d["num_layer"] else pd.NA,
            e2e_latency_ms=float(d["e2e_latency"]),
            fw_latency_ms=np.nan if multi else float(d["fw_latency"]),
            bwall_latency_ms=np.nan if multi else float(d["bwall_latency"]),
            has_trace=key[: -len(".json")] + ".csv" in registered,
            source_file=key,
        ))
    df = pd.DataFrame(rows)
    df["num_layers"] = df["num_layers"].astype("Int64")
    return df.sort_values(["device", "mode", "model", "seq_len", "batch_size", "parallel", "fused"], kind="stable").reset_index(drop=True)


_MODULE_RE = re.compile(r"\('([^']*)',\s*<class '([^']*)'>\)")


def _last_module(meta: str) -> tuple[str, str]:
    found = _MODULE_RE.findall(meta or "")
    return found[-1] if found else ("", "")


@cached_frame
def _trace_file(key: str) -> pd.DataFrame:
    text = ["op", "target", "_args", "_kwargs", "meta", "input_shapes", "output_shape", "dtype", "Name"]
    d = read_csv(key, required_columns=[*text, "fw_latency", "bw_latency", "acc_latency"], keep_default_na=False, na_values=[""],
                 dtype={c: "string" for c in text})
    if "latency" not in d and "e2e_latency" in d:  # the one older-format trace (switch4 on L4) names the node total e2e_latency
        d = d.rename(columns={"e2e_latency": "latency"})
    if "latency" not in d:
        raise DataFormatError(f"{entry(key).key} has no per-node 'latency' (or 'e2e_latency') column; found {list(d.columns)}.")
    for c in ("latency", "fw_latency", "bw_latency", "acc_latency"):
        d[c] = pd.to_numeric(d[c], errors="raise").astype(float)
    scope = [_last_module(m) for m in d["meta"].fillna("")]
    out = pd.DataFrame({
        "node_index": np.arange(len(d), dtype="int64"),
        "node": d["Name"], "opcode": d["op"], "target": d["target"],
        "module": pd.array([s[0] for s in scope], dtype="string"), "module_type": pd.array([s[1] for s in scope], dtype="string"),
        "args": d["_args"], "kwargs": d["_kwargs"],
        "input_shapes": d["input_shapes"], "output_shape": d["output_shape"], "dtype": d["dtype"],
        "latency_ms": d["latency"], "fw_latency_ms": d["fw_latency"], "bw_latency_ms": d["bw_latency"],
        "acc_latency_ms": d["acc_latency"],
    })
    return out


def _check_choice(what: str, got, valid) -> None:
    if got is not None and got not in set(valid):
        raise _unknown(what, got, sorted(set(valid)))


def load_neusight_traces(device: str | None = None, model: str | None = None, mode: str | None = None) -> pd.DataFrame:
    """NeuSight's per-operator traces of the label runs: one row per torch.fx node of one run.

    The traces are of a model with **one** transformer layer (NeuSight traces ``n_layer = 1`` and scales by the
    label's ``num_layers``), except Switch-XL, traced whole. Each node was run alone: ``latency_ms = fw_latency_ms +
    bw_latency_ms + acc_latency_ms``, each the mean of the 5 fastest of 25 runs, FP32 without TF32. Twelve Switch-XL
    label runs have no trace upstream (on V100, A100-40GB, A100-80GB and H100; their ``.json`` is there), nor have
    fused or 4-GPU runs: those labels have ``has_trace == False`` in :func:`load_neusight_labels` and are skipped.
    Upstream quirks: 43 traces (AMD, and some NVIDIA runs) carry an extra fx ``_sort_key`` column (dropped); the
    ``switch4`` trace on L4 is in an older format whose node total is named ``e2e_latency`` (read as
    ``latency_ms``).

    Parameters
    ----------
    device, model, mode : str, optional
        Keep only these runs (``device`` as in :func:`load_neusight_labels`, e.g. ``"NVIDIA_L4"``; ``mode``
        ``"train"`` or ``"inf"``). Only the selected files are read (all 114 take about a second the first time).

    Returns
    -------
    DataFrame
        The label key ``device``, ``model``, ``mode``, ``seq_len``, ``batch_size``, then ``node_index`` (order in the
        graph), ``node`` (fx node name), ``opcode`` (fx op: ``call_function``, ``call_module``, ``call_method``,
        ``placeholder``, ``get_attr``, ``output``), ``target``, ``module`` and ``module_type`` (innermost entry of
        the node's ``nn_module_stack``; empty when none), ``args``, ``kwargs`` (fx repr, verbatim),
        ``input_shapes``, ``output_shape``, ``dtype`` (verbatim strings), ``latency_ms``, ``fw_latency_ms``,
        ``bw_latency_ms``, ``acc_latency_ms`` (gradient accumulation), ``source_file``.

    Raises
    ------
    UnknownNameError
        A filter value matches no label.
    DataNotAvailableError
        The selected runs exist but none has a trace upstream.
    """
    labels = load_neusight_labels()
    for what, col, val in (("NeuSight device", "device", device), ("NeuSight model", "model", model), ("mode", "mode", mode)):
        _check_choice(what, val, labels[col])
    sel = labels
    for col, val in (("device", device), ("model", model), ("mode", mode)):
        if val is not None:
            sel = sel[sel[col] == val]
    if sel.empty:
        raise UnknownNameError(f"No NeuSight label run has device={device!r}, model={model!r}, mode={mode!r} together. "
                               "See load_neusight_labels() for the runs that exist.")
    with_trace = sel[sel["has_trace"]]
    if with_trace.empty:
        raise DataNotAvailableError(
            f"None of the {len(sel)} selected NeuSight runs (device={device!r}, model={model!r}, mode={mode!r}) has a per-operator "
            "trace upstream: fused and 4-GPU runs were not traced and twelve Switch-XL traces are absent from the repository at "
            f"commit {NEUSIGHT_COMMIT[:7]}. Use load_neusight_labels() for their end-to-end times, or select runs with has_trace."
        )
    frames = []
    for r in with_trace.itertuples(index=False):
        key = r.source_file[: -len(".json")] + ".csv"
        t = _trace_file(key)
        front = pd.DataFrame({"device": r.device, "model": r.model, "mode": r.mode, "seq_len": r.seq_len, "batch_size": r.batch_size},
                             index=t.index)
        frames.append(pd.concat([front, t.assign(source_file=key)], axis=1))
    out = pd.concat(frames, ignore_index=True)
    out["seq_len"] = out["seq_len"].astype("int64")
    out["batch_size"] = out["batch_size"].astype("int64")
    return out


def _micro_keys() -> list[tuple[str, str, str]]:
    """(split, op or test file, key) of every microbenchmark file read."""
    out = []
    for k in keys_under(f"{_NS}data/dataset/train/collect"):
        op = k[len(_COLLECT) + len("/train/collect/"):].split("/")[0]
        out.append(("train", op, k))
    for f in _TEST_FILES:
        out.append(("test", f[: -len(".csv")], f"{_COLLECT}/test/{f}"))
    return out


@cached_frame
def _micro_file(key: str, split: str) -> pd.DataFrame:
    d = read_csv(key, required_columns=["OPName", "Latency", "Device", "Kernel Name"], numeric_columns=["Latency"])
    ren = {"OPName": "op", "Device": "source_name", "Latency": "latency_ms", "Kernel Name": "kernel_name", "Kernels": "kernels",
           "Warps per SM": "warps_per_sm", "Blocks per SM": "blocks_per_sm", "Grid x": "grid_x", "Grid y": "grid_y", "Grid z": "grid_z",
           "Block x": "block_x", "Block y": "block_y", "Block z": "block_z", "Torch Version": "torch_version",
           "CUDNN Version": "cudnn_version", "CUDA Version": "cuda_version", "large": "large", **_SHAPE_COLUMNS}
    unknown = [c for c in d.columns if c not in ren]
    if unknown:
        raise DataFormatError(f"{entry(key).key} has column(s) {unknown} that perfmodel does not know; expected those of {list(ren)}.")
    d = d.rename(columns=ren)
    out = pd.DataFrame({"op": d["op"].astype("string"), "device": d["source_name"].map(_device_id).astype("string"),
                        "source_name": d["source_name"].astype("string"), "split": split})
    for c in _SHAPE_COLUMNS.values():
        out[c] = pd.array(d[c], dtype="Int64") if c in d else pd.array([pd.NA] * len(d), dtype="Int64")
    out["large"] = d["large"].astype("boolean") if "large" in d else pd.array([pd.NA] * len(d), dtype="boolean")
    out["latency_ms"] = d["latency_ms"].astype(float)
    out["kernel_name"] = d["kernel_name"].astype("string")
    out["kernels"] = (d["kernels"].astype("string").str.lstrip(";") if "kernels" in d else pd.array([pd.NA] * len(d), dtype="string"))
    for c in ("warps_per_sm", "blocks_per_sm"):
        out[c] = pd.to_numeric(d[c], errors="raise").astype(float)
    for c in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "cudnn_version"):
        out[c] = pd.array(d[c], dtype="Int64")
    out["torch_version"] = d["torch_version"].astype("string")
    out["cuda_version"] = d["cuda_version"].astype("string")
    out["source_file"] = entry(key).key
    return out


def load_neusight_microbenchmarks(op: str | None = None, device: str | None = None, split: str | None = None) -> pd.DataFrame:
    """NeuSight's per-operator microbenchmarks: one row per (op, shape, GPU) measurement.

    ``split="train"``: ``scripts/asplos/data/dataset/train/collect/<op>/p2.1.0/<GPU>.csv`` — 16 ops on NeuSight's five
    training GPUs (Tesla P4, P100-PCIE-16GB, T4, V100-PCIE-32GB, A100-PCIE-40GB), 256,509 rows.
    ``split="test"``: ``dataset/test/{bmm,linear,elem,ln,softmax}.csv`` — the out-of-distribution shapes (``dims/test_*``)
    on the training GPUs and the test GPUs (L4, A100-80GB-PCIe, H100). 27,339 rows; H100 has only bmm and linear.
    ``test/vec.csv`` is byte-identical to ``test/habitat.csv``; both hold exactly the rows of ``elem.csv``, ``ln.csv``
    and ``softmax.csv`` and are not read again. How NeuSight
    measured: FP32 tensors, forward only, CUDA events, mean of the 5 fastest of 25 runs (module docstring).

    Parameters
    ----------
    op : str, optional
        One of :data:`MICROBENCHMARK_OPS` (``"bmm"``, ``"linear"``, ``"conv"``, ``"add"``, ``"ln"``, ``"softmax"`` …).
    device : str, optional
        NeuSight's device name, with underscores (``"Tesla_P4"``) or spaces (``"Tesla P4"``).
    split : {"train", "test"}, optional

    Returns
    -------
    DataFrame
        ``op``, ``device`` (NeuSight's device name with ``_`` for spaces, as in :func:`load_neusight_labels`),
        ``source_name`` (the upstream ``Device`` string), ``split``, the shape (nullable integers, <NA> where the op
        has no such dimension): ``b``, ``m``, ``n``, ``k`` (bmm: ``(b, m, n) @ (b, n, k)``; linear: ``(b, m, n)``
        input, ``n → k`` features — ``n`` is the reduction dimension in both), ``h`` (element-wise, layer norm,
        softmax: a ``(b, h)`` tensor), ``in_channels``, ``out_channels``, ``kernel_size`` (upstream ``Kernel_Szie``),
        ``input_size``, ``stride``, ``padding`` (conv); ``large`` (test element-wise rows: from the large-tensor sweep;
        <NA> elsewhere), ``latency_ms``, ``kernel_name`` (the dominant kernel), ``kernels`` (every kernel launched,
        ``;``-separated), ``warps_per_sm``, ``blocks_per_sm``, ``grid_x``..``grid_z``, ``block_x``..``block_z``
        (launch geometry of the dominant kernel), ``torch_version`` (``p2.1.0``), ``cudnn_version``,
        ``cuda_version``, ``source_file``.
    """
    if split is not None and split not in ("train", "test"):
        raise _unknown("microbenchmark split", split, ("train", "test"))
    if op is not None and op not in MICROBENCHMARK_OPS:
        raise _unknown("NeuSight microbenchmark op", op, MICROBENCHMARK_OPS)
    dev = _device_id(device) if device is not None else None
    frames = []
    for sp, name, key in _micro_keys():
        if split is not None and sp != split:
            continue
        if sp == "train":
            if op is not None and name != op:
                continue
            if dev is not None and _device_id(key.rsplit("/", 1)[1][: -len(".csv")]) != dev:
                continue
        elif op is not None and not (name == op or (name == "elem" and op in _ELEM_OPS)):
            continue
        f = _micro_file(key, sp)
        if sp == "test":
            if op is not None:
                f = f[f["op"] == op]
            if dev is not None:
                f = f[f["device"] == dev]
        frames.append(f)
    frames = [f for f in frames if len(f)]
    if not frames:
        devices = sorted({_device_id(k.rsplit('/', 1)[1][:-4]) for _, _, k in _micro_keys() if "/train/" in k} | _TEST_DEVICES)
        if dev is not None and dev not in devices:
            raise _unknown("NeuSight microbenchmark device", device, devices)
        raise UnknownNameError(f"No NeuSight microbenchmark has op={op!r}, device={device!r}, split={split!r} together "
                               f"(the test split has ops {', '.join(('bmm', 'linear', *_ELEM_OPS, 'ln', 'softmax'))}).")
    return pd.concat(frames, ignore_index=True)


_ELEM_OPS = ("add", "addu", "div", "divu", "gelu", "mul", "mulu", "pow", "powu", "relu", "tanh")
_TEST_DEVICES = {"NVIDIA_A100-PCIE-40GB", "NVIDIA_A100_80GB_PCIe", "NVIDIA_H100_80GB_HBM3", "NVIDIA_L4", "Tesla_P100-PCIE-16GB",
                 "Tesla_P4", "Tesla_T4", "Tesla_V100-PCIE-32GB"}


@cached_frame
def load_neusight_devices() -> pd.DataFrame:
    """NeuSight's GPU descriptions (``scripts/asplos/data/device_configs/*.json``): one row per file (13).

    Returns
    -------
    DataFrame
        ``device`` (the file name without ``.json``; ``NVIDIA_H100_80GB_HBM3_TP`` is NeuSight's description of the four
        H100s of the tensor-parallel runs as one device: twice the memory, bandwidth and L2 of
        ``NVIDIA_H100_80GB_HBM3``, and ``SingleFLOPs`` 1,979,000, H100 SXM's sparse FP16/BF16 tensor-core rate, not an FP32 rate), ``source_name`` (its ``Device`` field),
        ``vendor`` (``NVIDIA``/``AMD``), ``memory_gb`` (``Dev_Mem``), ``memory_bandwidth_gb_per_s`` (``Mem_Bw``),
        ``n_sms`` (``Num_Sm``; compute units on AMD), ``cores_per_sm`` (``Core_Per_SM``), ``clock_mhz``
        (``Freq``: NeuSight's README says GHz but the values are MHz, e.g. 1113 for the P4), ``fp32_gflops``
        (``SingleFLOPs``, = 2 × SMs × cores × clock on NVIDIA within 0.2 %, except P100-PCIE-16GB: 9519 is the PCIe card's
        rate at 1329 MHz while its ``Freq`` 1380 is the SXM2 card's; NaN on AMD), ``fp32_matrix_gflops`` and
        ``fp32_vector_gflops`` (AMD's ``SingleFLOPsMM``/``SingleFLOPsVEC``; NaN on NVIDIA), ``l2_cache_mb``
        (``L2Cache``), ``train_gpu`` (in ``dataset/train/device_configs/``: the five GPUs NeuSight trained on),
        ``test_gpu`` (in ``dataset/test/device_configs/``), ``source_file``.
    """
    keys = [k for k in keys_under(f"{_NS}data/device_configs") if k.endswith(".json")]
    train = {k.rsplit("/", 1)[1] for k in keys_under(f"{_NS}data/dataset/train/device_configs")}
    test = {k.rsplit("/", 1)[1] for k in keys_under(f"{_NS}data/dataset/test/device_configs")}
    fields = {"Device", "Dev_Mem", "Mem_Bw", "Num_Sm", "Core_Per_SM", "Freq", "SingleFLOPs", "SingleFLOPsMM", "SingleFLOPsVEC", "L2Cache"}
    rows = []
    for k in keys:
        d = _read_json(k)
        unknown = sorted(set(d) - fields)
        if unknown or "Device" not in d:
            raise DataFormatError(f"{k}: unexpected device description fields {unknown or ['no Device']}; expected {sorted(fields)}.")
        fname = k.rsplit("/", 1)[1]
        num = lambda f: float(d[f]) if f in d else np.nan  # noqa: E731
        rows.append(dict(
            device=fname[: -len(".json")], source_name=d["Device"], vendor="AMD" if d["Device"].startswith("AMD") else "NVIDIA",
            memory_gb=num("Dev_Mem"), memory_bandwidth_gb_per_s=num("Mem_Bw"), n_sms=int(d["Num_Sm"]), cores_per_sm=int(d["Core_Per_SM"]),
            clock_mhz=num("Freq"), fp32_gflops=num("SingleFLOPs"), fp32_matrix_gflops=num("SingleFLOPsMM"),
            fp32_vector_gflops=num("SingleFLOPsVEC"), l2_cache_mb=num("L2Cache"), train_gpu=fname in train, test_gpu=fname in test,
            source_file=k,
        ))
    return pd.DataFrame(rows)


#: Hugging Face config fields → tidy column, per naming family (GPT-2 style, BERT/OPT style, T5/Switch style).
_CONFIG_FIELDS = {
    "n_layers": ("n_layer", "num_hidden_layers", "num_layers"),
    "hidden_size": ("n_embd", "hidden_size", "d_model"),
    "n_heads": ("n_head", "num_attention_heads", "num_heads"),
    "ffn_size": ("n_inner", "intermediate_size", "ffn_dim", "d_ff"),
    "max_positions": ("n_positions", "max_position_embeddings"),
    "vocab_size": ("vocab_size",),
    "n_experts": ("num_experts",),
}


def _config_keys() -> dict[str, str]:
    return {k.rsplit("/", 1)[1][: -len(".json")]: k for k in keys_under(f"{_NS}data/DLmodel_configs")}


def neusight_model_config(model: str) -> dict:
    """The raw Hugging Face config dict of one of NeuSight's models (``DLmodel_configs/<model>.json``).

    Build the model with ``transformers.AutoConfig.for_model(**cfg)`` (never downloads weights).

    Parameters
    ----------
    model : str
        ``"bert_large"``, ``"gpt2_large"``, ``"gpt3_xl"``, ``"gpt3_27"``, ``"opt_13"``, ``"switchxl4"`` … (the
        ``model`` of :func:`load_neusight_model_configs`).
    """
    keys = _config_keys()
    if model not in keys:
        raise _unknown("NeuSight model config", model, sorted(keys))
    d = _read_json(keys[model])
    if not isinstance(d, dict) or "model_type" not in d:
        raise DataFormatError(f"{keys[model]} is not a Hugging Face config: no 'model_type' field.")
    return d


def neusight_traced_config(model: str, mode: str) -> dict:
    """The config of the model NeuSight timed for a label of ``mode`` (``"train"`` / ``"inf"``).

    NeuSight's ``get_model`` (``neusight/Tracing/trace.py``) builds BERT with ``AutoModelForSequenceClassification``
    for inference (a two-label head on the pooled token, no vocabulary projection) and ``AutoModelForPreTraining`` for
    training, whatever ``architectures`` the upstream config (``bert_large.json``: ``BertLMHeadModel``) names; other
    models keep their config's causal-LM head. Every model is built with ``attn_implementation="eager"``, as
    ``get_model`` and ``scripts/asplos/collect_label_distributed.py`` build them (the softmax(QKᵀ)V path, not the
    fused kernel)."""
    if mode not in ("train", "inf"):
        raise ValueError(f"mode must be 'train' or 'inf'; got {mode!r}.")
    cfg = {**neusight_model_config(model), "attn_implementation": "eager"}
    if cfg.get("model_type") == "bert":
        return {**cfg, "architectures": ["BertForSequenceClassification" if mode == "inf" else "BertForPreTraining"]}
    return cfg


@cached_frame
def load_neusight_model_configs() -> pd.DataFrame:
    """NeuSight's Hugging Face model configs (``scripts/asplos/data/DLmodel_configs/*.json``): one row per model (12).

    Returns
    -------
    DataFrame
        ``model`` (file name without ``.json``), ``model_type``, ``architecture`` (first of ``architectures``),
        ``n_layers`` (Switch: encoder layers; ``num_decoder_layers`` is as many), ``hidden_size``, ``n_heads``,
        ``ffn_size`` (GPT-2 configs leave ``n_inner`` unset: 4 × ``hidden_size``, Hugging Face's default),
        ``max_positions`` (<NA> for Switch, relative positions), ``vocab_size``, ``n_experts`` (Switch; <NA>
        elsewhere), ``activation`` (``activation_function``/``hidden_act``/``dense_act_fn``), ``torch_dtype``
        (as written; NeuSight's ``from_config`` builds FP32 weights whatever it says), ``source_file``.

    Notes
    -----
    The configs are NeuSight's, verbatim: the GPT-3 models are GPT-2 configs at GPT-3 sizes (``gpt3_xl`` has
    hidden size 3072 and 24 heads, not the GPT-3 paper's 2048); ``opt.json`` is a one-layer OPT.
    """
    rows = []
    for name in sorted(_config_keys()):
        d = neusight_model_config(name)
        r = dict(model=name, model_type=d["model_type"], architecture=(d.get("architectures") or [None])[0])
        for col, fields in _CONFIG_FIELDS.items():
            r[col] = next((d[f] for f in fields if d.get(f) is not None), None)
        if r["ffn_size"] is None and d["model_type"] == "gpt2":
            r["ffn_size"] = 4 * r["hidden_size"]
        r["activation"] = next((d[f] for f in ("activation_function", "hidden_act", "dense_act_fn") if f in d), None)
        r["torch_dtype"] = d.get("torch_dtype")
        r["source_file"] = _config_keys()[name]
        rows.append(r)
    df = pd.DataFrame(rows)
    for c in _CONFIG_FIELDS:
        df[c] = pd.array([pd.NA if pd.isna(v) else int(v) for v in df[c]], dtype="Int64")
    for c in ("model_type", "architecture", "activation", "torch_dtype"):
        df[c] = df[c].astype("string")
    return df


#: Method prefixes of ``summary/summary.csv`` → tidy method names.
ERROR_METHODS = {"neusight": "neusight", "micro": "li_et_al", "roofline": "roofline", "habitat": "habitat"}
_OP_CLASSES = {"all": "", "BMM": "bmm", "Linear": "linear", "VEC": "vec", "VECsoftmax": "softmax", "VECln": "ln"}


@cached_frame
def load_neusight_errors() -> pd.DataFrame:
    """NeuSight's published predictions and errors per label run and method (``scripts/asplos/summary/summary.csv``).

    One row per label run × method (146 of the 149 label runs: the A100-40GB Switch-XL inference runs at sequence
    length 2048 and ``switch4`` on L4 have no summary row; ``neusight``, ``li_et_al`` — Li et al.'s per-operator regression,
    ``micro`` upstream —, ``roofline``, ``habitat``). The paper's Tables/Figures (``summary/nvidia_train.csv`` …)
    round these. The 4-GPU runs have NeuSight predictions only; methods without a prediction for a run are
    left out (no row), never zero.

    Returns
    -------
    DataFrame
        ``device``, ``model``, ``mode``, ``seq_len``, ``batch_size``, ``parallel`` (``none``/``dp4``/``tp4``/``pp4_1``),
        ``fused`` — the label key of :func:`load_neusight_labels` —, ``method``, ``measured_e2e_latency_ms``,
        ``measured_fw_latency_ms``, ``measured_bwall_latency_ms`` (the label as summarised upstream; forward and
        backward NaN for the 4-GPU runs, which upstream writes as 0),
        ``predicted_e2e_latency_ms``, ``predicted_fw_latency_ms``, ``predicted_bwall_latency_ms``, ``e2e_error_pct``
        (upstream ``<method>_all_e2e_err``: ``|predicted − measured| / measured × 100``), ``fw_error_pct``,
        ``bwall_error_pct``, ``e2e_error_<op class>_pct`` for ``bmm``, ``linear``, ``vec``, ``softmax``, ``ln``
        (error on that class of operators of the trace; NaN where upstream has none), ``ood`` (upstream ``OOD``
        flag), ``source_file``.
    """
    key = f"{_REPO}/summary/summary.csv"
    base = ["model_name", "seqlen", "batch", "device", "mode", "option", "OOD"]
    d = read_csv(key, required_columns=base + ["label_all_e2e_latency", "neusight_all_e2e_err"], keep_default_na=False,
                 na_values=[""], dtype={"option": "string"})
    option = d["option"].fillna("")
    frames = []
    for prefix, method in ERROR_METHODS.items():
        pred = f"{prefix}_all_e2e_latency"
        if pred not in d:
            raise DataFormatError(f"{key} lacks {pred!r}; expected predictions of {list(ERROR_METHODS)}.")
        f = pd.DataFrame({
            "device": d["device"].astype("string"), "model": d["model_name"].astype("string"), "mode": d["mode"].astype("string"),
            "seq_len": d["seqlen"].astype("int64"), "batch_size": d["batch"].astype("int64"),
            "parallel": option.where(~option.isin(["", "fusion"]), "none").astype("string"),
            "fused": option == "fusion", "method": method,
            "measured_e2e_latency_ms": d["label_all_e2e_latency"].astype(float),
            "measured_fw_latency_ms": d["label_all_fw_latency"].astype(float),
            "measured_bwall_latency_ms": d["label_all_bwall_latency"].astype(float),
            "predicted_e2e_latency_ms": d[pred].astype(float),
            "predicted_fw_latency_ms": d[f"{prefix}_all_fw_latency"].astype(float),
            "predicted_bwall_latency_ms": d[f"{prefix}_all_bwall_latency"].astype(float),
        })
        multi = ~f["parallel"].eq("none")  # the 4-GPU runs record only the end-to-end time (0 upstream for the others)
        for c in ("measured_fw_latency_ms", "measured_bwall_latency_ms", "predicted_fw_latency_ms", "predicted_bwall_latency_ms"):
            f.loc[multi, c] = np.nan
        for cls, col in _OP_CLASSES.items():
            for part in (("e2e", "fw", "bwall") if cls == "all" else ("e2e",)):
                src = f"{prefix}_{cls}_{part}_err"
                dst = f"{part}_error_pct" if cls == "all" else f"e2e_error_{col}_pct"
                f[dst] = d[src].astype(float) if src in d else np.nan
        f["ood"] = d["OOD"].astype(str).str.lower().map({"true": True, "false": False}).astype("boolean")
        f["source_file"] = key
        frames.append(f[f["predicted_e2e_latency_ms"].notna()])
    return pd.concat(frames, ignore_index=True)


DATASETS: tuple[DatasetSpec, ...] = (
    DatasetSpec("neusight_labels", load_neusight_labels,
                "NeuSight label run: measured end-to-end/forward/backward latency (ms) of a BERT/GPT/OPT/Switch step on one GPU (or 4)",
                ("NS:label/*/*.json",), "NeuSight ASPLOS'25 Figs. 7–9, Tables 7–8"),
    DatasetSpec("neusight_traces", load_neusight_traces, "torch.fx node of a NeuSight label run, with its measured forward/backward latency (ms)",
                ("NS:label/*/*.csv",), "NeuSight ASPLOS'25"),
    DatasetSpec("neusight_microbenchmarks", load_neusight_microbenchmarks,
                "one NeuSight operator microbenchmark (op, shape, GPU) with its latency (ms) and kernel launch geometry",
                ("NS:data/dataset/train/collect/*/p2.1.0/*.csv", "NS:data/dataset/test/*.csv"), "NeuSight ASPLOS'25"),
    DatasetSpec("neusight_devices", load_neusight_devices, "GPU description NeuSight predicts from (memory, bandwidth, SMs, clock, FP32 peak, L2)",
                ("NS:data/device_configs/*.json",), "NeuSight ASPLOS'25"),
    DatasetSpec("neusight_model_configs", load_neusight_model_configs, "Hugging Face config of a NeuSight model (layers, hidden size, heads, FFN, vocab)",
                ("NS:data/DLmodel_configs/*.json",), "NeuSight ASPLOS'25"),
    DatasetSpec("neusight_errors", load_neusight_errors,
                "a NeuSight label run × method (NeuSight, Li et al., roofline, Habitat): published prediction (ms) and error (%)",
                ("NS:summary/summary.csv",), "NeuSight ASPLOS'25 Figs. 7–9, Tables 7–8"),
)
