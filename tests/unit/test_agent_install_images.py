"""Install images: the task-independent image an agent's install.Dockerfile builds,
its name, digest and context, and how the agent layer takes it in (no Docker here:
tests/docker/test_agent_install.py builds them for real)."""

from __future__ import annotations

import dataclasses
import io
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssebench.agents import Upstream, read_agent
from ssebench.errors import ImageUnavailableError, UserError
from ssebench.extensions import ImageRequest, prebuilt_images
from ssebench.images.builds import build_layer, ensure_layers, install_error
from ssebench.images.layers import (
    BUILD_CA_VARIABLE,
    agent_install_layer,
    run_layers,
    sidecar_layers,
)
from ssebench.images.output import BuildOutput
from tests.unit.test_images import TINY_TASK, FakeDocker, fake_docker_on_path

HELLO = Path(__file__).resolve().parents[2] / "docs" / "examples" / "agents" / "hello-agent"


@pytest.fixture
def fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDocker]:
    yield from fake_docker_on_path(tmp_path, monkeypatch)


@pytest.fixture
def hello(tmp_path: Path) -> Path:
    """A copy of the guide's example agent, free to change."""
    return Path(shutil.copytree(HELLO, tmp_path / "agents" / "hello-agent"))


def request_for(agent_dir: Path, **options: object) -> ImageRequest:
    agent = read_agent(agent_dir)
    return ImageRequest(
        task_id="tiny-add",
        dataset="tiny",
        agent=agent.name,
        agent_version=agent.version,
        task_dir=TINY_TASK,
        agent_dir=agent_dir,
        **options,  # type: ignore[arg-type]
    )


def test_install_image_name_and_build(hello: Path) -> None:
    layer = agent_install_layer(read_agent(hello), platform="linux/amd64")
    assert layer.image == "ssebench/agent-install/hello-agent:6.1-1"
    assert layer.kind == "agent-install" and layer.build_ca
    assert layer.dockerfile == hello / "install.Dockerfile"
    assert layer.build_args == {"BASE_IMAGE": "debian:bookworm-slim"}
    assert layer.parent is None and layer.platform == "linux/amd64"


def test_agent_layer_copies_from_its_install_image(hello: Path) -> None:
    _, _, agent = run_layers(request_for(hello))
    (install,) = agent.inputs
    assert install.image == "ssebench/agent-install/hello-agent:6.1-1"
    assert agent.build_args["INSTALL_IMAGE"] == install.image
    _, (runtime, sidecar_agent) = sidecar_layers(request_for(hello, mode="sidecar"))
    assert sidecar_agent.inputs == (install,)  # one install image for both modes
    assert sidecar_agent.parent == runtime


