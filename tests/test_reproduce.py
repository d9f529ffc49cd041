"""`perfmodel reproduce`: every item (discovered from perfmodel.papers) runs, the report puts paper and reproduced numbers side by side,
`numbers.json` is deterministic, and a number that should reproduce but does not fails the command."""
from __future__ import annotations

import base64
import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfmodel.cli import main
from perfmodel.papers.cmdare import (
    server_lifetime_cdf,
    single_worker_speed_timeseries,
    step_time_vs_model_gflops_training_cnns,
    vm_startup_breakdown,
)
from perfmodel.reproduce import ALIASES, ITEMS, list_items, number_status, reproduce

ROOT = Path(__file__).resolve().parents[1]


def test_every_item_points_at_existing_notebooks_and_tests():
    for it in ITEMS:
        if it.unavailable:
            assert not it.has_figure and not it.numbers_area and not it.numbers_from
        else:
            assert it.has_figure or it.numbers_area or it.numbers_from, it.id
            assert (ROOT / it.notebook).is_file(), it.notebook
            assert (ROOT / it.test).is_file(), it.test
    items = list_items()
    assert items["id"].is_unique and set(items["paper"]) <= {"CM-DARE", "ICAC'19", "perfmodel"}
    assert len(items) == 46 and items["legacy_id"].is_unique


@pytest.mark.parametrize("row, expected", [
    (dict(paper_value=1.0, reproduced=1.0, status="EXACT", within_tolerance=True), ("reproduced", False)),
    (dict(paper_value=1.0, reproduced=1.004, status="APPROX", within_tolerance=True), ("within tolerance", False)),
    (dict(paper_value=1.0, reproduced=2.0, status="EXACT", within_tolerance=False), ("differs", True)),
    (dict(paper_value=1.0, reproduced=2.0, status="APPROX", within_tolerance=False), ("differs", True)),
    (dict(paper_value=1.0, reproduced=2.0, status="STALE", within_tolerance=False), ("differs", False)),
    (dict(paper_value=1.0, reproduced=2.0, status="DIFFERS", within_tolerance=pd.NA), ("differs", False)),
    (dict(paper_value=1.0, reproduced=np.nan, status="STALE", within_tolerance=pd.NA), ("not reproducible", False)),
    (dict(paper_value=1.0, reproduced=np.nan, status="EXACT", within_tolerance=pd.NA), ("not reproducible", True)),
    (dict(paper_value=np.nan, reproduced=3.0, status="NO-PAPER-VALUE", within_tolerance=pd.NA), ("computed", False)),
    (dict(paper_value=np.nan, reproduced=3.0, status="PERFMODEL-RESULT", within_tolerance=pd.NA), ("perfmodel result", False)),
])
def test_number_status(row, expected):
    assert number_status(row) == expected


