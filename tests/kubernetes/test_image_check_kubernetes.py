"""A prebuilt image that the nodes cannot get stops `ssebench run` in prepare_images,
before anything of the run exists: one line that names the image and the command that
publishes it, exit 1, in seconds (not after the 90 s of pull errors that start allows).
The check is a short pod of the image on the real cluster, which the test finds gone."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from ssebench.backends.kubernetes import image_check
from ssebench.backends.kubernetes.config import KubernetesSettings
from ssebench.extensions import IMAGE_REFERENCE_PATCH
from tests.cli import run_arguments, ssebench
from tests.conftest import PILOT_DATASET
from tests.kubernetes.cluster import TASK, Cluster, new_run_id

pytestmark = pytest.mark.kubernetes
MISSING_REGISTRY = "ssebench-missing.local"


def test_a_missing_prebuilt_image_stops_the_run_before_it_creates_anything(
    cluster: Cluster, tmp_path: Path
) -> None:
    run_id = new_run_id("noimage")
    started = time.monotonic()
    done = ssebench(
        *run_arguments(PILOT_DATASET, TASK, "reference", run_id, tmp_path / "results"),
        "--backend", "kubernetes", "--prebuilt",
        env={"SSEBENCH_REGISTRY": MISSING_REGISTRY},
        timeout=120,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    image = f"{MISSING_REGISTRY}/agent-reference/{TASK}:"
    assert done.returncode == 1, done.stdout + done.stderr
    # "preparing images", then the one line of the error.
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 2 and lines[0].startswith("ssebench: preparing images"), done.stderr
    error = lines[1]
    assert error.startswith("ssebench: error: The nodes cannot get the image " + image), error
    assert f"ssebench images publish --registry {MISSING_REGISTRY}" in error, error
    assert "Traceback" not in done.stderr
    assert elapsed < 45, f"took {elapsed:.0f} s"
    # Nothing of the run, and no check pod, is left (nor was a run directory made).
    assert cluster.objects_of(f"ssebench.run-id={run_id}") == []
    assert cluster.objects_of("ssebench.probe") == []
    assert not (tmp_path / "results").exists() or not any(
        (tmp_path / "results").rglob("result.json")
    )


def test_a_present_image_passes_the_check(cluster: Cluster, tmp_path: Path) -> None:
    """The same check lets the published image through: the reference run is graded,
    with the reference patch that the check's pod read out (no answer kept yet)."""
    run_id = new_run_id("image")
    done = ssebench(
        *run_arguments(PILOT_DATASET, TASK, "reference", run_id, tmp_path / "results"),
        "--backend", "kubernetes", "--prebuilt",
        env={"XDG_CACHE_HOME": str(tmp_path / "cache")},
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "cannot check" not in done.stderr
    assert done.stdout.strip().splitlines()[-1].startswith("passed"), done.stdout[-2000:]
    assert cluster.objects_of("ssebench.probe") == []


def test_the_check_reads_the_reference_patch_out_whole(
    cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the real kubelet's log: the bytes the image holds, the same as the
    Docker daemon reads out of it; its pod gone after."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    image = cluster.images["reference"]
    found = image_check.check_image(
        KubernetesSettings.from_environment(), image, IMAGE_REFERENCE_PATCH
    )
    in_the_image = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "--entrypoint", "cat", image,
         IMAGE_REFERENCE_PATCH],
        capture_output=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    assert found.verdict == "present"
    assert in_the_image.startswith(b"diff --git") and found.read_out == in_the_image
    assert cluster.objects_of("ssebench.probe") == []


def test_a_file_larger_than_the_log_read_keeps_nothing(
    cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The image's Python (about 6.8 MB, so 9 MB of base64: under the kubelet's 10 MiB
    rotation, whole in the log) is read only up to READ_OUT_LOG_BYTES, by the API
    server: no end mark, nothing kept, and the node's answer stands."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    image = cluster.images["reference"]
    size = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "--entrypoint", "stat", image,
         "-L", "-c", "%s", "/usr/bin/python3"],
        capture_output=True, check=True, text=True, timeout=120,
    ).stdout  # fmt: skip
    assert int(size) * 4 // 3 > image_check.READ_OUT_LOG_BYTES
    settings = KubernetesSettings.from_environment()
    found = image_check.check_image(settings, image, "/usr/bin/python3")
    assert found.verdict == "present" and found.read_out is None
    assert cluster.objects_of("ssebench.probe") == []
