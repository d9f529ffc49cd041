"""The runner of ``perfmodel reproduce``: discover the items, draw their figures, collect their numbers.

The items are the modules of :mod:`perfmodel.papers` (discovered, see :func:`discover_items`). For each item the
runner draws its figures (``figure(**variant)`` for each of its ``variants``; PNG and PDF) and, for an item that owns
a ``datasets/reference/paper_numbers`` area (``numbers_area``), collects its ``numbers()`` (paper value, reproduced
value, tolerance, status, reason, citation). A row of such a table belongs to the item its ``item`` column names (the
name ``datasets/reference`` uses is the item's ``legacy_id``), else to the item that computed it.

Statuses of a number: ``reproduced`` (within the EXACT tolerance), ``within tolerance`` (within an APPROX rule),
``differs`` (outside tolerance; expected when the reference gives a reason — stale output, solver version,
unrecoverable row selection), ``not reproducible`` (data missing), ``computed`` (no paper value; shown for
context), ``perfmodel result`` (perfmodel's own computed result, beyond the papers: no paper value, its protocol in the
row). A number that should reproduce but does not makes :func:`reproduce` report a failure (the CLI exits 1).

An item whose ``authors_image`` names the authors' own image of the figure (a registry file of kind ``image``) gets it
fetched through :mod:`perfmodel.datasets` (hash-verified) and copied to ``authors/<repository>/<file name>`` in the output
folder; the report shows it beside the reproduced figure.
:mod:`perfmodel.reproduce._report` writes ``numbers.json`` and the report.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from perfmodel.reproduce._items import _BY_ID, ALIASES, ITEMS, NUMBERS_AREAS, CatalogItem, Item, _owner
from perfmodel.reproduce._report import write_numbers_json, write_report
from perfmodel.reproduce._results import ReproductionResult, _isnan, number_status

__all__ = ["CatalogItem", "ITEMS", "ALIASES", "NUMBERS_AREAS", "reproduce", "ReproductionResult", "number_status", "ReproduceOutputError",
           "select_items", "EmptySelectionError"]

class ReproduceOutputError(OSError):
    """The output folder of :func:`reproduce` cannot be used (an existing file, no permission)."""


class EmptySelectionError(ValueError):
    """``only`` was given but names no item (``""``, ``","``, ``[]``): running nothing would replace a report by an
    empty one and call it a success. ``option`` is the name the message uses (``--only`` in the CLI)."""

    def __init__(self, only, option: str = "only"):
        self.only, self.option = only, option
        super().__init__(f"{option} names no item (got {only!r}). Expected comma-separated item ids, listed by "
                         f"`perfmodel reproduce --list`: {', '.join(_BY_ID)}; or leave {option} out to run every item.")


def _lost_numbers(item_id: str, why: str) -> pd.DataFrame:
    """The paper numbers a failed ``numbers()`` should have compared, with no reproduced value."""
    from perfmodel import datasets as ds
    from perfmodel.papers import COMPARISON_COLUMNS

    area = NUMBERS_AREAS.get(item_id)
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


def select_items(only=None) -> list[Item]:
    """The items ``only`` names (ids or former ids, comma-separated or a list), all of them when None.

    Raises :class:`EmptySelectionError` when ``only`` is given but names no item (``""``, ``" , "``, ``[]``)."""
    if only is None:
        return list(ITEMS)
    ids = [s.strip() for part in ([only] if isinstance(only, str) else only) for s in str(part).split(",") if s.strip()]
    if not ids:
        raise EmptySelectionError(only)
    unknown = [i for i in ids if i not in _BY_ID and i not in ALIASES]
    if unknown:
        from perfmodel._errors import UnknownNameError

        raise UnknownNameError(f"Unknown item id(s) {', '.join(unknown)}. Expected ids from `perfmodel reproduce --list`: "
                               f"{', '.join(_BY_ID)} (or a former id: {', '.join(ALIASES)}).")
    return [_BY_ID[i] for i in dict.fromkeys(ALIASES.get(i, i) for i in ids)]


def _save(fig, folder: Path, stem: str) -> None:
    import matplotlib.pyplot as plt

    from perfmodel.plotting import save_figure

    save_figure(fig, folder / stem)  # vector PDF with TrueType fonts + 300-dpi PNG, no timestamps
    plt.close(fig)


#: fewer items than this run in this process: starting worker processes (each imports perfmodel) costs more
_MIN_ITEMS_IN_PARALLEL = 4
#: worker processes at most when ``jobs`` is not given (each may hold ~1 GB while it runs an item)
_MAX_DEFAULT_JOBS = 4
#: items that take the longest (tens of seconds: model fits, traces of large models); started first, so that the
#: others fill the remaining workers around them. Order only: what an item computes does not depend on it.
_SLOW_FIRST = ("vidur_h100_ops", "torchtitan_runs", "megatron_runs", "megatron_recompute_runs", "neusight_benchmark", "lifetime_models", "cost_and_savings_tables")


def _check_jobs(jobs) -> int:
    """Worker processes for :func:`reproduce`: ``jobs`` (a positive integer), or by default the CPUs, at most
    :data:`_MAX_DEFAULT_JOBS`."""
    import os

    if jobs is None:
        return max(1, min(os.cpu_count() or 1, _MAX_DEFAULT_JOBS))
    if isinstance(jobs, bool) or not isinstance(jobs, (int, np.integer)) or jobs < 1:
        raise ValueError(f"jobs must be a positive whole number of worker processes (1: run every item in this process); "
                         f"got {jobs!r}.")
    return int(jobs)


def _set_owners(df: pd.DataFrame, item_id: str) -> None:
    """Give the numbers item ``item_id`` computed their owners, in place: a row belongs to the item named in its
    ``item`` column when there is one (one numbers() may cover several figures/tables), else to ``item_id``; its paper
    and its citation (pointing at the owner's module) follow."""
    owner = [_owner(i, item_id) for i in df["item"]]
    df.insert(0, "paper", [_BY_ID[o].paper for o in owner])
    df.insert(0, "figure_table", owner)
    df["citation"] = [_citation(c, _BY_ID[o]) for c, o in zip(df["citation"], owner)]


def _run_item(item_id: str, figdir: Path, out: Path, figures: bool) -> dict:
    """Numbers, figures and the authors' image of one item, with what failed: ``numbers`` (its rows, owners and
    citations set; None for an item without numbers), ``figures`` (stems written; None when not drawn),
    ``authors_image``, ``errors`` ([(owner item, message)]), ``missing`` ([(data group, cause, item)]), ``seconds``.
    Runs in this process or in a worker (:func:`_run_parallel`); touches nothing but ``figdir`` and ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from perfmodel.datasets._registry import DownloadError

    it = _BY_ID[item_id]
    errors: list = []
    missing: list = []

    def fail(owner, msg, exc):
        errors.append((owner, msg))
        if isinstance(exc, DownloadError):
            missing.append((exc.group, exc.cause, owner))

    t0 = time.perf_counter()
    df = None
    if it.computes_numbers:
        try:
            df = it.module.numbers().copy()
        except Exception as exc:  # its numbers are lost: every item owning some of them fails, with them listed
            why = f"numbers() of {it.id} failed with {_error_text(exc)}"
            df = _lost_numbers(it.id, why)
            owners = list(dict.fromkeys([it.id, *(_owner(i, it.id) for i in df["item"])]))
            for o in owners:
                fail(o, why if o == it.id else f"its numbers come from numbers() of item {it.id}, which failed: "
                                               f"{_error_text(exc)}", exc)
        _set_owners(df, it.id)
    stems = None
    authors = None
    if figures:
        stems = []
        with plt.rc_context({"svg.hashsalt": "perfmodel", "pdf.compression": 6}):
            for kw, stem in zip(it.variants if it.has_figure else (), it.stems()):
                try:
                    _save(it.module.figure(**kw), figdir, stem)
                    stems.append(stem)
                except Exception as exc:  # one broken figure must not hide the others; it is reported and fails the run
                    fail(it.id, _error_text(exc), exc)
                    plt.close("all")
        if it.authors_image:
            try:
                authors = (it.authors_image_stem(), *_copy_authors_image(it.authors_image, out))
            except Exception as exc:  # offline or a corrupted file: reported like a figure that failed
                fail(it.id, _error_text(exc), exc)
    return {"numbers": df, "figures": stems, "authors_image": authors, "errors": errors, "missing": missing,
            "seconds": time.perf_counter() - t0}


def _run_parallel(items, figdir: Path, out: Path, figures: bool, jobs: int, bar) -> dict:
    """:func:`_run_item` of every item in ``jobs`` worker processes (started fresh: ``spawn``), the slowest first."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    order = sorted(items, key=lambda it: (_SLOW_FIRST.index(it.id) if it.id in _SLOW_FIRST else len(_SLOW_FIRST)))
    outcomes: dict = {}
    with ProcessPoolExecutor(max_workers=min(jobs, len(items)), mp_context=multiprocessing.get_context("spawn")) as ex:
        futures = {ex.submit(_run_item, it.id, figdir, out, figures): it for it in order}
        for f in as_completed(futures):
            it = futures[f]
            try:
                outcomes[it.id] = f.result()
            except Exception as exc:  # the worker itself died (killed for memory): the item failed, the others stand
                why = f"its worker process failed: {_error_text(exc)}"
                lost = _lost_numbers(it.id, why) if it.computes_numbers else None
                if lost is not None:
                    _set_owners(lost, it.id)
                outcomes[it.id] = {"numbers": lost, "figures": [] if figures else None, "authors_image": None,
                                   "errors": [(it.id, why)], "missing": [], "seconds": float("nan")}
            bar.set_postfix_str(it.id)
            bar.update()
    return outcomes


def reproduce(out="reproduction", *, only=None, figures: bool = True, progress: bool = True,
              jobs: int | None = None) -> ReproductionResult:
    """Run every item (or ``only`` those), write figures, ``numbers.json`` and the report into ``out``.

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
    jobs : int, optional
        Worker processes that run the items side by side (each a fresh Python process); default the CPUs, at most
        4. ``1`` runs every item in this process. Selections of fewer than 4 items always run in this process. The
        numbers, figures and report are the same whatever the number.

    Returns
    -------
    ReproductionResult
        ``numbers`` (one row per quantity with ``report_status`` and ``failed``), figures written, the authors' images
        copied (``authors_images``), item errors.

    Raises
    ------
    perfmodel.datasets.UnknownNameError
        An id in ``only`` is not an item id (nor a former one).
    EmptySelectionError
        ``only`` is given but names no item (``""``); nothing is run or written.
    ReproduceOutputError
        ``out`` is an existing file, or the folder cannot be created.
    perfmodel.datasets.DataNotAvailableError
        ``PERFMODEL_DATA`` names a folder that does not exist.

    Notes
    -----
    Nothing is lost silently: when a numbers function fails, the paper numbers it compares are reported as not
    reproduced (failed where they should reproduce), and every item owning some of them is listed in ``errors``.
    """
    from tqdm.auto import tqdm

    from perfmodel.datasets import data_root

    items = select_items(only)
    jobs = _check_jobs(jobs)
    out = Path(out)
    data_root()  # a PERFMODEL_DATA naming no folder is one error, not one per item
    figdir = _prepare_out(out)
    res = ReproductionResult(out=out, numbers=pd.DataFrame())
    bar = tqdm(total=len(items), desc="perfmodel reproduce", unit="item", disable=not progress)
    outcomes: dict = {}
    if jobs > 1 and len(items) >= _MIN_ITEMS_IN_PARALLEL:
        outcomes = _run_parallel(items, figdir, out, figures, jobs, bar)
    else:
        for it in items:
            bar.set_postfix_str(it.id)
            outcomes[it.id] = _run_item(it.id, figdir, out, figures)
            bar.update()
    bar.close()
    frames = []
    for it in items:  # merged in the items' order, however they ran: the same numbers.json and report either way
        o = outcomes[it.id]
        for owner, msg in o["errors"]:
            _add_error(res, owner, msg)
        for group, cause, owner in o["missing"]:
            g = res.missing_data.setdefault(group, {"items": [], "cause": cause})
            if owner not in g["items"]:
                g["items"].append(owner)
        if o["numbers"] is not None:
            frames.append(o["numbers"])
        if o["figures"] is not None:
            res.figures[it.id] = o["figures"]
        if o["authors_image"] is not None:
            res.authors_images[it.id] = o["authors_image"]
        res.seconds[it.id] = o["seconds"]
    nums = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["figure_table", "paper", "item", "quantity", "unit", "paper_value", "reproduced", "status", "rtol", "atol",
                 "within_tolerance", "reason", "citation"])
    st = [number_status(r) for r in nums.to_dict("records")]
    nums["report_status"] = [s for s, _ in st]
    nums["failed"] = [f for _, f in st]
    res.numbers = nums
    write_numbers_json(res, items, out / "numbers.json")
    write_report(res, items, out)
    return res


def _copy_authors_image(key: str, out: Path) -> tuple[str, str]:
    """Fetch the authors' image ``key`` through the registry (hash-verified) and copy it to
    ``out/authors/<repository>/<file name>``; returns (that path relative to ``out``, the registry key)."""
    from perfmodel.datasets._registry import entry, read_bytes

    e = entry(key)
    if e.kind != "image":
        raise ValueError(f"authors_image {key!r} is a registry file of kind {e.kind!r}, not an image. Name one of the registry's "
                         "'image' files (the upstream data/img/ folders), or set authors_image=\"\" in its ITEM.")
    rel = f"authors/{e.repo.split('/')[-1]}/{Path(e.path).name}"
    dest = out / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(read_bytes(key))
    return rel, e.key


def _citation(text, item: Item):
    """The reference's citation, pointing at the item module (which holds the procedure)."""
    if _isnan(text):
        return text
    text = str(text).strip()
    return f"{text}; procedure in {item.module_name}" if text else f"procedure in {item.module_name}"
