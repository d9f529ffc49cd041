"""NeuSight's published data (sitar-lab/NeuSight @ 6945927, MIT): registry, labels, traces, microbenchmarks, configs, errors."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from perfmodel import datasets
from perfmodel._errors import DataFormatError, DataIntegrityError, DataNotAvailableError, UnknownNameError
from perfmodel.datasets import _registry

NS = "sitar-lab/NeuSight/scripts/asplos"
COMMIT = "6945927d9afcca2b9daf021f8395e53edc5b4eef"
H100 = "NVIDIA_H100_80GB_HBM3"
LABEL_KEY = f"{NS}/label/{H100}/bert_large-train-512-2.json"


def test_every_neusight_file_is_registered_with_the_mirror_hash(mirror):
    sums = {}
    for line in (mirror / "SHA256SUMS").read_text().splitlines():
        sha, key = line.split(None, 1)
        if key.strip().startswith("sitar-lab/NeuSight/"):
            sums[key.strip()] = sha
    reg = datasets.registry()
    ns = reg[reg["repo"] == "sitar-lab/NeuSight"]
    assert len(sums) == 409
    assert dict(zip(ns["key"], ns["sha256"])) == sums
    assert set(ns["commit"]) == {COMMIT}
    assert set(ns["licence"]) == {"MIT"}
    assert ns["kind"].value_counts().to_dict() == {"csv": 218, "json": 188, "text": 3}
    sizes = {k: (mirror / k).stat().st_size for k in sums}
    assert dict(zip(ns["key"], ns["size_bytes"])) == sizes


def test_url_of_a_file_name_with_spaces_is_quoted():
    assert _registry.url_of("NS:data/dataset/train/collect/bmm/p2.1.0/Tesla P4.csv") == (
        f"https://raw.githubusercontent.com/sitar-lab/NeuSight/{COMMIT}/scripts/asplos/data/dataset/train/collect/bmm/p2.1.0/Tesla%20P4.csv"
    )
    # cake-lab URLs are unchanged
    assert _registry.url_of("CM:processed_data/checkpoint/ckpt.csv").endswith("/data/processed_data/checkpoint/ckpt.csv")


def test_short_key_of_neusight_resolves_under_scripts_asplos():
    assert _registry.entry(f"NS:label/{H100}/bert_large-train-512-2.json").key == LABEL_KEY


def test_labels_counts_per_device_and_mode():
    lab = datasets.load_neusight_labels()
    assert len(lab) == 149
    assert lab["mode"].value_counts().to_dict() == {"inf": 97, "train": 52}
    single = lab[(lab["mode"] == "train") & (lab["parallel"] == "none")]
    assert single.groupby("device").size().to_dict() == {
        "AMD_Instinct_MI100": 3, "AMD_Instinct_MI210": 6, "AMD_Instinct_MI250": 6, "NVIDIA_A100_80GB_PCIe": 10,
        H100: 10, "NVIDIA_L4": 3, "Tesla_V100-PCIE-32GB": 3,
    }
    assert lab["parallel"].value_counts().to_dict() == {"none": 138, "dp4": 3, "tp4": 4, "pp4_1": 4}
    assert int(lab["fused"].sum()) == 12
    assert set(lab.loc[lab["parallel"] != "none", "n_gpus"]) == {4}
    assert set(lab.loc[lab["parallel"] == "none", "n_gpus"]) == {1}


def test_known_label_values():
    lab = datasets.load_neusight_labels()
    r = lab[lab["source_file"] == LABEL_KEY].iloc[0]
    assert (r["device"], r["model"], r["mode"], r["seq_len"], r["batch_size"], r["num_layers"]) == (H100, "bert_large", "train", 512, 2, 24)
    assert r["e2e_latency_ms"] == 74.7511417388916
    assert r["fw_latency_ms"] == 29.458060836791994
    assert r["bwall_latency_ms"] == 45.29308090209961
    dp = lab[lab["source_file"] == f"{NS}/label/{H100}/gpt2_large-train-1024-16-dp4.json"].iloc[0]
    assert dp["e2e_latency_ms"] == 642.0809020996094
    assert np.isnan(dp["fw_latency_ms"]) and np.isnan(dp["bwall_latency_ms"])  # 0 upstream: not measured
    assert dp["num_layers"] is pd_na()


def pd_na():
    import pandas as pd

    return pd.NA


def test_every_label_maps_to_exactly_one_json(mirror):
    lab = datasets.load_neusight_labels()
    files = sorted(str(p.relative_to(mirror)) for p in (mirror / NS / "label").glob("*/*.json"))
    assert sorted(lab["source_file"]) == files
    key = ["device", "model", "mode", "seq_len", "batch_size", "parallel", "fused"]
    assert not lab.duplicated(key).any()
    for r in lab.sample(10, random_state=0).itertuples():
        assert json.loads((mirror / r.source_file).read_text())["e2e_latency"] == r.e2e_latency_ms


def test_labels_without_traces_are_the_documented_ones():
    lab = datasets.load_neusight_labels()
    plain = lab[(lab["parallel"] == "none") & ~lab["fused"]]
    missing = plain[~plain["has_trace"]]
    assert len(missing) == 12 and set(missing["model"]) == {"switchxl4"}
    assert int(lab["has_trace"].sum()) == 114


def test_known_trace_rows():
    tr = datasets.load_neusight_traces(device=H100, model="bert_large", mode="train")
    one = tr[tr["batch_size"] == 2]
    assert len(one) == 82
    emb = one[one["node"] == "bert_embeddings_word_embeddings"].iloc[0]
    assert (emb["opcode"], emb["module_type"], emb["input_shapes"], emb["output_shape"]) == (
        "call_module", "torch.nn.modules.sparse.Embedding", "[[2, 512]]", "(2, 512, 1024)")
    assert emb["fw_latency_ms"] == 0.018508800119161607
    assert emb["latency_ms"] == pytest.approx(emb["fw_latency_ms"] + emb["bw_latency_ms"] + emb["acc_latency_ms"], rel=1e-12)
    assert one["latency_ms"].sum() == pytest.approx(8.824300753278658, rel=1e-12)
    assert list(one["node_index"]) == list(range(82))


def test_all_traces_and_the_older_format_one():
    tr = datasets.load_neusight_traces()
    assert tr["source_file"].nunique() == 114
    s4 = datasets.load_neusight_traces(device="NVIDIA_L4", model="switch4")
    assert len(s4) == 3391
    assert s4["latency_ms"].sum() == pytest.approx(102.67264074552803, rel=1e-9)


def test_traces_absent_upstream_say_so():
    with pytest.raises(DataNotAvailableError, match=r"None of the 4 selected NeuSight runs .*switchxl4.* has a per-operator trace upstream.*"
                       r"twelve Switch-XL traces are absent"):
        datasets.load_neusight_traces(device=H100, model="switchxl4")


def test_traces_unknown_filter_lists_choices():
    with pytest.raises(UnknownNameError, match=r"Unknown NeuSight device 'H100'.* Expected one of: .*NVIDIA_H100_80GB_HBM3"):
        datasets.load_neusight_traces(device="H100")
    with pytest.raises(UnknownNameError, match=r"No NeuSight label run has device='Tesla_P4', model='bert_large', mode='train' together"):
        datasets.load_neusight_traces(device="Tesla_P4", model="bert_large", mode="train")


def test_known_microbenchmark_row_and_counts():
    m = datasets.load_neusight_microbenchmarks(op="bmm", device="Tesla P4", split="train")
    assert len(m) == 17779  # the rows of collect/bmm/p2.1.0/Tesla P4.csv
    r = m.iloc[0]
    assert (r["device"], r["source_name"], r["b"], r["m"], r["n"], r["k"]) == ("Tesla_P4", "Tesla P4", 13, 27, 15, 29)
    assert r["latency_ms"] == 0.03233066697915395
    assert r["kernel_name"] == "maxwell_sgemm_128x64_nn" and r["grid_z"] == 13
    assert m["h"].isna().all()
    conv = datasets.load_neusight_microbenchmarks(op="conv", device="Tesla_P4")
    c = conv.iloc[0]
    assert (c["b"], c["in_channels"], c["out_channels"], c["kernel_size"], c["input_size"], c["stride"], c["padding"]) == (38, 893, 326, 3, 5, 1, 1)
    assert c["latency_ms"] == 2.1176319122314453


def test_microbenchmark_splits():
    train = datasets.load_neusight_microbenchmarks(op="linear", split="train")
    assert sorted(train["device"].unique()) == ["NVIDIA_A100-PCIE-40GB", "Tesla_P100-PCIE-16GB", "Tesla_P4", "Tesla_T4", "Tesla_V100-PCIE-32GB"]
    test = datasets.load_neusight_microbenchmarks(split="test", device="NVIDIA H100 80GB HBM3")
    assert test.groupby("op").size().to_dict() == {"bmm": 2477, "linear": 1040}
    gelu = datasets.load_neusight_microbenchmarks(op="gelu", split="test")
    assert set(gelu["split"]) == {"test"} and len(gelu) == 368 and gelu["large"].notna().all()


def test_microbenchmark_bad_arguments():
    with pytest.raises(UnknownNameError, match=r"Unknown NeuSight microbenchmark op 'matmul'.* Expected one of: bmm, linear"):
        datasets.load_neusight_microbenchmarks(op="matmul")
    with pytest.raises(UnknownNameError, match=r"Unknown microbenchmark split 'val'. Expected one of: train, test"):
        datasets.load_neusight_microbenchmarks(split="val")
    with pytest.raises(UnknownNameError, match=r"Unknown NeuSight microbenchmark device 'Tesla K80'.* Expected one of: .*Tesla_P4"):
        datasets.load_neusight_microbenchmarks(device="Tesla K80")
    with pytest.raises(UnknownNameError, match=r"No NeuSight microbenchmark has op='gelu', device='NVIDIA_H100_80GB_HBM3'"):
        datasets.load_neusight_microbenchmarks(op="gelu", device=H100)


def test_devices():
    dev = datasets.load_neusight_devices().set_index("device")
    assert len(dev) == 13
    p4 = dev.loc["Tesla_P4"]
    assert (p4["memory_gb"], p4["memory_bandwidth_gb_per_s"], p4["n_sms"], p4["cores_per_sm"], p4["clock_mhz"], p4["fp32_gflops"], p4["l2_cache_mb"]) == (
        8.0, 192.0, 40, 64, 1113.0, 5699.0, 2.0)
    nv = dev[(dev["vendor"] == "NVIDIA") & (dev.index != "NVIDIA_H100_80GB_HBM3_TP")]
    # SingleFLOPs = 2 FLOPs x SMs x cores x clock: confirms the clock is in MHz
    ratio = nv["fp32_gflops"] / (2 * nv["n_sms"] * nv["cores_per_sm"] * nv["clock_mhz"] / 1000)
    np.testing.assert_allclose(ratio.drop("Tesla_P100-PCIE-16GB"), 1.0, rtol=2e-3)
    # the documented quirk: P100's SingleFLOPs (9519) is the PCIe card's boost 1329 MHz, its Freq (1380) the SXM2 card's
    assert ratio["Tesla_P100-PCIE-16GB"] == pytest.approx(9519 / 9891.84, rel=1e-9)
    assert sorted(dev.index[dev["train_gpu"]]) == ["NVIDIA_A100-PCIE-40GB", "Tesla_P100-PCIE-16GB", "Tesla_P4", "Tesla_T4", "Tesla_V100-PCIE-32GB"]
    assert dev.loc["AMD_Instinct_MI100", "fp32_matrix_gflops"] == 46100.0 and np.isnan(dev.loc["AMD_Instinct_MI100", "fp32_gflops"])


def test_model_configs_and_raw_config():
    cfg = datasets.load_neusight_model_configs().set_index("model")
    assert len(cfg) == 12
    g = cfg.loc["gpt2_large"]
    assert (g["n_layers"], g["hidden_size"], g["n_heads"], g["ffn_size"], g["vocab_size"], g["max_positions"]) == (36, 1280, 20, 5120, 50257, 1024)
    s = cfg.loc["switchxl4"]
    assert (s["n_layers"], s["hidden_size"], s["ffn_size"], s["n_experts"]) == (24, 1024, 16384, 4)
    assert cfg.loc["opt_13", "ffn_size"] == 8192 and cfg.loc["bert_large", "architecture"] == "BertLMHeadModel"
    raw = datasets.neusight_model_config("gpt2_large")
    assert raw["model_type"] == "gpt2" and raw["n_embd"] == 1280 and raw["architectures"] == ["GPT2LMHeadModel"]
    with pytest.raises(UnknownNameError, match=r"Unknown NeuSight model config 'gpt2-large'. Did you mean 'gpt2_large'"):
        datasets.neusight_model_config("gpt2-large")


def test_errors_tidy_and_consistent_with_labels():
    err = datasets.load_neusight_errors()
    assert err.groupby("method").size().to_dict() == {"habitat": 80, "li_et_al": 80, "neusight": 146, "roofline": 80}
    key = ["device", "model", "mode", "seq_len", "batch_size", "parallel", "fused"]
    assert not err.duplicated([*key, "method"]).any()
    lab = datasets.load_neusight_labels()
    m = err.merge(lab, on=key, how="left", validate="many_to_one")
    assert m["e2e_latency_ms"].notna().all()
    np.testing.assert_array_equal(m["measured_e2e_latency_ms"], m["e2e_latency_ms"])
    ok = m["e2e_error_pct"].notna()
    np.testing.assert_allclose(m.loc[ok, "e2e_error_pct"],
                               (m["predicted_e2e_latency_ms"] - m["measured_e2e_latency_ms"]).abs()[ok] / m.loc[ok, "measured_e2e_latency_ms"] * 100, rtol=1e-9)
    r = err[(err["device"] == H100) & (err["model"] == "bert_large") & (err["mode"] == "train") & (err["batch_size"] == 2)].set_index("method")
    # the paper's table (summary/nvidia_train.csv) rounds these: NeuSight 14.0, Li et al. 3.9, roofline 47.0, Habitat 5245.0
    assert [round(r.loc[k, "e2e_error_pct"], 1) for k in ("neusight", "li_et_al", "roofline", "habitat")] == [14.0, 3.9, 47.0, 5245.0]


def test_corrupted_neusight_file_fails_integrity(mirror, tmp_path, monkeypatch):
    """A temp mirror holding every label JSON, one of them edited."""
    for src in (mirror / NS / "label").glob("*/*.json"):
        out = tmp_path / src.relative_to(mirror)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, out)
    dst = tmp_path / LABEL_KEY
    dst.write_bytes(dst.read_bytes().replace(b"74.75", b"64.75"))
    monkeypatch.setenv("PERFMODEL_DATA", str(tmp_path))
    with pytest.raises(DataIntegrityError, match=r"bert_large-train-512-2.json failed its integrity check: .* the registry expects "
                       + _registry.entry(LABEL_KEY).sha256):
        datasets.load_neusight_labels()


def test_malformed_label_json_is_a_format_error(monkeypatch):
    monkeypatch.setattr("perfmodel.datasets.neusight.read_bytes", lambda key: b"{not json")
    with pytest.raises(DataFormatError, match=r"is not valid UTF-8 JSON .*expected a JSON object"):
        datasets.neusight_model_config("gpt2_large")


def test_listed_in_list_datasets():
    ds = datasets.list_datasets(with_shape=False).set_index("name")
    for name in ("neusight_labels", "neusight_traces", "neusight_microbenchmarks", "neusight_devices", "neusight_model_configs", "neusight_errors"):
        assert ds.loc[name, "kind"] == "upstream"
        assert ds.loc[name, "loader"] == f"load_{name}"
    assert len(datasets.load_dataset("neusight_devices")) == 13
