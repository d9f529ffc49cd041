"""perfmodel.datasets — every published measurement of CM-DARE (ICDCS'20), ICAC'19 and NeuSight (ASPLOS'25) as a tidy, hash-pinned frame.

Where the data comes from
-------------------------
Upstream files (cake-lab/CM-DARE @ 263b7f1, cake-lab/transient-deep-learning @ 87c6717, Apache-2.0;
sitar-lab/NeuSight @ 6945927, MIT) are listed in the registry ``datasets/registry.csv`` with their sha256. They are read from ``$PERFMODEL_DATA/<owner>/<repo>/<path>`` when
``PERFMODEL_DATA`` is set (a local mirror, e.g. ``../shared/datasets``), otherwise from a user cache filled by pooch from
the pinned commits. The hash is checked on every load. Numbers the papers report (and the arrays hard-coded in the
authors' notebooks) ship with perfmodel under ``reference/``.

Nothing is read at import time.
"""
from __future__ import annotations

import pandas as pd

from perfmodel._errors import (
    DataFormatError,
    DataIntegrityError,
    DataNotAvailableError,
    NotADataFileError,
    UnknownNameError,
)
from perfmodel.datasets import cmdare as _cmdare
from perfmodel.datasets import derived as _derived
from perfmodel.datasets import spot_traces as _spot_traces
from perfmodel.datasets import icac as _icac
from perfmodel.datasets import llm_runs as _llm_runs
from perfmodel.datasets import measurements as _measurements
from perfmodel.datasets import neusight as _neusight
from perfmodel.datasets import reference as _reference
from perfmodel.datasets._registry import (
    DownloadError,
    data_root,
    data_source,
    entry,
    read_bytes,
    read_csv,
    registry_entries,
    resolve,
)
from perfmodel.datasets._cache import clear_cache
from perfmodel.datasets._spec import DatasetSpec
from perfmodel.datasets.cmdare import (
    SPEED_FILES,
    NoSamplesError,
    load_checkpoint_samples,
    load_checkpoint_summary,
    load_chief_rejoining,
    load_cluster_runs,
    load_heldout_speed_samples,
    load_model_metadata,
    load_speed_file,
    load_speed_prediction_errors,
    load_speed_samples,
    load_speed_supertable,
    load_speed_tensorboard,
    load_speed_timeseries,
    load_speed_timeseries_summary,
    load_vm_startup,
)
from perfmodel.datasets.icac import (
    ICAC_EXPERIMENTS,
    load_adaptive_lr,
    load_icac_accuracy_curves,
    load_icac_costs,
    load_icac_runs,
    load_icac_vms,
    load_vm_lifetimes,
)
from perfmodel.datasets.gpus import (
    DEFAULT_L2_MIB,
    PRECISIONS,
    GPUSpec,
    InvalidGPUSpecError,
    UnsupportedPrecisionError,
    gpu_spec,
    matmul_peak_tflops,
    mfu_peak_tflops,
    mfu_precision,
    peak_tflops,
)
from perfmodel.datasets.names import (
    CATALOG_GPU_IDS,
    GPU_IDS,
    HELD_OUT_MODEL_IDS,
    MODEL_IDS,
    MODELS,
    REGION_IDS,
    canonical_gpu,
    canonical_model,
    canonical_region,
    model_info,
    region_of_zone,
)
from perfmodel.datasets.derived import cluster_speeds, load_zoo_features, v100_samples
from perfmodel.datasets.measurements import load_cpu_measurements
from perfmodel.datasets.spot_traces import load_spot_traces, spot_availability, spot_lifetimes
from perfmodel.datasets.llm_runs import load_torchtitan_runs, load_vidur_collectives, load_vidur_operators
from perfmodel.datasets.neusight import (
    load_neusight_devices,
    load_neusight_errors,
    load_neusight_labels,
    load_neusight_microbenchmarks,
    load_neusight_model_configs,
    load_neusight_traces,
    neusight_model_config,
    neusight_traced_config,
)
from perfmodel.datasets.reference import (
    TRANSCRIBED,
    gpu_tflops,
    load_gpu_catalog,
    load_gpu_prices,
    load_instance_networks,
    load_megatron_runs,
    load_megatron_recompute_runs,
    load_llama3_runs,
    load_nccl_tests_p5,
    load_published_gemms,
    load_xla_h100_gemms,
    load_mamf_matmuls,
    load_rccl_allreduce,
    load_float8_rowwise_linears,
    load_torchao_float8_checks,
    load_torchtitan_memory_logs,
    load_torchao_bf16_linears,
    load_paper_numbers,
    load_prices,
    load_reported_cnns,
    load_transcribed,
)