def test_subset_writes_figures_numbers_and_report_deterministically(tmp_path):
    only = ["single_worker_timeseries", "icac_fig2", "figure_4"]  # former ids are accepted
    new = ["single_worker_speed_timeseries", "architecture_diagram", "step_time_vs_model_gflops_training_cnns"]
    assert [ALIASES[i] for i in only] == new
    a = reproduce(tmp_path / "a", only=only, progress=False)
    b = reproduce(tmp_path / "b", only=",".join(new), progress=False, figures=False)
    assert a.ok and not a.errors
    assert (tmp_path / "a" / "numbers.json").read_bytes() == (tmp_path / "b" / "numbers.json").read_bytes()
    for stem in ("single_worker_speed_timeseries_k80", "single_worker_speed_timeseries_v100", "step_time_vs_model_gflops_training_cnns"):
        for ext in ("png", "pdf"):
            assert (tmp_path / "a" / "figures" / f"{stem}.{ext}").stat().st_size > 1000
    doc = json.loads((tmp_path / "a" / "numbers.json").read_text())
    assert doc["items"] == sorted(new) and doc["errors"] == {}
    rec = {r["quantity"]: r for r in doc["numbers"]}
    r = rec["k80_resnet-15_mean_speed_steps_per_s"]  # CM-DARE's single-worker K80 ResNet-15 mean: 9.4527 steps/s
    assert r["paper_value"] == 9.4527 and r["reproduced_value"] == pytest.approx(9.4527, abs=5e-5)
    assert r["status"] == "reproduced" and r["tolerance"] == {"rtol": 0, "atol": 5e-05} and r["id"] == "single_worker_speed_timeseries"
    assert r["citation"].endswith("; procedure in perfmodel.papers.cmdare.single_worker_speed_timeseries")
    assert set(r) >= {"id", "quantity", "unit", "paper_value", "reproduced_value", "tolerance", "status", "citation"}
    md = (tmp_path / "a" / "report.md").read_text()
    assert "| `k80_resnet-15_mean_speed_steps_per_s` | steps_per_s | 9.4527 |" in md
    assert "not reproducible**" not in md and "a diagram, no data behind it" in md
    # the report cites the item's module and quotes its docstring (procedure, sources, quirks)
    assert "Module: `perfmodel.papers.cmdare.single_worker_speed_timeseries` (former id `single_worker_timeseries`)" in md
    assert "These are the only V100 speed measurements in the data." in md and "**Procedure**" in md
    # nothing cites a document outside the project
    for text in (md, (tmp_path / "a" / "numbers.json").read_text(), (tmp_path / "a" / "report.html").read_text()):
        assert "CATALOG" not in text
    page = (tmp_path / "a" / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 4 and "<table>" in page and "src=\"figures/" not in page


def test_the_report_shows_the_authors_image_beside_the_reproduced_figure(tmp_path):
    from perfmodel.datasets._registry import read_bytes

    only = "server_lifetime_cdf,step_time_vs_model_gflops"
    a = reproduce(tmp_path / "a", only=only, progress=False)
    b = reproduce(tmp_path / "b", only=only, progress=False)
    assert a.ok and a.authors_images == {
        "server_lifetime_cdf": ("server_lifetime_cdf_k80", "authors/CM-DARE/k80_cdf.png", "cake-lab/CM-DARE/data/img/k80_cdf.png"),
        "step_time_vs_model_gflops": ("step_time_vs_model_gflops", "authors/CM-DARE/speed_complexity_correlation.png",
                                      "cake-lab/CM-DARE/data/img/speed_complexity_correlation.png")}
    img = read_bytes("CM:img/k80_cdf.png")  # fetched through the registry (hash-verified), copied byte for byte
    assert (tmp_path / "a" / "authors/CM-DARE/k80_cdf.png").read_bytes() == img
    md = (tmp_path / "a" / "report.md").read_text()
    assert ("| perfmodel: `server_lifetime_cdf_k80` | the authors' image: cake-lab/CM-DARE/data/img/k80_cdf.png |\n|---|---|\n"
            "| ![server_lifetime_cdf_k80](figures/server_lifetime_cdf_k80.png) | "
            "![the authors' image: cake-lab/CM-DARE/data/img/k80_cdf.png](authors/CM-DARE/k80_cdf.png) |") in md
    assert "![server_lifetime_cdf_p100](figures/server_lifetime_cdf_p100.png)" in md  # the other variants stand alone
    page = (tmp_path / "a" / "report.html").read_text()
    assert page.count('<div class="pair">') == 2 and base64.b64encode(img).decode() in page
    assert "<figcaption>the authors&#x27; image: cake-lab/CM-DARE/data/img/k80_cdf.png</figcaption>" in page
    # byte-identical across runs (relative paths, no timestamps)
    for rel in ("report.md", "report.html", "numbers.json", "authors/CM-DARE/k80_cdf.png", "figures/server_lifetime_cdf_k80.png"):
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel


def test_an_authors_image_that_is_not_an_image_fails_the_item(tmp_path, monkeypatch):
    from perfmodel.papers.cmdare import step_time_vs_model_gflops

    monkeypatch.setattr(step_time_vs_model_gflops, "ITEM", dataclasses.replace(step_time_vs_model_gflops.ITEM,
                                                                          authors_image="CM:processed_data/checkpoint/ckpt.csv"))
    res = reproduce(tmp_path, only="step_time_vs_model_gflops", progress=False)
    assert res.errors == {"step_time_vs_model_gflops": "ValueError: authors_image 'CM:processed_data/checkpoint/ckpt.csv' is a registry "
                          "file of kind 'csv', not an image. Name one of the registry's 'image' files (the upstream data/img/ folders), "
                          "or set authors_image=\"\" in its ITEM."}
    assert not res.ok and res.figures["step_time_vs_model_gflops"] == ["step_time_vs_model_gflops"]


def test_perfmodels_own_results_are_numbers_with_their_protocol_in_the_report(tmp_path, capsys):
    assert main(["reproduce", "--only", "checkpoint_interval,revocation_expectations", "--out", str(tmp_path), "--no-figures",
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "  perfmodel result  34" in out and out.strip().endswith("every number that should reproduce does.")
    doc = json.loads((tmp_path / "numbers.json").read_text())
    rec = {r["quantity"]: r for r in doc["numbers"]}
    r = rec["daly_interval_s"]
    assert r["status"] == "perfmodel result" and r["catalog_status"] == "PERFMODEL-RESULT" and r["paper_value"] is None
    assert not r["should_reproduce_but_does_not"] and r["tolerance"] == {"rtol": None, "atol": None}
    assert r["reason"].startswith("Daly's higher-order optimum of resnet-32 on 4 transient K80 servers")
    assert r["citation"].endswith("; procedure in perfmodel.papers.beyond.checkpoint_interval")
    md = (tmp_path / "report.md").read_text()
    assert "| 🔬 perfmodel's own result | 34 |" in md and "No quoted numbers" not in md
    assert f"| `daly_interval_s` | s | {r['reproduced_value']:.6g} | 🔬 perfmodel's own result | Daly's higher-order optimum" in md
    assert "<th>perfmodel&#x27;s value</th><th>status</th><th>protocol</th>" in (tmp_path / "report.html").read_text()


def test_a_number_that_should_reproduce_and_does_not_fails_the_command(tmp_path, monkeypatch, capsys):
    good = single_worker_speed_timeseries.numbers

    def broken():
        d = good()
        d.loc[0, "reproduced"] = d.loc[0, "paper_value"] * 1.5
        d.loc[0, "within_tolerance"] = False
        return d

    monkeypatch.setattr(single_worker_speed_timeseries, "numbers", broken)
    assert main(["reproduce", "--only", "single_worker_speed_timeseries", "--out", str(tmp_path), "--no-figures", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "FAILED number single_worker_speed_timeseries/" in err
    doc = json.loads((tmp_path / "numbers.json").read_text())
    assert sum(r["should_reproduce_but_does_not"] for r in doc["numbers"]) == 1


def test_an_item_that_raises_is_reported_and_fails(tmp_path, monkeypatch, capsys):
    def boom(**kw):
        raise RuntimeError("no data")

    monkeypatch.setattr(step_time_vs_model_gflops_training_cnns, "figure", boom)
    assert main(["reproduce", "--only", "figure_4", "--out", str(tmp_path), "--quiet"]) == 1
    assert "FAILED item step_time_vs_model_gflops_training_cnns: RuntimeError: no data" in capsys.readouterr().err
    assert "**ERROR**: `RuntimeError: no data`" in (tmp_path / "report.md").read_text()


def test_unknown_item_id_is_a_clear_error(capsys):
    assert main(["reproduce", "--only", "figure_99", "--no-figures"]) == 1
    err = capsys.readouterr().err
    assert "Unknown item id(s) figure_99. Expected ids from `perfmodel reproduce --list`: checkpoint_time_per_cnn," in err
    assert "(or a former id: " in err and "figure_4" in err


def test_list(capsys):
    assert main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(it.id in out for it in ITEMS)


def test_full_reproduction_is_green(tmp_path, capsys):
    """The README's main command: every item runs and every number that should reproduce does."""
    assert main(["reproduce", "--out", str(tmp_path), "--quiet"]) == 0, capsys.readouterr().err
    doc = json.loads((tmp_path / "numbers.json").read_text())
    assert doc["items"] == sorted(it.id for it in ITEMS) and doc["errors"] == {}
    statuses = pd.Series([r["status"] for r in doc["numbers"]]).value_counts()
    assert statuses["reproduced"] > 100 and statuses["within tolerance"] > 90
    # every difference carries the reference's reason
    assert all(r["reason"] for r in doc["numbers"] if r["status"] in ("differs", "not reproducible"))
    # perfmodel's own results are numbers with their protocol, under every beyond / external item
    own = {it.id for it in ITEMS if it.package in ("beyond", "external")}
    with_results = {r["id"] for r in doc["numbers"] if r["status"] == "perfmodel result"}
    assert with_results == own and len(own) == 16
    assert all(r["paper_value"] is None and len(r["reason"]) > 40 for r in doc["numbers"] if r["status"] == "perfmodel result")
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    beyond = md.split("## Beyond the papers (perfmodel)", 1)[1]
    assert "No quoted numbers" not in beyond and beyond.count("| quantity | unit | perfmodel's value | status | protocol |") == 16
    # the six authors' images, each beside its reproduced figure
    assert sorted(p.name for p in (tmp_path / "authors").rglob("*.png")) == [
        "cluster_4_spots_heatmap.png", "cluster_8_spots_heatmap.png", "hetero_cost.png", "k80_cdf.png", "ps_bot_p100_1.png",
        "speed_complexity_correlation.png"]
    assert md.count("| perfmodel: `") == 6 and (tmp_path / "report.html").read_text().count('<div class="pair">') == 6
    # the whole generated report cites no document outside the project
    texts = [p for p in tmp_path.rglob("*") if p.suffix in (".md", ".html", ".json")]
    assert len(texts) == 3
    for p in texts:
        assert "CATALOG" not in p.read_text(encoding="utf-8"), p.name
    assert "perfmodel result  " in capsys.readouterr().out


def test_readme_table_lists_every_item():
    """The README's figure → notebook → function → test table is generated from the catalog of items."""
    from perfmodel.reproduce import items_markdown_table

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- items-table -->\n", 1)[1].split("\n<!-- /items-table -->", 1)[0]
    assert block == items_markdown_table(), "regenerate with: python -m perfmodel.reproduce --readme-table"


def test_predict_and_plan_commands(capsys):
    assert main(["predict", "resnet-32", "--gpus", "P100,V100", "--max-workers", "2"]) == 0
    out = capsys.readouterr().out
    assert "single-worker step time" in out and "PS model fitted on the" in out and "checkpoint_time_s" in out
    assert main(["plan", "resnet-32", "--gpus", "K80", "--max-workers", "2", "--deadline-h", "3"]) == 0
    assert "cheapest within the deadline" in capsys.readouterr().out
    assert main(["plan", "resnet-32", "--gpus", "K80", "--max-workers", "1", "--deadline-h", "0.1"]) == 1
    assert "No configuration finishes within 0.1 h" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------ nothing lost silently
def test_numbers_areas_match_what_each_function_computes_on_clean_data():
    """NUMBERS_AREAS (used to list what a failed numbers() loses) is exactly what each item's numbers() compares on clean data."""
    from perfmodel import datasets as ds
    from perfmodel.reproduce import NUMBERS_AREAS

    assert set(NUMBERS_AREAS) == {it.id for it in ITEMS if it.numbers_area}
    assert sorted(NUMBERS_AREAS.values()) == sorted(p.stem for p in (ROOT / "datasets/reference/paper_numbers").glob("*.csv"))
    by_id = {it.id: it for it in ITEMS}
    for item_id, area in NUMBERS_AREAS.items():
        df = by_id[item_id].module.numbers()
        ref = ds.load_paper_numbers(area)
        assert set(df.loc[df["status"] != "NO-PAPER-VALUE", "quantity"]) == set(ref["quantity"]), item_id


def _boom(*a, **k):
    raise RuntimeError("solver exploded")


def test_a_shared_numbers_function_that_fails_fails_every_item_it_feeds(tmp_path, monkeypatch, capsys):
    """vm_startup_breakdown's numbers() also computes the numbers of chief_rejoining, ICAC'19 Fig. 3, ...: when it
    raises, all of them are failed items, and their numbers count as should-reproduce-and-do-not."""
    from perfmodel import datasets as ds

    monkeypatch.setattr(vm_startup_breakdown, "numbers", _boom)
    only = ["vm_startup_breakdown", "chief_rejoining", "server_lifetime_cdf_by_type"]
    res = reproduce(tmp_path / "r", only=only, figures=False, progress=False)
    fed = {"vm_startup_breakdown", "chief_rejoining", "server_lifetime_cdf_by_type", "accuracy_growing_cluster", "restart_training_overhead",
           "revocations_by_hour", "training_time_after_revocation"}
    assert set(res.errors) == fed and not res.ok
    assert res.errors["vm_startup_breakdown"] == "numbers() of vm_startup_breakdown failed with RuntimeError: solver exploded"
    assert res.errors["chief_rejoining"] == ("its numbers come from numbers() of item vm_startup_breakdown, which failed: "
                                             "RuntimeError: solver exploded")
    ref = ds.load_paper_numbers("transient")
    should = ref["status"].isin(["EXACT", "APPROX"]).sum()
    assert len(res.failed) == should > 0
    # numbers.json: the errors and every lost number, flagged
    doc = json.loads((tmp_path / "r" / "numbers.json").read_text())
    assert set(doc["errors"]) == fed
    lost = [r for r in doc["numbers"] if r["reproduced_value"] is None and r["reason"].startswith("not computed: numbers() of vm_startup_breakdown")]
    assert len(lost) == len(ref) and sum(r["should_reproduce_but_does_not"] for r in doc["numbers"]) == should
    # the report says so (md and html)
    md = (tmp_path / "r" / "report.md").read_text()
    assert f"Numbers that should reproduce and do not: **{should}**. Items that failed to run: **{len(fed)}**." in md
    assert "- `accuracy_growing_cluster`: its numbers come from numbers() of item vm_startup_breakdown" in md
    page = (tmp_path / "r" / "report.html").read_text()
    assert f"Numbers that should reproduce and do not: <b>{should}</b>" in page
    assert "<code>server_lifetime_cdf_by_type</code>: its numbers come from" in page
    # the CLI: exit 1, and the closing summary line counts them
    assert main(["reproduce", "--only", ",".join(only), "--out", str(tmp_path / "c"), "--no-figures", "--quiet"]) == 1
    cap = capsys.readouterr()
    last = cap.out.strip().splitlines()[-1]
    assert last == (f"perfmodel reproduce: FAILED: {len(fed)} item(s) failed ({', '.join(sorted(fed))}); "
                    f"{should} number(s) that should reproduce do not.")
    assert "FAILED item chief_rejoining: its numbers come from numbers() of item vm_startup_breakdown" in cap.err


def test_a_failing_figure_does_not_hide_the_next_one(tmp_path, monkeypatch):
    good = server_lifetime_cdf.figure
    monkeypatch.setattr(server_lifetime_cdf, "figure", lambda gpu: _boom() if gpu == "K80" else good(gpu=gpu))
    res = reproduce(tmp_path, only="lifetime_cdf", progress=False)
    assert res.errors == {"server_lifetime_cdf": "RuntimeError: solver exploded"}
    assert res.figures["server_lifetime_cdf"] == ["server_lifetime_cdf_p100", "server_lifetime_cdf_v100"]
    assert len(res.numbers) and not res.ok


def test_summary_line_when_everything_reproduces(tmp_path, capsys):
    assert main(["reproduce", "--only", "single_worker_timeseries", "--out", str(tmp_path), "--no-figures", "--quiet"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "perfmodel reproduce: OK: 1 items ran, every number that should reproduce does."


def test_out_is_an_existing_file_is_one_line(tmp_path, capsys):
    f = tmp_path / "report.txt"
    f.write_text("mine")
    assert main(["reproduce", "--only", "figure_4", "--out", str(f), "--quiet"]) == 1
    cap = capsys.readouterr()
    assert cap.err.count("\n") == 1 and cap.err.startswith(f"perfmodel: The output path {f} is an existing file, not a folder")
    assert f.read_text() == "mine"


def test_missing_mirror_folder_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PERFMODEL_DATA", str(tmp_path / "gone"))
    assert main(["reproduce", "--out", str(tmp_path / "out"), "--no-figures", "--quiet"]) == 1
    cap = capsys.readouterr()
    assert cap.err.count("\n") == 1 and "does not name an existing folder" in cap.err and "gone" in cap.err


def test_offline_one_concise_message_per_missing_file_group_and_no_empty_cache_folders(tmp_path, monkeypatch, capsys):
    """No PERFMODEL_DATA, an empty cache and no network (a downloader that fails at once)."""
    from perfmodel import datasets as ds
    from perfmodel.datasets import _registry

    calls = []

    def dead(url, output_file, pooch, check_only=False):
        calls.append(url)
        raise ConnectionError("HTTPSConnectionPool(host='raw.githubusercontent.com', port=443): Max retries exceeded\n" + "trace " * 200)

    monkeypatch.delenv("PERFMODEL_DATA", raising=False)
    cache = tmp_path / "cache"
    monkeypatch.setenv("PERFMODEL_CACHE", str(cache))
    monkeypatch.setattr(_registry, "_downloader", lambda: dead)
    ds.clear_cache()
    only = "single_worker_timeseries,figure_5,cluster_size_training_speed,startup_breakdown"
    # --jobs 1: the dead downloader is patched into this process only (workers would start with the real one)
    assert main(["reproduce", "--only", only, "--out", str(tmp_path / "out"), "--quiet", "--jobs", "1"]) == 1
    cap = capsys.readouterr()
    lines = [ln for ln in cap.err.splitlines() if ln.strip()]
    missing = [ln for ln in lines if ln.startswith("MISSING DATA ")]
    assert missing and len(missing) == len(lines)  # nothing but one line per folder of missing files
    groups = [ln.split()[2] for ln in missing]
    assert len(groups) == len(set(groups))
    assert all(len(ln) < 500 for ln in missing), max(map(len, missing))
    assert "cake-lab/CM-DARE/data/processed_data/speed_and_cluster_size/" in groups  # one line for the 96 cluster-run files
    startup = next(ln for g, ln in zip(groups, missing) if g.endswith("/startup_time/"))
    assert "vm_startup_breakdown" in startup and "chief_rejoining" in startup  # the items fed by the shared numbers function too
    assert "FAILED:" in cap.out.strip().splitlines()[-1]
    assert calls  # the downloader was tried
    assert not cache.exists() or not [p for p in cache.rglob("*") if p.is_dir()], sorted(cache.rglob("*"))


def test_numbers_json_names_items_by_their_current_ids_only(tmp_path):
    """The transient area's computed quantities (no paper value) belong to the items that compute them, never to the
    retired id ``transient_overheads``; every record's ``id`` and ``item`` are current item ids."""
    only = ["vm_startup_breakdown", "server_lifetime_cdf_by_type", "accuracy_growing_cluster", "training_time_after_revocation"]
    res = reproduce(tmp_path, only=only, progress=False, figures=False)
    assert not res.errors
    doc = json.loads((tmp_path / "numbers.json").read_text())
    ids = {it.id for it in ITEMS}
    assert doc["numbers"] and {r["id"] for r in doc["numbers"]} <= ids and {r["item"] for r in doc["numbers"]} <= ids
    assert "transient_overheads" not in (tmp_path / "numbers.json").read_text()
    by_q = {r["quantity"]: r for r in doc["numbers"]}
    assert by_q["tte_perfmodel_mape_pct"]["item"] == "training_time_after_revocation"
    assert by_q["fig3_ps_revoked_first_hour"]["item"] == "server_lifetime_cdf_by_type"


def test_worker_processes_give_the_same_report_figures_and_numbers_as_one_process(tmp_path):
    """``jobs=2`` runs the items in two fresh worker processes, the slowest first; what is written is the same, byte for
    byte, as when every item runs in this process (merged in the items' order)."""
    only = ["server_lifetime_cdf", "step_time_vs_model_gflops", "vm_startup_breakdown", "chief_rejoining",
            "accuracy_growing_cluster"]
    one = reproduce(tmp_path / "one", only=only, progress=False, jobs=1)
    two = reproduce(tmp_path / "two", only=only, progress=False, jobs=2)
    assert one.ok and two.ok and set(two.seconds) == set(one.seconds) and len(one.seconds) == len(only)
    assert one.figures == two.figures and one.authors_images == two.authors_images
    files = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path / "two") for p in (tmp_path / "two").rglob("*") if p.is_file())
    for rel in files:
        assert (tmp_path / "one" / rel).read_bytes() == (tmp_path / "two" / rel).read_bytes(), rel


@pytest.mark.parametrize("jobs", [0, -1, 1.5, True, "2"])
def test_jobs_must_be_a_positive_whole_number(tmp_path, jobs):
    with pytest.raises(ValueError, match="jobs must be a positive whole number"):
        reproduce(tmp_path, only="server_lifetime_cdf", progress=False, jobs=jobs)


def test_cli_jobs_must_be_a_positive_whole_number(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "--jobs", "0", "--no-figures"])
    assert exc.value.code == 2 and "positive whole number of worker processes" in capsys.readouterr().err
