"""``perfmodel reproduce``: every figure and table of both papers, with paper and reproduced numbers side by side.

The catalog of items (:data:`ITEMS`) lists every figure and table of CM-DARE (ICDCS'20) and ICAC'19 that
``CATALOG.md`` describes, plus perfmodel's own analyses beyond the papers. For each item the runner draws its figures
(PNG and PDF) with the ``perfmodel.figures`` functions and collects its numbers (paper value, reproduced value,
tolerance, status, reason, citation) from the ``*_data()`` comparison tables, then writes

* ``figures/<stem>.png`` and ``.pdf``;
* ``numbers.json``: one record per reported quantity, byte-identical across runs (sorted, no timestamps);
* ``report.md`` and a self-contained ``report.html`` (figures inline) with a status per number.

Statuses of a number: ``reproduced`` (within the EXACT tolerance), ``within tolerance`` (within an APPROX rule),
``differs`` (outside tolerance; expected when the catalog gives a reason — stale output, solver version,
unrecoverable row selection), ``not reproducible`` (data missing), ``computed`` (no paper value; shown for
context). A number that should reproduce but does not makes :func:`reproduce` report a failure (the CLI exits 1).

Only the CLI, notebooks and tests import this module (it imports :mod:`perfmodel.figures`).
"""
from __future__ import annotations

import base64
import html
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

__all__ = ["CatalogItem", "ITEMS", "NUMBERS_AREAS", "list_items", "items_markdown_table", "reproduce", "ReproductionResult", "number_status",
           "ReproduceOutputError"]


@dataclass(frozen=True)
class CatalogItem:
    """One figure or table of a paper (or one analysis of perfmodel's own).

    Attributes
    ----------
    id : str
        Slug, unique (``--only`` takes these).
    paper : str
        ``"CM-DARE"`` (ICDCS'20), ``"ICAC'19"`` or ``"perfmodel"`` (beyond the papers).
    title : str
        What it shows.
    section : str
        Section of ``CATALOG.md`` that specifies it.
    figures : tuple of (str, dict)
        ``perfmodel.figures`` functions returning a Figure, with their keyword arguments.
    numbers : tuple of str
        ``perfmodel.figures`` functions returning a paper-vs-reproduced table (``COMPARISON_COLUMNS``).
    notebook, test : str
        Where a reader finds it.
    unavailable : str
        Non-empty when the item cannot be reproduced at all (e.g. an architecture diagram): the reason.
    """

    id: str
    paper: str
    title: str
    section: str
    figures: tuple = ()
    numbers: tuple = ()
    notebook: str = ""
    test: str = ""
    unavailable: str = ""

    def stems(self) -> list[str]:
        """Output file stems of the figures (``<id>`` or ``<id>_<kwarg values>``)."""
        if len(self.figures) == 1:
            return [self.id]
        return [self.id + "_" + "_".join(str(v).lower() for v in kw.values()) if kw else f"{self.id}_{fn}" for fn, kw in self.figures]


def _f(name: str, **kw) -> tuple:
    return (name, kw)


