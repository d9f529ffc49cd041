"""Reference data shipped with perfmodel: numbers the papers *report*, each row cited, and perfmodel's catalogs.

* ``reference/transcribed/*.csv`` — the arrays and scalars the authors hard-coded in their notebooks and plot scripts
  (CM-DARE ``Sigmetrics2020*.ipynb``, transient-deep-learning ``lifetime/plot.py``), transcribed verbatim with the
  source file, cell, variable and index of every value (see ``reference/transcribed/README.md``). They are reported
  figures, not measurements: for several of them no data file exists.
* ``reference/cmdare_cnns.csv`` — the twenty CNNs with their published features.
* ``reference/gpus.csv`` — GPU catalog (peak FP32/TF32/FP16/BF16 rates, memory, SMs, L2, interconnect), each group of
  values with its source.
* ``reference/icac19_prices.csv`` — GCE prices of ICAC'19 Table II (2019).
* ``reference/gpu_prices.csv`` — today's GPU VM prices (provider, region, instance type), each row with its date and
  source page.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources

import pandas as pd

from perfmodel._errors import UnknownNameError
from perfmodel.datasets._io import parse_csv
from perfmodel.datasets._spec import DatasetSpec
from perfmodel.datasets.names import CATALOG_GPU_IDS, canonical_gpu

__all__ = ["load_paper_numbers", "TRANSCRIBED", "load_transcribed", "load_reported_cnns", "load_gpu_catalog", "load_prices", "load_gpu_prices", "load_instance_networks", "load_megatron_runs", "load_megatron_recompute_runs", "load_llama3_runs", "load_nccl_tests_p5", "load_published_gemms", "load_xla_h100_gemms", "load_float8_rowwise_linears", "load_torchao_float8_checks", "load_torchtitan_memory_logs", "load_torchao_bf16_linears", "load_mamf_matmuls", "load_rccl_allreduce", "GPU_PRICE_COLUMNS", "gpu_tflops", "DATASETS"]

#: Transcribed files (stem → what one row is).
TRANSCRIBED: dict[str, str] = {
    "cluster_speed": "reported mean/std cluster speed per (model, GPU, #PS, #workers) — redraws cell 1",
    "lifetime_cdf": "reported lifetime-CDF value per (GPU, region, hour) — redraws cells 13–15",
    "revocations_by_hour": "reported revocation count per (GPU, basis, hour) — redraws cells 20, 24",
    "revocations_s2020_draft": "older revocation histograms (S2020 cells 17–24, not saved)",
    "tf_restart": "TensorFlow cold/warm start time — redraws cells 16–17",
    "restart_overhead": "training time vs steps since last checkpoint — S2020 cell 14",
    "restart_overhead_drafts": "earlier restart-overhead bars — S2020 cells 12–13",
    "chief_rejoining_accuracy": "final accuracy when the chief rejoins — S2020 cells 15–16",
    "vm_request_time": "time to obtain a new server, immediate vs delayed — S2020 cell 36",
    "checkpoint_test_models": "checkpoint size vs duration (figure_12, LR test set) — redraws cell 18, ckpt cell 2",
    "time_between_failures": "inter-failure time of transient servers (84 of 128 censored at 24 h) — S2020 cell 25",
    "training_time_estimates": "estimated vs actual training time with a revocation — S2020 cell 38",
    "latency_step_time": "step time with 0 / 30 ms injected latency — S2020 cell 41",
    "replacement_timings": "server-replacement micro-timings — S2020 cells 1–3, 10",
    "vm_startup_phases": "earlier inline VM startup phases — S2020 cell 4",
    "factor_accuracy_curves": "'Factor' accuracy-vs-time curves — S2020 cells 32, 34",
    "icac19_lifetime_cdf": "ICAC'19 Fig. 3 lifetime CDF arrays — transient-deep-learning lifetime/plot.py",
}


def _read_packaged(relpath: str) -> pd.DataFrame:
    res = resources.files("perfmodel._data").joinpath(*relpath.split("/"))
    return parse_csv(res.read_bytes(), source=f"perfmodel datasets/{relpath}", keep_default_na=True)


@lru_cache(maxsize=None)
def _transcribed(name: str) -> pd.DataFrame:
    return _read_packaged(f"reference/transcribed/{name}.csv")


def load_transcribed(name: str) -> pd.DataFrame:
    """A transcribed notebook array as a tidy frame (a copy; values exactly the source literals).

    Parameters
    ----------
    name : str
        File stem, one of :data:`TRANSCRIBED` (e.g. ``"cluster_speed"``, ``"lifetime_cdf"``).

    Returns
    -------
    DataFrame
        The file's columns (units in names, e.g. ``speed_mean_steps_per_s``, ``time_between_failures_s``) and its
        provenance columns ``source_file``, ``source_cell``, ``source_variable``, ``source_index``. Column meanings and
        quirks: ``datasets/reference/transcribed/README.md``.
    """
    if name not in TRANSCRIBED:
        raise UnknownNameError(f"Unknown transcribed array {name!r}. Expected one of: {', '.join(TRANSCRIBED)}.")
    return _transcribed(name).copy()


def load_reported_cnns() -> pd.DataFrame:
    """The twenty CNNs with their published features (20 rows table), each row cited.

    Columns: ``model``, ``source_name``, ``architecture``, ``n_params``, ``n_trainable_tensors``, ``model_flops``,
    ``normalized_model``, ``alt_model_flops``, ``max_tensor_mib``, ``checkpoint_mb``, ``weight_file_mb``,
    ``meta_file_mb``, ``index_file_kb``, ``graph_file_mb``, ``k80_step_time_s``, ``p100_step_time_s`` (mean of 13
    samples), ``citation``.
    """
    return _read_packaged("reference/cmdare_cnns.csv")


def load_gpu_catalog() -> pd.DataFrame:
    """GPU catalog: one row per real device (40 rows), PCIe and SXM parts apart, each group of values with its source.

    The ids ``K80``, ``P100``, ``V100``, ``T4``, ``L4``, ``A100``, ``H100`` are the paper-era ids
    (:data:`perfmodel.datasets.GPU_IDS`): ``K80`` is one die of the board (FP32 4.113 and ``P100`` 9.526 TFLOPS are the
    values CM-DARE's data uses), ``V100`` the SXM2 16 GB, ``A100`` the SXM4 40 GB, ``H100`` the SXM5 80 GB. The other
    parts have ids of their own (``V100-PCIe-32GB``, ``A100-PCIe-80GB``, ``H100-PCIe``, ``H200``, ``MI250`` ...; all in
    :data:`perfmodel.datasets.CATALOG_GPU_IDS`); :func:`perfmodel.datasets.canonical_gpu` maps device names such as
    ``"NVIDIA A100 80GB PCIe"`` to them.

    Returns
    -------
    DataFrame
        One row per GPU, in :data:`~perfmodel.datasets.CATALOG_GPU_IDS` order:

        * ``gpu``, ``vendor`` (NVIDIA, AMD), ``architecture``, ``form_factor``, ``device_name`` (as ``nvidia-smi`` /
          ``torch.cuda.get_device_name`` report it, the spelling of NeuSight's files);
        * ``fp32_peak_tflops`` (CUDA cores / vector units) with ``fp32_tflops_source``;
        * ``tf32_peak_tflops``, ``fp16_peak_tflops``, ``bf16_peak_tflops`` (dense tensor/matrix-core rates, no sparsity;
          P100's FP16 is its CUDA cores' double rate; NaN where the GPU has no such units), ``fp32_matrix_tflops`` (AMD
          matrix cores; NaN for NVIDIA) with ``tensor_tflops_source``;
        * ``memory_gib``, ``memory_bandwidth_gb_per_s`` with ``bandwidth_source``;
        * ``sm_count`` (compute units on AMD), ``cuda_cores`` (stream processors on AMD), ``clock_ghz`` (boost clock the FP32
          peak is computed at), ``l2_mib`` with ``architecture_source``;
        * ``pcie_generation``, ``nvlink_gb_per_s`` (per GPU, all links, both directions; 0 = none, with a bridge for PCIe
          cards), ``infinity_fabric_gb_per_s`` (AMD's peer-to-peer links of an 8-GPU OAM platform, the same way; 0 for
          NVIDIA, empty where not modelled), ``tdp_w`` with ``interconnect_source``;
        * ``in_paper_data`` (the row's value is the one the CM-DARE data uses: K80, P100), ``note`` (caveats: values that
          are uncertain or derived say so here).

        Vendor datasheets and architecture whitepapers are cited by name in the source columns; NeuSight's device configs
        were used to cross-check only (their disagreements are in ``note``).
    """
    df = _read_packaged("reference/gpus.csv")
    df["in_paper_data"] = df["in_paper_data"].astype(bool)
    if list(df["gpu"]) != list(CATALOG_GPU_IDS):  # pragma: no cover - packaging guard
        raise RuntimeError("gpus.csv does not list the GPU ids of perfmodel.datasets.names.CATALOG_GPU_IDS")
    return df


def gpu_tflops(gpu: str) -> float:
    """Peak FP32 TFLOPS of a GPU from the catalog (K80 4.113, P100 9.526 as in the data)."""
    g = canonical_gpu(gpu)
    cat = load_gpu_catalog().set_index("gpu")
    return float(cat.loc[g, "fp32_peak_tflops"])


def load_prices() -> pd.DataFrame:
    """GCE instance shapes and hourly prices of ICAC'19 Table II (2019): 4 rows (K80, P100, V100 workers; parameter server).

    Columns: ``server`` (``worker``/``parameter_server``), ``gpu``, ``vcpus``, ``memory_gb``, ``on_demand_usd_per_h``,
    ``transient_usd_per_h``, ``on_demand_usd_per_s_in_code`` / ``transient_usd_per_s_in_code`` (the per-second rates the
    authors' cost code used, where it used one: K80 both, the PS on-demand only), ``price_date``,
    ``citation``.
    """
    return _read_packaged("reference/icac19_prices.csv")


#: Columns of :func:`load_gpu_prices` (and of a user's own table for :func:`perfmodel.planning.cloud.plan_cloud`).
GPU_PRICE_COLUMNS = ("provider", "region", "instance_type", "gpu", "gpus_per_instance", "on_demand_usd_per_h", "spot_usd_per_h",
                     "price_date", "source_url", "note")


def load_gpu_prices() -> pd.DataFrame:
    """Hourly prices of today's GPU VMs, one row per (provider, region, instance type), each read in a cited, dated source.

    Only numbers read in a source are kept (none is guessed, none derived from another GPU): AWS on-demand prices of
    p4d/p4de (A100 40/80 GB), p5 (H100), g6 (L4), p5en (H200), p6-b200 (B200), p6-b300 (B300), g5 (A10G) and g6e (L40S)
    in us-east-1 and us-west-2 from a dated third-party catalog of AWS list prices (no dated AWS spot price was found,
    so AWS rows have none), and Google Cloud on-demand and Spot prices of
    a2-highgpu/a2-ultragpu (A100 40/80 GB), a3-highgpu-8g (H100) and g2-standard (L4) in us-central1 and europe-west4
    from a dated catalog built from Google's Cloud Billing Catalog API. Prices change (Spot daily): pass your own
    table to :func:`perfmodel.planning.cloud.plan_cloud` (``prices=``) or ``perfmodel plan-cloud --prices FILE`` for
    the instances, regions and prices you pay.

    Returns
    -------
    DataFrame
        :data:`GPU_PRICE_COLUMNS`: ``provider`` (``aws``, ``gcp``, ...), ``region``, ``instance_type``, ``gpu``
        (catalog id, :func:`perfmodel.datasets.canonical_gpu`), ``gpus_per_instance``, ``on_demand_usd_per_h`` and
        ``spot_usd_per_h`` (US dollars per instance-hour; spot NaN where the source publishes none), ``price_date`` (the
        date the source states), ``source_url``, ``note`` (what the source is, the entry quoted, the instance's GPUs).
    """
    return _read_packaged("reference/gpu_prices.csv")


def load_instance_networks() -> pd.DataFrame:
    """The network between instances of the shipped price table's GPU VM types, each read in a cited source.

    One row per instance type of the shipped price table whose network a source states (AWS: the ``network`` and
    ``gpuDirectRDMA`` fields of the catalog the AWS prices come from, and AWS's EFA guide; Google Cloud: the overview
    table of Compute Engine's "Networking and GPU machines"), and the RDMA sizes of Azure (ND H100 v5, ND A100 v4: Microsoft
    Learn) and Google (a3-ultragpu-8g, a4-highgpu-8g) whose prices are not shipped: they serve a price table of yours. Google's single-GPU machine types are left out: the table
    read gives only each series' maximum. :func:`perfmodel.planning.cloud.plan_cloud` joins the instances of a rental by the row of their
    type (:func:`perfmodel.planning.networks.instance_network`).

    Returns
    -------
    DataFrame
        ``provider``, ``instance_type``, ``gpu`` (catalog id), ``gpus_per_instance``, ``network_gbit_per_s`` (the instance's network
        bandwidth, Gb/s; "up to" rates are burst ceilings, said in the note), ``transport`` (``efa``,
        ``infiniband``, ``roce``, ``gpudirect-tcpx``, ``gpudirect-tcpxo``, ``ethernet`` or ``not stated``), ``gpudirect_rdma`` (True where the source states it,
        False where it states none, empty where it says nothing), ``source_url``, ``note`` (the entry quoted).
    """
    return _read_packaged("reference/instance_networks.csv")


def load_megatron_runs() -> pd.DataFrame:
    """Megatron-LM's published weak-scaling runs (Narayanan et al., "Efficient Large-Scale Language Model Training on
    GPU Clusters Using Megatron-LM", SC 2021, arXiv:2104.04473, Table 1), transcribed with their citation: GPT models
    of 1.7B to 1T parameters on 32 to 3,072 A100-80GB GPUs of Selene (DGX A100 nodes), tensor x pipeline x data
    parallel, sequence length 2048, vocabulary 51,200, mixed precision, full activation recomputation. The micro-batch,
    the data-parallel implementation (``torch``: PyTorch DDP; ``local``: Megatron's own, gradients all-reduced after
    the backward pass) and the layers per virtual pipeline stage are those of the paper's artifact script
    (NVIDIA/Megatron-LM ``examples/sc21/run_table_1.sh``); an empty ``layers_per_virtual_stage`` is the 1F1B schedule.

    Returns
    -------
    DataFrame
        One row per model: ``model``, ``params_b``, ``attention_heads``, ``hidden_size``, ``layers``, ``tp``, ``pp``,
        ``n_gpus``, ``global_batch``, ``micro_batch``, ``layers_per_virtual_stage``, ``ddp``, ``tflops_per_gpu`` (the
        paper's achieved teraFLOP/s per GPU, counted with its Eq. 3), ``pct_of_peak``, ``aggregate_pflops``,
        ``source``.
    """
    return _read_packaged("reference/megatron_sc21_table1.csv")


def load_megatron_recompute_runs() -> pd.DataFrame:
    """Megatron-LM's end-to-end runs with and without its activation-memory techniques (Korthikanti et al., "Reducing
    Activation Recomputation in Large Transformer Models", MLSys 2023, arXiv:2205.05198), transcribed with their
    citation: GPT models of 22B, 175B, 530B and 1T parameters on 8 to 512 A100-80GB GPUs of Selene (DGX A100 nodes),
    tensor x pipeline parallel with a data-parallel size of one, sequence length 2048, vocabulary 51,200. Each model
    has two rows: ``"full recompute"`` (tensor parallelism with full activation recomputation, the paper's baseline)
    and ``"present work"`` (sequence parallelism with selective recomputation of the core attention). The
    configuration is the paper's Table 3, the iteration times and throughput increases its Table 4; the model and
    hardware FLOPs utilization of the ``"present work"`` rows are the table of NVIDIA/Megatron-LM's README (the same
    four configurations, "measured using a data parallel size of one").

    Returns
    -------
    DataFrame
        Two rows per model: ``model``, ``params_b``, ``attention_heads``, ``hidden_size``, ``layers``, ``tp``, ``pp``,
        ``n_gpus``, ``global_batch``, ``micro_batch``, ``experiment``, ``sequence_parallel``, ``recompute``
        (``"full"`` or ``"selective"``: Megatron's core-attention recomputation), ``iteration_time_s``,
        ``throughput_increase_pct`` (present work over full recompute), ``mfu_pct`` and ``hfu_pct`` (present work),
        ``source``.
    """
    return _read_packaged("reference/megatron_korthikanti_table4.csv")


def load_llama3_runs() -> pd.DataFrame:
    """Meta's Llama 3 405B pre-training runs as the Llama 3 paper reports them (Grattafiori et al., "The Llama 3 Herd of
    Models", arXiv:2407.21783, Table 4 with Section 3.3), transcribed with their citation: the 4D layouts (TP x CP x PP
    x DP) of the 8,192- and 16,384-GPU runs on H100 SXM5 80GB at 700 W, sequence 8,192 (131,072 with context
    parallelism), 16M tokens per batch, and the BF16 teraFLOP/s per GPU and MFU the paper reports. A visible check of
    the step model on 700 W H100s at scale; nothing is fitted on it.

    Returns
    -------
    DataFrame
        One row per run: ``model``, ``n_gpus``, ``tp``, ``cp``, ``pp``, ``dp``, ``seq_len``, ``batch_size_per_dp``
        (sequences per data-parallel rank and step), ``tokens_per_batch_millions`` (the paper's "16M": 2^24 tokens),
        ``tflops_per_gpu``, ``bf16_mfu_pct``, ``gpu`` (as the paper describes it), ``source``.
    """
    return _read_packaged("reference/llama3_herd_table4.csv")


def load_nccl_tests_p5() -> pd.DataFrame:
    """Published multi-node ``nccl-tests`` bus bandwidths of a rail-optimised H100 cluster, transcribed with their
    citation: ``all_reduce_perf`` and ``all_gather_perf`` (32 MiB to 8 GiB messages) and ``alltoall_perf`` (32 MiB to
    2 GiB) (out-of-place bus bandwidth, NCCL over AWS EFA through the aws-ofi-nccl plugin) on 2 to 32 AWS p5.48xlarge
    instances (8 H100 SXM5 with NVSwitch; 32 EFA interfaces, 3,200 Gb/s per instance: 400 Gb/s per GPU)
    (crazyguitar/aws-gpu-communication-benchmark, its ``data/`` tables; CC-BY-4.0). The measurement perfmodel's rail model is checked against
    (:mod:`perfmodel.papers.external.nccl_multinode`); nothing is fitted on it.

    Returns
    -------
    DataFrame
        One row per collective, node count and message size: ``collective`` (``"all_reduce"``, ``"all_gather"``,
        ``"alltoall"``), ``nodes``, ``n_gpus``, ``gpus_per_node``, ``message_bytes`` (nccl-tests' size: the
        all-reduced tensor, the gathered output, or what each rank sends in all), ``busbw_gb_per_s`` (nccl-tests' bus
        bandwidth, GB/s: ``S/t`` times ``2(n−1)/n`` for an all-reduce, ``(n−1)/n`` for an all-gather and an
        all-to-all), ``source``.
    """
    return _read_packaged("reference/nccl_tests_p5.csv")


def load_published_gemms() -> pd.DataFrame:
    """Published GEMM throughputs of a GPU part the catalog does not describe by its datasheet alone, transcribed with
    their citation: BF16 ``torch.mm`` (cuBLAS) and FP8 row-wise-scaled GEMMs (FBGEMM's CUTLASS kernel, the GEMM alone)
    at three large training shapes on Meta's power-limited "H100 500W" (pytorch/FBGEMM pull request #2546, its
    description). The clock such a part sustains under continuous GEMM load, below the one its datasheet peak is
    quoted at, is what a step on it runs at: :func:`perfmodel.step.kernels.sustained_clock` finds the factor on the
    tensor-core rates that makes the GEMM model reproduce the BF16 rows (the FP8 rows are a check, not fitted).

    Returns
    -------
    DataFrame
        One row per GEMM: ``gpu`` (as the source names it), ``precision`` (``"bf16"``, ``"fp8"``), ``kernel``, ``m``,
        ``n``, ``k`` (an ``m × k`` input times a ``k × n`` weight), ``tflops`` (``2·m·n·k`` over the time), ``ms``,
        ``source``.
    """
    return _read_packaged("reference/gemm_h100_500w.csv")


def load_xla_h100_gemms() -> pd.DataFrame:
    """Measured BF16 GEMM throughputs of an SXM-class H100 at its own (unlimited) power, transcribed with their
    citation: OpenXLA's default matmul performance table for ``sm_90`` (``kDefaultMatmulPTable``, the measurements
    XLA's GPU cost model interpolates), its 27 single-batch entries with ``m``, ``n`` and ``k`` each 1024, 2048 or 4096
    (every such entry: no shape chosen). The card is not named; its fastest entries (up to 808 TFLOPS) are above the
    H100 PCIe's 756 TFLOPS peak, so it is an SXM-class part. A held-out check of the GEMM model on Hopper at the
    catalog H100's datasheet clock (``perfmodel.papers.external.vidur_h100_ops``): nothing is fitted on it.

    Returns
    -------
    DataFrame
        One row per GEMM, the columns of :func:`load_published_gemms`.
    """
    return _read_packaged("reference/gemm_h100_xla.csv")


def load_mamf_matmuls() -> pd.DataFrame:
    """The fastest matmul a shape search found on each of a dozen accelerators, BF16 and FP8, transcribed with its
    citation: the "Maximum Achievable Matmul FLOPS" (MAMF) table of stas00/ml-engineering (``mamf-finder.py``: the
    mean of 100 ``torch.mm`` calls after 50 warm-ups, at the best shape of a brute-force search, one accelerator
    alone). ``gpu`` names the catalog part of each row, empty where the catalog has none (Gaudi, GH200); the table's
    "A100 PCIe" is the 80 GB part its memory table lists. Its ``theory_tflops`` are the source's (its MI355X's, 2300,
    is the MI350X's datasheet rate; the catalog's MI355X is rated 2516.6). Where the GEMM model at a part's datasheet
    clock is faster than the part's best measured matmul, the part is run at the share of its clock that reaches it
    (:func:`perfmodel.step.kernels.burst_clock_share`); every other row is a check (:func:`perfmodel.step.kernels.mamf_check`).

    Returns
    -------
    DataFrame
        One row per accelerator and precision: ``accelerator`` (as the source names it), ``gpu`` (catalog id or
        NaN), ``precision`` (``"bf16"``, ``"fp8"``), ``m``, ``n``, ``k`` (an ``m × k`` input times a ``k × n``
        matrix), ``tflops`` (the mean), ``theory_tflops``, ``torch_version``, ``notes``, ``source``.
    """
    return _read_packaged("reference/mamf_matmul.csv")


def load_rccl_allreduce() -> pd.DataFrame:
    """RCCL all-reduces measured on an 8-GPU AMD MI300X board, transcribed with their citation: the bus bandwidth of a
    4 GiB all-reduce over 2 and over 8 of its GPUs (stas00/ml-engineering's ``all_reduce_bench.py``). Every MI300X is
    linked directly to each of the 7 others, so 2 GPUs have one link and 8 have seven: a check of
    :func:`perfmodel.step.collectives.mesh_link` and of the Infinity Fabric's assumed efficiency, nothing fitted on it.

    Returns
    -------
    DataFrame
        One row per measurement: ``gpu``, ``n_gpus``, ``payload_gib``, ``busbw_gb_per_s``, ``source``.
    """
    return _read_packaged("reference/rccl_allreduce_mi300x.csv")


def load_float8_rowwise_linears() -> pd.DataFrame:
    """torchao's published microbenchmark of a float8 linear with row-wise scaling on an H100: the speedup over
    bfloat16 of ``LayerNorm -> Linear -> Sigmoid``, forward and backward under ``torch.compile``, for every forward
    shape ``M x K`` times ``K x N`` with M, K, N in 1024-32768 (216 shapes; PyTorch 2.8.0a0, June 2025), transcribed
    from the table of torchao's float8 README (pytorch/ao, ``docs/static/fp8-rowwise-perf.png``). It calibrates the
    costs of torchao's row-wise recipe beyond its GEMMs (:mod:`perfmodel.step.float8_rowwise`); no training run is in
    it.

    Returns
    -------
    DataFrame
        One row per shape: ``gpu``, ``recipe`` (``"rowwise"``), ``m``, ``k``, ``n``, ``speedup`` (bfloat16 time over
        float8 time), ``source``.
    """
    return _read_packaged("reference/float8_rowwise_linear_h100.csv")


def load_torchao_float8_checks() -> pd.DataFrame:
    """torchao's other published float8 measurements on an H100, transcribed with their citation, held out (nothing
    is fitted on them): the two worked examples of its tensorwise microbenchmark (the speedup over bfloat16 of
    ``LayerNorm -> Linear -> Sigmoid``, forward and backward, compiled, at two forward shapes; the table they come
    from is an image outside the repository) and its end-to-end torchtitan table (Llama 3 8B on 8 H100, FSDP2,
    compiled, per-operator selective checkpointing, local batch 1 at sequence 8192: tokens/s and peak memory in
    bfloat16, tensorwise with the float8 all-gather, rowwise with the bfloat16 one). Checked by
    ``perfmodel.papers.external.torchtitan_runs.torchao_float8_check``.

    Returns
    -------
    DataFrame
        One row per measurement: ``kind`` (``"microbenchmark"`` or ``"training"``), ``recipe`` (``"none"`` for
        bfloat16, ``"tensorwise"``, ``"rowwise"``), ``model``, ``n_gpus``, ``local_batch_size``, ``seq_len`` (training
        rows), ``m``, ``k``, ``n`` and ``speedup`` (microbenchmark rows), ``tokens_per_s`` (per GPU) and
        ``peak_memory_gb`` (as the README gives it: torchtitan's logged max reserved memory) of the training rows,
        ``source``.
    """
    return _read_packaged("reference/torchao_float8_h100.csv")


def load_torchtitan_memory_logs() -> pd.DataFrame:
    """torchtitan's logged memory lines from public logs, transcribed with their citation: each line's peak reserved
    memory in GiB and its share of the device's memory. torchtitan's ``DeviceMemoryMonitor`` divides by
    ``torch.cuda.get_device_properties(...).total_memory``, so ``logged_memory_gib / logged_memory_pct · 100`` is the
    GPU's memory as torch reports it: which part a source that only says "H100" ran on
    (:func:`perfmodel.datasets.llm_runs.gpu_of_device_memory`). Rows of ``kind`` ``"torchao_e2e"`` are the logs of
    torchao's end-to-end float8 runs (Llama 3 8B on 8 H100, the configuration and the authors of
    :func:`load_torchao_float8_checks`' training rows); ``"reference"`` rows come from a device their source names.

    Returns
    -------
    DataFrame
        One row per logged line: ``kind``, ``device_named`` (as the source names the GPUs), ``model``, ``recipe``
        (``"none"`` for bfloat16), ``step``, ``logged_memory_gib``, ``logged_memory_pct``, ``source``.
    """
    return _read_packaged("reference/torchtitan_memory_logs.csv")


def load_torchao_bf16_linears() -> pd.DataFrame:
    """Published times of a bfloat16 linear layer's forward and backward passes under ``torch.compile`` on the H100 of
    torchao's float8 microbenchmarks (the baseline column of a float8 linear benchmark by the author of the row-wise
    table of :func:`load_float8_rowwise_linears`, a month before it), transcribed with their citation. Three GEMMs
    each: they say which H100 that author's benchmarks ran on
    (:func:`perfmodel.step.float8_rowwise.calibration_part`).

    Returns
    -------
    DataFrame
        One row per measurement: ``name`` (the Llama 3 70B linear the shape is), ``m``, ``k``, ``n`` (an ``m x k``
        input, ``k`` in-features, ``n`` out-features), ``use_fast_accum`` (the float8 side's setting; the bfloat16
        time does not depend on it), ``ref_time_ms``, ``source``.
    """
    return _read_packaged("reference/torchao_bf16_linear_h100.csv")


def load_paper_numbers(area: str | None = None) -> pd.DataFrame:
    """Numbers the papers report, to be reproduced (``datasets/reference/paper_numbers/<area>.csv``).

    Parameters
    ----------
    area : str, optional
        File stem (``"speed"``, ``"cluster"``, ``"transient"`` ...); all areas when omitted (with an ``area`` column).

    Returns
    -------
    DataFrame
        ``area``, ``item``, ``quantity``, ``unit``, ``paper_value``, ``status``, ``rtol``, ``atol``, ``reason``,
        ``citation`` (see ``paper_numbers/README.md``).
    """
    folder = resources.files("perfmodel._data") / "reference" / "paper_numbers"
    areas = sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".csv"))
    if area is not None and area not in areas:
        raise UnknownNameError(f"Unknown paper-numbers area {area!r}. Expected one of: {', '.join(areas) or '(none yet)'}.")
    frames = []
    for a in [area] if area is not None else areas:
        df = _read_packaged(f"reference/paper_numbers/{a}.csv")
        df.insert(0, "area", a)
        frames.append(df)
    cols = ["area", "item", "quantity", "unit", "paper_value", "status", "rtol", "atol", "reason", "citation"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)


DATASETS: tuple[DatasetSpec, ...] = (
    *(
        DatasetSpec(f"transcribed:{k}", (lambda k=k: load_transcribed(k)), v, (f"reference/transcribed/{k}.csv",), "see reference/transcribed/README.md", kind="reference")
        for k, v in TRANSCRIBED.items()
    ),
    DatasetSpec("reported_cnns", load_reported_cnns, "one of the twenty CNNs with its published features", ("reference/cmdare_cnns.csv",), "ICDCS'20 §4", kind="reference"),
    DatasetSpec("gpu_catalog", load_gpu_catalog, "one GPU: peak FP32/TF32/FP16/BF16 TFLOPS, memory, SMs, L2, interconnect, sources", ("reference/gpus.csv",), "ICDCS'20 §6 (GPU TFLOPS); every current GPU", kind="catalog"),
    DatasetSpec("gpu_prices", load_gpu_prices, "one GPU VM type of a provider and region: hourly on-demand/spot price, date, source page", ("reference/gpu_prices.csv",), "today's cloud planner (beyond the papers)", kind="reference"),
    DatasetSpec("instance_networks", load_instance_networks, "one GPU VM type: its network bandwidth between instances, "
                "transport and GPUDirect RDMA, source", ("reference/instance_networks.csv",),
                "today's cloud planner (beyond the papers)", kind="reference"),
    DatasetSpec("megatron_runs", load_megatron_runs, "one Megatron-LM weak-scaling run: GPT size, TP x PP x DP on A100s, "
                "batch, achieved TFLOP/s per GPU", ("reference/megatron_sc21_table1.csv",),
                "Narayanan et al., SC'21, Table 1 (beyond the papers)", kind="reference"),
    DatasetSpec("megatron_recompute_runs", load_megatron_recompute_runs, "one Megatron-LM end-to-end run: GPT size, TP x PP "
                "on A100s, full or selective recomputation with or without sequence parallelism, iteration time, MFU",
                ("reference/megatron_korthikanti_table4.csv",),
                "Korthikanti et al., MLSys 2023, Tables 3 and 4 (beyond the papers)", kind="reference"),
    DatasetSpec("llama3_runs", load_llama3_runs, "one Llama 3 405B pre-training run: TP x CP x PP x DP on 8,192-16,384 "
                "H100 (700 W), sequence, batch, BF16 TFLOP/s per GPU and MFU", ("reference/llama3_herd_table4.csv",),
                "Grattafiori et al., The Llama 3 Herd of Models, Table 4 (beyond the papers)", kind="reference"),
    DatasetSpec("nccl_tests_p5", load_nccl_tests_p5, "one nccl-tests measurement: all-reduce, all-gather or all-to-all bus bandwidth "
                "on 2-32 AWS p5.48xlarge nodes (8 H100 each, 400 Gb/s EFA per GPU) at one message size",
                ("reference/nccl_tests_p5.csv",), "crazyguitar/aws-gpu-communication-benchmark data/ (beyond the papers)",
                kind="reference"),
    DatasetSpec("published_gemms", load_published_gemms, "one published GEMM throughput: BF16 cuBLAS or FP8 row-wise "
                "FBGEMM, m x n x k, TFLOPS, on Meta's 500 W H100", ("reference/gemm_h100_500w.csv",),
                "pytorch/FBGEMM pull request #2546 (beyond the papers)", kind="reference"),
    DatasetSpec("xla_h100_gemms", load_xla_h100_gemms, "one measured BF16 GEMM throughput of an SXM-class H100 "
                "(m, n, k in 1024-4096), TFLOPS", ("reference/gemm_h100_xla.csv",),
                "OpenXLA's default matmul performance table for sm_90 (beyond the papers)", kind="reference"),
    DatasetSpec("mamf_matmuls", load_mamf_matmuls, "one accelerator's fastest measured matmul (MAMF): BF16 or FP8, "
                "the best m x n x k of a shape search, mean TFLOPS", ("reference/mamf_matmul.csv",),
                "stas00/ml-engineering, Maximum Achievable Matmul FLOPS comparison table (beyond the papers)",
                kind="reference"),
    DatasetSpec("rccl_allreduce", load_rccl_allreduce, "one RCCL all-reduce on an 8-GPU MI300X board: GPUs, payload, "
                "bus bandwidth", ("reference/rccl_allreduce_mi300x.csv",),
                "stas00/ml-engineering, network README (beyond the papers)", kind="reference"),
    DatasetSpec("float8_rowwise_linears", load_float8_rowwise_linears, "one published float8 row-wise linear "
                "microbenchmark on an H100: speedup over bfloat16 of LayerNorm -> Linear -> Sigmoid (forward + backward, "
                "compiled) at one forward shape M x K x N", ("reference/float8_rowwise_linear_h100.csv",),
                "torchao's float8 README, row-wise scaling table (beyond the papers)", kind="reference"),
    DatasetSpec("torchao_float8_checks", load_torchao_float8_checks, "one published torchao float8 measurement on an "
                "H100: a tensorwise microbenchmark speedup over bfloat16 at one shape, or a torchtitan Llama 3 8B run's "
                "tokens/s and peak memory (bfloat16, tensorwise, rowwise)", ("reference/torchao_float8_h100.csv",),
                "torchao's float8 README, tensorwise examples and training benchmarks (beyond the papers)",
                kind="reference"),
    DatasetSpec("torchtitan_memory_logs", load_torchtitan_memory_logs, "one logged torchtitan memory line: peak "
                "reserved GiB and its share of the device (the device's memory as torch reports it), from public logs "
                "of torchao's float8 runs and of a named H100 80GB", ("reference/torchtitan_memory_logs.csv",),
                "github.com/pytorch/torchtitan/pull/808, github.com/pytorch/torchtitan/issues/1789, "
                "github.com/pytorch/ao/pull/1802 (beyond the papers)",
                kind="reference"),
    DatasetSpec("torchao_bf16_linears", load_torchao_bf16_linears, "one published bfloat16 linear forward + backward "
                "time (compiled) on the H100 of torchao's float8 microbenchmarks, m x k x n",
                ("reference/torchao_bf16_linear_h100.csv",), "github.com/pytorch/ao/pull/2185 (beyond the papers)",
                kind="reference"),
    DatasetSpec("prices", load_prices, "one GCE server type: hourly on-demand/transient price (2019)", ("reference/icac19_prices.csv",), "ICAC'19 Table II", kind="reference"),
)
