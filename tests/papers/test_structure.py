"""The papers as packages: every item module has the same public shape, ids are unique, items are discovered,
`perfmodel.figures` stays a working alias, and nothing user-facing cites a document outside the project."""
from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import matplotlib
import pandas as pd
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from perfmodel.papers import COMPARISON_COLUMNS, ITEM_METADATA, PACKAGES, Item, NoFigureError  # noqa: E402
from perfmodel.reproduce import ALIASES, ITEMS, discover_items  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

#: Every public name perfmodel.figures exported before the papers became packages.
FIGURES_NAMES = """BENCHMARK_GPUS CPU_FEATURE_SETS campaign_floor checkpoint_interval checkpoint_interval_data checkpoint_prediction_data chief_rejoining chief_rejoining_data ckpt_duration_size_correlation ckpt_duration_size_correlation_data cluster_size_training_speed cluster_size_training_speed_data cluster_speed_numbers_data cluster_speed_observations cmdare_op_model_data cpu_lomo cpu_lomo_data cpu_step_times estimate_time_after_revocation figure_12 figure_12_data figure_4 figure_4_data figure_5 figure_5_data icac_cluster_numbers_data icac_fig1 icac_fig3 icac_fig3_data icac_fig4 icac_fig5 icac_fig5_data icac_fig6 icac_fig6_data icac_fig7 icac_fig7_data icac_fig8 icac_fig8_data icac_heatmap icac_heatmap_data icac_table_i_data icac_table_iii_data icac_table_iv_data icac_table_numbers_data icac_table_v_data lifetime_cdf lifetime_cdf_data lifetime_models lifetime_models_data lifetime_numbers_data neusight_benchmark neusight_benchmark_data neusight_benchmark_summary plan_validation plan_validation_data prediction_error prediction_error_data ps_bot_k80 ps_bot_k80_data ps_bot_p100 ps_bot_p100_data reproduce_checkpoint_numbers reproduce_speed_numbers restart_training_overhead restart_training_overhead_data revocation_expectations revocation_expectations_data revocations_by_hour revocations_by_hour_data single_worker_mean_speeds single_worker_numbers_data single_worker_timeseries single_worker_timeseries_data speed_complexity_correlation speed_complexity_correlation_data speed_computation_correlation speed_computation_correlation_data speed_prediction speed_prediction_data speed_protocols speed_protocols_data startup_breakdown startup_breakdown_data tf_restart tf_restart_data training_time_estimates training_time_estimates_data transient_numbers_data v100_samples vm_startup_exp vm_startup_exp_data""".split()

_TYPES = dict(paper=str, number=str, title=str, upstream=str, sources=tuple, procedure=str, tolerance=str, status=str, unavailable=str,
              no_figure=str, no_numbers=str, numbers_area=str, numbers_from=str, legacy_id=str, variants=tuple, notebook=str, test=str,
              authors_image=str)


def test_items_are_discovered_from_every_public_module_of_the_paper_packages():
    mods = sorted(p.stem for pkg in PACKAGES for p in (ROOT / "perfmodel/papers" / pkg).glob("*.py") if not p.name.startswith("_"))
    assert sorted(it.id for it in ITEMS) == mods and len(ITEMS) == 46
    assert len({it.id for it in ITEMS}) == len(ITEMS), "item ids (module names) must be unique over the packages"
    assert discover_items() == ITEMS
    assert [it.package for it in discover_items(("icac19",))] == ["icac19"] * 9


@pytest.mark.parametrize("item", ITEMS, ids=lambda it: it.id)
def test_every_item_module_has_the_same_public_shape(item):
    mod = item.module
    assert mod.__all__ == ["ITEM", "data", "numbers", "figure"]
    assert isinstance(mod.ITEM, Item), "the module declares its metadata in one ITEM = Item(...)"
    assert not [n for n in dir(mod) if n.upper() == n and n.lower() in ITEM_METADATA], "no metadata constant beside ITEM"
    assert set(_TYPES) == set(ITEM_METADATA)
    d = item.declaration
    for name, typ in _TYPES.items():
        assert isinstance(getattr(d, name), typ), (item.id, name)
        assert getattr(item, name) == getattr(d, name)
    assert d.paper in ("CM-DARE", "ICAC'19", "perfmodel") and d.title and d.number and d.legacy_id and d.procedure
    assert d.sources or d.unavailable, "the data it reads, or why it reads none"
    doc = inspect.getdoc(mod)
    assert doc and doc.splitlines()[0] == d.title + "."
    assert "Procedure" not in doc and "Sources" not in doc.split("\n"), "the procedure and sources are said once, in ITEM"
    assert item.docstring.endswith("Procedure\n---------\n" + d.procedure)
    params = list(inspect.signature(mod.figure).parameters)
    assert params[:2] == ["data", "ax"], params
    assert all(set(v) <= set(params) for v in d.variants), "every variant's keywords are figure() parameters"
    assert all(set(v) <= set(inspect.signature(mod.data).parameters) for v in d.variants)
    assert inspect.signature(mod.numbers).parameters == {}
    # a figure, or the reason there is none; numbers, or the reason there are none
    assert bool(d.variants) != bool(d.no_figure)
    # a paper item compares an area (or takes its rows from the item that does) or says why it has no numbers; an item of
    # perfmodel's own (beyond, external) computes its own results: no area, no no_numbers
    if item.package in ("beyond", "external"):
        assert not (d.numbers_area or d.numbers_from or d.no_numbers) and item.computes_numbers
    else:
        assert bool(d.numbers_area or d.numbers_from) != bool(d.no_numbers)
        assert item.computes_numbers == bool(d.numbers_area)
    assert not (d.numbers_area and d.numbers_from)
    if d.numbers_from:
        src = next(it for it in ITEMS if it.id == d.numbers_from)
        assert src.numbers_area, "numbers_from names an item that computes an area"
    if d.unavailable:
        assert d.no_figure and d.no_numbers and d.unavailable in d.no_figure
    else:
        assert (ROOT / d.notebook).is_file() and (ROOT / d.test).is_file()


