"""CM-DARE lifetime CDF figures (CATALOG.md §1.4)."""
import matplotlib.pyplot as plt
import pytest

import perfmodel as pm


def test_lifetime_cdf_figures():
    d = pm.figures.lifetime_cdf_data("K80")
    assert set(d["region"]) == {"us-central1", "us-west1", "europe-west1", "us-east1"}
    # europe-west1's K80 array has 24 entries (no final 1), CATALOG.md §7.6
    assert d.groupby("region").size().to_dict()["europe-west1"] == 24
    fig = pm.figures.lifetime_cdf("K80")
    lines = fig.axes[0].lines
    assert len(lines) == 4 and lines[0].get_ydata()[0] == pytest.approx(0.1042, abs=5e-5)
    plt.close(fig)
    for g in ("P100", "V100"):
        plt.close(pm.figures.lifetime_cdf(g))
    with pytest.raises(ValueError, match=r"No lifetime CDF for T4"):
        pm.figures.lifetime_cdf_data("T4")
