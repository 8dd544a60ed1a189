"""The real Harbor and Terminal-Bench tasks of ../shared/datasets/harbor-real, imported
unchanged as one dataset for the Docker tests (test_harbor_tasks.py, and the upstream
agents' agents/test_harbor_agents.py): built once per session.

Their base images cannot be pulled here; the import maps them to a local stand-in
(tests/fixtures/harbor-stand-in) that holds uv and the packages their tests fetch."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ssebench.images.layers import add_build_ca
from tests.cli import ssebench

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT.parent / "shared" / "datasets" / "harbor-real"
STAND_IN = "ssebench-test/harbor-stand-in:1"
STAND_IN_FOLDER = ROOT / "tests" / "fixtures" / "harbor-stand-in"
FORGER = ROOT / "tests" / "fixtures" / "agents" / "reward-forger"
# The base images of the real tasks, each built as the stand-in.
IMAGE_MAP = (
    "ubuntu:24.04",
    "alpine:3.22",
    "ghcr.io/laude-institute/t-bench/python-3-13:20250620",
)
CHECKED = [
    "hello-world",
    "hello-user",
    "hello-alpine",
    "cookbook-simple-task",
    "cookbook-multi-reward",
    "tb1-evoeval-0",
]


@pytest.fixture(scope="session")
def harbor_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("harbor")
    context = work / "stand-in"
    shutil.copytree(STAND_IN_FOLDER, context)
    add_build_ca(context)
    built = subprocess.run(
        ["docker", "build", "-q", "--label", "ssebench.test=harbor-stand-in", "-t", STAND_IN,
         str(context)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    maps = [argument for image in IMAGE_MAP for argument in ("--image-map", f"{image}={STAND_IN}")]
    out = work / "dataset"
    imported = ssebench("dataset", "import", "harbor", str(REAL), "--out", str(out), *maps)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    return out
