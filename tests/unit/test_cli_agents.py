"""`ssebench agents list` as a user runs it: its --json shape and its exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from ssebench.agents import release_version
from tests.cli import ssebench

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "docs" / "examples" / "agents"


def test_agents_list_json_shape() -> None:
    done = ssebench("agents", "list", "--json", env={"SSEBENCH_AGENTS_PATH": ""})
    assert done.returncode == 0, done.stderr
    listed = {agent["name"]: agent for agent in json.loads(done.stdout)["agents"]}
    assert {"reference", "dummy", "mini", "sleeper"} <= set(listed)
    mini = listed["mini"]
    assert set(mini) == {
        "name",
        "version",
        "description",
        "needs_model",
        "api",
        "upstream",
        "install_image",
        "origin",
        "found_by",
        "path",
    }
    # A built-in agent has the version of ssebench, so a release names its images.
    assert (mini["version"], mini["needs_model"], mini["api"], mini["origin"]) == (
        release_version(),
        True,
        "openai-chat",
        "builtin",
    )
    assert listed["reference"]["upstream"] is None and listed["reference"]["needs_model"] is False
    # The fake extension (tests/fixtures/ssebench_fake_ext) ships ext-echo through the
    # entry point group ssebench.agents.
    assert listed["ext-echo"]["origin"] == "extension"
    assert listed["ext-echo"]["found_by"] == "entry point fake-ext"


def test_agents_list_with_a_user_folder(tmp_path: Path) -> None:
    by_option = ssebench("agents", "list", "--json", "--agents-dir", str(EXAMPLES))
    by_variable = ssebench("agents", "list", "--json", env={"SSEBENCH_AGENTS_PATH": str(EXAMPLES)})
    for done, found_by in ((by_option, "--agents-dir"), (by_variable, "$SSEBENCH_AGENTS_PATH")):
        assert done.returncode == 0, done.stderr
        listed = {agent["name"]: agent for agent in json.loads(done.stdout)["agents"]}
        hello = listed["hello-agent"]
        assert hello["origin"] == "folder" and hello["found_by"] == found_by
        assert hello["upstream"] == {"registry": "pypi", "package": "cowsay", "version": "6.1"}
        assert hello["install_image"] is True
        assert hello["path"] == str(EXAMPLES / "hello-agent")
    table = ssebench("agents", "list", "--agents-dir", str(EXAMPLES))
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    assert header.split()[:3] == ["AGENT", "VERSION", "UPSTREAM"]
    hello_row = next(row for row in rows if row.startswith("hello-agent "))
    assert "pypi:cowsay" in hello_row and "6.1" in hello_row and "folder (" in hello_row


def test_agents_list_refuses_a_bad_folder_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "agent.json").write_text('{"name": "bad", "version": 1}')
    (bad / "run").write_text("#!/bin/sh\n")
    done = ssebench("agents", "list", "--json", "--agents-dir", str(bad))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == (
        f'ssebench: error: {bad / "agent.json"}: "version" must be a non-empty string'
    )
    missing = ssebench("agents", "list", "--agents-dir", str(tmp_path / "none"))
    assert missing.returncode == 1
    assert missing.stderr.strip().splitlines() == [
        f"ssebench: error: --agents-dir names {tmp_path / 'none'}, which is not a folder"
    ]


def test_run_with_an_unknown_agent_lists_the_known_ones(tmp_path: Path) -> None:
    done = ssebench(
        "run", "--task", "tiny-add", "--agent", "nobody", "--backend", "fake",
        "--results", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    prefix = "ssebench: error: Unknown agent 'nobody'; the agents are: "
    assert line.startswith(prefix)
    known = line.removeprefix(prefix).split(", ")
    assert known == sorted(known)
    assert {"dummy", "ext-echo", "reference", "claude-code"} <= set(known)


def test_images_publish_names_a_user_agents_images() -> None:
    done = ssebench(
        "images", "publish", "--dry-run", "--json", "--registry", "registry.test/sb",
        "--local", str(REPO / "datasets" / "pilot"), "--tasks", "py-semver-prerelease",
        "--agents", "hello-agent", "--agents-dir", str(EXAMPLES),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["images"] == [
        "registry.test/sb/agent-hello-agent/py-semver-prerelease:1",
        "registry.test/sb/agent-hello-agent/sidecar:1",
        "registry.test/sb/tool-sidecar/py-semver-prerelease:1",
    ]
    unknown = ssebench(
        "images", "publish", "--dry-run", "--registry", "r", "--tasks", "all",
        "--agents", "hello-agent", "--local", str(REPO / "datasets" / "pilot"),
        env={"SSEBENCH_AGENTS_PATH": ""},
    )  # fmt: skip
    assert unknown.returncode == 1
    assert unknown.stderr.startswith("ssebench: error: Unknown agent 'hello-agent'")


def test_eval_takes_agents_dir(tmp_path: Path) -> None:
    tiny = REPO / "tests" / "fixtures" / "datasets" / "tiny"
    done = ssebench(
        "eval", "--backend", "fake", "--dataset", str(tiny), "--tasks", "tiny-add",
        "--agent", "hello-agent", "--agents-dir", str(EXAMPLES),
        "--results", str(tmp_path), "--report", str(tmp_path / "report.json"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert [pair["agent"] for pair in report["matrix"]] == ["hello-agent"]
    summary = tmp_path / "tiny-add" / "none" / "hello-agent" / "latest" / "summary.json"
    assert json.loads(summary.read_text())["config"]["agent"] == "hello-agent"