_NB = "notebooks/"
#: Every figure and table of both papers (CATALOG.md §1.0 and §2) and perfmodel's own analyses.
ITEMS: tuple[CatalogItem, ...] = (
    # ---------------------------------------------------------------- CM-DARE §1.1–1.2 speed
    CatalogItem("speed_complexity_correlation", "CM-DARE", "Step time vs normalized model GFLOPs, K80 & P100, 20 CNNs", "§1.1",
                (_f("speed_complexity_correlation"),), (), _NB + "02-speed-prediction.ipynb", "tests/figures/test_speed_figures.py"),
    CatalogItem("speed_computation_correlation", "CM-DARE", "Step time vs normalized computation (model/GPU), both GPUs", "§1.1",
                (_f("speed_computation_correlation"),), (), _NB + "02-speed-prediction.ipynb", "tests/figures/test_speed_figures.py"),
    CatalogItem("figure_4", "CM-DARE", "Step time vs normalized model GFLOPs, 16 training CNNs", "§1.1",
                (_f("figure_4"),), (), _NB + "02-speed-prediction.ipynb", "tests/figures/test_speed_figures.py"),
    CatalogItem("single_worker_timeseries", "CM-DARE", "Steps/s vs step, one worker, 4 CNNs (K80 saved; P100, V100 panels)", "§1.2",
                (_f("single_worker_timeseries", gpu="K80"), _f("single_worker_timeseries", gpu="P100"), _f("single_worker_timeseries", gpu="V100")),
                ("single_worker_numbers_data",), _NB + "02-speed-prediction.ipynb", "tests/figures/test_speed_figures.py"),
    # ---------------------------------------------------------------- CM-DARE §1.3 cluster
    CatalogItem("cluster_size_training_speed", "CM-DARE", "Steps/s vs #P100 workers with 2 PS; the 96 cluster means and scaling observations", "§1.3",
                (_f("cluster_size_training_speed"),), ("cluster_speed_numbers_data",), _NB + "03-cluster-speed.ipynb",
                "tests/figures/test_cluster_figures.py"),
    CatalogItem("figure_5", "CM-DARE", "Steps/s vs #K80 and #P100 workers, 1 PS", "§1.3", (_f("figure_5"),), (), _NB + "03-cluster-speed.ipynb",
                "tests/figures/test_cluster_figures.py"),
    CatalogItem("ps_bot_p100", "CM-DARE", "1 PS vs 2 PS speed vs #P100 workers, per CNN (ps_bot_p100_1..4)", "§1.3",
                tuple(_f("ps_bot_p100", k=k) for k in (1, 2, 3, 4)), (), _NB + "03-cluster-speed.ipynb", "tests/figures/test_cluster_figures.py"),
    CatalogItem("ps_bot_k80", "CM-DARE", "K80 speed vs workers, ResNets / Shake-Shakes (ps_bot_k80_1..2)", "§1.3",
                tuple(_f("ps_bot_k80", k=k) for k in (1, 2)), (), _NB + "03-cluster-speed.ipynb", "tests/figures/test_cluster_figures.py"),
    # ---------------------------------------------------------------- CM-DARE §1.4 lifetimes
    CatalogItem("lifetime_cdf", "CM-DARE", "Lifetime CDF of transient GPU servers per region (k80/p100/v100_cdf); time between failures", "§1.4",
                tuple(_f("lifetime_cdf", gpu=g) for g in ("K80", "P100", "V100")), ("lifetime_numbers_data",), _NB + "06-lifetimes.ipynb",
                "tests/figures/test_transient_lifetime_cdf.py"),
    # ---------------------------------------------------------------- CM-DARE §1.6–1.7 checkpoint and prediction
    CatalogItem("revocations_by_hour", "CM-DARE", "Revocations per hour since VM start and per hour of day, K80/P100/V100", "§1.4",
                tuple(_f("revocations_by_hour", gpu=g, basis=b) for b in ("hours_since_start", "hour_of_day") for g in ("K80", "P100", "V100")),
                (), _NB + "09-restart-startup.ipynb", "tests/figures/test_transient_overheads.py"),
    # ---------------------------------------------------------------- CM-DARE §1.5 start-up, §1.6 restart
    CatalogItem("startup_breakdown", "CM-DARE", "VM start-up: provisioning / staging / booting (s), preemptible vs on-demand", "§1.5",
                (_f("startup_breakdown"),), ("transient_numbers_data",), _NB + "09-restart-startup.ipynb", "tests/figures/test_transient_overheads.py"),
    CatalogItem("vm_startup_exp", "CM-DARE", "Time for a new server request: immediate vs delayed", "§1.5",
                (_f("vm_startup_exp"),), (), _NB + "09-restart-startup.ipynb", "tests/figures/test_transient_overheads.py"),
    CatalogItem("tf_restart", "CM-DARE", "TensorFlow cold vs warm start", "§1.6", (_f("tf_restart"),), (), _NB + "09-restart-startup.ipynb",
                "tests/figures/test_transient_overheads.py"),
    CatalogItem("restart_training_overhead", "CM-DARE", "Extra training time vs steps since the last checkpoint", "§1.6",
                (_f("restart_training_overhead"),), (), _NB + "09-restart-startup.ipynb", "tests/figures/test_transient_overheads.py"),
    CatalogItem("chief_rejoining", "CM-DARE", "Chief rejoining: training time and final accuracy of the raw runs", "§1.6",
                (_f("chief_rejoining"),), (), _NB + "09-restart-startup.ipynb", "tests/figures/test_transient_overheads.py"),
    CatalogItem("training_time_estimates", "CM-DARE", "Estimated vs actual training time of 11 runs with a revocation", "§1.7",
                (_f("training_time_estimates"),), (), _NB + "09-restart-startup.ipynb", "tests/figures/test_transient_overheads.py"),
    CatalogItem("ckpt_duration_size_correlation", "CM-DARE", "Checkpoint time vs checkpoint size, bubble = CV", "§1.6",
                (_f("ckpt_duration_size_correlation"),), (), _NB + "05-checkpoint-time.ipynb", "tests/figures/test_checkpoint_numbers.py"),
    CatalogItem("figure_12", "CM-DARE", "Checkpoint duration mean vs size, 20 CNNs", "§1.6", (_f("figure_12"),), (), _NB + "05-checkpoint-time.ipynb",
                "tests/figures/test_checkpoint_numbers.py"),
    CatalogItem("speed_prediction", "CM-DARE", "Speed-prediction results: LR / SVR per GPU, GPU-agnostic, unseen models, sp1, supertable", "§1.7",
                (_f("speed_prediction", gpu="K80", method="linear"), _f("speed_prediction", gpu="P100", method="linear")),
                ("speed_prediction_data",), _NB + "02-speed-prediction.ipynb", "tests/figures/test_speed_prediction_numbers.py"),
    CatalogItem("checkpoint_prediction", "CM-DARE", "Checkpoint-prediction results: LR / SVR / PCA on the checkpoint data", "§1.7",
                (), ("checkpoint_prediction_data",), _NB + "05-checkpoint-time.ipynb", "tests/figures/test_checkpoint_numbers.py"),
    CatalogItem("prediction_error", "CM-DARE", "Per-model prediction error (sigmetrics_figure5_comb.csv)", "§1.7",
                (_f("prediction_error"),), (), _NB + "02-speed-prediction.ipynb", "tests/figures/test_speed_figures.py"),
    # ---------------------------------------------------------------- ICAC'19
    CatalogItem("icac_fig2", "ICAC'19", "Architecture diagram", "§2", unavailable="a diagram, no data behind it (CATALOG.md §2: n/a)"),
    CatalogItem("icac_fig1", "ICAC'19", "Heatmap: worker lifetime / cluster time of the 32 clusters of 4 transient K80", "§2",
                (_f("icac_fig1"),), (), _NB + "08-icac-tables.ipynb", "tests/figures/test_icac_cost_tables.py"),
    CatalogItem("icac_tables", "ICAC'19", "Tables I, II (savings potential), III, IV, V and the Fig. 1 / Fig. 4 annotations", "§2",
                (), ("icac_table_numbers_data",), _NB + "08-icac-tables.ipynb", "tests/figures/test_icac_cost_tables.py"),
    CatalogItem("icac_fig4", "ICAC'19", "Heatmaps of the clusters of 2 and 8 transient K80", "§2",
                (_f("icac_heatmap", n_workers=2), _f("icac_heatmap", n_workers=8)), (), _NB + "08-icac-tables.ipynb",
                "tests/figures/test_icac_cost_tables.py"),
    CatalogItem("icac_fig3", "ICAC'19", "Lifetime CDF of preemptible PS (CPU), K80, P100, V100 servers", "§2",
                (_f("icac_fig3"),), (), _NB + "09-restart-startup.ipynb", "tests/figures/test_transient_overheads.py"),
    CatalogItem("icac_fig5", "ICAC'19", "Accuracy vs steps: static 1-K80 cluster vs a growing cluster with naive and adaptive LR", "§2",
                (_f("icac_fig5"),), (), _NB + "09-restart-startup.ipynb", "tests/figures/test_transient_overheads.py"),
    CatalogItem("icac_fig6", "ICAC'19", "Normalized runtime and cost vs cluster size, 1 vs 2 PS, K80 and V100", "§2",
                (_f("icac_fig6"),), (), _NB + "04-icac-clusters.ipynb", "tests/figures/test_icac_cluster_figures.py"),
    CatalogItem("icac_fig7", "ICAC'19", "Mixed-GPU clusters normalized to homogeneous ones; headline numbers of Figs. 6–8", "§2",
                (_f("icac_fig7"),), ("icac_cluster_numbers_data",), _NB + "04-icac-clusters.ipynb", "tests/figures/test_icac_cluster_figures.py"),
    CatalogItem("icac_fig8", "ICAC'19", "Cross-region clusters normalized to single-region ones", "§2",
                (_f("icac_fig8"),), (), _NB + "04-icac-clusters.ipynb", "tests/figures/test_icac_cluster_figures.py"),
    # ---------------------------------------------------------------- beyond the papers
    CatalogItem("lifetime_models", "perfmodel", "Lifetime models (KM, exponential, Weibull, bathtub) compared by AIC per GPU", "beyond §1.4",
                tuple(_f("lifetime_models", gpu=g) for g in ("K80", "P100", "V100")), (), _NB + "06-lifetimes.ipynb",
                "tests/models/test_bathtub.py"),
    CatalogItem("plan_validation", "perfmodel", "The planner vs the measured ICAC'19 clusters: predicted vs measured time and cost", "beyond §2",
                (_f("plan_validation"),), (), _NB + "07-planner-and-revocations.ipynb", "tests/figures/test_plan_figures.py"),
    CatalogItem("revocation_expectations", "perfmodel", "Expected revocations vs job length: renewal function vs Monte Carlo", "beyond §1.4",
                (_f("revocation_expectations"),), (), _NB + "07-planner-and-revocations.ipynb", "tests/figures/test_plan_figures.py"),
    CatalogItem("checkpoint_interval", "perfmodel", "Wall time vs checkpoint interval, Young/Daly optimum vs simulation", "beyond §1.6",
                (_f("checkpoint_interval"),), (), _NB + "07-planner-and-revocations.ipynb", "tests/figures/test_plan_figures.py"),
    CatalogItem("cpu_lomo", "perfmodel", "CM-DARE's step-time regressions on perfmodel's own CPU measurements, leave-one-model-out", "beyond §1.7",
                (_f("cpu_lomo"),), (), _NB + "10-cpu-measurements.ipynb", "tests/figures/test_cpu_measurements.py"),
    CatalogItem("speed_protocols", "perfmodel", "Step-time prediction under honest protocols (LOMO, cross-GPU) vs the paper's split", "beyond §1.7",
                (_f("speed_protocols"),), (), _NB + "02-speed-prediction.ipynb", "tests/figures/test_speed_protocols.py"),
    CatalogItem("neusight_benchmark", "perfmodel", "Per-operator step-time predictor on NeuSight's single-GPU training and inference labels "
                "(V100, A100-80GB, L4, H100) vs NeuSight, Li et al., roofline, Habitat", "external benchmark",
                (_f("neusight_benchmark"),), (), _NB + "11-neusight-benchmark.ipynb", "tests/figures/test_neusight_benchmark.py"),
)

