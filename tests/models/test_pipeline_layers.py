"""How the transformer layers split over a pipeline's ranks: as evenly as they go, each rank's (or each chunk's) count
said, or Megatron's flags (``--decoder-first/last-pipeline-num-layers``, ``--account-for-embedding/loss-in-pipeline-split``);
the slowest rank sets the pipeline's pace and the rank holding the most sets its memory."""
from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

import perfmodel as pm
from perfmodel.models import ExtrapolationWarning
from perfmodel.step.step_time import OutOfMemoryWarning
from perfmodel.step.strategy import StrategyError, check_pipeline_layers, parse_pipeline_layers, pipeline_chunks

LLAMA = dict(model_type="llama", vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=8,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False)


def _sizes(*args):
    return [len(c) for c in pipeline_chunks(*args)]


def test_the_even_split_and_megatron_s_uneven_ones():
    assert _sizes(8, 2, 1) == [4, 4]
    assert _sizes(10, 4, 1) == [3, 3, 2, 2]  # the earlier chunks one longer where the layers do not divide
    chunks = pipeline_chunks(8, 2, 2)
    assert [c.tolist() for c in chunks] == [[0, 1], [2, 3], [4, 5], [6, 7]]  # chunk c on rank c mod p, in order
    # Llama 3 405B's 126 layers over 16 ranks, the first and last a layer shorter (Megatron's first/last flags)
    assert _sizes(126, 16, 1, {"first": 7, "last": 7}) == [7] + [8] * 14 + [7]
    assert _sizes(126, 16, 1, {"first": 7, "last": 7}) == _sizes(126, 16, 1, (7,) + (8,) * 14 + (7,))
    assert _sizes(10, 3, 1, {"first": 2}) == [2, 4, 4]
    # the embedding and the loss counted as a layer each: 126 + 2 over 8 ranks x 8 chunks, two per chunk
    got = _sizes(126, 8, 8, {"embedding": True, "loss": True})
    assert got[0] == 1 and got[-1] == 1 and set(got[1:-1]) == {2} and sum(got) == 126
    # each rank's layers spread over its chunks, or each chunk's said
    assert _sizes(15, 2, 2, (7, 8)) == [4, 4, 3, 4]  # rank 0: chunks 0 and 2 (4 + 3), rank 1: chunks 1 and 3
    assert _sizes(15, 2, 2, ((3, 4), (4, 4))) == [3, 4, 4, 4]


@pytest.mark.parametrize("args, match", [
    ((8, 2, 1, (3, 4)), r"places 7 transformer layers; the model has 8"),
    ((8, 2, 1, (2, 3, 3)), r"gives the layers of 3 pipeline ranks; the layout has 2"),
    ((8, 2, 2, ((4,), (4,))), r"gives 2 ranks of \[1\] chunks; the layout has 2 pipeline ranks of 2 model chunks"),
    ((8, 2, 1, (8, 0)), r"leaves pipeline rank 1 without a layer"),
    ((10, 4, 1, {"first": 3}), r"the 7 layers left of 10 do not split evenly over the 3 middle ranks"),
    ((16, 4, 2, {"first": 3, "last": 3}), r"rank 0's 3 layers do not split over its chunks .* multiple of the chunks"),
    ((8, 2, 2, {"embedding": True}), r"8 layers \+ the embedding = 9 do not split evenly over 2 ranks x 2 chunks; "
                                     r"Megatron needs a multiple of 4"),
    ((8, 1, 1, {"first": 8}), r"needs a pipeline of at least 2 ranks"),
])
def test_a_split_that_does_not_place_the_model_says_what_would(args, match):
    with pytest.raises(StrategyError, match=match):
        pipeline_chunks(*args)


@pytest.mark.parametrize("value, match", [
    ({"first": 3, "embedding": True}, r"'first'/'last' and 'embedding'/'loss' cannot be combined"),
    ({"middle": 3}, r"takes the keys first, last, embedding, loss"),
    ({"first": -1}, r"'first' must be a non-negative int"),
    ({"loss": 1}, r"'loss' must be True or False"),
    ("7,8", r"must be None, the transformer layers of each pipeline rank"),
    ((3, (4, 4)), r"mix of counts and sequences"),
    ((), r"an empty sequence"),
    ((3.5, 4), r"rank 0's layers must be a non-negative int"),
])
def test_pipeline_layers_that_are_not_a_split_are_refused_by_the_parallelism(value, match):
    with pytest.raises(ValueError, match=match) as e:
        pm.Parallelism("pp2", pipeline_layers=value)
    assert str(e.value).startswith("Parallelism: pipeline_layers")
    assert check_pipeline_layers([3, 5]) == (3, 5) and check_pipeline_layers({"first": 7}) == {"first": 7}


