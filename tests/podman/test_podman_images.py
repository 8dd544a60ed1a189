"""`ssebench build-case` and `ssebench images publish` with --backend podman: Podman's
image builder builds, names and keeps the images in Podman's store, and a --prebuilt
run finds the published ones there."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli import last_line_verdict, run_arguments, ssebench
from tests.conftest import PILOT_DATASET
from tests.podman.conftest import SESSION_PREFIX, new_run_id, podman_lines

pytestmark = pytest.mark.podman
TASK = "py-semver-prerelease"
REGISTRY = f"localhost/{SESSION_PREFIX}"


def image_id(image: str) -> str:
    (found,) = podman_lines("image", "inspect", "--format", "{{.Id}}", image)
    return found


def test_build_case_builds_in_podmans_store() -> None:
    done = ssebench(
        "build-case",
        "--backend",
        "podman",
        "--local",
        str(PILOT_DATASET),
        "--tasks",
        TASK,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (image,) = done.stdout.split()
    assert image.startswith(f"ssebench/case/pilot/{TASK}:")
    labels = json.loads(podman_lines("image", "inspect", "--format", "{{json .Labels}}", image)[0])
    assert labels["ssebench.layer-digest"].startswith(image.rsplit(":", 1)[1])


@pytest.fixture
def published() -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    for name in names:
        subprocess.run(["podman", "rmi", name], capture_output=True, timeout=120)


def test_publish_load_local_then_a_prebuilt_run(published: list[str], tmp_path: Path) -> None:
    done = ssebench(
        "images",
        "publish",
        "--backend",
        "podman",
        "--registry",
        REGISTRY,
        "--tasks",
        TASK,
        "--agents",
        "reference",
        "--local",
        str(PILOT_DATASET),
        "--mode",
        "sandbox",
        "--load",
        "local",
        "--json",
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    output = json.loads(done.stdout)
    published.extend(output["images"])
    (name,) = output["images"]
    assert output["target"] == "local"
    assert name.startswith(f"{REGISTRY}/agent-reference/{TASK}:")
    # The published name is the image the local build made, in Podman's store, under
    # the same version (older versions of it may be there too).
    built = f"localhost/ssebench/agent-reference/{TASK}:{name.rsplit(':', 1)[1]}"
    assert built in podman_lines("images", "--format", "{{.Repository}}:{{.Tag}}")
    assert image_id(name) == image_id(built)
    arguments = run_arguments(PILOT_DATASET, TASK, "reference", new_run_id("pre"), tmp_path)
    run = ssebench(
        *arguments,
        "--backend",
        "podman",
        "--prebuilt",
        env={"SSEBENCH_REGISTRY": REGISTRY},
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    status, run_dir = last_line_verdict(run.stdout)
    assert status == "passed"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["config"]["prebuilt"] is True, summary["config"]
