"""Pulls with back-off (images/pulls.py): a registry's rate limit (429) is waited out,
any other failure is not; and which images an environment's Dockerfile starts from.
The real registry behind a rate-limiting proxy: tests/docker/test_swebench_dev.py."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from ssebench.images import pulls as image_pulls
from ssebench.images.output import BuildOutput
from ssebench.images.pulls import base_images, pull_missing_bases, pull_with_back_off

RATE_LIMITED = "Error response from daemon: toomanyrequests: You have reached your pull rate limit."


def fake_pulls(monkeypatch: pytest.MonkeyPatch, answers: list[tuple[int, str]]) -> list[float]:
    """docker pull answers these (status, stderr) in turn; the pauses taken."""
    pauses: list[float] = []

    def run_docker(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        assert argv[:2] == ["pull", "--quiet"]
        status, stderr = answers.pop(0)
        return subprocess.CompletedProcess(argv, status, "", stderr)

    monkeypatch.setattr(image_pulls, "run_docker", run_docker)
    monkeypatch.setattr(image_pulls.time, "sleep", pauses.append)
    return pauses


def test_a_rate_limit_is_waited_out_with_doubling_pauses(monkeypatch: pytest.MonkeyPatch) -> None:
    pauses = fake_pulls(monkeypatch, [(1, RATE_LIMITED), (1, RATE_LIMITED), (0, "")])
    said = io.StringIO()
    reason = pull_with_back_off("r/i:1", platform=None, output=BuildOutput(stream=said))
    assert reason is None and pauses == [5.0, 10.0]
    lines = said.getvalue().splitlines()
    assert lines[0] == (
        "ssebench: r/i:1: the registry refused the pull for its rate limit (429); trying "
        "again in 5s (1 of 4 tries made)"
    )
    assert lines[-1].startswith("ssebench: pulled r/i:1 in ")


def test_the_rate_limit_outlasting_the_tries_and_other_failures_end_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pauses = fake_pulls(monkeypatch, [(1, RATE_LIMITED)] * 4)
    reason = pull_with_back_off("r/i:1", platform=None, output=BuildOutput(stream=io.StringIO()))
    assert reason is not None and "toomanyrequests" in reason and pauses == [5.0, 10.0, 20.0]
    pauses = fake_pulls(monkeypatch, [(1, "manifest unknown")])
    reason = pull_with_back_off("r/i:1", platform=None, output=BuildOutput(stream=io.StringIO()))
    assert reason == "manifest unknown" and pauses == []


def test_the_images_a_dockerfile_starts_from() -> None:
    dockerfile = (
        "# FROM not-this\n"
        "FROM --platform=linux/amd64 ssebench/python:3.9 AS environment\n"
        "FROM environment AS install\n"
        "from registry.example:5000/ns/img:tag\n"
        "ARG BASE\nFROM ${BASE}\nFROM scratch\nFROM environment\n"
    )
    assert base_images(dockerfile) == ["ssebench/python:3.9", "registry.example:5000/ns/img:tag"]


def test_an_environment_base_the_store_lacks_is_pulled_through_its_cli(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The store's own CLI (Podman's, here a recording stand-in) is asked whether it has
    each base, and pulls the one it lacks with the same back-off; other layers pull
    nothing."""
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM present/base:1 AS one\nFROM mirror:5000/ns/official:latest\n")
    monkeypatch.setattr(image_pulls.time, "sleep", lambda seconds: None)
    asked: list[list[str]] = []
    answers = {"present/base:1": 0}
    pulls = [(1, RATE_LIMITED), (0, "")]

    def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
        asked.append(list(argv))
        if argv[:2] == ["image", "inspect"]:
            return subprocess.CompletedProcess(argv, answers.get(argv[2], 1), "", "")
        status, stderr = pulls.pop(0)
        return subprocess.CompletedProcess(argv, status, "", stderr)

    def layer(kind: str) -> SimpleNamespace:
        return SimpleNamespace(kind=kind, dockerfile=dockerfile, platform=None)

    output = BuildOutput(stream=io.StringIO())
    pull_missing_bases(layer("case"), output, run=run, reason_of=lambda done: done.stderr)
    assert asked == []
    pull_missing_bases(layer("environment"), output, run=run, reason_of=lambda done: done.stderr)
    assert [argv[:2] for argv in asked] == [
        ["image", "inspect"],
        ["image", "inspect"],
        ["pull", "--quiet"],
        ["pull", "--quiet"],
    ]
    assert asked[-1][-1] == "mirror:5000/ns/official:latest"
