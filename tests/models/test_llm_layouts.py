"""The layouts of today's LLM training (torchtitan's): context parallelism, FSDP with pipeline parallelism, the
interleaved 1F1B schedule, asynchronous tensor parallelism and per-layer selective checkpointing."""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

import perfmodel as pm
from perfmodel._errors import UnknownNameError
from perfmodel.models import ExtrapolationWarning
from perfmodel.step.step_time import OutOfMemoryWarning
from perfmodel.step.trace import checkpointed_layers, checkpointing_mode
from perfmodel.step.strategy import StrategyError, crosses_nodes, pipeline_virtual_stages
from perfmodel.step.trace import context_parallel_work, model_and_layout
from perfmodel.step.parallel import pipeline_time

LLAMA = dict(model_type="llama", vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False)


def _t(**kw):
    kw = {"input_shape": (64,), "batch_size": 4, "precision": "bf16", "optimizer": "adam-fused", **kw}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        warnings.simplefilter("ignore", OutOfMemoryWarning)
        return pm.predict_step_time(LLAMA, "H100", **kw).iloc[0]


def _mem(**kw):
    kw = {"input_shape": (64,), "batch_size": 4, "precision": "bf16", "optimizer": "adam", **kw}
    return pm.predict_memory(LLAMA, "H100", **kw).iloc[0]


# -- the interleaved 1F1B schedule ------------------------------------------------------------------------------------

def test_interleaved_pipeline_time_shrinks_the_bubble_v_fold():
    m, p, t = 8, 4, 1.0
    one, bubble1 = pipeline_time([t] * p, m)
    two, bubble2 = pipeline_time([t] * p, m, virtual_stages=2)
    assert one == pytest.approx((m + p - 1) * t) and bubble1 == pytest.approx((p - 1) * t)
    assert two == pytest.approx(m * t + (p - 1) * t / 2) and bubble2 == pytest.approx((p - 1) * t / 2)
    # sends: 2 x p2p on each of the v*p - 1 boundaries and once per further micro-batch
    sent, _ = pipeline_time([t] * p, m, p2p_s=0.01, virtual_stages=2)
    assert sent - two == pytest.approx(2 * 0.01 * ((2 * p - 1) + (m - 1)))
    with pytest.raises(ValueError, match=r"virtual_stages must be a positive int \(model chunks per pipeline rank\); got 0"):
        pipeline_time([t] * p, m, virtual_stages=0)


def test_pipeline_schedule_names():
    assert pipeline_virtual_stages("1F1B") == 1
    assert pipeline_virtual_stages("Interleaved1F1B") == pipeline_virtual_stages("interleaved-1f1b") == 2
    with pytest.raises(UnknownNameError, match=r"Unknown pipeline_schedule 'gpipe'\. Expected one of: 1f1b, interleaved-1f1b"):
        _t(n_gpus=2, strategy="pp", micro_batches=2, pipeline_schedule="gpipe")


