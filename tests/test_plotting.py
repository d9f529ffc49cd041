"""perfmodel.plotting: print-ready output (TrueType fonts, 300 dpi, byte-identical reruns), the print style, and the
axes-level plot functions the paper figures are built from (artist data, hue order, errors)."""
from __future__ import annotations

import inspect

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from perfmodel import plotting as P  # noqa: E402

import pypdf  # noqa: E402  (tests extra)
from PIL import Image  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _pdf_fonts(path):
    """(subtype, base font, has /FontFile2) of every font the PDF's pages use (Type0 fonts: their descendant)."""
    out = []
    for page in pypdf.PdfReader(str(path)).pages:
        fonts = page["/Resources"].get("/Font", {})
        for ref in fonts.values():
            f = ref.get_object()
            sub = f["/Subtype"]
            desc = f["/DescendantFonts"][0].get_object() if sub == "/Type0" else f
            fd = desc.get("/FontDescriptor")
            out.append((str(sub), str(f.get("/BaseFont")), fd is not None and "/FontFile2" in fd.get_object()))
    return out


def _cluster_figure():
    from perfmodel.papers.cmdare import cluster_speed_vs_workers_one_ps

    return cluster_speed_vs_workers_one_ps.figure()


# --------------------------------------------------------------------------------------------------- print output
def test_a_paper_figure_is_saved_with_embedded_truetype_fonts_at_300_dpi_byte_identically(tmp_path):
    fig = _cluster_figure()
    pdf, png = P.save_figure(fig, tmp_path / "one_ps")
    assert (pdf.name, png.name) == ("one_ps.pdf", "one_ps.png")
    fonts = _pdf_fonts(pdf)
    assert fonts, "the figure's text must be real text in the PDF"
    assert not [f for f in fonts if f[0] == "/Type3"], fonts
    assert all(f[0] in ("/Type0", "/TrueType") and f[2] for f in fonts), fonts  # embedded TrueType: /FontFile2
    assert b"/Type3" not in pdf.read_bytes()
    with Image.open(png) as im:
        dpi = im.info["dpi"]
        assert min(round(d) for d in dpi) >= 300  # pHYs stores px/m: 300 dpi reads back as 299.9994
        assert im.size[0] / fig.get_size_inches()[0] >= 290  # cropped to the drawn artists, still ~300 px per inch

    again = P.save_figure(fig, tmp_path / "again.pdf")  # a suffix is dropped
    assert again == [tmp_path / "again.pdf", tmp_path / "again.png"]
    assert pdf.read_bytes() == again[0].read_bytes() and png.read_bytes() == again[1].read_bytes()
    redrawn = P.save_figure(_cluster_figure(), tmp_path / "redrawn")  # a rerun draws the figure anew
    assert pdf.read_bytes() == redrawn[0].read_bytes() and png.read_bytes() == redrawn[1].read_bytes()


def test_save_figure_embeds_truetype_even_when_the_caller_asks_for_type3(tmp_path):
    fig, ax = plt.subplots()
    ax.set_title("Type 3 by rcParams")
    with matplotlib.rc_context({"pdf.fonttype": 3}):
        fig.savefig(tmp_path / "plain.pdf")
        pdf, _ = P.save_figure(fig, tmp_path / "saved")
    assert any(f[0] == "/Type3" for f in _pdf_fonts(tmp_path / "plain.pdf"))  # what a bare savefig writes
    assert all(f[0] != "/Type3" and f[2] for f in _pdf_fonts(pdf))


def test_save_figure_errors(tmp_path):
    fig, _ = plt.subplots()
    with pytest.raises(ValueError, match=r"dpi must be at least 300 for print; got 150\. Pass dpi=300"):
        P.save_figure(fig, tmp_path / "x", dpi=150)
    with pytest.raises(TypeError, match=r"save_figure needs a matplotlib Figure; got Axes\. Pass the Figure"):
        P.save_figure(fig.axes[0], tmp_path / "x")
    with pytest.raises(FileNotFoundError, match=r"Cannot save figure x: the folder .*nowhere does not exist\. Create it first"):
        P.save_figure(fig, tmp_path / "nowhere" / "x")
    assert not list(tmp_path.iterdir())


