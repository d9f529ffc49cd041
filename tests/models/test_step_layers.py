"""The step model's layers take the run's three objects (what is trained, on what, how), not a long list of keywords:
the keyword faces make the objects and hand them down, and both roads give the same numbers."""
from __future__ import annotations

import ast
import dataclasses
import warnings
from pathlib import Path

import pytest

import perfmodel as pm

STEP = Path(pm.__file__).parent / "step"

LLAMA = dict(model_type="llama", vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False)

#: the keyword faces: the only functions of the step model that take a run as a long list of keywords
KEYWORD_FACES = {"predict_step_time", "predict_memory", "predict_parallel_step_time"}  # keyword_run: perfmodel._run


def _functions():
    for f in sorted(STEP.glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield f.name, node


def _code_lines(node) -> int:
    first = node.body[0]
    doc = isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant) and isinstance(
        first.value.value, str)
    start = first.end_lineno + 1 if doc else first.lineno
    return node.end_lineno - start + 1


def test_no_function_of_the_step_model_is_longer_than_80_lines_of_code():
    long = [f"{f}:{n.lineno} {n.name} ({_code_lines(n)} lines)" for f, n in _functions() if _code_lines(n) > 80]
    assert not long, long


def test_only_the_keyword_faces_take_a_run_as_many_keywords():
    many = {n.name for _, n in _functions()
            if len(n.args.posonlyargs) + len(n.args.args) + len(n.args.kwonlyargs) > 10}
    assert many == KEYWORD_FACES


def _objects(**fields):
    from perfmodel.step.prediction import resolve_run

    w = pm.Workload(LLAMA, input_shape=(64,), batch_size=8, precision="bf16", optimizer="adam")
    return resolve_run(w, pm.Cluster("H100", n_gpus=fields.pop("n_gpus", 1), **fields.pop("cluster", {})),
                       pm.Parallelism(**fields))


@pytest.mark.parametrize("fields", [
    dict(),
    dict(activation_checkpointing="selective"),
    dict(n_gpus=8, strategy="fsdp"),
    dict(n_gpus=4, strategy="dp2-tp2", framework="megatron"),
    dict(n_gpus=4, strategy="fsdp2-pp2", micro_batches=2, pipeline_schedule="interleaved-1f1b"),
])
def test_the_layers_on_objects_answer_what_the_keyword_face_answers(fields):
    from perfmodel.step.step_time import keyword_run, step_rows

    w, c, p = _objects(**dict(fields))
    rows = step_rows(w, (c,), p)
    kw = {k: v for k, v in dict(fields).items() if k != "n_gpus"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        face = pm.predict_step_time(LLAMA, "H100", input_shape=(64,), batch_size=8, precision="bf16", optimizer="adam",
                                    n_gpus=fields.get("n_gpus", 1), **kw)
    assert rows["step_time_s"].iloc[0] == face["step_time_s"].iloc[0]
    assert rows["lower_s"].iloc[0] == face["lower_s"].iloc[0]
    # the keyword face hands the layers the same three objects, field for field
    kw_w, kw_cs, kw_p = keyword_run(LLAMA, ["H100", "A100"], input_shape=(64,), batch_size=8, precision="bf16",
                                    optimizer="adam", n_gpus=fields.get("n_gpus", 1), **kw)
    assert [cl.gpu for cl in kw_cs] == ["H100", "A100"]
    assert {f.name: getattr(kw_p, f.name) for f in dataclasses.fields(kw_p)} == {
        f.name: getattr(p, f.name) for f in dataclasses.fields(p)} | {"activation_checkpointing": kw.get(
            "activation_checkpointing", False)}
    assert kw_w.precision == w.precision and kw_w.batch_size == w.batch_size and kw_w.stack == w.stack


def test_a_layout_is_traced_once_from_the_workload_and_the_parallelism_not_the_gpu():
    from perfmodel.step.parallel import rank_work

    w, c, p = _objects(n_gpus=4, strategy="dp2-tp2")
    r = rank_work(w, p, c.n_gpus)
    assert (r.dp, r.tp, r.micro_batches, r.batch_size) == (2, 2, 1, 8)
    r2 = rank_work(w, dataclasses.replace(p, micro_batches=2), c.n_gpus)
    assert r2.micro_batches == 2 and len(r2.work) == len(r.work)


def test_memory_from_objects_is_predict_memory():
    from perfmodel.step.memory import memory_frame

    w, c, p = _objects(n_gpus=8, strategy="fsdp", activation_checkpointing="selective")
    via_objects = memory_frame(w, (c,), p).iloc[0]
    face = pm.predict_memory(LLAMA, "H100", input_shape=(64,), batch_size=8, precision="bf16", optimizer="adam",
                             n_gpus=8, strategy="fsdp", activation_checkpointing="selective").iloc[0]
    assert via_objects.equals(face)


def test_the_workloads_checkpointing_reaches_the_layers_and_the_prediction_keeps_the_objects_given():
    w = pm.Workload(LLAMA, input_shape=(64,), batch_size=8, precision="bf16", optimizer="adam",
                    activation_checkpointing="full")
    p = pm.Parallelism("dp")
    pred = pm.predict(w, "H100", p)
    assert pred.parallelism is p and pred.workload is w
    assert pred.breakdown["recompute"] > 0
    same = pm.predict(dataclasses.replace(w, activation_checkpointing=pm.Workload.UNSET), "H100",
                      pm.Parallelism("dp", activation_checkpointing="full"))
    assert same.step_time_s == pred.step_time_s


def test_filled_sets_every_field_and_keeps_what_was_set():
    w = pm.Workload(LLAMA, precision="BF16", compile=True).filled(batch_size=1, optimizer="sgd-momentum", input_shape=None,
                                                                   input_dtype=None, input_high=None, inference=False)
    assert w.precision == "bf16" and w.stack == "compile" and w.compile is True and w.batch_size == 1
    te = pm.Workload(LLAMA, stack="te").filled(compile=False)
    assert te.stack == "te" and te.compile is False