def test_the_command_line_spelling():
    from perfmodel.step.strategy import format_pipeline_layers

    for text in ("7,8,8,7", "first=7,last=7", "first=2", "embedding,loss", "loss"):
        assert format_pipeline_layers(parse_pipeline_layers(text)) == text
    assert format_pipeline_layers(None) == "" and format_pipeline_layers(((3, 4), (4, 4))) == "3+4,4+4"
    assert parse_pipeline_layers("7, 8,8,7") == (7, 8, 8, 7)
    assert parse_pipeline_layers("first=7,last=7") == {"first": 7, "last": 7}
    assert parse_pipeline_layers("embedding,loss") == {"embedding": True, "loss": True}
    with pytest.raises(ValueError, match=r"--pipeline-layers 'first7': expected each rank's layers"):
        parse_pipeline_layers("first7")


def _predict(pipeline_layers=None, strategy="pp2", **kw):
    w = pm.Workload(LLAMA, input_shape=(128,), batch_size=8, precision="bf16", optimizer="adam-fused")
    how = pm.Parallelism(strategy, micro_batches=4, framework="megatron", pipeline_layers=pipeline_layers, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        warnings.simplefilter("ignore", OutOfMemoryWarning)
        return pm.predict(w, pm.Cluster("H100", n_gpus=2), how)


def test_the_slowest_rank_sets_the_pace_and_the_fullest_the_memory():
    even, said = _predict(), _predict((4, 4))
    assert said.step_time_s == pytest.approx(even.step_time_s, rel=1e-12)
    assert said.memory["total_bytes"] == pytest.approx(even.memory["total_bytes"], rel=1e-12)
    assert "layers per pipeline rank" not in even.basis
    late, early = _predict((2, 6)), _predict((6, 2))
    assert late.step_time_s > even.step_time_s and early.step_time_s > even.step_time_s
    assert "transformer layers per pipeline rank 2, 6 (the slowest rank sets the pace)" in late.basis
    # 1F1B: the first rank keeps p micro-batches in flight, the last one; six layers there need the most memory
    assert early.memory["activations_bytes"] > even.memory["activations_bytes"] > late.memory["activations_bytes"]
    assert early.memory["params_bytes"] > even.memory["params_bytes"]


def test_a_split_without_a_pipeline_or_that_misplaces_the_layers_is_refused_with_the_fix():
    with pytest.raises(StrategyError, match=r"pipeline_layers=\(4, 4\) splits the layers over pipeline ranks; "
                                            r"strategy='dp2' has no pipeline\. Add a pp factor"):
        _predict((4, 4), strategy="dp2")
    with pytest.raises(StrategyError, match=r"places 9 transformer layers; the model has 8"):
        _predict((4, 5))
    from perfmodel.step.memory import memory_frame

    w = pm.Workload(LLAMA, input_shape=(128,), batch_size=8, precision="bf16", optimizer="adam").filled()
    with pytest.raises(StrategyError, match=r"splits the layers over pipeline ranks"):
        memory_frame(w, (pm.Cluster("H100", n_gpus=2),), pm.Parallelism("dp2", pipeline_layers=(4, 4)))


def test_perfmodel_predict_takes_the_split():
    cmd = [sys.executable, "-m", "perfmodel", "predict", "examples/llama-3-8b.json", "--gpus", "H100", "--input-shape",
           "1024", "--batch-size", "8", "--n-gpus", "2", "--strategy", "pp2", "--framework", "megatron",
           "--precision", "bf16", "--optimizer", "adam-fused", "--pipeline-layers", "first=15"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "transformer layers per pipeline rank 15, 17" in out.stdout
    bad = subprocess.run(cmd[:-1] + ["first=15,last=15"], capture_output=True, text=True, timeout=600)
    assert bad.returncode != 0 and "do not split evenly over the 0 middle ranks" in bad.stderr


def test_the_micro_batches_each_chunk_holds_at_the_schedule_s_peak():
    from perfmodel.step.memory import pipeline_in_flight

    assert [pipeline_in_flight(4, 1, 8, s) for s in range(4)] == [[4.0], [3.0], [2.0], [1.0]]  # 1F1B: p - s
    assert pipeline_in_flight(4, 1, 2, 0) == [2.0]  # never more than there are
    # interleaved, a long step: the first rank's first chunk 2p - 1, the others p; Korthikanti et al.'s
    # p (1 + (p - 1) / (p v)) micro-batches' worth of equal chunks
    first = pipeline_in_flight(4, 5, 64, 0)
    assert first == [7.0, 4.0, 4.0, 4.0, 4.0] and sum(first) / 5 == pytest.approx(4 * (1 + 3 / 20))
    assert pipeline_in_flight(4, 5, 64, 3) == [4.0, 4.0, 4.0, 4.0, 1.0]  # the last rank: one of its last chunk
    # as many micro-batches as ranks (torchtitan's default): every micro-batch of every chunk on the first rank, as
    # under 1F1B, and one of the last chunk on the last rank
    assert pipeline_in_flight(8, 2, 8, 0) == [8.0, 8.0] and pipeline_in_flight(8, 2, 8, 7) == [8.0, 1.0]
    for p, v, m in ((2, 2, 3), (4, 3, 6), (8, 8, 5)):
        for s in range(p):
            got = pipeline_in_flight(p, v, m, s)
            assert len(got) == v and max(got) <= m and sum(got) <= m * v
