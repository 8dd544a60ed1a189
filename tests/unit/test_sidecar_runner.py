"""The runner's side of a sidecar run: the SidecarPair it puts into the RunSpec, and the
images it asks prepare_images for (no Docker: a fake backend)."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import pytest

from ssebench import labels
from ssebench.agents import load_agent
from ssebench.errors import UserError
from ssebench.extensions import (
    ARCHIVE_TARGET,
    REFERENCE_PATCH_TARGET,
    RESULTS_TARGET,
    SOCKETS_TARGET,
    ImageRequest,
    Images,
    RunHandle,
    RunSpec,
)
from ssebench.runner import Runner, RunSettings
from ssebench.tasks import load_dataset
from ssebench.testing.fake import RecordingBackend

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "datasets" / "tiny"
SENTINEL = "sentinel-key-5b0e77"


class SidecarFake(RecordingBackend):
    """The recording fake backend, with a sidecar's two images; it starts a sidecar
    spec as one container (the fake has no second one)."""

    def __init__(self, environment: str | None = "fake/environment") -> None:
        super().__init__()
        self.environment = environment

    def prepare_images(self, request: ImageRequest) -> Images:
        return replace(super().prepare_images(request), environment=self.environment)

    def start(self, spec: RunSpec) -> RunHandle:
        handle = super().start(replace(spec, sidecar=None, mode="sandbox"))
        self.specs[-1] = spec  # the spec as the runner made it
        return handle


def sidecar_settings(tmp_path: Path, agent: str = "reference", **changes: object) -> RunSettings:
    values: dict[str, object] = {
        "task": load_dataset(TINY).task("tiny-add"),
        "agent": load_agent(agent),
        "model": None,
        "run_id": "side-1",
        "results_root": tmp_path / "results",
        "backend": "fake",
        "mode": "sidecar",
        "model_env": {"SSE_API_KEY": SENTINEL},
    }
    values.update(changes)
    return RunSettings(**values)  # type: ignore[arg-type]


def run(backend: SidecarFake, settings: RunSettings) -> RunSpec:
    runner = Runner(backend, out=io.StringIO())
    runner.run(settings, runner.prepare(settings))
    [spec] = backend.specs
    return spec


def test_the_runner_describes_the_pair(tmp_path: Path) -> None:
    backend = SidecarFake()
    settings = sidecar_settings(tmp_path, keep_alive=True)
    spec = run(backend, settings)
    assert backend.requests[0].mode == "sidecar"
    pair = spec.sidecar
    assert pair is not None
    assert spec.mode == "sidecar"
    assert spec.image == "fake/pass"  # the agent container's image
    assert pair.run_id == "side-1"
    assert pair.environment_image == "fake/environment"
    assert pair.source_dir == settings.task.source_dir
    assert pair.volumes == ("ssebench-side-1-source", "ssebench-side-1-sockets")
    # Both containers get the run's environment; the environment's role is its alone.
    shared = pair.shared_env()
    assert shared["SSE_API_KEY"] == SENTINEL and shared["SSE_KEEP_ALIVE"] == "1"
    assert shared["SSE_MODE"] == "sidecar" and shared["SSE_SOCKETS_DIR"] == SOCKETS_TARGET
    assert pair.environment_env() == {"SSE_SIDECAR_ROLE": "environment"}
    assert "SSE_SIDECAR_ROLE" not in spec.env
    assert SENTINEL not in repr(spec)
    targets = [mount.target for mount in pair.shared_mounts(spec.results, spec.archive)]
    assert targets == [settings.task.source_dir, SOCKETS_TARGET, RESULTS_TARGET, ARCHIVE_TARGET]
    # The run's labels are the listed (environment) container's.
    assert spec.labels[labels.RUN_ID] == "side-1"
    assert spec.labels[labels.REFERENCE_RUN] == "true"


def test_the_reference_patch_comes_from_the_environment_image(tmp_path: Path) -> None:
    backend = SidecarFake()
    spec = run(backend, sidecar_settings(tmp_path))
    # The agent image has nothing of the task; the environment image has the patch.
    assert backend.copied_from == ["fake/environment"]
    [artifact] = spec.artifacts
    assert artifact.target == REFERENCE_PATCH_TARGET and artifact.read_only


def test_a_sandbox_run_has_no_pair(tmp_path: Path) -> None:
    backend = SidecarFake(environment=None)
    spec = run(backend, sidecar_settings(tmp_path, agent="dummy", mode="sandbox"))
    assert spec.sidecar is None and spec.mode == "sandbox"


def test_a_sidecar_run_without_an_environment_image_is_an_error(tmp_path: Path) -> None:
    backend = SidecarFake(environment=None)
    runner = Runner(backend, out=io.StringIO())
    settings = sidecar_settings(tmp_path)
    with pytest.raises(UserError, match="needs an environment image"):
        runner.run(settings, runner.prepare(settings))
    assert backend.specs == []
