"""The report writer of ``perfmodel reproduce``: ``numbers.json``, ``report.md`` and a self-contained ``report.html``.

* ``numbers.json``: one record per reported quantity, byte-identical across runs (sorted, no timestamps);
* ``report.md`` / ``report.html`` (figures inline): per item, its module and docstring (procedure, sources, quirks),
  its figures (beside the authors' own image where the upstream repository has one), and its numbers with paper value,
  reproduced value, difference and status; perfmodel's own results (beyond the papers) with their protocol.
"""
from __future__ import annotations

import base64
import html
import json
import re
from pathlib import Path

import pandas as pd

from perfmodel.reproduce._items import Item
from perfmodel.reproduce._items import ITEMS, _owner
from perfmodel.reproduce._results import ReproductionResult, _isnan, _num, _str

__all__ = ["write_numbers_json", "write_report", "list_items", "items_markdown_table"]


def list_items() -> pd.DataFrame:
    """The items: ``id``, ``paper``, ``number`` (as the paper prints it), ``title``, ``figures`` (output stems),
    ``module``, ``legacy_id``, ``notebook``, ``test``, ``unavailable`` — the README's item table."""
    rows = [dict(id=it.id, paper=it.paper, number=it.number, title=it.title, figures=" ".join(it.stems()), module=it.module_name,
                 legacy_id=it.legacy_id, notebook=it.notebook, test=it.test, unavailable=it.unavailable) for it in ITEMS]
    return pd.DataFrame(rows)


def items_markdown_table() -> str:
    """The README's table: item → paper number → notebook → module → test, one row per item (a test keeps the README
    equal to it; regenerate with ``python -m perfmodel.reproduce --readme-table``)."""
    lines = ["| item (`--only` id; former id) | paper, number | what | notebook | module (`perfmodel.papers.…`) | test |",
             "|---|---|---|---|---|---|"]
    for it in ITEMS:
        nb = f"`{Path(it.notebook).stem}`" if it.notebook else "—"
        what = it.title + (f" — not reproducible: {it.unavailable}" if it.unavailable else "")
        ident = f"`{it.id}`" + (f" (`{it.legacy_id}`)" if it.legacy_id != it.id else "")
        lines.append(f"| {ident} | {it.paper} {it.number} | {what} | {nb} | `{it.package}.{it.id}` | {f'`{it.test}`' if it.test else '—'} |")
    return "\n".join(lines)


