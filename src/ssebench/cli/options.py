"""Options that several commands share: those of the commands that run one fixed agent
per task as an evaluation (`dataset check`, `grade`), and which options of `ssebench
run` an evaluation passes on. Light to import: every command's parser is built with
them (tests/unit/test_cli_startup.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ssebench.cli import run as run_cli

# The options of `ssebench run` that eval passes on to every run as they are.
RUN_OPTIONS = (
    "agents_dir",
    "budget",
    "local",
    "catalog",
    "backend",
    "prebuilt",
    "timeout",
    "step_timeout",
    "difficulty",
    "egress",
    "platform",
    "mode",
    "results",
)


def add_batch_options(
    parser: argparse.ArgumentParser, *, report_default: str, timeout: int, timeout_help: str
) -> None:
    """The options of the commands that run one fixed agent per task as an evaluation
    (`dataset check`, `grade`): how many at once, where, the report, the time limits."""
    parser.add_argument("--jobs", type=int, metavar="N", help="runs at once (default: cores)")
    run_cli.add_backend_options(parser)
    parser.add_argument(
        "--results", default="results", metavar="DIR", help="where run directories go (./results)"
    )
    parser.add_argument(
        "--report", metavar="FILE", help=f"the JSON report (default <results>/{report_default})"
    )
    parser.add_argument("--timeout", type=int, default=timeout, help=timeout_help)
    run_cli.add_step_timeout(parser)
    parser.add_argument("--platform", help="linux/<arch> of the images and containers")
    parser.add_argument("--run-id-prefix", metavar="PREFIX", help="run IDs are PREFIX-<hex>")


def batch_run_options(arguments: argparse.Namespace, dataset_path: Path) -> argparse.Namespace:
    """The `ssebench run` options (for base_settings) of a command of add_batch_options:
    its own, and the defaults of a sandbox run at difficulty 2 for the rest."""
    options = argparse.Namespace(**{name: None for name in RUN_OPTIONS})
    options.local = str(dataset_path)
    options.agents_dir = []
    options.backend = arguments.backend
    options.prebuilt = arguments.prebuilt
    options.timeout = arguments.timeout
    options.step_timeout = arguments.step_timeout
    options.difficulty = 2
    options.mode = "sandbox"
    options.platform = arguments.platform
    options.results = arguments.results
    return options
