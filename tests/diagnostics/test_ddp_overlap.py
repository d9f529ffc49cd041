"""DDP overlap check: the link fit recovers a known α–β cost, the predictions and the verdict on hand cases, one small
end-to-end run through the command (columns, measured link, predicted no-overlap >= overlap, provenance line; the
measured times are output, never thresholds), and every error message."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfmodel.diagnostics.ddp_overlap import (
    ALLREDUCE_COLUMNS,
    OVERLAP_COLUMNS,
    check_ddp_overlap,
    fit_link,
    main,
    overlap_verdict,
    predict_ddp_overlap,
)
from perfmodel.step.collectives import Interconnect, allreduce_time

MiB = 2**20


def _rows(n, bandwidth, latency, sizes=(4096, MiB, 16 * MiB), noise=()):
    link = Interconnect("truth", bandwidth, latency, efficiency=1.0)
    rows = [(n, s, r, allreduce_time(s, n, link) * (1 + (noise[r] if noise else 0))) for s in sizes for r in range(max(len(noise), 1))]
    return pd.DataFrame(rows, columns=ALLREDUCE_COLUMNS)


def test_fit_link_recovers_a_known_alpha_beta_cost():
    for n in (2, 4):
        link = fit_link(_rows(n, 1.5, 150e-6))
        assert link.bandwidth_gb_per_s == pytest.approx(1.5, rel=1e-9)
        assert link.latency_s == pytest.approx(150e-6, rel=1e-9)
        assert link.efficiency == 1.0 and link.name == "gloo (this machine, measured)"
    # the median of each size is what is fitted: a symmetric outlier pair around the truth changes nothing
    link = fit_link(_rows(2, 3.0, 20e-6, noise=(0.0, 0.5, -0.5)))
    assert link.bandwidth_gb_per_s == pytest.approx(3.0, rel=1e-9)


def test_fit_link_errors():
    with pytest.raises(ValueError, match=r"fit_link needs the rows of measure_allreduce \(columns \['world_size', 'bytes', 'repeat', 'time_s'\]\)\."):
        fit_link(pd.DataFrame({"bytes": [1]}))
    mixed = pd.concat([_rows(2, 1.0, 1e-5), _rows(4, 1.0, 1e-5)])
    with pytest.raises(ValueError, match=r"fit_link fits one world size at a time; got world sizes \[2, 4\]\. Select one\."):
        fit_link(mixed)
    with pytest.raises(ValueError, match=r"fit_link needs at least two message sizes; got 1\."):
        fit_link(_rows(2, 1.0, 1e-5, sizes=(MiB,)))
    flat = pd.DataFrame([(2, s, 0, 1e-3) for s in (4096, MiB)], columns=ALLREDUCE_COLUMNS).assign(time_s=[2e-3, 1e-3])
    with pytest.raises(ValueError, match=r"fit_link: all-reduce time does not grow with message size"):
        fit_link(flat)


def test_predictions_on_hand_cases():
    link = Interconnect("test", 1.0, 0.0, efficiency=1.0)  # 1 GB/s, no latency: a 2-process all-reduce of S takes S / 1e9 s
    grads = 60 * MiB  # buckets of 1, 25, 25, 9 MiB
    long = predict_ddp_overlap(10.0, grads, link)  # a backward pass far longer than the all-reduce: only the last bucket shows
    assert long["n_buckets"] == 4
    assert long["predicted_overlap_s"] == pytest.approx(9 * MiB / 1e9, rel=1e-9)
    assert long["predicted_no_overlap_s"] == pytest.approx(grads / 1e9, rel=1e-9) == long["predicted_comm_total_s"]
    short = predict_ddp_overlap(0.0, grads, link)  # nothing to hide behind
    assert short["predicted_overlap_s"] == pytest.approx(short["predicted_no_overlap_s"], rel=1e-9)
    with pytest.raises(ValueError, match=r"backward_s must be a non-negative finite number; got -1\."):
        predict_ddp_overlap(-1, grads, link)
    with pytest.raises(ValueError, match=r"grad_bytes must be a non-negative finite number; got nan\."):
        predict_ddp_overlap(1.0, float("nan"), link)


def test_verdict_on_hand_cases():
    assert overlap_verdict(0.011, 0.01, 0.05) == "overlap"
    assert overlap_verdict(0.045, 0.01, 0.05) == "no overlap"
    assert overlap_verdict(0.0, 0.01, 0.05) == "overlap"  # nothing measurable: closer to the hidden all-reduce
    assert overlap_verdict(0.03, 0.02, 0.02) == "undecided"
    assert overlap_verdict(0.5, 0.01, 0.05) == "neither"  # 10x what any all-reduce adds: contention
    assert overlap_verdict(0.5, 0.01, 0.05, tolerance=20) == "no overlap"
    with pytest.raises(ValueError, match=r"overlap_verdict needs finite seconds; got measured nan"):
        overlap_verdict(float("nan"), 0.01, 0.05)
    with pytest.raises(ValueError, match=r"tolerance must be >= 1 \(a factor on the non-overlapped all-reduce\); got 0\.5\."):
        overlap_verdict(0.01, 0.01, 0.05, tolerance=0.5)


def test_check_errors():
    import torch

    with pytest.raises(TypeError, match=r"check_ddp_overlap needs a zoo id \(each worker process builds the model\); got Linear\."):
        check_ddp_overlap(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match=r"steps must be an int >= 1; got 0\."):
        check_ddp_overlap("resnet-15", steps=0)
    with pytest.raises(ValueError, match=r"sizes_bytes must hold at least two different message sizes of at least 4 bytes"):
        check_ddp_overlap("resnet-15", sizes_bytes=(MiB, MiB))


def test_one_small_run_through_the_command(tmp_path):
    out = tmp_path / "ddp_overlap.csv"
    assert main(["--model", "resnet-15", "--batch-size", "2", "--steps", "2", "--warmup", "1", "--repeats", "2",
                 "--out", str(out)]) == 0
    r = pd.read_csv(out)
    assert list(r.columns) == OVERLAP_COLUMNS and len(r) == 1
    row = r.iloc[0]
    assert row["link_bandwidth_gb_per_s"] > 0 and row["link_latency_s"] >= 0
    # ResNet-15: 693,818 FP32 parameters, 2.65 MiB of gradients in DDP's buckets of 1 MiB and 1.65 MiB
    assert row["param_count"] == 693_818 and row["grad_bytes"] == 4 * 693_818 and row["n_buckets"] == 2
    assert row["predicted_no_overlap_s"] >= row["predicted_overlap_s"] > 0
    assert np.isfinite(row[["forward_s", "backward_s", "measured_step_1_s", "measured_step_2_s", "measured_increase_s"]].astype(float)).all()
    assert row["supports"] in {"overlap", "no overlap", "undecided", "neither"}
    readme = (tmp_path / "README.md").read_text()
    assert "`python -m perfmodel.diagnostics.ddp_overlap --model resnet-15" in readme and f"supports '{row['supports']}'" in readme


def _abort_after_saving(rank, out_file):
    import os

    from perfmodel.measure.ddp import _save_result

    if rank == 0:
        _save_result(pd.DataFrame({"x": [1.0]}), out_file)
    else:
        import time

        deadline = time.monotonic() + 60.0
        while not os.path.exists(out_file) and time.monotonic() < deadline:  # rank 0 has saved, however loaded the machine
            time.sleep(0.05)
        os.abort()  # what gloo's teardown does when it fails


def _abort_before_saving(rank, out_file):
    import os

    if rank == 1:
        os.abort()


def test_an_abort_in_teardown_keeps_the_saved_result_and_an_earlier_one_is_raised(tmp_path):
    from torch.multiprocessing.spawn import ProcessExitedException

    from perfmodel.measure.ddp import spawn_ranks

    out = str(tmp_path / "r.pkl")
    with pytest.warns(RuntimeWarning, match=r"aborted \(SIGABRT\) while gloo tore its process group down"):
        spawn_ranks(_abort_after_saving, (out,), 2, out)
    assert pd.read_pickle(out)["x"].tolist() == [1.0]
    missing = str(tmp_path / "none.pkl")
    with pytest.raises(ProcessExitedException, match="SIGABRT"):
        spawn_ranks(_abort_before_saving, (missing,), 2, missing)