_SPECS: tuple[DatasetSpec, ...] = (*_cmdare.DATASETS, *_icac.DATASETS, *_neusight.DATASETS, *_reference.DATASETS, *_measurements.DATASETS, *_derived.DATASETS, *_spot_traces.DATASETS, *_llm_runs.DATASETS)


def _specs() -> dict[str, DatasetSpec]:
    return {s.name: s for s in _SPECS}


def load_dataset(name: str) -> pd.DataFrame:
    """Load a dataset by the name :func:`list_datasets` shows (e.g. ``"cluster_runs"``, ``"transcribed:lifetime_cdf"``)."""
    specs = _specs()
    if name not in specs:
        raise UnknownNameError(f"Unknown dataset {name!r}. Expected one of: {', '.join(specs)}. See perfmodel.datasets.list_datasets().")
    return specs[name].loader()


def list_datasets(*, with_shape: bool = True) -> pd.DataFrame:
    """What perfmodel can load: one row per dataset.

    Parameters
    ----------
    with_shape : bool, default True
        Load each dataset to report its shape (needs the data: ``PERFMODEL_DATA`` or the cache/network). With
        ``False`` nothing is read, so it works offline.

    Returns
    -------
    DataFrame
        ``name`` (for :func:`load_dataset`), ``kind`` (``upstream`` = fetched measurements, ``reference`` = reported
        numbers shipped with perfmodel, ``catalog``, ``measurements`` = perfmodel's own, ``derived`` = computed from
        the others by a fixed rule), ``loader`` (the ``perfmodel.datasets`` function),
        ``description`` (what one row is), ``rows``, ``columns`` (with ``with_shape``), ``paper`` (figures/tables
        using it), ``sources`` (upstream files, ``CM:`` = cake-lab/CM-DARE ``data/``, ``TDL:`` =
        cake-lab/transient-deep-learning ``data/``, ``NS:`` = sitar-lab/NeuSight ``scripts/asplos/``, or the shipped
        reference file).
    """
    rows = []
    for s in _SPECS:
        r = {"name": s.name, "kind": s.kind, "loader": getattr(s.loader, "__name__", ""), "description": s.description}
        if with_shape:
            df = s.loader()
            r.update(rows=int(df.shape[0]), columns=int(df.shape[1]))
        r.update(paper=s.paper, sources="; ".join(s.sources))
        rows.append(r)
    out = pd.DataFrame(rows)
    if with_shape:
        out["rows"] = out["rows"].astype("int64")
        out["columns"] = out["columns"].astype("int64")
    return out


def registry() -> pd.DataFrame:
    """The registry of upstream files: ``key``, ``repo``, ``commit``, ``path``, ``sha256``, ``size_bytes``, ``licence``, ``kind``, ``url``, ``note``."""
    return pd.DataFrame(
        [
            dict(key=e.key, repo=e.repo, commit=e.commit, path=e.path, sha256=e.sha256, size_bytes=e.size_bytes, licence=e.licence, kind=e.kind,
                 url=e.url, note=e.note)
            for e in registry_entries().values()
        ]
    )