def test_interleaved_schedule_is_faster_and_needs_layers():
    one = _t(n_gpus=2, strategy="pp", micro_batches=4)
    two = _t(n_gpus=2, strategy="pp", micro_batches=4, pipeline_schedule="interleaved-1f1b")
    assert two["pipeline_schedule"] == "interleaved-1f1b" and one["pipeline_schedule"] == "1f1b"
    assert two["bubble_s"] < one["bubble_s"] and two["step_time_s"] < one["step_time_s"]
    with pytest.raises(StrategyError, match=r"pipeline_schedule='interleaved-1f1b': 4 ranks x 2 model chunks need at least 8 "
                                            r"layers; .* has 4\. Use '1f1b', or fewer pipeline stages\."):
        _t(n_gpus=4, strategy="pp", micro_batches=4, pipeline_schedule="interleaved-1f1b")
    # too many chunks for the layers: the refusal names the chunks the layers fill and, where it works, Megatron's
    # split that counts the embedding and the loss as a layer each -- and that split is then accepted
    with pytest.raises(StrategyError, match=r"2 ranks x 3 model chunks need at least 6 layers; .* has 4\. Use "
                                            r"virtual_stages=2 .*, or pipeline_layers=\{'embedding': True, 'loss': True\} "
                                            r"\(.*6 slots over 6 chunks\), or fewer pipeline stages\."):
        _t(n_gpus=2, strategy="pp", micro_batches=4, pipeline_schedule="interleaved-1f1b", virtual_stages=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        said = pm.predict(pm.Workload(LLAMA, input_shape=(64,), batch_size=4, precision="bf16", optimizer="adam-fused"),
                          pm.Cluster("H100", n_gpus=2),
                          pm.Parallelism("pp", micro_batches=4, pipeline_schedule="interleaved-1f1b", virtual_stages=3,
                                         pipeline_layers={"embedding": True, "loss": True}))
    assert said.step_time_s > 0 and said.parallelism.virtual_stages == 3
    # the activations in flight grow by 1 + (p-1)/(p v)
    m1 = _mem(n_gpus=2, strategy="pp", micro_batches=4)
    m2 = _mem(n_gpus=2, strategy="pp", micro_batches=4, pipeline_schedule="interleaved-1f1b")
    assert m2["activations_bytes"] > m1["activations_bytes"]


# -- FSDP with a pipeline ---------------------------------------------------------------------------------------------

def test_fsdp_with_pipeline_gathers_once_and_keeps_the_stage_whole():
    plain = _t(n_gpus=4, strategy="dp2-pp2", micro_batches=2)
    f = _t(n_gpus=4, strategy="fsdp2-pp2", micro_batches=2)
    assert f["strategy"] == "fsdp2-pp2" and f["comm_total_s"] > 0 and f["step_time_s"] > 0
    # one all-gather and one reduce-scatter of the stage per step: in FP32 a ring all-reduce's bytes, as DDP's; in
    # BF16 the gather moves BF16 parameters and the reduce FP32 gradients (DDP all-reduces FP32 gradients): fewer bytes
    assert f["comm_total_s"] < plain["comm_total_s"]
    plain32 = _t(n_gpus=4, strategy="dp2-pp2", micro_batches=2, precision="fp32")
    f32 = _t(n_gpus=4, strategy="fsdp2-pp2", micro_batches=2, precision="fp32")
    assert f32["comm_total_s"] == pytest.approx(plain32["comm_total_s"], rel=1e-12)
    m = _mem(n_gpus=4, strategy="fsdp2-pp2", micro_batches=2)
    d = _mem(n_gpus=4, strategy="dp2-pp2", micro_batches=2)
    # the stage's parameters whole (no resharding between micro-batches) plus its shard; optimizer states sharded
    assert m["params_bytes"] == pytest.approx(1.5 * d["params_bytes"])
    assert m["optimizer_bytes"] == pytest.approx(d["optimizer_bytes"] / 2)
    # the gradients: the shard (BF16) plus the stage's unsharded gradients accumulated over the micro-batches in FSDP's
    # reduce dtype, FP32 (FSDP2 upcasts an accumulated unsharded gradient): twice DDP's BF16 gradients, plus the shard
    assert m["grads_bytes"] == pytest.approx(0.5 * d["grads_bytes"] + 2 * d["grads_bytes"])
    m32 = _mem(n_gpus=4, strategy="fsdp2-pp2", micro_batches=2, precision="fp32")
    d32 = _mem(n_gpus=4, strategy="dp2-pp2", micro_batches=2, precision="fp32")
    assert m32["grads_bytes"] == pytest.approx(1.5 * d32["grads_bytes"])  # FP32 already: nothing upcast


# -- context parallelism ----------------------------------------------------------------------------------------------

def test_context_parallel_rank_attends_to_the_whole_sequence():
    from perfmodel.step import trace as wl
    net, shape, dt, vocab, name, lay = model_and_layout(LLAMA, (64,), None)
    w = wl.step_work(net, (32,), dt, vocab, batch_size=1, prec="bf16", optimizer=None, inference=False)
    cp = context_parallel_work(w, 2, lay)
    attn = w["op"].str.contains("scaled_dot_product").to_numpy() & (w["op_class"] == "matmul").to_numpy()
    assert attn.any()
    assert np.allclose(cp.loc[attn, "flops"], 2 * w.loc[attn, "flops"])
    assert np.allclose(cp.loc[attn, "dim_n"], 2 * w.loc[attn, "dim_n"])
    share = 2 / (4 + 2)  # K and V heads over all the heads the kernel reads
    assert np.allclose(cp.loc[attn, "bytes"], w.loc[attn, "bytes"] * ((1 - share) + 2 * share))
    assert cp.loc[~attn].equals(w.loc[~attn])


def test_context_parallel_step_and_memory():
    # the same global batch: a cp rank holds half of each sequence, an fsdp rank half of the sequences
    fsdp = _t(n_gpus=2, strategy="fsdp", batch_size=2)
    cp = _t(n_gpus=2, strategy="fsdp1-cp2", batch_size=2)
    assert cp["strategy"] == "fsdp1-cp2" and cp["step_time_s"] > 0
    # the rank's tokens are as many; its attention covers half of the causal work of two whole sequences
    assert cp["flops"] == pytest.approx(fsdp["flops"], rel=0.05)
    m_cp = _mem(n_gpus=2, strategy="fsdp1-cp2", batch_size=2)
    m_fsdp = _mem(n_gpus=2, strategy="fsdp", batch_size=2)
    assert m_cp["params_bytes"] == pytest.approx(m_fsdp["params_bytes"])  # sharded over dp x cp = 2 ranks
    assert m_cp["activations_bytes"] == pytest.approx(m_fsdp["activations_bytes"], rel=0.05)
    with pytest.raises(StrategyError, match=r"context parallelism over 2 ranks cuts the sequence in 4 chunks .* seq_len = 62 "
                                            r"is not a multiple of 4"):
        _t(n_gpus=2, strategy="fsdp1-cp2", batch_size=1, input_shape=(62,))


def test_context_parallel_exchanges_repeated_kv_at_every_query_head():
    """A model that expands K and V to every query head before the kernel (torchtitan's Llama up to mid-2025) makes
    context parallelism exchange heads / kv_heads times the bytes; the default exchanges them grouped."""
    from perfmodel._run import keyword_run
    from perfmodel.step.parallel import rank_work

    w, _, par = keyword_run(LLAMA, "H100", input_shape=(64,), batch_size=2, precision="bf16", optimizer="adam",
                            n_gpus=2, strategy="fsdp1-cp2")
    grouped = rank_work(w, par, 2)
    repeated = rank_work(w, dataclasses.replace(par, context_parallel_kv="repeated"), 2)
    assert par.context_parallel_kv == "grouped"
    assert repeated.kv_bytes == pytest.approx(grouped.kv_bytes * LLAMA["num_attention_heads"] / LLAMA["num_key_value_heads"])
    run = pm.Workload(LLAMA, input_shape=(64,), batch_size=2, precision="bf16", optimizer="adam")
    on = pm.Cluster("H100", n_gpus=2)
    a = pm.predict(run, on, pm.Parallelism("fsdp1-cp2"))
    b = pm.predict(run, on, pm.Parallelism("fsdp1-cp2", context_parallel_kv="repeated"))
    assert b.comm_total_s["cp"] > a.comm_total_s["cp"] and "at every query head" in b.basis and "query head" not in a.basis
    with pytest.raises(ValueError, match=r"Parallelism: context_parallel_kv must be one of grouped, repeated .*got 'full'"):
        pm.Parallelism("fsdp1-cp2", context_parallel_kv="full")


def test_pytorch_ring_attention_runs_its_fp32_merges_beside_each_attention_kernel():
    """PyTorch's ring attention (torchtitan's context parallelism) keeps its running output and the K/V gradients in
    FP32 and merges each of the cp blocks with kernels of its own; Megatron's context parallelism (TE) is not it."""
    from perfmodel._run import keyword_run
    from perfmodel.step.parallel import rank_work
    from perfmodel.step.trace import RING_ATTENTION_OP, ring_attention_work

    cp, size = 4, 2
    counts = {}
    for stack in ("eager", "compile"):
        w, _, par = keyword_run(LLAMA, "H100", input_shape=(64,), batch_size=1, precision="bf16", optimizer="adam",
                                n_gpus=cp, strategy=f"fsdp1-cp{cp}", stack=stack)
        r = rank_work(w, par, cp)
        work = r.work.reset_index(drop=True)
        ring = (work["op"] == RING_ATTENTION_OP).to_numpy()
        # each ring kernel follows its attention kernel or another of its ring kernels, in the attention's module
        prev = np.flatnonzero(ring) - 1
        assert (ring[prev] | r.attn[prev]).all()
        assert (work.loc[ring, "module"].to_numpy() == work["module"].to_numpy()[prev]).all()
        per_layer = work[ring].groupby("phase").size() / LLAMA["num_hidden_layers"]
        counts[stack] = per_layer.to_dict()
        # the bytes: N the attention output's elements, M = N · kv_heads / heads (K and V at their own heads)
        att = work[r.attn & (work["phase"] == "forward").to_numpy()].iloc[0]
        n = float(att["dim_m"]) * float(att["dim_k"])
        m = n * LLAMA["num_key_value_heads"] / LLAMA["num_attention_heads"]
        fwd = work[ring & (work["phase"] == "forward").to_numpy()]["bytes"].sum() / LLAMA["num_hidden_layers"]
        merge = (8 + size) if stack == "compile" else (40 + size)
        ends = 0 if stack == "compile" else 2 * (4 + size) * n
        assert fwd == pytest.approx((cp - 1) * (4 * m * size + merge * n) + ends)
    assert counts["eager"] == {"forward": 2 * (cp - 1) + 1, "backward": (cp - 1) + cp + 2}
    assert counts["compile"] == {"forward": 2 * (cp - 1), "backward": (cp - 1) + cp + 1}
    # Megatron's context parallelism runs Transformer Engine's, not these kernels; one rank: nothing to merge
    w, _, par = keyword_run(LLAMA, "H100", input_shape=(64,), batch_size=1, precision="bf16", optimizer="adam",
                            n_gpus=cp, strategy=f"dp1-cp{cp}", framework="megatron")
    assert not (rank_work(w, par, cp).work["op"] == RING_ATTENTION_OP).any()
    work = r.work
    assert ring_attention_work(work, 1, 1.0, size, True) is work
    # the basis says so, for PyTorch's context parallelism only
    run = pm.Workload(LLAMA, input_shape=(64,), batch_size=2, precision="bf16", optimizer="adam")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = pm.predict(run, pm.Cluster("H100", n_gpus=2), pm.Parallelism("fsdp1-cp2"))
        theirs = pm.predict(run, pm.Cluster("H100", n_gpus=2), pm.Parallelism("dp1-cp2", framework="megatron"))
    assert "PyTorch's ring attention over the 2 context-parallel ranks" in ours.basis
    assert "ring attention" not in theirs.basis


def test_context_parallel_groups_and_links():
    assert crosses_nodes({"tp": 8, "cp": 2, "dp": 1}, 8) == {"tp": False, "cp": True, "dp": True, "pp": False, "ep": False}
    assert crosses_nodes({"tp": 1, "cp": 8, "dp": 1}, 8) == {"tp": False, "cp": False, "dp": False, "pp": False, "ep": False}
    # the ep group: consecutive ranks (each expert whole on its rank: the tensor-parallel ranks among them)
    assert not crosses_nodes({"tp": 2, "cp": 2, "dp": 4, "ep": 8}, 8)["ep"]
    assert crosses_nodes({"tp": 2, "cp": 2, "dp": 4, "ep": 16}, 8)["ep"]
    assert not crosses_nodes({"tp": 1, "cp": 2, "dp": 4, "ep": 8}, 8)["ep"]
    assert crosses_nodes({"tp": 1, "cp": 2, "dp": 8}, 8)["dp"]


def test_a_pipeline_that_spans_nodes_crosses_them_even_when_its_stages_share_a_node():
    """tp2 × pp8 on 8-GPU nodes: stages 0-3 on one node, 4-7 on the next; the hop from stage 3 to 4 leaves the node
    every micro-batch, and the pipeline runs at that hop's pace. Within one node (tp2 × pp4) nothing crosses."""
    assert crosses_nodes({"tp": 2, "pp": 8}, 8)["pp"]
    assert not crosses_nodes({"tp": 2, "pp": 4}, 8)["pp"]
    assert crosses_nodes({"tp": 8, "pp": 2}, 8)["pp"] and crosses_nodes({"tp": 4, "dp": 2, "pp": 2}, 8)["pp"]
    links = {"intra": "nvlink", "inter": "infiniband-ndr"}
    one_node = _t(n_gpus=8, strategy="tp2-pp4", batch_size=8, micro_batches=4, interconnect=links)
    two_nodes = _t(n_gpus=16, strategy="dp2-tp2-pp4", batch_size=8, micro_batches=4, interconnect=links)
    assert "pp: 2 x infiniband-ndr" in str(two_nodes["interconnect"]) and "infiniband" not in str(one_node["interconnect"])


# -- asynchronous tensor parallelism ----------------------------------------------------------------------------------

def test_async_tp_hides_the_collectives_under_the_matmuls():
    van = _t(n_gpus=4, strategy="fsdp2-tp2", batch_size=4, compile=True)
    asy = _t(n_gpus=4, strategy="fsdp2-tp2", batch_size=4, compile=True, async_tp=True)
    assert asy["async_tp"] and not van["async_tp"]
    assert asy["comm_s"] < van["comm_s"] and asy["step_time_s"] < van["step_time_s"]
    # the copies PyTorch's sequence-parallel collectives make of the whole tensor, which the fused all-gather-matmul
    # and matmul-reduce-scatter kernels do not need, outweigh the fused kernels' own shard copies and partial sums
    # (test_fsdp_copy_out counts both)
    assert asy["compute_s"] < van["compute_s"]
    with pytest.raises(StrategyError, match=r"async_tp=True overlaps the tensor-parallel collectives with the matmuls, but "
                                            r"strategy='fsdp' has no tensor parallelism"):
        _t(n_gpus=2, strategy="fsdp", batch_size=2, async_tp=True)
    with pytest.raises(StrategyError, match=r"strategy='one GPU' has no tensor parallelism"):
        _t(async_tp=True)
    with pytest.raises(TypeError, match=r"async_tp must be True .* or False; got 'yes'"):
        _t(n_gpus=4, strategy="fsdp2-tp2", async_tp="yes")


@pytest.mark.parametrize("stack", [None, "eager", "liger", "te"])
def test_pytorch_async_tp_needs_torch_compile(stack):
    """PyTorch's asynchronous TP is torch.compile's micro-pipeline pass: uncompiled, the collectives run in order, and
    torchtitan refuses the flag ('Async TP requires --training.compile'); so does every entry point here. Megatron's
    --tp-comm-overlap (Transformer Engine's userbuffers) needs no compiler."""
    kw = dict(n_gpus=4, strategy="fsdp2-tp2", batch_size=4, async_tp=True, **({"stack": stack} if stack else {}))
    said = stack or "eager"
    with pytest.raises(StrategyError, match=rf"async_tp=True with framework='pytorch' is torch.compile's micro-pipelined "
                                            rf"tensor parallelism.*the workload's kernels are '{said}'.*Pass "
                                            rf"Workload\(compile=True\) \(perfmodel predict --compile\), or "
                                            rf"async_tp=False, or framework='megatron'"):
        _t(**kw)
    with pytest.raises(StrategyError, match=r"Async TP requires --training.compile"):
        _mem(**kw)
    with pytest.raises(StrategyError, match=r"Async TP requires --training.compile"):
        pm.predict(pm.Workload(LLAMA, input_shape=(64,), batch_size=4, precision="bf16", **({"stack": stack} if stack else {})),
                   pm.Cluster("H100", n_gpus=4), pm.Parallelism("fsdp2-tp2", async_tp=True))
    assert _t(n_gpus=4, strategy="dp2-tp2", framework="megatron", batch_size=4, async_tp=True,
              **({"stack": stack} if stack in ("eager", "te") else {}))["async_tp"]


@pytest.mark.parametrize("layout", [dict(strategy="fsdp2-tp2"), dict(strategy="dp2-tp2", framework="megatron"),
                                    dict(strategy="tp2-pp2", micro_batches=2),
                                    dict(strategy="dp1-cp2-tp2-pp2", framework="megatron", micro_batches=2)],
                         ids=["fsdp-tp", "megatron-dp-tp", "tp-pp", "megatron-cp-tp-pp"])
def test_async_tp_moves_every_collective_and_slows_the_compute_under_the_hidden_part(layout):
    """Asynchronous TP hides collectives, it does not remove them: each execution path (FSDP, dp x tp, a pipeline)
    counts the tensor-parallel group's whole communication in its total, the same as vanilla TP's, exposes less of
    it, and the hidden part slows the compute beside it (OVERLAP_SLOWDOWN), as any hidden collective does. Vanilla
    TP under Megatron is its collectives in order (overlap_tp_backward=False)."""
    from perfmodel.step.collectives import OVERLAP_SLOWDOWN

    def run(a):
        # PyTorch's asynchronous TP is torch.compile's pass: its steps compiled, with and without it
        comp = {} if layout.get("framework") == "megatron" else {"compile": True}
        w = pm.Workload(LLAMA, input_shape=(64,), batch_size=4, precision="bf16", optimizer="adam-fused", **comp)
        in_order = {"overlap_tp_backward": False} if layout.get("framework") == "megatron" and not a else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExtrapolationWarning)
            warnings.simplefilter("ignore", OutOfMemoryWarning)
            return pm.predict(w, pm.Cluster("H100", n_gpus=8 if "cp2" in layout["strategy"] else 4),
                              pm.Parallelism(async_tp=a, **in_order, **layout))

    van, asy = run(False), run(True)
    if layout.get("framework") == "megatron":  # its userbuffers gather the inputs again in the backward pass
        assert asy.comm_total_s["tp"] > van.comm_total_s["tp"] > 0
    else:
        assert van.comm_total_s["tp"] > 0 and asy.comm_total_s["tp"] == pytest.approx(van.comm_total_s["tp"], rel=1e-12)
    assert van.comm_exposed_s["tp"] == pytest.approx(van.comm_total_s["tp"], rel=1e-12)
    assert asy.comm_exposed_s["tp"] < van.comm_exposed_s["tp"]
    hidden = lambda p: p.breakdown["comm_total"] - p.breakdown["comm_exposed"]  # noqa: E731
    assert hidden(asy) > hidden(van)
    assert asy.breakdown["overlap_slowdown"] == pytest.approx(
        OVERLAP_SLOWDOWN * min(hidden(asy), asy.breakdown["compute"]), rel=1e-9)
    if "cp2" in layout["strategy"]:  # context parallelism's K/V exchange under the attention chunks: hidden too
        assert asy.comm_total_s["cp"] > asy.comm_exposed_s["cp"]


