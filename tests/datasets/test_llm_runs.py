"""Vidur's operator and NCCL profiles and torchtitan's published runs (perfmodel.datasets.llm_runs)."""
from __future__ import annotations

import shutil

import pandas as pd
import pytest

from perfmodel import datasets
from perfmodel._errors import DataFormatError, DataIntegrityError, UnknownNameError
from perfmodel.datasets import _registry, llm_runs

VD = "microsoft/vidur/data/profiling"
TT = "pytorch/torchtitan"
H100_2024 = "benchmarks/llama3_h100_202412_torchtitan.md"


@pytest.fixture(scope="module")
def ops():
    return datasets.load_vidur_operators()


def test_vidur_operators_shape_columns_and_dtypes(ops):
    assert ops.shape == (200127, 20)
    assert list(ops.columns) == ["gpu", "gpu_in_catalog", "source_gpu", "model", "operator", "num_tokens", "tp", "n_head", "n_kv_head",
                                 "n_embd", "n_expanded_embd", "vocab_size", "use_gated_mlp", "time_ms_min", "time_ms_max", "time_ms_mean",
                                 "time_ms_median", "time_ms_std", "dtype", "source_file"]
    for c in ("num_tokens", "tp", "n_head", "n_kv_head", "n_embd", "n_expanded_embd", "vocab_size"):
        assert ops[c].dtype == "int64", c
    assert ops["use_gated_mlp"].dtype == bool and ops["gpu_in_catalog"].dtype == bool
    assert set(ops["gpu"]) == {"A100-PCIe-80GB", "H100", "A40"}
    assert set(ops.loc[~ops["gpu_in_catalog"], "gpu"]) == {"A40"}
    for g in ("A100-PCIe-80GB", "H100"):
        assert datasets.canonical_gpu(g) == g
    assert set(ops["operator"]) == set(llm_runs.VIDUR_OPERATORS)
    assert (ops["dtype"] == "float16").all() and ops["gpu"].notna().all()
    assert (ops["time_ms_min"] > 0).all() and (ops["time_ms_min"] <= ops["time_ms_median"]).all()
    assert (ops["time_ms_median"] <= ops["time_ms_max"]).all() and (ops["time_ms_std"] >= 0).all()
    assert ops.groupby("source_gpu", observed=True)["model"].nunique().to_dict() == {"a100": 8, "a40": 6, "h100": 6}
    # phi-2 runs attention and MLP in parallel on one norm: no post_attention_layernorm
    phi = ops[ops["model"] == "microsoft/phi-2"]
    assert "post_attention_layernorm" not in set(phi["operator"]) and not phi["use_gated_mlp"].any()


def test_vidur_operator_spot_values(ops):
    """First data row of a100/meta-llama/Llama-2-7b-hf/mlp.csv: attn_pre_proj min 1.711, mean 1.85735 ms at 4096 tokens, TP 1."""
    r = ops[(ops["source_gpu"] == "a100") & (ops["model"] == "meta-llama/Llama-2-7b-hf") & (ops["operator"] == "attn_pre_proj")
            & (ops["num_tokens"] == 4096) & (ops["tp"] == 1)]
    assert r["time_ms_min"].iloc[0] == 1.711 and r["time_ms_mean"].iloc[0] == pytest.approx(1.85735, rel=1e-12)
    assert r[["n_head", "n_kv_head", "n_embd", "n_expanded_embd", "vocab_size"]].iloc[0].tolist() == [32, 32, 4096, 11008, 32768]
    l3 = ops[(ops["model"] == "meta-llama/Meta-Llama-3-8B") & (ops["tp"] == 1)]
    assert l3[["n_kv_head", "vocab_size", "n_expanded_embd"]].iloc[0].tolist() == [8, 128256, 14336]


def test_vidur_operators_filter_and_unknown_gpu_folder():
    h = datasets.load_vidur_operators(gpu="h100")
    assert set(h["gpu"]) == {"H100"} and len(h) > 0
    with pytest.raises(UnknownNameError, match=r"Unknown Vidur GPU folder 'b200'\..* Expected one of: a100, a40, h100\."):
        datasets.load_vidur_operators(gpu="b200")


def test_vidur_gpu_folder_without_catalog_mapping_is_a_format_error(monkeypatch):
    monkeypatch.setattr(llm_runs, "VIDUR_GPUS", {"a100": "A100-PCIe-80GB", "h100": "H100"})
    with pytest.raises(DataFormatError, match=r"Vidur GPU folder 'a40' has no catalog mapping; expected one of \['a100', 'h100'\]"):
        llm_runs.load_vidur_operators.__wrapped__(gpu="a40")