def verify(*, kinds: tuple[str, ...] = ("csv", "json", "text", "image", "sqlite"), stop_on_network_error: bool = True) -> pd.DataFrame:
    """Check every registered upstream file: present (or downloadable) and sha256 as registered.

    Parameters
    ----------
    kinds : tuple of str
        Registry kinds to check.
    stop_on_network_error : bool, default True
        After the first failed download (network down or dropping packets) the remaining files are not tried: they
        get status ``not-checked`` instead of each waiting for the network.

    Returns
    -------
    DataFrame
        ``key``, ``kind``, ``status`` (``ok``, ``hash-mismatch``, ``missing``, ``not-checked``), ``detail``, one row per
        file. Files the registry marks as not data (HTML pages, empty) are not checked. Nothing is raised for a
        file: inspect ``status``.

    Raises
    ------
    DataNotAvailableError
        ``PERFMODEL_DATA`` names a folder that does not exist (one error instead of one per file).
    """
    data_root()  # a missing mirror folder is one error, not one per file
    rows = []
    network_failed = None
    for e in registry_entries().values():
        if e.kind not in kinds:
            continue
        if network_failed is not None:
            rows.append(dict(key=e.key, kind=e.kind, status="not-checked",
                             detail=f"not checked: the download of {network_failed.key} failed ({network_failed.cause})"))
            continue
        try:
            read_bytes(e.key)
            status, detail = "ok", ""
        except DataIntegrityError as exc:
            status, detail = "hash-mismatch", str(exc)
        except DownloadError as exc:
            status, detail = "missing", str(exc)
            if stop_on_network_error and exc.network:
                network_failed = exc
        except DataNotAvailableError as exc:
            status, detail = "missing", str(exc)
        rows.append(dict(key=e.key, kind=e.kind, status=status, detail=detail))
    return pd.DataFrame(rows, columns=["key", "kind", "status", "detail"])


__all__ = [
    # errors
    "DataFormatError", "DataIntegrityError", "DataNotAvailableError", "NotADataFileError", "UnknownNameError", "NoSamplesError",
    # registry
    "registry", "verify", "data_source", "data_root", "DownloadError", "clear_cache", "entry", "resolve", "read_bytes", "read_csv", "list_datasets", "load_dataset", "DatasetSpec",
    # perfmodel's own measurements
    "load_cpu_measurements",
    # derived by a fixed rule
    "cluster_speeds", "v100_samples", "load_zoo_features",
    # spot traces (skypilot-org/spot-traces)
    "load_spot_traces", "spot_lifetimes", "spot_availability",
    # names
    "MODELS", "MODEL_IDS", "HELD_OUT_MODEL_IDS", "GPU_IDS", "REGION_IDS", "canonical_model", "canonical_gpu", "canonical_region",
    "model_info", "region_of_zone",
    # CM-DARE
    "SPEED_FILES", "load_speed_file", "load_speed_samples", "load_heldout_speed_samples", "load_model_metadata", "load_speed_tensorboard",
    "load_speed_timeseries", "load_speed_timeseries_summary", "load_speed_supertable", "load_speed_prediction_errors", "load_cluster_runs",
    "load_checkpoint_samples", "load_checkpoint_summary", "load_vm_startup", "load_chief_rejoining",
    # NeuSight (ASPLOS'25)
    "load_neusight_labels", "load_neusight_traces", "load_neusight_microbenchmarks", "load_neusight_devices", "load_neusight_model_configs",
    "neusight_model_config", "neusight_traced_config", "load_neusight_errors",
    # LLM runs: Vidur (MLSys'24) operator and NCCL profiles, torchtitan's published training runs
    "load_vidur_operators", "load_vidur_collectives", "load_torchtitan_runs",
    # ICAC'19
    "ICAC_EXPERIMENTS", "load_vm_lifetimes", "load_icac_runs", "load_icac_vms", "load_icac_costs", "load_icac_accuracy_curves", "load_adaptive_lr",
    # reference and catalogs
    "TRANSCRIBED", "load_transcribed", "load_reported_cnns", "load_gpu_prices", "load_instance_networks", "load_megatron_runs", "load_megatron_recompute_runs", "load_llama3_runs", "load_nccl_tests_p5", "load_published_gemms", "load_xla_h100_gemms", "load_float8_rowwise_linears", "load_torchao_float8_checks", "load_torchtitan_memory_logs", "load_torchao_bf16_linears", "load_mamf_matmuls", "load_rccl_allreduce", "load_gpu_catalog", "load_prices", "gpu_tflops", "load_paper_numbers",
    # GPU specs and precisions
    "CATALOG_GPU_IDS", "GPUSpec", "gpu_spec", "peak_tflops", "matmul_peak_tflops", "mfu_precision", "mfu_peak_tflops", "DEFAULT_L2_MIB", "PRECISIONS", "UnsupportedPrecisionError", "InvalidGPUSpecError",
]