def test_fused_collective_hides_under_all_but_one_chunk_of_its_matmul():
    from perfmodel.step.parallel import _fused_exposed

    assert _fused_exposed(8.0, 8, 1.0) == pytest.approx(8.0 - 7 / 8)  # a small matmul hides little
    assert _fused_exposed(8.0, 8, 100.0) == pytest.approx(1.0)  # a large one all but one chunk's transfer
    assert _fused_exposed(8.0, 1, 100.0) == 8.0


def _roles(framework="pytorch", cfg=LLAMA, strategy="fsdp2-tp2"):
    from perfmodel._run import keyword_run
    from perfmodel.step.parallel import TP_COLUMN, TP_ROW, rank_work

    kw = dict(framework="megatron", strategy="dp2-tp2") if framework == "megatron" else dict(strategy=strategy, compile=True)
    w, _, par = keyword_run(cfg, "H100", input_shape=(64,), batch_size=4, precision="bf16", optimizer="adam",
                            n_gpus=4, async_tp=True, **kw)
    r = rank_work(w, par, 4)
    mods = r.work["module"].astype(str).to_numpy()
    col = {m.rsplit(".", 1)[-1] for m in mods[r.tp_role == TP_COLUMN]}
    row = {m.rsplit(".", 1)[-1] for m in mods[r.tp_role == TP_ROW]}
    return r, col, row


