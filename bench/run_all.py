"""Run every benchmark and print its figures, then the machine they ran on.

    python bench/run_all.py [--markdown]

--markdown prints the figures as the table of docs/performance.md. A benchmark that
cannot run here (no Docker, no cluster) says why instead of a figure.
"""

from __future__ import annotations

import sys
import traceback
from datetime import UTC, datetime

import bench_agent_images
import bench_eval_jobs
import bench_k8s_api_calls
import bench_k8s_readout
import bench_k8s_run_wall
import bench_prepare_cached
import bench_run_overhead
import bench_runs_list
import bench_scale
import bench_startup
from common import Figure, NotMeasured, Profile, Result, machine

BENCHMARKS = (
    bench_startup,
    bench_run_overhead,
    bench_runs_list,
    bench_eval_jobs,
    bench_k8s_readout,
    bench_k8s_api_calls,
    bench_k8s_run_wall,
    bench_prepare_cached,
    bench_agent_images,
    bench_scale,
)


def main() -> int:
    markdown = "--markdown" in sys.argv[1:]
    results: list[Result] = []
    for module in BENCHMARKS:
        try:
            found = module.measure()
        except Exception as error:  # one broken benchmark must not hide the others
            traceback.print_exc()
            found = [NotMeasured(module.__name__, f"failed: {type(error).__name__}: {error}")]
        for result in found:
            print(result.line(), flush=True)
        results.extend(found)
    host = machine()
    print(f"machine: {', '.join(f'{key} {value}' for key, value in host.items())}")
    if markdown:
        print(f"\nMeasured {datetime.now(UTC):%Y-%m-%d}.\n")
        print("| Figure | Ratio | ssebench | Baseline | Note |")
        print("| --- | --- | --- | --- | --- |")
        for result in results:
            if isinstance(result, Figure):
                ratio = "-" if result.ratio is None else f"{result.ratio:.2f}x"
                baseline = (
                    "-"
                    if result.baseline_value is None
                    else f"{result.baseline} {result.baseline_value:.3f} {result.unit}"
                )
                print(
                    f"| {result.name} | {ratio} | {result.subject} "
                    f"{result.subject_value:.3f} {result.unit} | {baseline} | {result.note} |"
                )
            elif isinstance(result, Profile):
                print(
                    f"| {result.name} | profile | {result.parts()} | "
                    f"wall {result.wall:.3f} s | {result.note} |"
                )
            else:
                print(f"| {result.name} | not measured | | | {result.reason} |")
        print("\n| Machine | |\n| --- | --- |")
        for key, value in host.items():
            print(f"| {key} | {value} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