def test_the_runner_saves_through_save_figure(tmp_path):
    from perfmodel.reproduce import reproduce

    reproduce(tmp_path, only="ps_bottleneck_p100", progress=False)
    pngs = sorted((tmp_path / "figures").glob("*.png"))
    assert pngs
    for png in pngs:
        with Image.open(png) as im:
            assert min(round(d) for d in im.info["dpi"]) >= 300
        fonts = _pdf_fonts(png.with_suffix(".pdf"))
        assert fonts and all(f[0] != "/Type3" and f[2] for f in fonts)


# ------------------------------------------------------------------------------------------------------ the style
def test_paper_style_and_widths():
    assert (P.COLUMN_WIDTH_IN, P.TEXT_WIDTH_IN) == (3.5, 7.16)
    assert P.PAPER_RC["pdf.fonttype"] == P.PAPER_RC["ps.fonttype"] == 42
    assert P.figure_size() == (3.5, 2.17) and P.figure_size("text", 2.0) == (7.16, 2.0)
    assert P.figure_size("text", 2.2, fraction=1 / 3) == (2.3867, 2.2)
    before = matplotlib.rcParams["font.size"]
    with P.paper_style():
        assert matplotlib.rcParams["font.size"] == 8 and matplotlib.rcParams["legend.fontsize"] == 7
    assert matplotlib.rcParams["font.size"] == before
    with pytest.raises(ValueError, match=r"width must be 'column' \(3\.5 in\), 'text' \(7\.16 in\) or a number of inches; got 'page'"):
        P.figure_size("page")
    with pytest.raises(ValueError, match=r"width must be 'column', 'text' or a positive number of inches; got -1"):
        P.figure_size(-1)
    with pytest.raises(ValueError, match=r"fraction must be in \(0, 1\] \(the share of the width the figure takes\); got 1\.5"):
        P.figure_size(fraction=1.5)


@pytest.mark.parametrize("item, width", [("cluster_speed_vs_workers_one_ps", 7.16), ("cluster_speed_vs_p100_workers", 3.5),
                                         ("server_lifetime_cdf", 3.5), ("per_model_prediction_error", 7.16)])
def test_paper_figures_have_the_papers_widths_print_fonts_and_legends_off_the_data(item, width):
    import importlib

    fig = importlib.import_module(f"perfmodel.papers.cmdare.{item}").figure()
    assert tuple(fig.get_size_inches()) == pytest.approx((width, fig.get_size_inches()[1]))
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    legends = [a.get_legend() for a in fig.axes if a.get_legend() is not None]
    assert legends
    for ax in fig.axes:
        assert ax.xaxis.label.get_fontsize() == 8 and ax.get_xticklabels()[0].get_fontsize() == 8
        leg = ax.get_legend()
        if leg is not None:
            lb, ab = leg.get_window_extent(r), ax.get_window_extent(r)
            assert lb.y0 >= ab.y1 - 1 or lb.x0 >= ab.x1 - 1, "the legend sits off the axes (above or right)"
            assert leg.get_texts()[0].get_fontsize() == 7


def test_legend_outside():
    fig, ax = plt.subplots()
    assert P.legend_outside(ax) is None  # nothing labelled: no legend, no warning
    ax.scatter([1, 2], [1, 2], alpha=0.1, label="faint")
    leg = P.legend_outside(ax, where="right")
    assert leg._loc == 2 and leg.legend_handles[0].get_alpha() == 1 and ax.collections[0].get_alpha() == 0.1
    with pytest.raises(ValueError, match=r"where must be 'above' or 'right' \(legends go off the data\); got 'inside'"):
        P.legend_outside(ax, where="inside")
    with pytest.raises(TypeError, match=r"legend_outside: ax must be a matplotlib Axes or None \(a new figure\); got Figure"):
        P.legend_outside(fig)


def test_subplots_refuses_what_is_not_axes():
    with pytest.raises(TypeError, match=r"ax must be a matplotlib Axes, a sequence of Axes \(one per panel\) or None for a new "
                                        r"figure; got str\."):
        P.subplots("ax")
    fig, own_ax, own = P.subplots(figsize=(3.5, 2))
    assert own and fig.get_size_inches().tolist() == [3.5, 2]
    assert P.subplots(own_ax) == (fig, own_ax, False)


# ----------------------------------------------------------------------------------------------------- the layer
SPEEDS = pd.DataFrame({"n_workers": [1, 2, 3] * 2, "speed": [1.0, 1.9, 2.7, 3.0, 5.5, 7.9], "std": [0.1, 0.2, np.nan] * 2,
                       "model": ["b"] * 3 + ["a"] * 3})