def test_async_tp_pairs_each_collective_with_the_matmul_it_is_fused_with():
    """PyTorch's micro-pipeline pass: the all-gather before Q, K, V and the reduce-scatter after the output
    projection; the backward reduce-scatter of a gradient summed from several projections stays whole."""
    from perfmodel.step.collectives import allgather_time, reduce_scatter_time
    from perfmodel.step.kernels import kernel_seconds, gpu_specs
    from perfmodel.step.parallel import _async_tp_layer, resolve_links

    r, col, row = _roles()
    assert col == {"q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"} and row == {"o_proj", "down_proj"}
    assert set(r.tp_block[r.tp_role > 0]) == {"self_attn", "mlp"}
    spec = gpu_specs(["H100"], "bf16")[0]
    t = kernel_seconds(r.work, spec, "bf16")
    lk = resolve_links(None, spec, degrees={"tp": 2, "dp": 2}, gpus_per_node=8)
    ag, rs = allgather_time(r.act_bytes, 2, lk["tp"]), reduce_scatter_time(r.act_bytes, 2, lk["tp"])
    f, b, regather = _async_tp_layer(r, t, ag, rs)
    # no more than vanilla TP's two all-gathers and two reduce-scatters; the backward at least both unfused
    # reduce-scatters (attention's Q, K, V and the MLP's gate and up each sum their input gradients)
    assert 0 < f <= 2 * (ag + rs) and 2 * rs <= b <= 2 * (ag + rs) and regather == 0
    # Megatron's userbuffers: the column-parallel input gradient reduce-scattered under its weight-gradient GEMM and
    # the input gathered again under its input-gradient GEMM, each exposed where it outlasts that GEMM
    rm, _, _ = _roles("megatron")
    tm = kernel_seconds(rm.work, spec, "bf16")
    fm, bm, rgm = _async_tp_layer(rm, tm, ag, rs)
    assert bm < b and rgm == pytest.approx(2 * ag)
    from perfmodel.step.parallel import TP_COLUMN, TP_ROW, _fused_exposed

    fwd = rm.phase == "forward"
    expect = 0.0
    for blk in ("self_attn", "mlp"):
        col_s = float(tm[fwd & (rm.tp_role == TP_COLUMN) & (rm.tp_block == blk)].sum()) / rm.lay.n_layers
        row_s = float(tm[fwd & (rm.tp_role == TP_ROW) & (rm.tp_block == blk)].sum()) / rm.lay.n_layers
        expect += _fused_exposed(ag, 2, row_s) + max(ag - col_s, 0.0) + max(rs - col_s, 0.0)
    assert bm == pytest.approx(min(expect, 2 * (ag + rs) + rgm))


