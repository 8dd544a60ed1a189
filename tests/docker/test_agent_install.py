"""Install images for real: the guide's example agent's install.Dockerfile (cowsay from
PyPI, pinned by hash) built once, copied into the agent layer in both modes, cached on
a second prepare, and a broken pin failing in one line."""

from __future__ import annotations

import io
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssebench.agents import read_agent
from ssebench.errors import ImageUnavailableError
from ssebench.extensions import ImageRequest
from ssebench.images.builds import ensure_layers, layer_is_current, prepare_images
from ssebench.images.layers import agent_install_layer
from ssebench.images.output import BuildOutput
from tests.conftest import PILOT_DATASET

pytestmark = pytest.mark.docker
EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "agents" / "hello-agent"
TASK = "py-semver-prerelease"
INSTALLED = "/opt/ssebench/agents/hello-agent/install/lib/cowsay/__main__.py"
# The tool layer and the agent runtime are tagged with the tool version, and other
# checkouts on the same daemon build those tags from their own runtime: a version of
# this module's own keeps their builds from replacing these images between two prepares.
TOOL_VERSION = f"install-test-{secrets.token_hex(3)}"


@pytest.fixture(scope="module", autouse=True)
def remove_own_tags() -> Iterator[None]:
    yield
    for image in (f"ssebench/tool/{TASK}:{TOOL_VERSION}", f"ssebench/agent-runtime:{TOOL_VERSION}"):
        subprocess.run(["docker", "image", "rm", image], capture_output=True, timeout=120)


def request(agent_dir: Path, mode: str = "sandbox") -> ImageRequest:
    agent = read_agent(agent_dir)
    return ImageRequest(
        task_id=TASK,
        dataset="pilot",
        agent=agent.name,
        agent_version=agent.version,
        mode=mode,  # type: ignore[arg-type]
        tool_version=TOOL_VERSION,
        task_dir=PILOT_DATASET / TASK,
        agent_dir=agent_dir,
    )


def in_image(image: str, *command: str) -> str:
    done = subprocess.run(
        ["docker", "run", "--rm", "--entrypoint", command[0], image, *command[1:]],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("mode", ["sandbox", "sidecar"])
def test_agent_layer_holds_the_install_image_and_is_cached(mode: str) -> None:
    first = io.StringIO()
    made = prepare_images(request(EXAMPLE, mode), BuildOutput(stream=first))
    # The install image is task-independent and named by the versions.
    assert layer_is_current(agent_install_layer(read_agent(EXAMPLE)))
    # The agent's program runs from the agent layer with the task image's python3 alone.
    owner = in_image(made.run, "stat", "-c", "%U %a", INSTALLED)
    assert owner.split() == ["root", "644"]
    said = in_image(
        made.run,
        "env",
        "PYTHONPATH=/opt/ssebench/agents/hello-agent/install/lib",
        "python3",
        "-m",
        "cowsay",
        "-t",
        "moo",
    )
    assert "moo" in said
    # No CA bundle and no pip in what the agent layer brought.
    listing = in_image(made.run, "find", "/opt/ssebench/agents/hello-agent", "-name", "*.crt")
    assert listing == ""
    second = io.StringIO()
    again = prepare_images(request(EXAMPLE, mode), BuildOutput(stream=second))
    assert again == made
    assert "building" not in second.getvalue()  # a second prepare builds nothing


def test_a_broken_pin_fails_in_one_line(tmp_path: Path) -> None:
    good = agent_install_layer(read_agent(EXAMPLE))
    ensure_layers([good], output=BuildOutput(stream=io.StringIO()))
    folder = Path(shutil.copytree(EXAMPLE, tmp_path / "hello-agent"))
    requirements = folder / "requirements.txt"
    requirements.write_text(requirements.read_text().replace("sha256:274b", "sha256:0000"))
    layer = agent_install_layer(read_agent(folder))
    log = io.StringIO()
    with pytest.raises(ImageUnavailableError) as raised:
        ensure_layers([layer], output=BuildOutput(stream=log))
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(
        "Building the install image ssebench/agent-install/hello-agent:6.1-1 failed: "
        "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES"
    ), message
    assert "agent-install | " in log.getvalue()  # the build's progress was shown
    # The image of the good folder (same tag, other digest) is not replaced.
    assert layer_is_current(good)