_BY_ID = {it.id: it for it in ITEMS}
assert len(_BY_ID) == len(ITEMS), "duplicate item ids"

#: The ``datasets/reference/paper_numbers`` area each numbers function compares with. When a function fails, the
#: quantities of its area are reported as not reproduced, and every catalog item owning some of them as failed (a test
#: checks on clean data that each function returns exactly the quantities of its area).
NUMBERS_AREAS: dict[str, str] = {
    "single_worker_numbers_data": "timeseries",
    "cluster_speed_numbers_data": "cluster",
    "lifetime_numbers_data": "lifetimes",
    "transient_numbers_data": "transient",
    "speed_prediction_data": "speed",
    "checkpoint_prediction_data": "checkpoint",
    "icac_table_numbers_data": "icac_tables",
    "icac_cluster_numbers_data": "icac_clusters",
}


class ReproduceOutputError(OSError):
    """The output folder of :func:`reproduce` cannot be used (an existing file, no permission)."""


def list_items() -> pd.DataFrame:
    """The catalog of items: ``id``, ``paper``, ``title``, ``section``, ``figures`` (output stems), ``numbers``,
    ``notebook``, ``test``, ``unavailable`` — the README's figure → notebook → function → test table."""
    rows = []
    for it in ITEMS:
        fns = sorted({fn for fn, _ in it.figures} | set(it.numbers))
        rows.append(dict(id=it.id, paper=it.paper, title=it.title, section=it.section, figures=" ".join(it.stems()) if it.figures else "",
                         functions=" ".join(f"pm.figures.{f}" for f in fns), notebook=it.notebook, test=it.test, unavailable=it.unavailable))
    return pd.DataFrame(rows)


