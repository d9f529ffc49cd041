"""What hardware failures cost a synchronous run as ``plan_cloud`` prices them, from 64 to 16,384 GPUs, and a loose
check against the one run that published both its failures and its effective training time.

Run: ``PERFMODEL_DATA=../shared/datasets python benchmarks/bench_failures_at_scale.py``. Prints:

* the check: the Llama 3 405B pre-training's 54-day snapshot on 16,384 H100 (Grattafiori et al., "The Llama 3 Herd of
  Models", arXiv:2407.21783, §3.3.4: 419 unexpected interruptions, "more than 90%" effective training time,
  checkpoints of 1 MB to 4 GB per GPU) through :func:`perfmodel.planning.cloud.failure_overhead` at the rate that run
  gives (:data:`perfmodel.planning.cloud.HARDWARE_FAILURES_PER_GPU_H`), with checkpoints of 1 and 4 GB per GPU timed
  by CM-DARE's Duration ~ Size fit (fitted on 6-204 MB: an extrapolation, as ``plan_cloud`` warns) and the replacement
  start-up of an on-demand VM (CM-DARE's GCE measurements). The rate comes from the same paper, and the published
  figure is a bound, so this is a consistency check, not a score;
* the expected failures, the policy chosen (restart from scratch or checkpoint every Young/Daly interval), the
  overhead and the effective share of a 30-day run at each GPU count, with 1 GB checkpoints per GPU.

There is no goal and nothing is timed: the numbers are what a planner of a large run reads.
"""
from __future__ import annotations

import warnings


def main() -> None:
    from perfmodel.planning.cloud import HARDWARE_FAILURES_PER_GPU_H, _checkpoint_s, failure_overhead
    from perfmodel.planning.plan import vm_startup_s

    warnings.simplefilter("ignore")
    startup = vm_startup_s("H100", False)
    print(f"rate: {HARDWARE_FAILURES_PER_GPU_H:.4g} failures per GPU-hour (Llama 3 405B run); replacement start-up "
          f"{startup:.0f} s (CM-DARE, on-demand)")
    print("\nLlama 3 405B, 16,384 H100, 54 days (published: 419 unexpected interruptions, more than 90% effective "
          "training time):")
    for gb in (1, 4):
        ck, _ = _checkpoint_s(gb * 2**30)
        f = failure_overhead(54 * 24, 16_384, checkpoint_s=ck, startup_s=startup)
        print(f"  checkpoints of {gb} GB per GPU ({ck:.0f} s each, extrapolated): {f['failures']:.0f} failures, every "
              f"{f['checkpoint_interval_s'] / 60:.0f} min a checkpoint, {f['overhead_h']:.0f} h lost, "
              f"{f['effective_pct']:.1f}% effective")
    ck, _ = _checkpoint_s(2**30)
    print(f"\na 30-day run, 1 GB checkpoints per GPU ({ck:.0f} s):")
    print(f"  {'GPUs':>6} {'failures':>9} {'policy':>22} {'lost h':>7} {'effective':>9}")
    for n in (64, 256, 1024, 4096, 16_384):
        f = failure_overhead(30 * 24, n, checkpoint_s=ck, startup_s=startup)
        policy = (f"checkpoint every {f['checkpoint_interval_s'] / 60:.0f} min" if f["checkpointed"]
                  else "restart from scratch")
        print(f"  {n:>6} {f['failures']:>9.2f} {policy:>22} {f['overhead_h']:>7.1f} {f['effective_pct']:>8.1f}%")


if __name__ == "__main__":
    main()