def test_async_tp_roles_of_gpt2_fused_qkv():
    """GPT-2's c_attn is one GEMM: its backward reduce-scatter is fused like the forward's."""
    gpt2 = dict(model_type="gpt2", vocab_size=512, n_embd=64, n_layer=2, n_head=4, n_positions=128)
    r, col, row = _roles(cfg=gpt2)
    assert col == {"c_attn", "c_fc"} and row == {"c_proj"}

# -- per-layer selective checkpointing --------------------------------------------------------------------------------

def test_per_layer_checkpointing_modes():
    assert checkpointing_mode("layer") == "layer:2" == checkpointing_mode("selective-layer")
    assert checkpointing_mode("layer:3") == "layer:3" and checkpointing_mode("layer:1") == "full"
    assert checkpointed_layers("layer:2", 4).tolist() == [False, True, False, True]
    assert checkpointed_layers("full", 2).tolist() == [True, True]


def test_per_layer_checkpointing_sits_between_none_and_full():
    none, half, full = _t(), _t(activation_checkpointing="layer"), _t(activation_checkpointing="full")
    assert none["step_time_s"] < half["step_time_s"] < full["step_time_s"]
    every = _t(activation_checkpointing="layer:1")
    assert every["step_time_s"] == full["step_time_s"]
    m0, m2, mf = (_mem(activation_checkpointing=a)["activations_bytes"] for a in (False, "layer", True))
    assert mf < m2 < m0