def test_plot_functions_are_exported_documented_and_seaborn_shaped():
    for name in ("plot_lines", "plot_bars", "plot_scatter", "plot_parity", "plot_ecdf", "plot_heatmap"):
        assert name in P.__all__
        f = getattr(P, name)
        sig = inspect.signature(f)
        assert list(sig.parameters)[0] == "data" and sig.parameters["ax"].kind is inspect.Parameter.KEYWORD_ONLY
        assert all(k in f.__doc__ for k in ("Parameters\n", "Returns\n", "Raises\n"))
    for name in P.__all__:
        assert hasattr(P, name)


def test_plot_lines_draws_one_line_per_hue_with_error_bars_into_the_callers_axes():
    fig, ax = plt.subplots()
    out = P.plot_lines(SPEEDS, x="n_workers", y="speed", hue="model", yerr="std", ax=ax, labels={"a": "A"}, marker="o")
    assert out is ax
    assert [c.get_label() for c in ax.containers] == ["b", "A"]  # order of appearance; labels mapped
    assert list(ax.containers[0].lines[0].get_ydata()) == [1.0, 1.9, 2.7]
    segs = ax.containers[1].lines[2][0].get_segments()
    assert [tuple(s[:, 1]) for s in segs] == [(2.9, 3.1), (5.3, 5.7), (7.9, 7.9)]  # a missing std is no bar
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["b", "A"]
    ax2 = P.plot_lines(SPEEDS, x="n_workers", y="speed", hue="model", hue_order=["a", "b"])
    assert ax2.figure is not fig and [ln.get_label() for ln in ax2.lines] == ["a", "b"]


def test_two_layers_with_the_same_hue_share_colours():
    ax = P.plot_lines(SPEEDS, x="n_workers", y="speed", hue="model", legend=False)
    P.plot_scatter(SPEEDS, x="n_workers", y="speed", hue="model", ax=ax, alpha=1)
    line_colours = [matplotlib.colors.to_rgba(ln.get_color()) for ln in ax.lines]
    point_colours = [tuple(c.get_facecolor()[0]) for c in ax.collections]
    assert line_colours == point_colours and line_colours[0] != line_colours[1]


def test_plot_bars_grouped_and_stacked():
    d = pd.DataFrame({"model": ["m1", "m2", "m1"], "gpu": ["K80", "K80", "P100"], "err": [5.0, -3.0, 8.0], "sd": [1.0, None, 2.0]})
    ax = P.plot_bars(d, x="model", y="err", hue="gpu", yerr="sd")
    heights = [p.get_height() for p in ax.patches]
    assert heights[:2] == [5.0, -3.0] and heights[2] == 8.0 and np.isnan(heights[3])  # P100 has no m2: an empty bar
    xs = [p.get_x() + p.get_width() / 2 for p in ax.patches]
    assert xs == pytest.approx([-0.2, 0.8, 0.2, 1.2])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["m1", "m2"]
    st_ax = P.plot_bars(d, x="model", y="err", hue="gpu", stacked=True)
    assert [p.get_y() for p in st_ax.patches] == [0, 0, 5.0, -3.0]
    with pytest.raises(ValueError, match=r"plot_bars: data has several rows for \{'model': 'm1'\}; one bar needs one row per "
                                         r"\(model\)\. Aggregate first"):
        P.plot_bars(d, x="model", y="err")


def test_plot_scatter_sizes_markers_and_parity():
    d = pd.DataFrame({"x": [1.0, 2.0, 4.0], "y": [1.5, 2.0, 3.0], "cv": [0.1, 0.2, 0.3], "gpu": ["K80", "P100", "K80"]})
    ax = P.plot_scatter(d, x="x", y="y", size="cv", size_scale=800)
    np.testing.assert_allclose(ax.collections[0].get_sizes(), [80, 160, 240])
    ax = P.plot_scatter(d, x="x", y="y", hue="gpu")
    assert [c.get_label() for c in ax.collections] == ["K80", "P100"] and len(ax.collections[0].get_offsets()) == 2
    ax = P.plot_parity(d, x="x", y="y", log=True)
    ident = ax.lines[0]
    assert ident.get_xydata().tolist() == [[1.0 / 1.3, 1.0 / 1.3], [4.0 * 1.3, 4.0 * 1.3]]
    assert ax.get_xscale() == ax.get_yscale() == "log" and ax.get_xlim() == ax.get_ylim()
    with pytest.raises(ValueError, match=r"plot_parity: no finite positive value in 'x' and 'y' to plot on log axes\."):
        P.plot_parity(d.assign(x=0.0, y=-1.0), x="x", y="y", log=True)


