"""Strategy explorer: the dominance check on hand cases (ties included), combinations skipped with the strategy's
reason, time / memory / cost columns against the functions they come from, the Pareto set, the plot's artists, and
every error message."""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest

import perfmodel as pm
from perfmodel.datasets import UnknownNameError, gpu_spec
from perfmodel.models import ExtrapolationWarning
from perfmodel.planning import explore_strategies, pareto_mask, plot_strategies
from perfmodel.planning.strategies import SKIPPED_COLUMNS, STRATEGY_COLUMNS

TINY_GPT2 = dict(model_type="gpt2", n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=128, bos_token_id=0,
                 eos_token_id=0)
SHAPE = (32,)


def _explore(*args, **kwargs):
    kwargs.setdefault("input_shape", SHAPE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        return explore_strategies(TINY_GPT2, *args, **kwargs)


@pytest.fixture(scope="module")
def two_gpus() -> pd.DataFrame:
    return _explore("A100", 2, batch_size=4, usd_per_gpu_h=3.6)


# -- dominance ----------------------------------------------------------------------------------------------------------

def test_pareto_mask_on_hand_cases():
    # (time, memory): b is faster and smaller than c; a and b trade off; d equals b in time and is larger
    v = [[1.0, 5.0],   # a: fastest
         [2.0, 3.0],   # b
         [3.0, 4.0],   # c: dominated by b
         [2.0, 3.5],   # d: dominated by b (equal time, more memory)
         [4.0, 1.0]]   # e: smallest
    assert pareto_mask(v).tolist() == [True, True, False, False, True]
    # ties: equal rows never dominate each other, both kept; a row dominated by one of them still goes
    assert pareto_mask([[1, 2], [1, 2], [1, 3]]).tolist() == [True, True, False]
    # three objectives: a row worse in two but better in cost stays
    assert pareto_mask([[1, 1, 5], [2, 2, 1], [2, 2, 5]]).tolist() == [True, True, False]
    # a NaN row is left out and dominates nothing
    assert pareto_mask([[np.nan, 0.0], [1.0, 1.0]]).tolist() == [False, True]
    assert pareto_mask(np.zeros((0, 3))).tolist() == []
    assert pareto_mask([[7.0, 7.0]]).tolist() == [True]


def test_pareto_mask_error():
    with pytest.raises(ValueError, match=r"pareto_mask needs a 2-D array \(rows x objectives, lower is better\); got shape \(3,\)\."):
        pareto_mask([1.0, 2.0, 3.0])


# -- the explored frame -------------------------------------------------------------------------------------------------

def test_columns_and_skipped_combinations_with_their_reason(two_gpus):
    f = two_gpus
    assert list(f.columns) == STRATEGY_COLUMNS
    assert f["step_time_s"].is_monotonic_increasing
    sk = pd.DataFrame(f.attrs["skipped"])
    assert list(sk.columns) == SKIPPED_COLUMNS
    assert "rows x" in repr(f) and "rows x" in repr(f[f["pareto"]])  # attrs never break printing or filtering
    # global batch 4 on 2 GPUs: dp / fsdp run 2 samples per GPU (m = 1, 2), tp / pp the whole batch (m = 1, 2, 4)
    got = set(zip(f["strategy"], f["micro_batches"], f["activation_checkpointing"]))
    expected = {(s, m, a) for s in ("dp", "fsdp") for m in (1, 2) for a in (False, True)}
    expected |= {(s, m, a) for s in ("tp", "pp") for m in (1, 2, 4) for a in (False, True)}
    assert got == expected
    assert set(zip(sk["strategy"], sk["micro_batches"])) == {("dp", 4), ("dp", 8), ("fsdp", 4), ("fsdp", 8), ("tp", 8), ("pp", 8)}
    dp8 = sk[(sk["strategy"] == "dp") & (sk["micro_batches"] == 8)]["reason"].iloc[0]
    assert "the per-GPU batch 2 does not split into micro_batches=8" in dp8
    assert "the global batch 4 does not split into micro_batches=8" in sk[sk["strategy"] == "pp"]["reason"].iloc[0]


def test_heads_and_layers_that_do_not_divide_are_skipped():
    f = _explore("A100", 3, batch_size=6, micro_batches=(1,), activation_checkpointing=False)
    assert sorted(f["strategy"]) == ["dp", "fsdp"]
    reasons = pd.DataFrame(f.attrs["skipped"]).set_index("strategy")["reason"]
    assert "attention heads = 4" in reasons["tp"] and "not divisible by 3" in reasons["tp"]
    assert "strategy='pp' over 3 stages needs at least 3 layers" in reasons["pp"]


def test_time_memory_and_cost_come_from_the_models(two_gpus):
    f = two_gpus.set_index(["strategy", "micro_batches", "activation_checkpointing"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        for strat, m in (("dp", 2), ("pp", 4), ("tp", 1)):
            t = pm.predict_step_time(TINY_GPT2, "A100", input_shape=SHAPE, batch_size=4, n_gpus=2, strategy=strat,
                                     micro_batches=m, optimizer="adam").iloc[0]
            tc = pm.predict_step_time(TINY_GPT2, "A100", input_shape=SHAPE, batch_size=4, n_gpus=2, strategy=strat,
                                      micro_batches=m, optimizer="adam", activation_checkpointing=True).iloc[0]
            mem = pm.predict_memory(TINY_GPT2, "A100", input_shape=SHAPE, batch_size=4, n_gpus=2, strategy=strat,
                                    micro_batches=m, optimizer="adam").iloc[0]
            memc = pm.predict_memory(TINY_GPT2, "A100", input_shape=SHAPE, batch_size=4, n_gpus=2, strategy=strat,
                                     micro_batches=m, optimizer="adam", activation_checkpointing=True).iloc[0]
            plain, ckpt = f.loc[(strat, m, False)], f.loc[(strat, m, True)]
            assert plain["step_time_s"] == pytest.approx(t["step_time_s"], rel=1e-9)
            assert ckpt["step_time_s"] == pytest.approx(tc["step_time_s"], rel=1e-9)
            assert plain["comm_s"] == pytest.approx(t["comm_s"], rel=1e-9) and plain["bubble_s"] == pytest.approx(t["bubble_s"], rel=1e-9)
            assert plain["memory_per_gpu_bytes"] == mem["total_bytes"] and ckpt["memory_per_gpu_bytes"] == memc["total_bytes"]
            # checkpointing trades memory for time
            assert ckpt["step_time_s"] > plain["step_time_s"] and ckpt["memory_per_gpu_bytes"] < plain["memory_per_gpu_bytes"]
    ff = two_gpus
    assert np.allclose(ff["cost_per_step_usd"], ff["step_time_s"] * 2 * 3.6 / 3600, rtol=1e-12)
    assert (ff["usd_per_gpu_h"] == 3.6).all() and ff["capacity_bytes"].eq(40 * 2**30).all() and ff["fits"].all()
    assert set(ff["interconnect"]) == {"nvlink (A100)"}


def test_pareto_column_is_the_non_dominated_fitting_set(two_gpus):
    f = two_gpus
    objectives = f[["step_time_s", "memory_per_gpu_bytes", "cost_per_step_usd"]].to_numpy()
    assert f["pareto"].tolist() == pareto_mask(objectives).tolist()
    assert f["pareto"].any() and not f["pareto"].all()
    # the fastest row and the smallest row are always on it
    assert f.loc[f["step_time_s"].idxmin(), "pareto"] and f.loc[f["memory_per_gpu_bytes"].idxmin(), "pareto"]
    # no price: cost is NaN and not an objective
    free = _explore("A100", 2, batch_size=4, micro_batches=(1, 2), strategies=("dp", "pp"))
    assert free["cost_per_step_usd"].isna().all() and free["usd_per_gpu_h"].isna().all()
    assert free["pareto"].tolist() == pareto_mask(free[["step_time_s", "memory_per_gpu_bytes"]].to_numpy()).tolist()


def test_rows_that_do_not_fit_are_never_on_the_pareto_set(two_gpus):
    # a GPU whose memory lies between the smallest and the largest configuration of the model
    mem = two_gpus["memory_per_gpu_bytes"]
    cap_gib = float(mem.median()) / 2**30
    small = dataclasses.replace(gpu_spec("A100"), gpu="small-gpu", memory_gib=cap_gib)
    f = _explore(small, 2, batch_size=4, interconnect="pcie4")
    assert f["fits"].any() and not f["fits"].all()
    assert not (f["pareto"] & ~f["fits"]).any()
    fit = f[f["fits"]]
    assert fit["pareto"].tolist() == pareto_mask(fit[["step_time_s", "memory_per_gpu_bytes"]].to_numpy()).tolist()
    assert set(f["interconnect"]) == {"pcie4"}


def test_one_gpu_keeps_dp_only():
    f = _explore("A100", 1, batch_size=4, micro_batches=(1, 2))
    assert set(f["strategy"]) == {"dp"} and len(f) == 4
    assert (f["comm_s"] == 0).all() and (f["bubble_s"] == 0).all() and np.allclose(f["compute_s"], f["step_time_s"])
    sk = pd.DataFrame(f.attrs["skipped"])
    assert set(sk["strategy"]) == {"fsdp", "tp", "pp"}
    assert set(sk["reason"]) == {"one GPU: every strategy is single-GPU training (kept as 'dp')"}


def test_errors():
    with pytest.raises(UnknownNameError, match=r"Unknown parallel strategy 'zero'\. Expected one of: dp, fsdp, tp, pp"):
        _explore("A100", 2, batch_size=4, strategies=("dp", "zero"))
    with pytest.raises(ValueError, match=r"strategies must name at least one of 'dp', 'fsdp', 'tp', 'pp'; got an empty sequence\."):
        _explore("A100", 2, batch_size=4, strategies=())
    with pytest.raises(ValueError, match=r"micro_batches must be a non-empty sequence of positive ints; got \(1, 0\)\. E\.g\."):
        _explore("A100", 2, batch_size=4, micro_batches=(1, 0))
    with pytest.raises(ValueError, match=r"activation_checkpointing must be True, False, a policy \('full', 'selective', "
                                         r"'attention', 'layer:N'\) or a sequence of them; got 'yes'\."):
        _explore("A100", 2, batch_size=4, activation_checkpointing="yes")
    with pytest.raises(ValueError, match=r"a policy \('full', 'selective', 'attention', 'layer:N'\) or a sequence of them; "
                                         r"got \(False, 3\)\."):
        _explore("A100", 2, batch_size=4, activation_checkpointing=(False, 3))
    with pytest.raises(ValueError, match=r"usd_per_gpu_h must be a positive price in USD per GPU-hour, or None \(no cost column\); got -1"):
        _explore("A100", 2, batch_size=4, usd_per_gpu_h=-1)
    with pytest.raises(ValueError, match=r"n_gpus must be a positive int; got 0\."):
        _explore("A100", 0, batch_size=4)
    with pytest.raises(TypeError, match=r"explore_strategies compares strategies on one GPU type; got list\. Call it once per GPU type"):
        _explore(["A100", "H100"], 2, batch_size=4)
    with pytest.raises(UnknownNameError, match=r"Unknown interconnect 'carrier-pigeon'"):
        _explore("A100", 2, batch_size=4, interconnect="carrier-pigeon")
    with pytest.raises(ValueError, match=r"batch_size must be a positive int; got 0\."):
        _explore("A100", 2, batch_size=0)
    with pytest.raises(ValueError, match=r"explore_strategies: no combination of \['pp'\] x micro_batches \[1\] runs on 4 GPUs at "
                                         r"batch 4\. pp \(micro_batches=1\): strategy='pp' over 4 stages needs at least 4 layers"):
        _explore("A100", 4, batch_size=4, strategies=("pp",), micro_batches=(1,))


# -- plot ---------------------------------------------------------------------------------------------------------------

def test_plot_marks_the_pareto_set(two_gpus):
    import matplotlib.pyplot as plt

    ax = plot_strategies(two_gpus)
    by_label = {c.get_label(): c for c in ax.collections}
    front = by_label["Pareto set"].get_offsets()
    expected = two_gpus.loc[two_gpus["pareto"], ["step_time_s", "memory_per_gpu_bytes"]].to_numpy() * [1e3, 1 / 2**30]
    assert np.allclose(np.asarray(front), expected)
    assert {"dp", "dp + checkpointing", "tp", "pp + checkpointing"} <= set(by_label)
    points = np.concatenate([np.asarray(c.get_offsets()) for lab, c in by_label.items() if lab != "Pareto set"])
    assert len(points) == len(two_gpus)
    cap = [ln for ln in ax.lines if ln.get_label() == "GPU memory"]
    assert len(cap) == 1 and cap[0].get_ydata()[0] == pytest.approx(40.0)
    assert ax.get_xlabel() == "Predicted step time (ms)" and ax.get_yscale() == "log"
    assert ax.get_legend() is not None
    plt.close(ax.figure)
    fig, own = plt.subplots()
    assert plot_strategies(two_gpus, ax=own) is own
    plt.close(fig)


def test_plot_errors(two_gpus):
    with pytest.raises(TypeError, match=r"plot_strategies: frame must be the DataFrame of explore_strategies; got dict\."):
        plot_strategies({})
    with pytest.raises(ValueError, match=r"plot_strategies: frame has no column \['pareto'\]; expected the frame of explore_strategies"):
        plot_strategies(two_gpus.drop(columns="pareto"))
    with pytest.raises(TypeError, match=r"plot_scatter: ax must be a matplotlib Axes or None"):
        plot_strategies(two_gpus, ax="axes")


def test_selective_policies_are_explored_as_the_step_and_memory_models_give_them():
    """A policy string is one more row per combination: its step is predict_step_time's with that policy (the share of
    the forward pass it recomputes) and its memory predict_memory's; "full" is True; the plot labels each policy."""
    f = _explore("A100", 2, batch_size=4, strategies=("dp", "tp"), micro_batches=(1,),
                 activation_checkpointing=(False, "selective", "attention", "full"))
    assert sorted(map(str, set(f["activation_checkpointing"]))) == ["False", "True", "attention", "selective"]
    for strat in ("dp", "tp"):
        rows = f[f["strategy"] == strat].set_index(f[f["strategy"] == strat]["activation_checkpointing"].map(str))
        for policy in ("selective", "attention"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ExtrapolationWarning)
                t = pm.predict_step_time(TINY_GPT2, "A100", input_shape=SHAPE, batch_size=4, n_gpus=2, strategy=strat,
                                         optimizer="adam", activation_checkpointing=policy).iloc[0]
                m = pm.predict_memory(TINY_GPT2, "A100", input_shape=SHAPE, batch_size=4, n_gpus=2, strategy=strat,
                                      activation_checkpointing=policy).iloc[0]
            assert rows.loc[policy, "step_time_s"] == pytest.approx(t["step_time_s"], rel=1e-12)
            assert rows.loc[policy, "memory_per_gpu_bytes"] == pytest.approx(m["total_bytes"], rel=1e-12)
            assert rows.loc["False", "step_time_s"] < rows.loc[policy, "step_time_s"] < rows.loc["True", "step_time_s"]
    from perfmodel.planning.strategies import _configuration

    assert [_configuration("dp", a) for a in (False, True, "selective", "attention", "True", "False")] == [
        "dp", "dp + checkpointing", "dp + selective checkpointing", "dp + attention checkpointing", "dp + checkpointing", "dp"]
    ax = plot_strategies(f)
    assert len(ax.collections) >= 1  # the policies are drawn
    import matplotlib.pyplot as plt

    plt.close("all")


LLAMA = dict(model_type="llama", vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=8,
             num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=16384, tie_word_embeddings=False)


def test_megatron_layouts_explored_as_predict_runs_them():
    w = pm.Workload(LLAMA, input_shape=(256,), batch_size=16, precision="bf16", optimizer="adam-fused")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = explore_strategies(w, "H100", 8, framework="megatron", micro_batches=(4,),
                               strategies=["fsdp", "dp2-tp2-pp2", "dp2-cp2-tp2"], pipeline_schedule="interleaved-1f1b",
                               virtual_stages=2)
        skipped = pd.DataFrame(f.attrs["skipped"])
        assert skipped["reason"].str.contains("framework='megatron'").all() and set(skipped["strategy"]) == {"fsdp"}
        assert set(f["strategy"]) == {"dp2-tp2-pp2", "dp2-cp2-tp2"}
        for r in f.itertuples(index=False):
            pipe = dict(pipeline_schedule="interleaved-1f1b", virtual_stages=2) if "pp" in r.strategy else {}
            want = pm.predict(w, pm.Cluster("H100", n_gpus=8),
                              pm.Parallelism(r.strategy, micro_batches=4, framework="megatron",
                                             activation_checkpointing="full" if r.activation_checkpointing else False,
                                             **pipe))
            # Megatron-Core runs Transformer Engine's modules: the step and the memory both say so
            assert r.step_time_s == pytest.approx(want.step_time_s, rel=1e-12)
            assert r.memory_per_gpu_bytes == want.memory["total_bytes"]


def test_predict_memory_runs_megatron_on_transformer_engine_as_the_step_does():
    kw = dict(batch_size=16, n_gpus=8, strategy="dp2-tp2-pp2", precision="bf16", optimizer="adam-fused",
              input_shape=(256,), micro_batches=4, framework="megatron")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        said = pm.predict_memory(LLAMA, "H100", **kw).iloc[0]
        te = pm.predict_memory(LLAMA, "H100", stack="te", **kw).iloc[0]
        eager = pm.predict_memory(LLAMA, "H100", stack="eager", **kw).iloc[0]
    assert said["total_bytes"] == te["total_bytes"] < eager["total_bytes"]