def test_vidur_collectives_shape_units_and_values():
    c = datasets.load_vidur_collectives()
    assert c.shape == (26364, 15)
    assert c.groupby(["system", "collective"], observed=True).size().to_dict() == {
        ("a100_dgx", "all_reduce"): 6958, ("a100_dgx", "send_recv"): 1988, ("a100_pairwise_nvlink", "all_reduce"): 4496,
        ("a100_pairwise_nvlink", "send_recv"): 1988, ("a40_pairwise_nvlink", "send_recv"): 1988, ("h100_dgx", "all_reduce"): 2982,
        ("h100_dgx", "send_recv"): 1988, ("h100_pairwise_nvlink", "all_reduce"): 1988, ("h100_pairwise_nvlink", "send_recv"): 1988}
    for col in ("n_gpus", "devices_per_node", "max_devices_per_node", "size", "message_bytes"):
        assert c[col].dtype == "int64", col
    assert (c["message_bytes"] == c["size"]).all()  # upstream size is float16 elements * 2 = bytes (collectives_wrapper.py)
    assert c["gpu"].notna().all() and (c["n_gpus"] >= 2).all() and (c["time_ms_min"] > 0).all()
    assert dict(zip(c["system"].astype(str), c["gpu"].astype(str))) == {
        "a100_dgx": "A100-SXM4-80GB", "h100_dgx": "H100", "a100_pairwise_nvlink": "A100-PCIe-80GB", "h100_pairwise_nvlink": "H100-PCIe",
        "a40_pairwise_nvlink": "A40"}
    # first row of a100_dgx/all_reduce.csv: 2 workers, 1 per node, 2048 bytes (1024 float16 elements), mean 0.050333... ms
    r = c[(c["system"] == "a100_dgx") & (c["collective"] == "all_reduce")].iloc[0]
    assert (r["n_gpus"], r["devices_per_node"], r["size"], r["message_bytes"]) == (2, 1, 2048, 2048)
    assert r["time_ms_min"] == 0.031 and r["time_ms_mean"] == pytest.approx(0.050333333333333334, rel=1e-12)
    with pytest.raises(UnknownNameError, match=r"Unknown Vidur network system 'a100_nvlink'\..*Expected one of: a100_dgx"):
        datasets.load_vidur_collectives(system="a100_nvlink")


@pytest.fixture(scope="module")
def runs():
    return datasets.load_torchtitan_runs()


def test_torchtitan_runs_shape_and_dtypes(runs):
    assert runs.shape == (40, 25)
    assert runs.groupby("source_file").size().to_dict() == {
        H100_2024: 18, "benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md": 12,
        "benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md": 2, "docs/performance.md": 8}
    for c in ("n_gpus", "fsdp", "tp", "pp", "cp", "local_batch_size", "global_batch_size", "seq_len"):
        assert runs[c].dtype == "Int64", c
    for c in ("compile", "float8", "async_tp"):
        assert runs[c].dtype == "boolean", c
    for c in ("tokens_per_s_per_gpu", "memory_gib", "mfu_pct"):
        assert runs[c].dtype == float, c
    assert runs["gpu"].notna().all() and set(runs["gpu"]) == {"H100", "H200", "A100-SXM4-80GB"}
    assert (runs["tokens_per_s_per_gpu"] > 0).all() and (runs["n_gpus"] > 0).all() and (runs["local_batch_size"] > 0).all()
    assert (runs["memory_gib"].dropna() > 0).all() and runs["config_text"].notna().all()
    assert set(runs["activation_checkpointing"].dropna()) == {"none", "selective", "full"}
    # where every degree is known, they multiply to the GPU count
    known = runs.dropna(subset=["fsdp", "tp", "pp", "cp"])
    assert len(known) == 40 and (known["fsdp"] * known["tp"] * known["pp"] * known["cp"] == known["n_gpus"]).all()
    # a row whose configuration is partly unknown is kept and says why
    trainy = runs[runs["gpu"] == "H200"]
    assert trainy["activation_checkpointing"].isna().all() and trainy["note"].str.contains("activation checkpointing not stated").all()
    assert runs.loc[runs["gpu"] == "H100", "note"].str.contains("no H100 96GB HBM2e").all()


def test_the_grand_teton_h100_is_predicted_as_the_files_describe_it():
    from perfmodel.datasets import gpu_spec, load_torchtitan_runs
    from perfmodel.datasets.llm_runs import torchtitan_gpu_spec

    runs = load_torchtitan_runs()
    h100 = runs.loc[runs["gpu"] == "H100", "source_gpu"].unique()
    assert list(h100) == ["H100 96GB HBM2e 500W power limit"]
    s, sxm, nvl = torchtitan_gpu_spec(h100[0]), gpu_spec("H100"), gpu_spec("H100-NVL")
    # "96GB HBM2e with 2.4 TB/sec peak memory bandwidth", "the default 500W power limit"
    assert (s.memory_gib, s.memory_bandwidth_gb_per_s, s.tdp_w) == (96.0, 2400.0, 500.0)
    # "the actual peak TFLOPs number is between SXM and NVL": the middle of the two datasheets' rates
    for p in ("fp32", "tf32", "bf16", "fp16", "fp8"):
        assert s.peak_tflops(p) == (sxm.peak_tflops(p) + nvl.peak_tflops(p)) / 2
        assert nvl.peak_tflops(p) < s.peak_tflops(p) < sxm.peak_tflops(p)
    assert (s.sm_count, s.l2_mib, s.nvlink_gb_per_s, s.architecture) == (sxm.sm_count, sxm.l2_mib, sxm.nvlink_gb_per_s, sxm.architecture)
    # every other GPU is its catalog part
    for src, gid in runs.loc[runs["gpu"] != "H100", ["source_gpu", "gpu"]].drop_duplicates().itertuples(index=False):
        assert torchtitan_gpu_spec(src) == gpu_spec(gid)


