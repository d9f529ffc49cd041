"""Property: parallel training never scales better than perfectly. With the global batch B fixed, the scaling
efficiency T1(B) / (n · Tn(B)) is at most 1, for every strategy, GPU count, batch and link, unless the single-GPU model
itself is superlinear: when its forward + backward time F is faster per sample at B/n than at B (the FP32-learned
trees can give a small operator a better efficiency than a large one), the efficiency may reach
T1(B) / (n · F(B/n) + O) and no more (O the optimizer step, which sharding may split but never shortens in total)."""
import pytest

pytest.importorskip("transformers")

import perfmodel as pm
from perfmodel.step.hetero import predict_mixed_step_time

CFG = dict(model_type="gpt2", n_layer=4, n_embd=256, n_head=8, vocab_size=1000, n_positions=128, bos_token_id=0, eos_token_id=0)
KW = dict(input_shape=(128,), precision="bf16", optimizer="adam")


@pytest.mark.parametrize("gpu", ["A100", "H100", "L4"])
@pytest.mark.parametrize("link", [None, "ethernet-100g"])
def test_scaling_efficiency_is_at_most_one(gpu, link):
    for B in (8, 32, 128, 512):
        one = pm.predict_step_time(CFG, gpu, batch_size=B, **KW).iloc[0]
        t1, opt = float(one["step_time_s"]), float(one["optimizer_s"])
        for n in (2, 4, 8):
            share = float(pm.predict_step_time(CFG, gpu, batch_size=B // n, **KW)["step_time_s"].iloc[0]) - opt
            bound = max(1.0, t1 / (n * share + opt))
            combos = [pm.step.parallel.parse_strategy(c, n)["name"] for c in pm.step.parallel.strategy_combinations(n)]
            for strat in ["dp", "fsdp", "tp", *(["pp"] if n <= 4 else []), *combos]:  # CFG has 4 layers
                if "pp" in strat and pm.step.parallel.parse_strategy(strat, n)["pp"] > 4:
                    continue
                tn = float(pm.predict_step_time(CFG, gpu, batch_size=B, n_gpus=n, strategy=strat, interconnect=link,
                                                **KW)["step_time_s"].iloc[0])
                assert t1 / (n * tn) <= bound + 1e-9, (gpu, link, B, n, strat, t1, tn, bound)


def test_a_mix_is_no_faster_than_its_gpus_would_be_if_all_were_the_fastest():
    for B in (16, 64):
        fast = float(pm.predict_step_time(CFG, "H100", batch_size=B, **KW)["step_time_s"].iloc[0])
        mixed = float(predict_mixed_step_time(CFG, {"H100": 2, "L4": 2}, batch_size=B, **KW)["step_time_s"].iloc[0])
        assert fast / (4 * mixed) <= 1 + 1e-9


def test_in_half_precision_the_single_gpu_model_is_not_superlinear():
    """The exception above came from the single-GPU model: on the L4 at a large batch, the trees' elementwise
    efficiency made n GPUs each running B/n faster than one GPU running B. In half precision the memory-bound kernels
    are now their bytes at one learned bandwidth efficiency (perfmodel.step.bandwidth), so a step of B/n samples
    takes at least 1/n of a step of B: the bound is 1."""
    one = pm.predict_step_time(CFG, "L4", batch_size=512, **KW).iloc[0]
    share = float(pm.predict_step_time(CFG, "L4", batch_size=64, **KW)["step_time_s"].iloc[0]) - float(one["optimizer_s"])
    assert float(one["step_time_s"]) / (8 * share + float(one["optimizer_s"])) <= 1
