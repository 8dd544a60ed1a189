"""`--python-images auto` on the real Docker daemon: the official python:X.Y-slim where
Docker has it or pulls it, else ssebench/python:X.Y made from Debian, else one line with
the ways out.

This machine, like CI's, reaches no container registry, so every pull of
python:X.Y-slim fails at once; .ci/run seeds ssebench/python:3.9
(scripts/seed-python-image.sh). An official image "already here" is a local image
tagged python:3.97-slim, a version no registry has.
"""

from __future__ import annotations

import io
import subprocess
from collections.abc import Iterator

import pytest

from ssebench.swebench import python_images
from ssebench.swebench.environments import EnvironmentUnavailable
from ssebench.swebench.python_images import PythonImageSource

pytestmark = pytest.mark.docker

SEEDED = "ssebench/python:3.9"


def docker(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *arguments], capture_output=True, text=True, timeout=60)


@pytest.fixture
def seeded() -> str:
    assert docker("image", "inspect", SEEDED).returncode == 0, (
        f"{SEEDED} is not made: run scripts/seed-python-image.sh 3.9 (.ci/run does)"
    )
    return SEEDED


@pytest.fixture
def official_here(seeded: str) -> Iterator[str]:
    name = "python:3.97-slim"
    assert docker("tag", seeded, name).returncode == 0
    yield name
    docker("image", "rm", name)


def test_an_official_image_already_here_is_taken(official_here: str) -> None:
    said = io.StringIO()
    assert PythonImageSource("auto", said).image("3.97") == official_here
    assert said.getvalue() == ""  # nothing pulled, nothing to say


def test_the_debian_image_when_the_official_cannot_be_pulled(seeded: str) -> None:
    assert docker("image", "inspect", "python:3.9-slim").returncode != 0, (
        "python:3.9-slim is on this machine: this test is of one that cannot pull it"
    )
    said = io.StringIO()
    source = PythonImageSource("auto", said)
    assert source.image("3.9") == seeded
    assert source.image("3.9") == seeded
    lines = said.getvalue().splitlines()
    # Asked once for the import: the second instance of 3.9 is not pulled for again.
    assert len(lines) == 1, lines
    assert lines[0].startswith("ssebench: python:3.9-slim cannot be pulled here ("), lines
    assert lines[0].endswith(
        "): Python 3.9 environments start from ssebench/python:3.9, made from Debian bullseye"
    ), lines


def test_a_debian_python_not_made_names_the_script(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(python_images.DEBIAN_PYTHONS, "3.98", "nowhere")
    source = PythonImageSource("auto", io.StringIO())
    with pytest.raises(EnvironmentUnavailable) as raised:
        source.image("3.98")
    reason = str(raised.value)
    assert reason.startswith("its specification needs Python 3.98: python:3.98-slim cannot"), reason
    assert "ssebench/python:3.98 is not made; make it offline with " in reason
    assert "scripts/seed-python-image.sh 3.98" in reason
    # The same answer for the import's next instance of 3.98, without asking again.
    with pytest.raises(EnvironmentUnavailable) as again:
        source.image("3.98")
    assert str(again.value) == reason


def test_a_python_no_debian_carries_is_one_line() -> None:
    with pytest.raises(EnvironmentUnavailable) as raised:
        PythonImageSource("auto", io.StringIO()).image("3.6")
    reason = str(raised.value)
    assert "\n" not in reason
    assert reason.startswith("its specification needs Python 3.6: python:3.6-slim cannot"), reason
    assert "no Debian release carries it" in reason
    assert "--python-substitute" in reason


def test_without_docker_the_official_image_is_left_to_the_build(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    said = io.StringIO()
    assert PythonImageSource("auto", said).image("3.9") == "python:3.9-slim"
    assert said.getvalue().startswith("ssebench: Docker is not reachable: "), said.getvalue()
    assert said.getvalue().rstrip().endswith("Python 3.9 environments start from python:3.9-slim.")


def test_official_and_debian_choose_without_asking(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    assert PythonImageSource("official", io.StringIO()).image("3.6") == "python:3.6-slim"
    assert PythonImageSource("debian", io.StringIO()).image("3.11") == "ssebench/python:3.11"
    with pytest.raises(EnvironmentUnavailable, match="no Debian release carries"):
        PythonImageSource("debian", io.StringIO()).image("3.6")