def _one(runs, **kw):
    m = pd.Series(True, index=runs.index)
    for k, v in kw.items():
        m &= runs[k] == v
    out = runs[m.fillna(False)]
    assert len(out) == 1, (kw, len(out))
    return out.iloc[0]


def test_torchtitan_spot_values(runs):
    # llama3_h100_202412 Table 1: "| FSDP | 5,762 | 82.4 |"
    r = _one(runs, source_file=H100_2024, model="Llama 3.1 8B", n_gpus=8, compile=False)
    assert (r["tokens_per_s_per_gpu"], r["memory_gib"], r["fsdp"], r["local_batch_size"]) == (5762.0, 82.4, 8, 2)
    assert r["activation_checkpointing"] == "selective" and r["source_gpu"] == "H100 96GB HBM2e 500W power limit"
    # Table 6: "| FSDP 1, CP 8 | 262144 | 16 | 84.9 |"
    r = _one(runs, source_file=H100_2024, model="Llama 3.1 405B", cp=8)
    assert (r["seq_len"], r["tokens_per_s_per_gpu"], r["memory_gib"], r["tp"], r["pp"], r["pp_schedule"]) == (262144, 16.0, 84.9, 8, 8, "1F1B")
    # asyncTP: "| float8 tensorwise | 809.8 | 942.4 | 1.16 |" (Llama3 70b)
    r = _one(runs, model="Llama 3.1 70B", float8_recipe="tensorwise", async_tp=True)
    assert r["tokens_per_s_per_gpu"] == 942.4 and (r["fsdp"], r["tp"], r["local_batch_size"]) == (32, 8, 16)
    # trainy: "| 8 | 10753 | 46.97 |" (8 nodes x 8 H200)
    r = _one(runs, gpu="H200", n_gpus=64)
    assert (r["tokens_per_s_per_gpu"], r["memory_gib"], r["compile"], r["float8"]) == (10753.0, 46.97, True, True)
    # docs/performance.md: "| 70B | 1 | full | 331 | 51.7% |" (Llama 3, 64 A100)
    r = _one(runs, model="Llama 3 70B")
    assert (r["tokens_per_s_per_gpu"], r["mfu_pct"], r["seq_len"], r["global_batch_size"]) == (331.0, 51.7, 8192, 64)
    assert r["activation_checkpointing"] == "full" and pd.isna(r["compile"])
    r = _one(runs, model="Llama 2 13B", activation_checkpointing="selective", selective_ac="layer")
    assert (r["tokens_per_s_per_gpu"], r["mfu_pct"], r["seq_len"]) == (1914.0, 54.1, 4096)


def _temp_mirror(mirror, tmp_path, keys):
    for k in keys:
        out = tmp_path / k
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(mirror / k, out)


def test_corrupted_vidur_file_fails_integrity(mirror, tmp_path, monkeypatch):
    keys = [_registry.entry(k).key for k in _registry.keys_under("VD:profiling/network")]
    _temp_mirror(mirror, tmp_path, keys)
    bad = tmp_path / f"{VD}/network/h100_dgx/all_reduce.csv"
    bad.write_bytes(bad.read_bytes().replace(b"0.031", b"0.032", 1) + b"\n")
    monkeypatch.setenv("PERFMODEL_DATA", str(tmp_path))
    with pytest.raises(DataIntegrityError, match=r"h100_dgx/all_reduce.csv failed its integrity check: .* the registry expects "
                       + _registry.entry(f"{VD}/network/h100_dgx/all_reduce.csv").sha256):
        datasets.load_vidur_collectives()


def test_corrupted_torchtitan_file_fails_integrity(mirror, tmp_path, monkeypatch):
    keys = [_registry.entry(k).key for k in llm_runs.TORCHTITAN_FILES]
    _temp_mirror(mirror, tmp_path, keys)
    bad = tmp_path / TT / H100_2024
    bad.write_bytes(bad.read_bytes().replace(b"5,762", b"6,762"))
    monkeypatch.setenv("PERFMODEL_DATA", str(tmp_path))
    with pytest.raises(DataIntegrityError, match=r"llama3_h100_202412_torchtitan.md failed its integrity check"):
        datasets.load_torchtitan_runs()


def test_torchtitan_file_without_tables_is_a_format_error(monkeypatch):
    monkeypatch.setattr(llm_runs, "read_bytes", lambda key: b"# nothing here\n")
    with pytest.raises(DataFormatError, match=r"llama3_h100_202412_torchtitan.md: no run table found"):
        llm_runs.load_torchtitan_runs.__wrapped__()


def test_listed_in_list_datasets():
    ds = datasets.list_datasets(with_shape=False).set_index("name")
    for name in ("vidur_operators", "vidur_collectives", "torchtitan_runs"):
        assert ds.loc[name, "kind"] == "upstream" and ds.loc[name, "loader"] == f"load_{name}"