# -- FSDP's FP8 all-gather ------------------------------------------------------------------------------------------

def _rank(strategy, n_gpus, *, precision="fp8", stack="compile", **kw):
    from perfmodel.step.parallel import rank_work
    from perfmodel.step.prediction import resolve_run

    w, c, p = resolve_run(pm.Workload(LLAMA, input_shape=(64,), batch_size=8, precision=precision, optimizer="adam-fused",
                                      stack=stack), pm.Cluster("H100", n_gpus=n_gpus), pm.Parallelism(strategy, **kw))
    return rank_work(w, p, c.n_gpus)


def test_fsdp_gathers_the_fp8_linears_weights_in_fp8_under_compile():
    """torchao's Float8 under torch.compile casts a linear's weight on its FSDP shard and all-gathers it in FP8
    (torchtitan's enable_fsdp_float8_all_gather; what the compiled FP8 cast kernels already assume): the gathered bytes
    count those weights at one byte and every other parameter (embeddings, norms, the output projection) at two."""
    h, f, kv, L = LLAMA["hidden_size"], LLAMA["intermediate_size"], LLAMA["hidden_size"] // 2, LLAMA["num_hidden_layers"]
    linears = L * (h * h + 2 * h * kv + h * h + 3 * h * f)  # q, k, v, o and gate, up, down of each layer
    r = _rank("fsdp", 8)
    assert r.fp8_gathered == linears and r.rank_params == r.lay.params
    assert r.gathered_bytes(r.rank_params, r.fp8_gathered) == linears + 2 * (r.lay.params - linears)
    # tensor parallelism splits them; a pipeline counts each stage's own
    r_tp = _rank("fsdp4-tp2", 8)
    assert r_tp.fp8_gathered == pytest.approx(linears / 2)
    r_pp = _rank("fsdp2-pp2", 4, micro_batches=2)
    assert r_pp.stage_fp8_gathered.tolist() == [linears / 2, linears / 2]
    # gathered in BF16: eager FP8 (the weights cast per GEMM after the gather), BF16, Transformer Engine, no FSDP
    assert _rank("fsdp", 8, stack="eager").fp8_gathered == 0
    assert _rank("fsdp", 8, precision="bf16").fp8_gathered == 0
    assert _rank("fsdp", 8, stack="te").fp8_gathered == 0
    assert _rank("dp", 8).fp8_gathered == 0


def test_the_fp8_all_gather_moves_fewer_bytes_and_basis_says_so():
    comp = _t(n_gpus=8, strategy="fsdp", batch_size=8, precision="fp8", stack="compile", interconnect="nvlink")
    assert "all-gathered in FP8 as torchtitan's enable_fsdp_float8_all_gather" in comp["basis"]
    eager = _t(n_gpus=8, strategy="fsdp", batch_size=8, precision="fp8", interconnect="nvlink")
    assert "all-gathered in FP8" not in eager["basis"]
    bf16 = _t(n_gpus=8, strategy="fsdp", batch_size=8, precision="bf16", stack="compile", interconnect="nvlink")
    assert comp["comm_total_s"] < bf16["comm_total_s"]  # the same reduce-scatter, a smaller gather


# -- Megatron's --fp8-param-gather: an option of the Parallelism alone -------------------------------------------------