def test_an_agent_without_install_dockerfile_takes_the_empty_one(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    shutil.copytree(HELLO, folder)
    (folder / "install.Dockerfile").unlink()
    _, _, agent = run_layers(request_for(folder))
    assert agent.build_args["INSTALL_IMAGE"] == "ssebench/agent-install-empty:1"


def test_edited_agent_folder_changes_the_install_and_agent_digests(hello: Path) -> None:
    _, _, before = run_layers(request_for(hello))
    install_digest, agent_digest = before.inputs[0].digest, before.digest  # computed now
    requirements = hello / "requirements.txt"
    requirements.write_text(requirements.read_text() + "# pinned again\n")
    _, _, after = run_layers(request_for(hello))
    assert after.inputs[0].image == before.inputs[0].image  # same tag ...
    assert after.inputs[0].digest != install_digest  # ... built again
    assert after.digest != agent_digest


def test_an_upstream_version_docker_cannot_tag_is_one_line(hello: Path) -> None:
    upstream = Upstream("pypi", "cowsay", "6.1+local")  # '+' is not allowed in a tag
    agent = dataclasses.replace(read_agent(hello), upstream=upstream)
    with pytest.raises(UserError, match="install image tag"):
        agent_install_layer(agent)


def test_install_context_has_the_folder_and_the_build_ca(
    hello: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.setenv(BUILD_CA_VARIABLE, str(bundle))
    layer = agent_install_layer(read_agent(hello))
    context = tmp_path / "context"
    context.mkdir()
    layer.write_context(context)
    assert sorted(path.name for path in context.iterdir()) == sorted(
        [p.name for p in hello.iterdir()] + ["build-ca"]
    )
    assert (context / "build-ca" / "ca-bundle.crt").read_text() == bundle.read_text()
    digest = layer.digest
    bundle.write_text("another machine's CA\n")
    assert agent_install_layer(read_agent(hello)).digest == digest


def test_without_a_bundle_build_ca_is_an_empty_folder(
    hello: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(BUILD_CA_VARIABLE, raising=False)
    monkeypatch.delenv("PIP_CERT", raising=False)
    context = tmp_path / "context"
    context.mkdir()
    agent_install_layer(read_agent(hello)).write_context(context)
    assert list((context / "build-ca").iterdir()) == []


def test_the_install_image_is_built_once_before_the_agent_layer(
    fake_docker: FakeDocker, hello: Path
) -> None:
    layers = run_layers(request_for(hello))
    fake_docker.on("image", "inspect", status=1, stderr="Error: No such image\n")
    ensure_layers(layers, output=BuildOutput(stream=io.StringIO()))
    built = [argv[argv.index("--tag") + 1] for argv in fake_docker.calls() if "--tag" in argv]
    assert built == [
        layers[0].image,
        layers[1].image,
        "ssebench/agent-install/hello-agent:6.1-1",
        layers[2].image,
    ]


def test_publishing_names_are_unchanged_by_the_install_image(hello: Path) -> None:
    request = request_for(hello, prebuilt=True, registry="registry.test/x")
    assert prebuilt_images(request).run == "registry.test/x/agent-hello-agent/tiny-add:1"


@pytest.mark.parametrize(
    ("log", "line"),
    [
        (
            [
                "Step 7/9 : RUN npm ci",
                "npm error code EINTEGRITY",
                "npm error sha512-abc integrity checksum failed when using sha512",
                "npm error A complete log of this run can be found in: /root/.npm/x.log",
                "The command '/bin/sh -c npm ci' returned a non-zero code: 1",
            ],
            "npm error sha512-abc integrity checksum failed when using sha512",
        ),
        (
            [
                "#9 3.1 ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.",
                "#9 3.1     cowsay==6.1 from https://x/cowsay.whl:",
            ],
            "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.",
        ),
        (
            ["compiling", "segfault here", "The command 'x' returned a non-zero code: 139"],
            "segfault here",
        ),
        (
            [
                "\x1b[91mERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.",
                "\x1b[0mRemoving intermediate container 44520aca9e74",
            ],
            "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.",
        ),
        (["oops", "\x1b[0mRemoving intermediate container 4452", " ---> 4ab"], "oops"),
        ([], "the build printed nothing"),
    ],
)
def test_install_error_picks_the_line_that_says_what_failed(log: list[str], line: str) -> None:
    assert install_error(log) == line


def test_a_failed_install_build_is_one_line(fake_docker: FakeDocker, hello: Path) -> None:
    fake_docker.on(
        "build",
        # The error line scrolls out of the log's tail: it is kept all the same.
        stdout="Step 7/9 : RUN pip install\nERROR: No matching distribution found for cowsay==6.1\n"
        + "".join(f"  more detail {number}\n" for number in range(40))
        + "The command '/bin/sh -c pip install' returned a non-zero code: 1\n",
        status=1,
    )
    layer = agent_install_layer(read_agent(hello))
    with pytest.raises(ImageUnavailableError) as raised:
        build_layer(layer, BuildOutput(stream=io.StringIO(), quiet=True))
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(
        "Building the install image ssebench/agent-install/hello-agent:6.1-1 failed: "
        "ERROR: No matching distribution found for cowsay==6.1 ("
    )
    assert "SSEBENCH_BUILD_CA_BUNDLE" in message