def write_numbers_json(res: ReproductionResult, items: list[Item], path: Path) -> None:
    """``numbers.json``: sorted records, sorted keys, no timestamps (byte-identical across runs). Every record names
    items by their current ids: ``id`` is the item that owns the number, ``item`` the item the reference table files
    it under (a former id there is translated)."""
    recs = []
    for r in res.numbers.to_dict("records"):
        recs.append({
            "id": r["figure_table"], "paper": r["paper"], "item": _owner(r["item"], r["figure_table"]), "quantity": r["quantity"], "unit": _str(r["unit"]),
            "paper_value": _num(r["paper_value"]), "reproduced_value": _num(r["reproduced"]),
            "tolerance": {"rtol": _num(r["rtol"]), "atol": _num(r["atol"])}, "catalog_status": r["status"],
            "status": r["report_status"], "should_reproduce_but_does_not": bool(r["failed"]),
            "reason": _str(r["reason"]), "citation": _str(r["citation"]),
        })
    recs.sort(key=lambda d: (d["id"], d["item"] or "", d["quantity"]))
    errors = {k: res.errors[k] for k in sorted(res.errors)}
    doc = {"perfmodel_numbers": 1, "items": sorted(it.id for it in items), "errors": errors, "numbers": recs}
    path.write_text(json.dumps(doc, indent=1, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8")


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
          "computed": "· computed", "perfmodel result": "🔬 perfmodel's own result"}


def write_report(res: ReproductionResult, items: list[Item], out: Path) -> None:
    """``report.md`` and ``report.html`` into ``out``."""
    md, page = _report(res, items)
    (out / "report.md").write_text(md, encoding="utf-8")
    (out / "report.html").write_text(page, encoding="utf-8")


def _docstring_lines(it: Item) -> list[str]:
    """The item's docstring (:attr:`Item.docstring`: the module's, then its declared sources and procedure) without
    its title line, as Markdown paragraphs (numpydoc headings in bold)."""
    paras = [p for p in it.docstring.split("\n\n")[1:] if p.strip()]
    out = []
    for p in paras:
        lines = p.splitlines()
        if len(lines) >= 2 and set(lines[1]) == {"-"}:
            out.append(f"**{lines[0]}**")
            lines = lines[2:]
        if lines and all(ln.startswith("* ") for ln in lines):
            out += lines
        elif lines:
            out.append(" ".join(ln.strip() for ln in lines))
        out.append("")
    return out


def _report(res: ReproductionResult, items: list[Item]) -> tuple[str, str]:
    nums = res.numbers
    counts = nums["report_status"].value_counts() if len(nums) else pd.Series(dtype=int)
    head = ["# perfmodel reproduction report", "",
            "CM-DARE (Li, Walls, Guo, ICDCS 2020) and \"Speeding up Deep Learning with Transient Servers\" (ICAC 2019), "
            "rebuilt from the published measurements. Paper value next to reproduced value; the tolerance and the "
            "reason for every difference come from `datasets/reference/paper_numbers/`; each item's procedure, sources and quirks are "
            "in the docstring of its module in `perfmodel.papers`, quoted below. Where the upstream repository holds the authors' own "
            "image of a figure, it is shown beside the reproduced one. perfmodel's own results (beyond the papers) have no paper "
            "value: they are computed on every run, each with the protocol it was computed with.", "",
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
            legacy = f" (former id `{it.legacy_id}`)" if it.legacy_id != it.id else ""
            meta = (f"{it.paper}, {it.number}. Module: `{it.module_name}`{legacy}. Upstream: {it.upstream}. Status of the data: {it.status}. "
                    f"Notebook: `{it.notebook or '—'}`. Test: `{it.test or '—'}`.")
            doc = _docstring_lines(it)
            sec = [f"### `{it.id}` — {it.title}", "", meta, ""] + doc
            hsec = [f"<h3><code>{html.escape(it.id)}</code> — {html.escape(it.title)}</h3>", _md_table_to_html([meta] + doc)]
            if it.unavailable:
                sec += [f"{_BADGE['not reproducible']}: {it.unavailable}", ""]
                hsec.append(f"<p>{_BADGE['not reproducible']}: {html.escape(it.unavailable)}</p>")
            if it.id in res.errors:
                sec += [f"**ERROR**: `{res.errors[it.id]}`", ""]
                hsec.append(f"<p><b>ERROR</b>: <code>{html.escape(res.errors[it.id])}</code></p>")
            pair = res.authors_images.get(it.id)
            for stem in res.figures.get(it.id, []):
                png = (res.out / "figures" / f"{stem}.png").read_bytes()
                ours = _html_figure(stem, png, stem)
                if pair and pair[0] == stem:
                    _, rel, key = pair
                    cap = f"the authors' image: {key}"
                    sec += [f"| perfmodel: `{stem}` | {cap} |", "|---|---|", f"| ![{stem}](figures/{stem}.png) | ![{cap}]({rel}) |", ""]
                    hsec.append('<div class="pair">' + ours + _html_figure(cap, (res.out / rel).read_bytes(), cap) + "</div>")
                else:
                    sec += [f"![{stem}](figures/{stem}.png)", ""]
                    hsec.append(ours)
            sub = nums[nums["figure_table"] == it.id] if len(nums) else nums
            own = sub[sub["report_status"] == "perfmodel result"] if len(sub) else sub
            sub = sub[sub["report_status"] != "perfmodel result"] if len(sub) else sub
            if len(own):
                rows = ["| quantity | unit | perfmodel's value | status | protocol |", "|---|---|---|---|---|"]
                for r in own.to_dict("records"):
                    rows.append(f"| `{r['quantity']}` | {'' if _isnan(r['unit']) else r['unit']} | {_fmt(r['reproduced'])} | "
                                f"{_BADGE[r['report_status']]} | {str(r['reason']).replace('|', '/')} |")
                sec += rows + [""]
                hsec.append(_md_table_to_html(rows))
            if len(sub):
                rows = ["| quantity | unit | paper | reproduced | diff | status | reason |", "|---|---|---|---|---|---|---|"]
                for r in sub.to_dict("records"):
                    reason = "" if _isnan(r["reason"]) else str(r["reason"]).replace("|", "/")
                    rows.append(f"| `{r['quantity']}` | {r['unit'] if not _isnan(r['unit']) else ''} | {_fmt(r['paper_value'])} | "
                                f"{_fmt(r['reproduced'])} | {_rel(r['paper_value'], r['reproduced'])} | {_BADGE[r['report_status']]}"
                                f"{' **(unexpected)**' if r['failed'] else ''} | {reason} |")
                sec += rows + [""]
                hsec.append(_md_table_to_html(rows))
            elif not len(own) and not it.unavailable and it.id not in res.errors:
                why = it.no_numbers or f"its numbers are computed by `{it.numbers_from}` (not run here)."
                sec += [f"No quoted numbers: {why}", ""]
                hsec.append(f"<p>No quoted numbers: {html.escape(why)}</p>")
            md += sec
            hb += hsec
    css = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}table{border-collapse:collapse;"
           "font-size:13px}td,th{border:1px solid #ccc;padding:2px 6px}img{max-width:520px}figure{display:inline-block;margin:4px;vertical-align:top}"
           ".pair{display:flex;gap:8px;align-items:flex-start}.pair img{max-width:100%}.pair figure{flex:1}")
    page = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>perfmodel reproduction report</title>"
            f"<style>{css}</style></head><body>" + "\n".join(hb) + "</body></html>\n")
    return "\n".join(md) + "\n", page


def _html_figure(alt: str, png: bytes, caption: str) -> str:
    """A PNG inline (base64) with its caption: the HTML report is one self-contained file."""
    return (f'<figure><img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _md_table_to_html(lines: list[str]) -> str:
    """The few markdown constructs the report uses (headings, paragraphs, pipe tables, bold, code) as HTML."""
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
