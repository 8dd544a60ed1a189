"""`ssebench images publish` for real: into the local Docker image store, and pushed to
a registry on 127.0.0.1 (Debian's docker-registry, built here from
tests/fixtures/registry), checked through the registry's HTTP API; then runs with
--prebuilt use exactly those names (the registry's by pulling them).

One task and one agent, both modes: the names are those prebuilt_images() computes,
for sandbox <registry>/agent-reference/<task>, for sidecar
<registry>/agent-reference/sidecar and <registry>/tool-sidecar/<task>.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ssebench.agents import load_agent, release_version
from ssebench.images import publish
from ssebench.images.builds import prepare_images
from ssebench.images.output import BuildOutput
from ssebench.tasks import load_dataset
from tests.cli import last_line_verdict, run_arguments, ssebench, ssebench_with_reader_gone
from tests.conftest import PILOT_DATASET
from tests.docker.conftest import new_run_id
from tests.registry import MANIFEST_TYPES, docker, local_registry, registry_get

pytestmark = pytest.mark.docker

TASK = "py-semver-prerelease"
AGENT = "reference"


def image_id(name: str) -> str:
    inspected = docker("image", "inspect", "--format", "{{.Id}}", name)
    assert inspected.returncode == 0, f"{name} is not in the local image store"
    return inspected.stdout.strip()


def requests(registry: str) -> list[Any]:
    task = load_dataset(PILOT_DATASET).task(TASK)
    return publish.plan([task], [load_agent(AGENT)], registry=registry)


def expected_names(registry: str) -> list[str]:
    names = publish.published_names(requests(registry))
    version = load_agent(AGENT).version
    # The three names of the spec, so a change in prebuilt_images shows here too.
    assert {name.rsplit(":", 1)[0] for name in names} == {
        f"{registry}/agent-{AGENT}/{TASK}",
        f"{registry}/agent-{AGENT}/sidecar",
        f"{registry}/tool-sidecar/{TASK}",
    }
    assert f"{registry}/agent-{AGENT}/{TASK}:{version}" in names
    return names


def publish_arguments(registry: str, *extra: str) -> list[str]:
    """`ssebench images publish` of the pilot's TASK and AGENT into registry."""
    return [
        *("images", "publish", "--registry", registry, "--local", str(PILOT_DATASET)),
        *("--tasks", TASK, "--agents", AGENT, *extra),
    ]


def publish_cli(registry: str, *extra: str) -> list[str]:
    done = ssebench(*publish_arguments(registry, "--json", *extra), timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    answer = json.loads(done.stdout)
    assert answer["dry_run"] is False
    names: list[str] = answer["images"]
    return names


def local_builds(registry: str) -> dict[str, str]:
    """Published name -> ID of the image a local build makes for it (cached builds)."""
    built = publish.build_all(
        requests(registry), lambda r: prepare_images(r, BuildOutput(quiet=True))
    )
    return {item.name: image_id(item.local) for item in built}


def prebuilt_run(registry: str, results: Path, mode: str) -> tuple[dict[str, Any], str]:
    """A reference run with --prebuilt under registry; its summary and its stderr."""
    arguments = run_arguments(
        PILOT_DATASET, TASK, AGENT, new_run_id(f"pub-{mode}"), results, "--prebuilt"
    )
    done = ssebench(
        *arguments,
        "--mode",
        mode,
        "--backend",
        "docker",
        env={"SSEBENCH_REGISTRY": registry},
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    status, run_dir = last_line_verdict(done.stdout)
    assert status == "passed", done.stdout[-3000:] + done.stderr[-3000:]
    summary: dict[str, Any] = json.loads((run_dir / "summary.json").read_text())
    return summary, done.stderr


def untag(names: list[str]) -> None:
    for name in names:
        docker("image", "rm", name)


def test_load_docker_leaves_exactly_the_computed_names(tmp_path: Path) -> None:
    registry = f"ssebench-test.local/publish-{secrets.token_hex(3)}"
    names: list[str] = []
    try:
        names = publish_cli(registry, "--load", "docker")
        expected = expected_names(registry)
        assert names == expected
        # Each name is the image a local build makes for it, nothing else.
        assert {name: image_id(name) for name in names} == local_builds(registry)
        listed = docker("image", "ls", "--format", "{{.Repository}}:{{.Tag}}").stdout.split()
        assert sorted(item for item in listed if item.startswith(f"{registry}/")) == sorted(names)

        sandbox, _ = prebuilt_run(registry, tmp_path, "sandbox")
        assert sandbox["images"]["run"] == f"{registry}/agent-{AGENT}/{TASK}:{release_version()}"
        sidecar, _ = prebuilt_run(registry, tmp_path, "sidecar")
        used = {sidecar["images"]["run"], sidecar["images"]["environment"]}
        assert used == {name for name in names if "sidecar" in name}
    finally:
        untag(names or expected_names(registry))


def test_publish_whose_reader_is_gone_publishes_every_name() -> None:
    """`ssebench images publish ... | head -1` once head has quit: its first line used to
    raise BrokenPipeError, which ended it with nothing published, and main said 0."""
    registry = f"ssebench-test.local/gone-{secrets.token_hex(3)}"
    expected = expected_names(registry)
    try:
        # --build: so that it writes (the builds' lines) before it publishes.
        arguments = publish_arguments(registry, "--load", "docker", "--build")
        status = ssebench_with_reader_gone(*arguments, timeout=1800)
        listed = docker("image", "ls", "--format", "{{.Repository}}:{{.Tag}}").stdout.split()
        assert sorted(item for item in listed if item.startswith(f"{registry}/")) == sorted(
            expected
        )
        assert status == 0
    finally:
        untag(expected)


@pytest.fixture(scope="module")
def registry_port() -> Iterator[int]:
    with local_registry() as port:
        yield port


def test_push_publishes_exactly_the_computed_names(registry_port: int, tmp_path: Path) -> None:
    registry = f"127.0.0.1:{registry_port}/sse"
    names: list[str] = []
    try:
        started = time.monotonic()
        names = publish_cli(registry)
        print(f"published {len(names)} images in {time.monotonic() - started:.1f}s")
        assert names == expected_names(registry)

        # What the registry holds: exactly these repositories, each with its one tag,
        # and each the image a local build makes (its config digest is the image ID).
        host = f"127.0.0.1:{registry_port}/"
        wanted = {name.removeprefix(host).rsplit(":", 1)[0]: name for name in names}
        assert sorted(registry_get(registry_port, "/v2/_catalog")["repositories"]) == sorted(wanted)
        builds = local_builds(registry)
        for repository, name in wanted.items():
            tag = name.rsplit(":", 1)[1]
            tags = registry_get(registry_port, f"/v2/{repository}/tags/list")
            assert tags == {"name": repository, "tags": [tag]}
            manifest = registry_get(
                registry_port, f"/v2/{repository}/manifests/{tag}", MANIFEST_TYPES
            )
            assert manifest["config"]["digest"] == builds[name], name

        # A sidecar run pulls both of its images from the registry, not from a copy.
        untag(names)
        summary, stderr = prebuilt_run(registry, tmp_path, "sidecar")
        assert "cannot pull" not in stderr, stderr[-3000:]
        assert {summary["images"]["run"], summary["images"]["environment"]} == {
            name for name in names if "sidecar" in name
        }
    finally:
        untag(names or expected_names(registry))