def items_markdown_table() -> str:
    """The README's table: paper item → notebook → functions → test, one row per catalog item (a test keeps the
    README equal to it; regenerate with ``python -m perfmodel.reproduce --readme-table``)."""
    lines = ["| item (`--only` id) | paper, CATALOG.md | what | notebook | functions (`perfmodel.figures.…`) | test |", "|---|---|---|---|---|---|"]
    for it in ITEMS:
        fns = sorted({fn for fn, _ in it.figures} | set(it.numbers))
        nb = f"`{Path(it.notebook).stem}`" if it.notebook else "—"
        what = it.title + (f" — not reproducible: {it.unavailable}" if it.unavailable else "")
        lines.append(f"| `{it.id}` | {it.paper} {it.section} | {what} | {nb} | {', '.join(f'`{f}`' for f in fns) or '—'} | "
                     f"{f'`{it.test}`' if it.test else '—'} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------- statuses
def number_status(row) -> tuple[str, bool]:
    """(status, failed) of one comparison row (a mapping with ``paper_value``, ``reproduced``, ``status``,
    ``within_tolerance``).

    ``failed`` is True only for a number the catalog says should reproduce (EXACT or APPROX) that does not.
    """
    cat = row["status"]
    has_paper = not _isnan(row["paper_value"])
    has_rep = not _isnan(row["reproduced"])
    if cat == "NO-PAPER-VALUE":
        return "computed", False
    if cat == "MISSING" or (has_paper and not has_rep):
        return "not reproducible", cat in ("EXACT", "APPROX")
    ok = row["within_tolerance"]
    ok = bool(ok) if ok is not None and not (isinstance(ok, float) and math.isnan(ok)) and ok is not pd.NA else False
    if ok:
        return ("reproduced" if cat == "EXACT" else "within tolerance"), False
    return "differs", cat in ("EXACT", "APPROX")


def _isnan(v) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _str(v):
    return None if _isnan(v) else str(v)


def _num(v):
    """JSON value of a number: None for NaN, int when integral and small, else the float."""
    if _isnan(v):
        return None
    v = float(v)
    return int(v) if v.is_integer() and abs(v) < 2**53 else v


# ------------------------------------------------------------------------------------------------------ runner
@dataclass
class ReproductionResult:
    """What :func:`reproduce` did: the numbers, the figures written, failures, and timings."""

    out: Path
    numbers: pd.DataFrame
    figures: dict = field(default_factory=dict)  # item id -> [stems]
    errors: dict = field(default_factory=dict)  # item id -> message
    seconds: dict = field(default_factory=dict)  # item id -> wall time
    missing_data: dict = field(default_factory=dict)  # upstream dataset folder -> {"items": [ids], "cause": network's reason}

    @property
    def failed(self) -> pd.DataFrame:
        """Numbers that should reproduce and do not."""
        return self.numbers[self.numbers["failed"]] if len(self.numbers) else self.numbers

    @property
    def ok(self) -> bool:
        return not self.errors and self.failed.empty

    def summary(self) -> str:
        """One closing line: OK, or how many items failed and how many numbers should reproduce and do not."""
        n_fail = len(self.failed)
        if self.ok:
            return f"perfmodel reproduce: OK: {len(self.seconds)} items ran, every number that should reproduce does."
        items = f"{len(self.errors)} item(s) failed ({', '.join(sorted(self.errors))})" if self.errors else "0 items failed"
        return f"perfmodel reproduce: FAILED: {items}; {n_fail} number(s) that should reproduce do not."


def _owner(item, runner: str) -> str:
    """Catalog item that owns a comparison row: the one named in its ``item`` column, else the item running the function."""
    return item if isinstance(item, str) and item in _BY_ID else runner


def _lost_numbers(fn: str, runner: str, why: str) -> pd.DataFrame:
    """The paper numbers a failed numbers function should have compared, with no reproduced value."""
    from perfmodel import datasets as ds
    from perfmodel.figures._numbers import COMPARISON_COLUMNS

    area = NUMBERS_AREAS.get(fn)
    if area is None:
        return pd.DataFrame(columns=COMPARISON_COLUMNS)
    ref = ds.load_paper_numbers(area)
    ref["reproduced"] = float("nan")
    ref["within_tolerance"] = pd.array([None] * len(ref), dtype="boolean")
    ref["reason"] = f"not computed: {why}"
    return ref[COMPARISON_COLUMNS]


def _add_error(res: "ReproductionResult", item: str, msg: str) -> None:
    res.errors[item] = f"{res.errors[item]}; {msg}" if item in res.errors else msg


def _error_text(exc: BaseException) -> str:
    """``Type: message`` of an item's exception; a download failure in one line (the folder and the network's reason)."""
    from perfmodel.datasets._registry import DownloadError

    if isinstance(exc, DownloadError):
        return f"{type(exc).__name__}: data not available offline: {exc.group}/ (download failed: {exc.cause})"
    return f"{type(exc).__name__}: {exc}"


def _note_missing(res: "ReproductionResult", exc: BaseException, item: str) -> None:
    from perfmodel.datasets._registry import DownloadError

    if isinstance(exc, DownloadError):
        g = res.missing_data.setdefault(exc.group, {"items": [], "cause": exc.cause})
        if item not in g["items"]:
            g["items"].append(item)


def _prepare_out(out: Path) -> Path:
    """Create the output folders, or say in one line why they cannot be used."""
    if out.exists() and not out.is_dir():
        raise ReproduceOutputError(f"The output path {out} is an existing file, not a folder: reproduce writes figures/, numbers.json, "
                                   "report.md and report.html into a folder. Pass another --out (a new or existing folder).")
    try:
        (out / "figures").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReproduceOutputError(f"Cannot create the output folder {out / 'figures'}: {exc.strerror or exc}. Pass an --out folder "
                                   "you can write to.") from None
    return out / "figures"


def _select(only) -> list[CatalogItem]:
    if not only:
        return list(ITEMS)
    ids = [s.strip() for part in ([only] if isinstance(only, str) else only) for s in str(part).split(",") if s.strip()]
    unknown = [i for i in ids if i not in _BY_ID]
    if unknown:
        from perfmodel._errors import UnknownNameError

        raise UnknownNameError(f"Unknown item id(s) {', '.join(unknown)}. Expected ids from `perfmodel reproduce --list`: "
                               f"{', '.join(_BY_ID)}.")
    return [_BY_ID[i] for i in dict.fromkeys(ids)]


def _save(fig, folder: Path, stem: str) -> None:
    import matplotlib.pyplot as plt

    fig.savefig(folder / f"{stem}.png", dpi=150, bbox_inches="tight", metadata={"Software": None})
    fig.savefig(folder / f"{stem}.pdf", bbox_inches="tight", metadata={"Creator": None, "Producer": None, "CreationDate": None})
    plt.close(fig)


def reproduce(out="reproduction", *, only=None, figures: bool = True, progress: bool = True) -> ReproductionResult:
    """Run every catalog item (or ``only`` those), write figures, ``numbers.json`` and the report into ``out``.

    Parameters
    ----------
    out : path-like, default ``"reproduction"``
        Output folder (created; files in it are replaced).
    only : str or sequence of str, optional
        Item ids (comma-separated or a list); :func:`list_items` lists them.
    figures : bool, default True
        Draw the figures (False: numbers only, faster).
    progress : bool, default True
        A tqdm progress bar on stderr.

    Returns
    -------
    ReproductionResult
        ``numbers`` (one row per quantity with ``report_status`` and ``failed``), figures written, item errors.

    Raises
    ------
    perfmodel.datasets.UnknownNameError
        An id in ``only`` is not in the catalog.
    ReproduceOutputError
        ``out`` is an existing file, or the folder cannot be created.
    perfmodel.datasets.DataNotAvailableError
        ``PERFMODEL_DATA`` names a folder that does not exist.

    Notes
    -----
    Nothing is lost silently: when a numbers function fails, the paper numbers it compares are reported as not
    reproduced (failed where they should reproduce), and every item owning some of them is listed in ``errors``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from tqdm.auto import tqdm

    from perfmodel import figures as pmf

    from perfmodel.datasets import data_root

    items = _select(only)
    out = Path(out)
    data_root()  # a PERFMODEL_DATA naming no folder is one error, not one per item
    figdir = _prepare_out(out)
    res = ReproductionResult(out=out, numbers=pd.DataFrame())
    frames = []
    bar = tqdm(items, desc="perfmodel reproduce", unit="item", disable=not progress)
    for it in bar:
        bar.set_postfix_str(it.id)
        t0 = time.perf_counter()
        for fn in it.numbers:
            try:
                df = getattr(pmf, fn)().copy()
            except Exception as exc:  # its numbers are lost: every item owning some of them fails, with them listed
                why = f"{fn}() failed with {_error_text(exc)}"
                df = _lost_numbers(fn, it.id, why)
                owners = list(dict.fromkeys([it.id, *(_owner(i, it.id) for i in df["item"])]))
                for o in owners:
                    _add_error(res, o, why if o == it.id else f"its numbers come from {fn}() (run by item {it.id}), which failed: "
                                                              f"{_error_text(exc)}")
                    _note_missing(res, exc, o)
            # a row belongs to the catalog item named in its `item` column when there is one (a numbers function
            # may cover several figures/tables), else to the item that runs the function
            owner = [_owner(i, it.id) for i in df["item"]]
            df.insert(0, "paper", [_BY_ID[o].paper for o in owner])
            df.insert(0, "figure_table", owner)
            frames.append(df)
        if figures:
            stems = []
            with plt.rc_context({"svg.hashsalt": "perfmodel", "pdf.compression": 6}):
                for (fn, kw), stem in zip(it.figures, it.stems()):
                    try:
                        _save(getattr(pmf, fn)(**kw), figdir, stem)
                        stems.append(stem)
                    except Exception as exc:  # one broken figure must not hide the others; it is reported and fails the run
                        _add_error(res, it.id, _error_text(exc))
                        _note_missing(res, exc, it.id)
                        plt.close("all")
            res.figures[it.id] = stems
        res.seconds[it.id] = time.perf_counter() - t0
    bar.close()
    nums = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["figure_table", "paper", "item", "quantity", "unit", "paper_value", "reproduced", "status", "rtol", "atol",
                 "within_tolerance", "reason", "citation"])
    st = [number_status(r) for r in nums.to_dict("records")]
    nums["report_status"] = [s for s, _ in st]
    nums["failed"] = [f for _, f in st]
    res.numbers = nums
    _write_numbers_json(res, items, out / "numbers.json")
    md, body = _report(res, items)
    (out / "report.md").write_text(md, encoding="utf-8")
    (out / "report.html").write_text(body, encoding="utf-8")
    return res


def _write_numbers_json(res: ReproductionResult, items: list[CatalogItem], path: Path) -> None:
    recs = []
    for r in res.numbers.to_dict("records"):
        recs.append({
            "id": r["figure_table"], "paper": r["paper"], "item": _str(r["item"]), "quantity": r["quantity"], "unit": _str(r["unit"]),
            "paper_value": _num(r["paper_value"]), "reproduced_value": _num(r["reproduced"]),
            "tolerance": {"rtol": _num(r["rtol"]), "atol": _num(r["atol"])}, "catalog_status": r["status"],
            "status": r["report_status"], "should_reproduce_but_does_not": bool(r["failed"]),
            "reason": _str(r["reason"]), "citation": _str(r["citation"]),
        })
    recs.sort(key=lambda d: (d["id"], d["item"] or "", d["quantity"]))
    errors = {k: res.errors[k] for k in sorted(res.errors)}
    doc = {"perfmodel_numbers": 1, "items": sorted(it.id for it in items), "errors": errors, "numbers": recs}
    path.write_text(json.dumps(doc, indent=1, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8")


# ------------------------------------------------------------------------------------------------------ report
def _fmt(v) -> str:
    if _isnan(v):
        return "—"
    v = float(v)
    if v.is_integer() and abs(v) < 1e12:
        return str(int(v))
    return f"{v:.6g}" if abs(v) >= 1e-3 else f"{v:.4e}"


def _rel(p, r) -> str:
    if _isnan(p) or _isnan(r) or float(p) == 0:
        return ""
    return f"{(float(r) - float(p)) / abs(float(p)) * 100:+.3g} %"


_BADGE = {"reproduced": "✅ reproduced", "within tolerance": "✅ within tolerance", "differs": "⚠️ differs", "not reproducible": "⛔ not reproducible",
          "computed": "· computed"}


def _report(res: ReproductionResult, items: list[CatalogItem]) -> tuple[str, str]:
    nums = res.numbers
    counts = nums["report_status"].value_counts() if len(nums) else pd.Series(dtype=int)
    head = ["# perfmodel reproduction report", "",
            "CM-DARE (Li, Walls, Guo, ICDCS 2020) and \"Speeding up Deep Learning with Transient Servers\" (ICAC 2019), "
            "rebuilt from the published measurements. Paper value next to reproduced value; the tolerance and the catalog's "
            "reason for every difference come from `datasets/reference/paper_numbers/` (CATALOG.md).", "",
            "| status | numbers |", "|---|---|"]
    head += [f"| {_BADGE[s]} | {int(counts.get(s, 0))} |" for s in _BADGE]
    n_fail = int(nums["failed"].sum()) if len(nums) else 0
    head += ["", f"Numbers that should reproduce and do not: **{n_fail}**. Items that failed to run: **{len(res.errors)}**.", ""]
    if res.errors:
        head += ["Failed items:", ""] + [f"- `{k}`: {res.errors[k]}" for k in sorted(res.errors)] + [""]
    md, hb = list(head), []
    hb.append(_md_table_to_html(head))
    for paper in ("CM-DARE", "ICAC'19", "perfmodel"):
        its = [it for it in items if it.paper == paper]
        if not its:
            continue
        title = {"CM-DARE": "CM-DARE (ICDCS'20)", "ICAC'19": "ICAC'19", "perfmodel": "Beyond the papers (perfmodel)"}[paper]
        md += [f"## {title}", ""]
        hb.append(f"<h2>{html.escape(title)}</h2>")
        for it in its:
            sec = [f"### `{it.id}` — {it.title}", "", f"CATALOG.md {it.section}. Notebook: `{it.notebook or '—'}`. Test: `{it.test or '—'}`.", ""]
            hsec = [f"<h3><code>{html.escape(it.id)}</code> — {html.escape(it.title)}</h3>",
                    f"<p>CATALOG.md {html.escape(it.section)}. Notebook: <code>{html.escape(it.notebook or '—')}</code>. "
                    f"Test: <code>{html.escape(it.test or '—')}</code>.</p>"]
            if it.unavailable:
                sec += [f"{_BADGE['not reproducible']}: {it.unavailable}", ""]
                hsec.append(f"<p>{_BADGE['not reproducible']}: {html.escape(it.unavailable)}</p>")
            if it.id in res.errors:
                sec += [f"**ERROR**: `{res.errors[it.id]}`", ""]
                hsec.append(f"<p><b>ERROR</b>: <code>{html.escape(res.errors[it.id])}</code></p>")
            for stem in res.figures.get(it.id, []):
                sec += [f"![{stem}](figures/{stem}.png)", ""]
                png = (res.out / "figures" / f"{stem}.png").read_bytes()
                hsec.append(f'<figure><img alt="{html.escape(stem)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'
                            f"<figcaption>{html.escape(stem)}</figcaption></figure>")
            sub = nums[nums["figure_table"] == it.id] if len(nums) else nums
            if len(sub):
                rows = ["| quantity | unit | paper | reproduced | diff | status | reason |", "|---|---|---|---|---|---|---|"]
                for r in sub.to_dict("records"):
                    reason = "" if _isnan(r["reason"]) else str(r["reason"]).replace("|", "/")
                    rows.append(f"| `{r['quantity']}` | {r['unit'] if not _isnan(r['unit']) else ''} | {_fmt(r['paper_value'])} | "
                                f"{_fmt(r['reproduced'])} | {_rel(r['paper_value'], r['reproduced'])} | {_BADGE[r['report_status']]}"
                                f"{' **(unexpected)**' if r['failed'] else ''} | {reason} |")
                sec += rows + [""]
                hsec.append(_md_table_to_html(rows))
            elif not it.unavailable and it.id not in res.errors:
                sec += ["Figure regenerated from the data; the catalog quotes no number for it beyond those checked in its test.", ""]
            md += sec
            hb += hsec
    css = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}table{border-collapse:collapse;"
           "font-size:13px}td,th{border:1px solid #ccc;padding:2px 6px}img{max-width:520px}figure{display:inline-block;margin:4px}")
    page = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>perfmodel reproduction report</title>"
            f"<style>{css}</style></head><body>" + "\n".join(hb) + "</body></html>\n")
    return "\n".join(md) + "\n", page


def _md_table_to_html(lines: list[str]) -> str:
    """The few markdown constructs the report uses (headings, paragraphs, pipe tables, bold, code) as HTML."""
    import re

    def inline(s: str) -> str:
        s = html.escape(s)
        s = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", s)
        return re.sub(r"`(.+?)`", r"<code>\1</code>", s)

    out, table = [], []
    for ln in lines + [""]:
        if ln.startswith("|"):
            if not set(ln.replace("|", "").strip()) <= {"-", " "}:
                table.append([c.strip() for c in ln.strip("|").split("|")])
            continue
        if table:
            hdr, *body = table
            out.append("<table><tr>" + "".join(f"<th>{inline(c)}</th>" for c in hdr) + "</tr>"
                       + "".join("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in r) + "</tr>" for r in body) + "</table>")
            table = []
        if ln.startswith("# "):
            out.append(f"<h1>{inline(ln[2:])}</h1>")
        elif ln.strip():
            out.append(f"<p>{inline(ln)}</p>")
    return "\n".join(out)


if __name__ == "__main__":  # pragma: no cover
    import sys

    if sys.argv[1:] == ["--readme-table"]:
        print(items_markdown_table())
    else:
        sys.exit("usage: python -m perfmodel.reproduce --readme-table   (the command is `perfmodel reproduce`)")