def test_plot_ecdf_empirical_and_kaplan_meier():
    d = pd.DataFrame({"t": [1.0, 2.0, 3.0, 4.0], "revoked": [True, True, False, False], "g": ["a"] * 4})
    ax = P.plot_ecdf(d, x="t")
    assert ax.lines[0].get_ydata().tolist() == pytest.approx([0, 0.25, 0.5, 0.75, 1.0])
    ax = P.plot_ecdf(d, x="t", event="revoked", hue="g")
    assert ax.lines[0].get_ydata().tolist() == pytest.approx([0, 0.25, 0.5, 0.5, 0.5])  # censored: no step
    assert ax.lines[0].get_label() == "a" and ax.get_ylabel() == "CDF"


def test_plot_heatmap_one_cell_per_pair():
    d = pd.DataFrame({"cluster": ["C1", "C1", "C2", "C2"], "hour": [0, 1, 0, 1], "revoked": [0.0, 1.0, 2.0, 3.0]})
    ax = P.plot_heatmap(d, x="hour", y="cluster", hue="revoked", y_order=["C2", "C1"])
    mesh = ax.collections[0]
    assert mesh.get_array().reshape(2, 2).tolist() == [[2.0, 3.0], [0.0, 1.0]]
    assert [t.get_text() for t in ax.texts] == ["2", "3", "0", "1"]
    with pytest.raises(ValueError, match=r"plot_heatmap: data has several rows for the cell \{'hour': 0, 'cluster': 'C1'\}"):
        P.plot_heatmap(pd.concat([d, d.iloc[:1]]), x="hour", y="cluster", hue="revoked")


@pytest.mark.parametrize("func, kw", [(P.plot_lines, dict(y="speed")), (P.plot_bars, dict(y="speed")), (P.plot_scatter, dict(y="speed")),
                                      (P.plot_parity, dict(y="speed")), (P.plot_ecdf, {}), (P.plot_heatmap, dict(y="speed", hue="model"))])
def test_every_plot_names_a_missing_column_and_refuses_a_wrong_ax(func, kw):
    name = func.__name__
    with pytest.raises(ValueError, match=rf"{name}: data has no column x='workers'; its columns are \['n_workers', 'speed', 'std', "
                                         r"'model'\]\. Pass the name of a column of data\."):
        func(SPEEDS, x="workers", **kw)
    fig, axes = plt.subplots(1, 2)
    with pytest.raises(TypeError, match=rf"{name}: ax must be a matplotlib Axes or None \(a new figure\); got ndarray\. For a figure "
                                        r"with several panels pass one of its Axes, e\.g\. axes\[0\]\."):
        func(SPEEDS, x="n_workers", ax=axes, **kw)
    with pytest.raises(TypeError, match=rf"{name}: data must be a pandas DataFrame \(one row per observation\); got dict\."):
        func(SPEEDS.to_dict("list"), x="n_workers", **kw)


def test_a_user_draws_a_paper_panel_into_their_own_axes():
    """The CM-DARE cluster panels are plot_lines of the item's data: the same artists in the user's axes."""
    from perfmodel.papers.cmdare import cluster_speed_vs_p100_workers

    d = cluster_speed_vs_p100_workers.data()
    fig, (left, right) = plt.subplots(1, 2)
    P.plot_lines(d, x="n_workers", y="speed_mean_steps_per_s", hue="model", ax=right)
    paper = cluster_speed_vs_p100_workers.figure()
    for mine, theirs in zip(right.lines, paper.axes[0].lines):
        np.testing.assert_array_equal(mine.get_xydata(), theirs.get_xydata())
    assert not left.lines and len(right.lines) == 4


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.floats(-1e3, 1e3, allow_nan=False)), min_size=1, max_size=12, unique_by=lambda t: t[0]),
       st.booleans())
def test_plot_bars_draws_every_value_once(rows, stacked):
    d = pd.DataFrame(rows, columns=["cat", "value"]).assign(h="one")
    ax = P.plot_bars(d, x="cat", y="value", hue="h", stacked=stacked)
    assert [p.get_height() for p in ax.patches] == d["value"].tolist()
    assert [t.get_text() for t in ax.get_xticklabels()] == d["cat"].tolist()
    plt.close(ax.figure)