def _pred(strategy, n_gpus, **par):
    w = pm.Workload(LLAMA, input_shape=(64,), batch_size=8, precision=par.pop("precision", "fp8"), optimizer="adam-fused",
                    stack=par.pop("stack", "te"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.predict(w, pm.Cluster("H100", n_gpus=n_gpus), pm.Parallelism(strategy, **par))


def _fp8_linears() -> int:
    h, f, kv, L = LLAMA["hidden_size"], LLAMA["intermediate_size"], LLAMA["hidden_size"] // 2, LLAMA["num_hidden_layers"]
    return L * (h * h + 2 * h * kv + h * h + 3 * h * f)


def test_megatron_fp8_param_gather_gathers_and_stores_the_fp8_linears_weights_in_fp8():
    """Megatron-Core's --fp8-param-gather (with its distributed optimizer, under Transformer Engine's FP8): the
    distributed optimizer all-gathers the FP8 linears' weights at one byte, and the model keeps them in FP8 — one byte
    per weight less than BF16 on each rank (all of them are split by tensor parallelism), and one quantized copy fewer
    in TE's weight cache (the FP8 weight is its row-wise copy): two bytes per weight in all."""
    off = _pred("dp2-tp2", 4, framework="megatron")
    on = _pred("dp2-tp2", 4, framework="megatron", fp8_param_gather=True)
    assert on.comm_total_s["dp"] < off.comm_total_s["dp"]
    assert on.comm_total_s["tp"] == off.comm_total_s["tp"]
    assert "as Megatron's --fp8-param-gather does" in on.basis and "--fp8-param-gather" not in off.basis
    assert off.memory["params_bytes"] - on.memory["params_bytes"] == pytest.approx(2 * _fp8_linears() / 2)
    assert on.memory["grads_bytes"] == off.memory["grads_bytes"]  # FP32 main gradients either way
    # a pipeline: each stage's own FP8 linears
    pp_off = _pred("dp2-pp2", 4, framework="megatron", micro_batches=2)
    pp_on = _pred("dp2-pp2", 4, framework="megatron", micro_batches=2, fp8_param_gather=True)
    assert pp_off.memory["params_bytes"] - pp_on.memory["params_bytes"] == pytest.approx(2 * _fp8_linears() / 2)
    assert pp_on.comm_total_s["dp"] < pp_off.comm_total_s["dp"]


def test_fp8_param_gather_defaults_to_the_frameworks_and_is_refused_where_nothing_gathers_in_fp8():
    # PyTorch's default: FSDP's FP8 all-gather under torch.compile (torchtitan); False turns it off, True turns it on
    # in eager mode too
    comp = _pred("fsdp", 8, stack="compile")
    assert comp.to_frame()["basis"].iloc[0] == comp.basis and "enable_fsdp_float8_all_gather" in comp.basis
    assert "enable_fsdp_float8_all_gather" not in _pred("fsdp", 8, stack="compile", fp8_param_gather=False).basis
    assert "enable_fsdp_float8_all_gather" in _pred("fsdp", 8, stack="eager", fp8_param_gather=True).basis
    assert "--fp8-param-gather" not in _pred("dp2-tp2", 4, framework="megatron").basis  # Megatron's default: off
    with pytest.raises(ValueError, match="precision='fp8'"):
        _pred("dp2-tp2", 4, framework="megatron", fp8_param_gather=True, precision="bf16")
    with pytest.raises(StrategyError, match="needs the distributed optimizer"):
        _pred("dp2-tp2", 4, framework="megatron", distributed_optimizer=False, fp8_param_gather=True)
    with pytest.raises(StrategyError, match="no fsdp factor"):
        _pred("dp4", 4, fp8_param_gather=True)
    with pytest.raises(TypeError, match="fp8_param_gather must be True, False or None"):
        pm.Parallelism("fsdp", fp8_param_gather="yes")


def test_fsdp_memory_counts_the_fp8_gathered_layer_at_one_byte():
    """Under FSDP's FP8 all-gather the two gathered layers' FP8 linears' weights take one byte each (the shards stay
    in BF16)."""
    comp = _pred("fsdp", 8, stack="compile")
    bf16_gather = _pred("fsdp", 8, stack="compile", fp8_param_gather=False)
    h, L = LLAMA["hidden_size"], LLAMA["num_hidden_layers"]
    linears = _fp8_linears() / L  # one layer's FP8 linears
    layer16 = 2 * (linears + 2 * h)  # its bytes in BF16 (two RMSNorm weights besides)
    layer8 = linears + 2 * 2 * h  # its FP8 linears at one byte
    head = 2 * (LLAMA["vocab_size"] * h + h)  # the output projection and final norm, BF16
    # two layers gathered, or at the backward's start the head and one layer, whichever is more
    assert bf16_gather.memory["params_bytes"] - comp.memory["params_bytes"] == pytest.approx(
        max(2 * layer16, layer16 + head) - max(2 * layer8, layer8 + head))
    assert comp.memory["grads_bytes"] == bf16_gather.memory["grads_bytes"]


def test_predict_memory_counts_the_fp8_gather_as_predict_does():
    """The keyword face of the memory gives, for an FSDP step in FP8 under torch.compile (the FP8 all-gather on by
    default), the bytes pm.predict gives."""
    face = pm.predict_memory(LLAMA, "H100", input_shape=(64,), batch_size=8, precision="fp8", optimizer="adam-fused",
                             n_gpus=8, strategy="fsdp", compile=True).iloc[0]
    assert face["params_bytes"] == _pred("fsdp", 8, stack="compile").memory["params_bytes"]
    assert face["params_bytes"] < pm.predict_memory(LLAMA, "H100", input_shape=(64,), batch_size=8, precision="bf16",
                                                    optimizer="adam-fused", n_gpus=8, strategy="fsdp",
                                                    compile=True).iloc[0]["params_bytes"]


def test_tensorwise_float8_tp_gathers_in_fp8():
    """torchao's Float8ColwiseParallel / PrepareFloat8ModuleInput cast before the all-gather and Float8RowwiseParallel
    casts the output gradient before the backward one: torchtitan's tensorwise Float8 under TP gathers one byte per
    element and reduce-scatters two; the rowwise recipe (regular TP) gathers in BF16. Transformer Engine's linears
    under Megatron's sequence parallelism gather what they quantize, at the recipe's bytes with its scales; without
    sequence parallelism Megatron all-reduces the activations in BF16."""
    from perfmodel._run import keyword_run
    from perfmodel.step.parallel import rank_work

    def comm(precision, recipe=None, framework="pytorch", **megatron):
        kw = (dict(framework="megatron", strategy="dp2-tp2", **megatron) if framework == "megatron"
              else dict(strategy="fsdp2-tp2"))
        w, _, par = keyword_run(LLAMA, "H100", input_shape=(64,), batch_size=4, precision=precision, optimizer="adam",
                                n_gpus=4, compile=framework == "pytorch", **kw)
        if recipe:
            import dataclasses
            w = dataclasses.replace(w, fp8_recipe=recipe)
        return rank_work(w, par, 4).tp_gather_bytes, w, par

    assert comm("fp8")[0] == 1.0 and comm("fp8", "rowwise")[0] == 0.0 and comm("bf16")[0] == 0.0
    assert comm("fp8", framework="megatron")[0] == 1.0  # TE's delayed scaling, its default
    assert comm("fp8", "current", framework="megatron")[0] == 1.0
    assert comm("fp8", "mxfp8", framework="megatron")[0] == pytest.approx(1 + 1 / 32)  # an E8M0 scale per 32
    assert comm("fp8", "nvfp4", framework="megatron")[0] == pytest.approx(0.5 + 1 / 16)  # E2M1, an E4M3 scale per 16
    assert comm("fp8", framework="megatron", sequence_parallel=False)[0] == 0.0
    assert comm("bf16", framework="megatron")[0] == 0.0
    links = {"intra": "nvlink", "inter": "infiniband-ndr"}
    # the layers' all-gathers move half the bytes (the embedding's and the head's all-reduces stay in BF16)
    from perfmodel.step.collectives import allgather_time, reduce_scatter_time
    from perfmodel.step.kernels import gpu_specs, kernel_seconds
    from perfmodel.step.parallel import _layer_comm, resolve_links

    _, w, par = comm("fp8")
    r = rank_work(w, par, 4)
    spec = gpu_specs(["H100"], "fp8")[0]
    lk = resolve_links(links, spec, degrees={"tp": 2, "dp": 2}, gpus_per_node=8)
    c = _layer_comm(r, kernel_seconds(r.work, spec, "fp8"), lk)
    assert c.tp_layer == pytest.approx(allgather_time(r.act_bytes / 2, 2, lk["tp"]) + reduce_scatter_time(r.act_bytes, 2, lk["tp"]))
    assert c.tp_lf == c.tp_layer and c.tp_per > c.tp_layer
    bf = pm.predict(pm.Workload(LLAMA, input_shape=(64,), batch_size=4, precision="bf16", optimizer="adam", compile=True),
                    pm.Cluster("H100", n_gpus=4, interconnect=links), pm.Parallelism("fsdp2-tp2"))
    f8 = pm.predict(pm.Workload(LLAMA, input_shape=(64,), batch_size=4, precision="fp8", optimizer="adam", compile=True),
                    pm.Cluster("H100", n_gpus=4, interconnect=links), pm.Parallelism("fsdp2-tp2"))
    assert f8.comm_total_s["tp"] < bf.comm_total_s["tp"]


def test_pytorch_loss_parallel_holds_three_fp32_tensors_of_the_log_softmax_size_in_its_backward():
    """torch's loss_parallel (torchtitan's default with TP) computes the vocabulary-sharded NLL and log-softmax backward
    in one function holding the zeroed gradient, exp of the saved output and their sum at once; an eager loss without
    TP holds two (the gradient in, the gradient out); Megatron's is not modelled this way."""
    from perfmodel.step.memory import _memory_rank

    def head(tp, framework="pytorch"):
        deg = dict(name=f"fsdp2-tp{tp}" if tp > 1 else "fsdp", n=2 * tp, tp=tp, pp=1, mb=2, cp=1, dp=2, fsdp=True,
                   framework=framework)
        r = _memory_rank(LLAMA, deg, prec="bf16", ac=None, activation_checkpointing=False, input_shape=(64,),
                         input_dtype=None)
        logsoftmax = float(r.out_b[r.layer >= r.lay.n_layers].max())
        assert logsoftmax == pytest.approx(2 * 64 * LLAMA["vocab_size"] * 4 / tp)  # the FP32 log-softmax, vocab-split
        return r.head_grad / logsoftmax

    # besides the FP32 tensors, the BF16 logits' block the caching allocator keeps idle (half the FP32 size)
    assert head(1) == 2 + 0.5 and head(2) == 3 + 0.5 and head(2, "megatron") == 2 + 0.5
    deg = dict(name="tp2", n=2, tp=2, pp=1, mb=2, cp=1, dp=1, fsdp=False)  # Megatron-style TP: not loss_parallel
    r = _memory_rank(LLAMA, deg, prec="bf16", ac=None, activation_checkpointing=False, input_shape=(64,), input_dtype=None)
    assert r.head_grad == (2 + 0.5) * float(r.out_b[r.layer >= r.lay.n_layers].max())


def test_an_eager_half_precision_loss_keeps_its_half_precision_logits_block_reserved_at_the_backward_start():
    """Under BF16 the eager loss upcasts the logits to FP32: the BF16 logits' block, freed after the forward, cannot
    serve the FP32 gradients the backward allocates, so the reserved peak holds it beside them; in FP32 there is no
    upcast (and no such block), and a model whose head saves no FP32 tensor gets none."""
    import pandas as pd

    from perfmodel.step.memory import _memory_rank, _upcast_logits_block

    deg = dict(name="fsdp", n=2, tp=1, pp=1, mb=2, cp=1, dp=2, fsdp=True)
    for prec, share in (("bf16", 0.5), ("fp32", 0.0)):
        r = _memory_rank(LLAMA, deg, prec=prec, ac=None, activation_checkpointing=False, input_shape=(64,),
                         input_dtype=None)
        head = r.layer >= r.lay.n_layers
        logits_fp32 = 2 * 64 * LLAMA["vocab_size"] * 4
        assert float(r.out_b[head].max()) == pytest.approx(logits_fp32)
        assert r.head_grad == pytest.approx((2 + share) * logits_fp32)
    saved = pd.DataFrame({"module": ["lm_head"], "bytes": [2.0 * 6], "shape": ["2x3"]})  # a BF16 tensor: no upcast
    assert _upcast_logits_block(saved, np.array([12.0]), np.array([True]), 2) == 0.0
