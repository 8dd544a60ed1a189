"""The public image-layer API (ssebench.image_layers): the layers as data, and builds
through a backend's own callables, with no Docker anywhere."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import pytest

from ssebench import image_layers
from ssebench.extensions import ImageRequest, ImageUnavailableError, UserError
from ssebench.image_layers import CACHE_KEY_LABEL, ImageLayer
from ssebench.tasks import Task, load_task
from tests.conftest import TINY_DATASET


@pytest.fixture
def task() -> Task:
    return load_task(TINY_DATASET / "tiny-add", dataset="tiny")


@pytest.fixture
def agent_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "agent"
    folder.mkdir()
    (folder / "agent.json").write_text('{"name": "solver", "version": "2.0"}')
    (folder / "run").write_text("#!/bin/sh\nexit 0\n")
    (folder / "run").chmod(0o755)
    return folder


def request_of(task: Task, agent_dir: Path, **changes: object) -> ImageRequest:
    request = ImageRequest(
        task_id=task.id,
        dataset=task.dataset,
        agent="solver",
        agent_version="2.0",
        task_dir=task.path,
        agent_dir=agent_dir,
    )
    return replace(request, **changes)  # type: ignore[arg-type]


class Store:
    """A backend's image store: what build_images asks and builds."""

    def __init__(self) -> None:
        self.labels: dict[str, Mapping[str, str]] = {}
        self.built: list[str] = []
        self.contexts: dict[str, list[str]] = {}

    def build(self, layer: ImageLayer, context: Path) -> None:
        assert context.is_dir() and layer.dockerfile.is_file()
        self.contexts[layer.image] = sorted(
            str(path.relative_to(context)) for path in context.rglob("*")
        )
        self.built.append(layer.image)
        self.labels[layer.image] = dict(layer.labels)

    def image_labels(self, image: str) -> Mapping[str, str] | None:
        return self.labels.get(image)


def test_sandbox_layers_in_build_order(task: Task, agent_dir: Path) -> None:
    plan = image_layers.layers_of(request_of(task, agent_dir))
    kinds = [layer.kind for layer in plan.builds]
    assert kinds == ["case", "tool", "agent-install", "agent"]
    case, tool, _install, agent = plan.builds
    assert case.image.startswith(f"ssebench/case/tiny/{task.id}:")
    assert tool.image == f"ssebench/tool/{task.id}:1"
    assert agent.image == f"ssebench/agent-solver/{task.id}:2.0" == plan.images.run
    assert tool.build_args["BASE_IMAGE"] == case.image
    assert agent.labels == {CACHE_KEY_LABEL: agent.cache_key}
    assert plan.images.environment is None


def test_sidecar_layers_have_two_stacks(task: Task, agent_dir: Path) -> None:
    plan = image_layers.layers_of(request_of(task, agent_dir, mode="sidecar"))
    environment, agent = plan.stacks
    assert [layer.kind for layer in environment] == ["case", "tool"]
    assert [layer.kind for layer in agent] == ["agent-runtime", "agent-install", "agent"]
    assert plan.images.run == "ssebench/agent-solver/sidecar:2.0"
    assert plan.images.environment == environment[-1].image


def test_build_images_builds_once_then_reuses(task: Task, agent_dir: Path) -> None:
    store = Store()
    request = request_of(task, agent_dir)
    images = image_layers.build_images(request, build=store.build, image_labels=store.image_labels)
    assert store.built == [layer.image for layer in image_layers.layers_of(request).builds]
    assert images.run == store.built[-1]
    # The case context holds the task as the case Dockerfile expects it.
    assert "task/task.json" in store.contexts[store.built[0]]
    again = image_layers.build_images(request, build=store.build, image_labels=store.image_labels)
    assert again == images and len(store.built) == 4


def test_a_changed_agent_rebuilds_only_its_layer(task: Task, agent_dir: Path) -> None:
    store = Store()
    request = request_of(task, agent_dir)
    image_layers.build_images(request, build=store.build, image_labels=store.image_labels)
    (agent_dir / "run").write_text("#!/bin/sh\nexit 1\n")
    image_layers.build_images(request, build=store.build, image_labels=store.image_labels)
    assert store.built[4:] == [f"ssebench/agent-solver/{task.id}:2.0"]


def test_rebuild_builds_everything(task: Task, agent_dir: Path) -> None:
    store = Store()
    request = request_of(task, agent_dir, rebuild=True)
    image_layers.build_images(request, build=store.build, image_labels=store.image_labels)
    image_layers.build_images(request, build=store.build, image_labels=store.image_labels)
    assert len(store.built) == 8


def builder_of(store: Store) -> image_layers.ImageBuilder:
    def refuse(*names: str) -> None:
        raise AssertionError(f"build-case neither tags nor pushes: {names}")

    return image_layers.ImageBuilder(
        build=store.build, image_labels=store.image_labels, tag=refuse, push=refuse, store="t"
    )


def test_build_case_images_builds_the_case_layer_only_once(task: Task) -> None:
    store = Store()
    names = image_layers.build_case_images([task], builder_of(store), platform=None, rebuild=False)
    assert names == store.built
    assert len(names) == 1 and names[0].startswith(f"ssebench/case/tiny/{task.id}:")
    assert "task/task.json" in store.contexts[names[0]]
    again = image_layers.build_case_images([task], builder_of(store), platform=None, rebuild=False)
    assert again == names and store.built == names
    image_layers.build_case_images([task], builder_of(store), platform=None, rebuild=True)
    assert store.built == names * 2


def test_run_build_streams_the_log_and_names_the_failure(task: Task, agent_dir: Path) -> None:
    layer = image_layers.layers_of(request_of(task, agent_dir)).builds[0]
    stream = io.StringIO()
    script = "print('step one'); print('the step that failed'); raise SystemExit(3)"
    with pytest.raises(ImageUnavailableError) as failed:
        image_layers.run_build(
            [sys.executable, "-c", script],
            layer,
            output=image_layers.BuildOutput(stream=stream),
        )
    assert "  case | step one\n" in stream.getvalue()
    assert f"Building the case layer {layer.image} failed (exit status 3)" in str(failed.value)
    assert str(failed.value).endswith("  step one\n  the step that failed")

    def unreachable(log: object) -> None:
        raise UserError("the builder is gone")

    with pytest.raises(UserError, match=r"^the builder is gone$"):
        image_layers.run_build(
            [sys.executable, "-c", script],
            layer,
            output=image_layers.BuildOutput(stream=io.StringIO(), quiet=True),
            check_log=unreachable,
        )


def test_python_dash_m_ssebench_help() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ssebench", "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: ssebench")