def test_a_bad_declaration_says_what_is_wrong():
    base = dict(paper="CM-DARE", number="Fig. 1", title="t", upstream="-", sources=("s",), procedure="p", status="EXACT-DATA")
    assert Item(**base).tolerance.startswith("EXACT numbers") and Item(**{**base, "paper": "perfmodel"}).tolerance.startswith("none")
    with pytest.raises(ValueError, match=r"Item paper must be one of \('CM-DARE', \"ICAC'19\", 'perfmodel'\); got 'ICDCS'"):
        Item(**{**base, "paper": "ICDCS"})
    with pytest.raises(TypeError, match=r"Item sources must be a tuple; got str 's'"):
        Item(**{**base, "sources": "s"})
    with pytest.raises(ValueError, match=r"no figure .* but lists variants"):
        Item(**{**base, "no_figure": "a table"})
    with pytest.raises(TypeError, match=r"variants must be a tuple of keyword dicts"):
        Item(**{**base, "variants": ("K80",)})
    with pytest.raises(dataclasses.FrozenInstanceError):
        Item(**base).title = "other"


def test_every_authors_image_of_the_registry_belongs_to_one_item_with_a_figure():
    """The authors' own images (the upstream data/img/ files, kind 'image' in the registry) are mapped to items by their
    AUTHORS_IMAGE metadata: each registry image to exactly one item, which has a figure to show it beside."""
    from perfmodel.datasets._registry import entry, registry_entries

    images = sorted(k for k, e in registry_entries().items() if e.kind == "image")
    assert len(images) == 6
    by_item = {it.id: entry(it.authors_image).key for it in ITEMS if it.authors_image}
    assert sorted(by_item.values()) == images
    assert all(next(it for it in ITEMS if it.id == i).has_figure for i in by_item)
    assert by_item["server_lifetime_cdf"] == "cake-lab/CM-DARE/data/img/k80_cdf.png"
    assert by_item["mixed_gpu_clusters"] == "cake-lab/transient-deep-learning/data/img/hetero_cost.png"


@pytest.mark.parametrize("item_id, stem", [
    ("server_lifetime_cdf", "server_lifetime_cdf_k80"),  # k80_cdf.png: the K80 variant
    ("ps_bottleneck_p100", "ps_bottleneck_p100_1"),  # ps_bot_p100_1.png: k=1
    ("cluster_lifetime_heatmaps_2_8_workers", "cluster_lifetime_heatmaps_2_8_workers"),  # one figure, both panels as the paper
    ("step_time_vs_model_gflops", "step_time_vs_model_gflops"),  # one figure
    ("tensorflow_cold_warm_start", None),  # no image
])
def test_the_authors_image_goes_beside_the_figure_of_its_variant(item_id, stem):
    it = next(i for i in ITEMS if i.id == item_id)
    assert it.authors_image_stem() == stem
    assert stem is None or stem in it.stems()


def test_former_ids_are_aliases_and_never_collide_with_ids():
    ids = {it.id for it in ITEMS}
    assert not set(ALIASES) & ids and set(ALIASES.values()) <= ids
    assert ALIASES["icac_fig6"] == "runtime_cost_vs_cluster_size" and ALIASES["figure_4"] == "step_time_vs_model_gflops_training_cnns"


def test_items_without_numbers_or_figure_say_so():
    from perfmodel.papers.icac19 import architecture_diagram, cost_and_savings_tables
    from perfmodel.papers.cmdare import tensorflow_cold_warm_start

    nums = tensorflow_cold_warm_start.numbers()
    assert list(nums.columns) == COMPARISON_COLUMNS and nums.empty
    with pytest.raises(NoFigureError, match=r"Item architecture_diagram has no figure: Not reproducible: a diagram, no data behind it\. "
                                            r"Use its data\(\) and numbers\(\) instead\."):
        architecture_diagram.figure()
    with pytest.raises(ValueError, match=r"Item cost_and_savings_tables has no figure: Tables; their figures are the heatmap items"):
        cost_and_savings_tables.figure()
    assert architecture_diagram.data().empty and architecture_diagram.numbers().empty


