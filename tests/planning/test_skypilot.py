"""SkyPilot adapter: with stand-ins for sky.Resources (run everywhere) and, where skypilot is installed, with the real
sky.Task / sky.Resources called the way SkyPilot's optimizer calls a task's time estimator."""
import dataclasses
import warnings

import pytest

import perfmodel as pm
from perfmodel._errors import UnknownNameError
from perfmodel.planning.skypilot import SKYPILOT_GPU_ALIASES, attach, time_estimator

pytest.importorskip("transformers")

CFG = dict(model_type="gpt2", n_layer=4, n_embd=256, n_head=8, vocab_size=1000, n_positions=128, bos_token_id=0, eos_token_id=0)
KW = dict(input_shape=(128,), batch_size=16, precision="bf16", optimizer="adam")


def _ref(gpu, n=1, **extra):
    """perfmodel's own prediction of 1000 steps, computed independently of the adapter."""
    kw = dict(n_gpus=n, strategy="dp") if n > 1 else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # extrapolation warnings: the adapter silences them too
        return 1000 * pm.predict_step_time(CFG, gpu, **KW, **kw, **extra)["step_time_s"].iloc[0]


@dataclasses.dataclass
class FakeResources:
    """What the estimator reads of sky.Resources: ``accelerators`` (dict name -> count, as SkyPilot stores it)."""

    accelerators: object = None
    instance_type: object = None


def test_estimate_is_steps_times_predicted_step_time():
    est = time_estimator(CFG, steps=1000, batch_size=16, input_shape=(128,))
    one = est(FakeResources({"A100": 1}))
    assert one == pytest.approx(_ref("A100"))
    four = est(FakeResources({"H100": 4}))
    assert four == pytest.approx(_ref("H100", 4))
    assert est(FakeResources("H100:4")) == four
    assert est(FakeResources({"H100": 4.0})) == four          # a catalog count read as a float


def test_skypilot_names_map_to_the_catalog():
    est = time_estimator(CFG, steps=1000, batch_size=16, input_shape=(128,))
    # SkyPilot's catalog spelling and a user's lowercase spelling (sky.Resources does not canonicalise it)
    a80 = est(FakeResources({"A100-80GB": 1}))
    assert a80 == pytest.approx(_ref("A100-SXM4-80GB"))
    assert est(FakeResources({"a100-80gb": 1})) == a80
    assert SKYPILOT_GPU_ALIASES["H100-MEGA"] == "H100"
    assert est(FakeResources({"H100-MEGA": 1})) == pytest.approx(_ref("H100"))
    assert est(FakeResources({"L4": 1})) == pytest.approx(_ref("L4"))


def test_gpu_map_and_unknown_skypilot_gpu():
    est = time_estimator(CFG, steps=1000, batch_size=16, input_shape=(128,))
    with pytest.raises(UnknownNameError, match=r"SkyPilot accelerator 'M60' is not in perfmodel's GPU catalog.*gpu_map="):
        est(FakeResources({"M60": 1}))
    mapped = time_estimator(CFG, steps=1000, batch_size=16, input_shape=(128,), gpu_map={"m60": "A10"})
    assert mapped(FakeResources({"M60": 1})) == pytest.approx(_ref("A10"))
    assert est(FakeResources({"A10G": 1})) == pytest.approx(_ref("A10G"))  # AWS's g5 part is in the catalog
    spec = pm.datasets.gpu_spec("L4")              # a GPUSpec, as for a card outside the catalog
    assert time_estimator(CFG, steps=1000, batch_size=16, input_shape=(128,), gpu_map={"MyL4": spec})(
        FakeResources({"MyL4": 1})) == pytest.approx(_ref("L4"))
    with pytest.raises(TypeError, match=r"gpu_map must be a dict"):
        time_estimator(CFG, steps=10, batch_size=8, gpu_map=["A10"])


def test_num_nodes_multiplies_gpus_and_needs_an_interconnect():
    bare = time_estimator(CFG, steps=1000, batch_size=16, input_shape=(128,), num_nodes=2)
    with pytest.raises(ValueError, match=r"num_nodes=2: .*the resources name no instance type\. Pass interconnect="):
        bare(FakeResources({"H100": 4}))
    with pytest.raises(ValueError, match=r"instance type 'my-box' has no known network"):
        bare(FakeResources({"H100": 8}, instance_type="my-box"))
    # the resources' instance type brings its network: two p5.48xlarge nodes, as plan_cloud rents them
    from perfmodel.planning import instance_cluster

    c = instance_cluster("p5.48xlarge", 16)
    want = _ref("H100", 16, interconnect=c.interconnect, gpus_per_node=8, nics_per_node=8)
    assert bare(FakeResources({"H100": 8}, instance_type="p5.48xlarge")) == pytest.approx(want, rel=1e-12)
    est = time_estimator(CFG, steps=1000, batch_size=16, input_shape=(128,), num_nodes=2, interconnect="infiniband-ndr")
    assert est(FakeResources({"H100": 4})) == pytest.approx(_ref("H100", 8, interconnect="infiniband-ndr"))
    with pytest.raises(ValueError, match=r"num_nodes must be a positive int"):
        time_estimator(CFG, steps=10, batch_size=8, num_nodes=0)