def test_tables_item_data_picks_a_table():
    from perfmodel.papers.icac19 import cost_and_savings_tables
    import perfmodel.figures as pmf

    pd.testing.assert_frame_equal(cost_and_savings_tables.data("IV"), pmf.icac_table_iv_data())
    with pytest.raises(ValueError, match=r"table must be one of \['I', 'III', 'IV', 'V'\]; got 'II'\."):
        cost_and_savings_tables.data("II")


def test_an_item_fed_by_another_returns_its_own_rows():
    from perfmodel.papers.cmdare import chief_rejoining, vm_startup_breakdown

    mine = chief_rejoining.numbers()
    allrows = vm_startup_breakdown.numbers()
    assert len(mine) == 18 and set(mine["item"]) == {"chief_rejoining"}
    pd.testing.assert_frame_equal(mine, allrows[allrows["item"] == "chief_rejoining"].reset_index(drop=True))


def test_figure_draws_into_the_callers_axes():
    from perfmodel.papers.cmdare import cluster_speed_vs_workers_one_ps, tensorflow_cold_warm_start

    fig, ax = plt.subplots()
    assert tensorflow_cold_warm_start.figure(ax=ax) is fig and len(ax.patches) >= 2
    fig2, axes = plt.subplots(2, 1)
    assert cluster_speed_vs_workers_one_ps.figure(ax=axes) is fig2 and all(a.lines or a.containers for a in axes)
    with pytest.raises(ValueError, match=r"This figure has 2 panel\(s\) \(1×2\); got 1 Axes in ax\. Pass ax=None for a new figure, or "
                                         r"exactly 2 Axes \(e\.g\. fig\.subplots\(1, 2\)\)\."):
        cluster_speed_vs_workers_one_ps.figure(ax=ax)
    _, other = plt.subplots()
    with pytest.raises(ValueError, match=r"The 2 Axes in ax belong to 2 different figures; pass Axes of one figure\."):
        cluster_speed_vs_workers_one_ps.figure(ax=[ax, other])
    plt.close("all")


def test_figure_takes_the_callers_data():
    from perfmodel.papers.cmdare import server_lifetime_cdf

    d = server_lifetime_cdf.data(gpu="V100")
    one = d[d["region"] == d["region"].iloc[0]]
    fig = server_lifetime_cdf.figure(one, gpu="V100")
    assert len(fig.axes[0].lines) == 1
    plt.close("all")


def test_a_figure_drawn_from_a_fit_refuses_data():
    from perfmodel.papers.beyond import lifetime_models

    with pytest.raises(ValueError, match=r"The figure of item lifetime_models is drawn from a fit, not from a data frame; got data of type "
                                         r"DataFrame\. Pass data=None"):
        lifetime_models.figure(pd.DataFrame())


def test_figures_alias_keeps_every_public_name():
    import perfmodel.figures as pmf

    assert len(FIGURES_NAMES) == 91
    missing = [n for n in FIGURES_NAMES if not hasattr(pmf, n)]
    assert not missing and set(FIGURES_NAMES) <= set(pmf.__all__)
    from perfmodel.figures import icac_fig7, single_worker_numbers_data  # noqa: F401  (importable by name)
    from perfmodel.papers.icac19 import _clusters

    assert pmf.icac_fig7 is _clusters.icac_fig7


def _py_files(*parts):
    for part in parts:
        p = ROOT / part
        yield from ([p] if p.is_file() else sorted(p.rglob("*.py")))


def test_no_user_facing_text_cites_a_document_outside_the_project():
    """The reproduction (papers, reproduce, figures, plotting, CLI) and the README cite the item modules instead."""
    files = [*_py_files("perfmodel/papers", "perfmodel/reproduce", "perfmodel/figures", "perfmodel/plotting.py", "perfmodel/cli/"),
             ROOT / "README.md"]
    hits = [f"{f.relative_to(ROOT)}:{i}" for f in files for i, ln in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
            if "CATALOG.md" in ln]
    assert not hits, hits


def test_only_the_runner_the_cli_and_the_figures_alias_import_papers():
    allowed = ("perfmodel/papers/", "perfmodel/reproduce/", "perfmodel/figures/", "perfmodel/cli/")
    pat = re.compile(r"^\s*(from perfmodel\.papers|import perfmodel\.papers|from perfmodel import .*\bpapers\b)", re.M)
    bad = [str(f.relative_to(ROOT)) for f in _py_files("perfmodel") if pat.search(f.read_text(encoding="utf-8"))
           and not str(f.relative_to(ROOT)).startswith(allowed)]
    assert not bad, bad