def test_resources_perfmodel_cannot_predict():
    est = time_estimator(CFG, steps=10, batch_size=8, input_shape=(128,))
    with pytest.raises(ValueError, match=r"have no accelerators \(e.g. accelerators='A100:8'\)"):
        est(FakeResources(None))
    with pytest.raises(ValueError, match=r"several accelerator types"):
        est(FakeResources({"A100": 1, "H100": 1}))
    with pytest.raises(ValueError, match=r"accelerator count 0.5 for A100: perfmodel predicts whole GPUs.*Ask for A100:1"):
        est(FakeResources({"A100": 0.5}))
    with pytest.raises(ValueError, match=r"'tpu-v4-8' is a TPU"):
        est(FakeResources({"tpu-v4-8": 1}))
    with pytest.raises(UnknownNameError, match=r"'B9000'"):
        est(FakeResources({"B9000": 1}))
    with pytest.raises(TypeError, match=r"accelerators should be a dict"):
        est(FakeResources(["A100"]))
    with pytest.raises(ValueError, match=r"steps must be a positive int"):
        time_estimator(CFG, steps=0, batch_size=8)


# ---- the real skypilot (pip install "perfmodel[skypilot]"); skipped where it is not installed ---------------------------


@pytest.fixture(scope="module")
def sky():
    return pytest.importorskip("sky")


def test_real_resources_accelerators(sky):
    """What the adapter relies on: sky.Resources.accelerators is a dict name -> count, names as written."""
    assert sky.Resources(accelerators="A100:8").accelerators == {"A100": 8}
    assert sky.Resources(accelerators={"H100": 8}).accelerators == {"H100": 8}
    assert sky.Resources(accelerators="L4").accelerators == {"L4": 1}
    assert sky.Resources(accelerators="T4:0.5").accelerators == {"T4": 0.5}
    assert sky.Resources(accelerators="a100-80gb:8").accelerators == {"a100-80gb": 8}
    assert sky.Resources(accelerators="A100:8", infra="gcp").accelerators == {"A100": 8}   # a cloud, no catalog read
    assert sky.Resources().accelerators is None


def test_real_task_estimates_like_the_optimizer(sky):
    task = sky.Task(run="python train.py")
    candidates = {sky.Resources(accelerators="A100:8"), sky.Resources(accelerators="H100:8", infra="gcp"),
                  sky.Resources(accelerators="A100-80GB:8"), sky.Resources(accelerators="L4:1")}
    task.set_resources(candidates)
    assert attach(task, CFG, steps=1000, **KW) is task
    assert task.time_estimator_func is not None
    # sky/optimizer.py (skypilot 0.14.1), Optimizer._estimate_nodes_cost_or_time:
    #     estimated_runtime = node.estimate_runtime(orig_resources)
    # for each resources object the user gave. Optimizer.optimize itself cannot run here: without credentials it raises
    # sky.exceptions.NoCloudAccessError ("Cloud access is not set up. Run: sky check"), and it reads catalogs fetched
    # from GitHub; so the call is made here directly, exactly as there.
    got = {str(list(r.accelerators)[0]): task.estimate_runtime(r) for r in task.resources}
    assert got["A100"] == pytest.approx(_ref("A100", 8))
    assert got["H100"] == pytest.approx(_ref("H100", 8))
    assert got["A100-80GB"] == pytest.approx(_ref("A100-SXM4-80GB", 8))
    assert got["L4"] == pytest.approx(_ref("L4"))
    assert all(isinstance(v, float) and v > 0 for v in got.values())       # seconds, priced by resources.get_cost(s)
    assert len(set(got.values())) == 4                                      # one estimate per GPU type, not a constant


def test_real_task_refuses_what_perfmodel_cannot_predict(sky):
    task = sky.Task(run="python train.py")
    task.set_resources({sky.Resources(accelerators="A100:8"), sky.Resources(accelerators="M60:1")})
    with pytest.raises(UnknownNameError, match=r"SkyPilot accelerator 'M60'"):
        attach(task, CFG, steps=1000, **KW)
    task.set_resources({sky.Resources(accelerators="T4:0.5")})
    with pytest.raises(ValueError, match=r"accelerator count 0.5 for T4"):
        attach(task, CFG, steps=1000, **KW)
    multi = sky.Task(run="python train.py", num_nodes=2)
    multi.set_resources(sky.Resources(accelerators="H100:4"))
    with pytest.raises(ValueError, match=r"num_nodes=2"):
        attach(multi, CFG, steps=1000, **KW)
    attach(multi, CFG, steps=1000, interconnect="infiniband-ndr", **KW)
    (res,) = multi.resources
    assert multi.estimate_runtime(res) == pytest.approx(_ref("H100", 8, interconnect="infiniband-ndr"))
    with pytest.raises(TypeError, match=r"takes num_nodes from task.num_nodes"):
        attach(multi, CFG, steps=1000, num_nodes=3, **KW)
