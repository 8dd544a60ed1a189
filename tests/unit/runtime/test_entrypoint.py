from __future__ import annotations

import dataclasses
import io
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from ssebench.runtime.accounts import Accounts
from ssebench.runtime.entrypoint import KEEP_ALIVE_MESSAGE, main
from ssebench.runtime.model_relay import PLACEHOLDER_KEY

from .conftest import AGENTS, FIXED, ROOT, SENTINEL, Project, make_project


def run_entrypoint(
    project: Project, accounts: Accounts, argv: list[str], **env: str
) -> tuple[int, bytes]:
    stdout = io.BytesIO()
    code = main(
        argv,
        environ=project.environ(**env),
        layout=project.layout,
        accounts=accounts,
        stdout=stdout,
        host="127.0.0.1",
        port=0,
        install_signal_handlers=False,
    )
    return code, stdout.getvalue()


def agent(name: str) -> list[str]:
    return [str(AGENTS / name / "run")]


def test_reference_agent_passes(project: Project, accounts: Accounts) -> None:
    code, stdout = run_entrypoint(
        project, accounts, agent("reference"), SSE_REFERENCE_PATCH=str(project.reference_patch)
    )
    assert code == 0
    result = project.result()
    assert (result["status"], result["error_msg"]) == ("passed", None)
    assert result["agent_exit_code"] == 0
    assert [s["name"] for s in result["steps"]] == ["apply", "build", "test", "hidden_test"]
    assert result["patch_files"] == 1
    # The agent's output goes live to stdout and to agent.log; progress lines too.
    assert b"reference: done" in stdout
    assert b"reference: done" in (project.layout.results / "agent.log").read_bytes()
    assert b"ssebench: result: passed" in stdout
    types = [e["type"] for e in project.dialog()]
    assert types == ["agent_started", "message", "agent_exited", "graded"]
    assert [e["seq"] for e in project.dialog()] == [1, 2, 3, 4]


def test_dummy_agent_fails(project: Project, accounts: Accounts) -> None:
    code, _ = run_entrypoint(project, accounts, agent("dummy"))
    assert code == 0
    result = project.result()
    assert (result["status"], result["error_msg"]) == ("failed", "Hidden test failed")
    assert result["patch_files"] == 1
    assert b"+++ b/NOTES.txt" in (project.layout.results / "final.patch").read_bytes()


def test_reference_agent_without_a_patch_exits_1(project: Project, accounts: Accounts) -> None:
    missing = str(project.reference_patch) + ".missing"
    code, stdout = run_entrypoint(
        project, accounts, agent("reference"), SSE_REFERENCE_PATCH=missing
    )
    assert code == 1
    assert b"cannot read the reference patch" in stdout
    result = project.result()
    assert result["agent_exit_code"] == 1
    assert (result["status"], result["error_msg"]) == ("failed", "Hidden test failed")


def test_timeout_exits_124_and_fails_the_run(project: Project, accounts: Accounts) -> None:
    started = time.monotonic()
    code, _stdout = run_entrypoint(
        project, accounts, agent("sleeper"), TIMEOUT="2", SSE_SLEEPER_SECONDS="60"
    )
    assert code == 124
    assert time.monotonic() - started < 30
    result = project.result()
    assert (result["status"], result["error_msg"]) == ("failed", "Timeout (2s)")
    assert (result["timed_out"], result["agent_exit_code"], result["stopped"]) == (True, 124, False)
    # The steps still ran and are recorded.
    assert [s["name"] for s in result["steps"]] == ["apply", "build", "test", "hidden_test"]


def test_the_agent_gets_a_clean_environment(
    project: Project, accounts: Accounts, tmp_path: Path
) -> None:
    out = tmp_path / "agent-env.json"
    script = (
        "import json, os, sys, urllib.request\n"
        "status = json.load(urllib.request.urlopen(os.environ['SSE_DAEMON_URL'] + '/status'))\n"
        # Every process environment the agent's user can read, as a model would ask.
        "seen = []\n"
        "for pid in filter(str.isdigit, os.listdir('/proc')):\n"
        "    try:\n"
        "        seen.append(open(f'/proc/{pid}/environ', 'rb').read().decode(errors='replace'))\n"
        "    except OSError:\n"
        "        pass\n"
        f"json.dump({{'env': dict(os.environ), 'status': status, 'cwd': os.getcwd(), "
        f"'environs': seen}}, open({str(out)!r}, 'w'))\n"
    )
    code, _ = run_entrypoint(
        project,
        accounts,
        [sys.executable, "-c", script],
        PYTHONPATH="/leak",
        SSE_SLEEPER_SECONDS="7",
        SSE_KEEP_ALIVE="",
        SSE_DIFFICULTY="3",
        SSE_RUN_ID="run-1",
    )
    assert code == 0
    seen = json.loads(out.read_text())
    env = seen["env"]
    assert seen["status"] == {"phase": "agent", "agent_exit_code": None}
    assert seen["cwd"] == str(project.source)
    # The key is the model relay's: the agent has a placeholder and the relay's URL.
    assert env["SSE_API_KEY"] == PLACEHOLDER_KEY
    assert env["SSE_BASE_URL"].startswith("http://127.0.0.1:")
    assert seen["environs"] and not any(SENTINEL in text for text in seen["environs"])
    assert SENTINEL not in json.dumps(env)
    assert env["SSE_SOURCE_DIR"] == str(project.source)
    assert env["SSE_DIFFICULTY"] == "3"
    assert env["SSE_ARCHIVE"] == str(project.layout.archive)
    assert env["TIMEOUT"] == "60"
    assert env["SSE_MODEL_NAME"] == "test-model"
    assert env["SSE_SLEEPER_SECONDS"] == "7"
    assert env["SSE_DAEMON_URL"].startswith("http://127.0.0.1:")
    assert env["SSE_MCP_URL"] == env["SSE_DAEMON_URL"] + "/mcp"
    assert env["HOME"] == str(accounts.agent.home)
    for name in ("PYTHONPATH", "SSE_RESULTS", "SSE_KEEP_ALIVE", "SSE_RUN_ID"):
        assert name not in env
    assert project.result()["run_id"] == "run-1"


def test_task_commands_get_the_image_environment_and_no_secret(
    tmp_path: Path, short_dir: Path, accounts: Accounts
) -> None:
    project = make_project(tmp_path, short_dir, {"build": "env > build-env.txt"})
    project.layout.image_env_file.write_bytes(b"GOPATH=/go\0HOSTNAME=image\0SSE_X=1\0LANG=C\0")
    code, _ = run_entrypoint(project, accounts, agent("dummy"), PYTHONPATH="/leak")
    assert code == 0
    seen = (project.layout.grading_workspace / "tree" / "build-env.txt").read_text()
    names = {line.split("=", 1)[0] for line in seen.splitlines()}
    assert "GOPATH=/go" in seen.splitlines()
    assert "LANG=C.UTF-8" in seen.splitlines()
    assert not {n for n in names if n.startswith("SSE_")}
    assert {"HOSTNAME", "PYTHONPATH", "TIMEOUT"}.isdisjoint(names)
    assert SENTINEL not in seen


def test_the_secret_reaches_no_file(project: Project, accounts: Accounts) -> None:
    script = (
        'echo "stdout $SSE_API_KEY"; echo "stderr $SSE_API_KEY" >&2; '
        'printf "%s" "$SSE_API_KEY"; '
        'python3 -c "import json, os, urllib.request; urllib.request.urlopen('
        "urllib.request.Request(os.environ['SSE_DAEMON_URL'] + '/dialog', "
        "data=json.dumps({'type': 'note', 'key': os.environ['SSE_API_KEY']}).encode(), "
        "method='POST'))\"; exit 3"
    )
    code, stdout = run_entrypoint(project, accounts, ["sh", "-c", script])
    assert code == 3
    assert SENTINEL.encode() not in stdout
    # The agent holds no key to leak: what it printed is the relay's placeholder.
    assert f"stdout {PLACEHOLDER_KEY}".encode() in stdout
    checked = 0
    for root in (project.layout.results, project.layout.archive):
        for path in root.rglob("*"):
            if path.is_file():
                assert SENTINEL.encode() not in path.read_bytes(), path
                checked += 1
    assert checked >= 7  # result, final.patch, four logs, dialog
    assert "note" in [e["type"] for e in project.dialog()]


def model_error_agent(
    project: Project, *, event: dict[str, object] | None, exit_code: int
) -> list[str]:
    """An agent that fixes the bug, then posts `event` (as a wrapper's agent_kit.finish
    does) and exits with exit_code."""
    fixed = project.source / "calc.py"
    script = (
        "import json, os, sys, urllib.request\n"
        f"open({str(fixed)!r}, 'w').write({FIXED!r})\n"
        f"event = {event!r}\n"
        "if event is not None:\n"
        "    urllib.request.urlopen(urllib.request.Request(os.environ['SSE_DAEMON_URL'] "
        "+ '/dialog', data=json.dumps(event).encode(), method='POST'))\n"
        f"sys.exit({exit_code})\n"
    )
    return [sys.executable, "-c", script]


def test_a_model_error_is_an_error_run_with_the_agents_reason(
    project: Project, accounts: Accounts
) -> None:
    # The agent's reason is clipped to one printable line.
    reason = "proxy answered 500:\n\x1b[31m budget exceeded\x00 " + "x" * 400
    script = (
        "import sys, time\n"
        f"sys.path.insert(0, {str(ROOT / 'src')!r})\n"
        "from ssebench.runtime import agent_kit\n"
        f"open({str(project.source / 'calc.py')!r}, 'w').write({FIXED!r})\n"
        f"sys.exit(agent_kit.finish('error', {reason!r}, time.monotonic(), model_error=True))\n"
    )
    code, stdout = run_entrypoint(project, accounts, [sys.executable, "-c", script])
    assert code == 3
    result = project.result()
    assert result["status"] == "error"
    message = result["error_msg"]
    assert message.startswith("Model error: proxy answered 500: [31m budget exceeded xxx")
    assert message.endswith("...") and len(message) == len("Model error: ") + 200
    assert message.isprintable()
    assert result["agent_exit_code"] == 3
    # The patch is graded all the same: it would have passed.
    assert [(s["name"], s["ok"]) for s in result["steps"]] == [
        ("apply", True),
        ("build", True),
        ("test", True),
        ("hidden_test", True),
    ]
    assert f"ssebench: result: error ({message})".encode() in stdout
    graded = project.dialog()[-1]
    assert (graded["type"], graded["status"], graded["error_msg"]) == ("graded", "error", message)


@pytest.mark.parametrize(
    ("event", "exit_code", "expected"),
    [
        # Without a reason it is just "Model error".
        ({"type": "complete", "status": "error", "model_error": True}, 3, ("error", "Model error")),
        # Exit 3 alone is any program's exit status, not a model error.
        ({"type": "complete", "status": "error", "reason": "gave up"}, 3, ("passed", None)),
        (None, 3, ("passed", None)),
        # The event alone, with another exit status, is not one either.
        ({"type": "complete", "model_error": True, "reason": "500"}, 1, ("passed", None)),
        # Only `true` counts.
        ({"type": "complete", "model_error": "yes", "reason": "500"}, 3, ("passed", None)),
    ],
)
def test_a_model_error_needs_exit_3_and_the_complete_event(
    project: Project,
    accounts: Accounts,
    event: dict[str, object] | None,
    exit_code: int,
    expected: tuple[str, str | None],
) -> None:
    argv = model_error_agent(project, event=event, exit_code=exit_code)
    code, _ = run_entrypoint(project, accounts, argv)
    assert code == exit_code
    result = project.result()
    assert (result["status"], result["error_msg"]) == expected


def test_an_agent_that_cannot_start(project: Project, accounts: Accounts) -> None:
    code, stdout = run_entrypoint(project, accounts, ["/nonexistent/agent"])
    assert code == 127
    assert b"cannot start the agent" in stdout
    assert project.result()["agent_exit_code"] == 127
    assert project.result()["status"] == "failed"


def test_a_missing_task_is_a_setup_error(project: Project, accounts: Accounts) -> None:
    project.layout.task_file.unlink()
    code, _ = run_entrypoint(project, accounts, agent("dummy"))
    assert code == 2
    result = project.result()
    assert (result["status"], result["error_msg"]) == ("error", "Entrypoint error: TaskError")
    assert result["steps"] == []


def test_bad_settings_fall_back_to_defaults_with_a_warning(
    project: Project, accounts: Accounts
) -> None:
    code, stdout = run_entrypoint(project, accounts, agent("dummy"), SSE_DIFFICULTY="9")
    assert code == 0
    assert b"SSE_DIFFICULTY is not an integer in 1..3; using 2" in stdout
    assert b"difficulty 2" in stdout


# -- the entrypoint as a process: signals ---------------------------------------------


class Process:
    """The entrypoint in its own process, its stdout read line by line."""

    def __init__(self, project: Project, argv: list[str], **env: str) -> None:
        paths = {k: str(v) for k, v in dataclasses.asdict(project.layout).items()}
        environ = dict(os.environ)
        environ.update(project.environ(**env))
        self.popen = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.unit.runtime.entrypoint_harness",
                json.dumps(paths),
                *argv,
            ],
            cwd=ROOT,
            env=environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.lines.put(line.decode("utf-8", "replace"))

    def wait_for(self, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                continue
            self.seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"{text!r} not seen; output so far:\n{''.join(self.seen)}")

    def wait(self, timeout: float = 60) -> int:
        return self.popen.wait(timeout)

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()


def test_sigterm_stops_the_agent_grades_and_exits_143(project: Project) -> None:
    process = Process(project, agent("sleeper"), SSE_SLEEPER_SECONDS="300")
    try:
        process.wait_for("sleeper: sleeping")
        process.popen.send_signal(signal.SIGTERM)
        assert process.wait() == 143
    finally:
        process.kill()
    result = project.result()
    assert result["stopped"] is True
    assert result["agent_exit_code"] == 143
    assert (result["status"], result["error_msg"]) == ("failed", "Hidden test failed")


def test_a_second_sigterm_during_grading_exits_at_once(tmp_path: Path, short_dir: Path) -> None:
    project = make_project(tmp_path, short_dir, {"build": "echo building; sleep 120"})
    process = Process(project, agent("sleeper"), SSE_SLEEPER_SECONDS="300")
    try:
        process.wait_for("sleeper: sleeping")
        process.popen.send_signal(signal.SIGTERM)
        process.wait_for("grading: apply")
        time.sleep(0.5)  # into the build step
        started = time.monotonic()
        process.popen.send_signal(signal.SIGTERM)
        assert process.wait() == 143
        assert time.monotonic() - started < 15
    finally:
        process.kill()
    result = project.result()
    assert (result["status"], result["error_msg"]) == ("error", "Stopped during grading")
    assert result["stopped"] is True
    assert [s["name"] for s in result["steps"]] == ["apply"]


def test_keep_alive_waits_for_a_stop_then_exits_with_the_agents_status(
    project: Project,
) -> None:
    process = Process(project, ["sh", "-c", "exit 5"], SSE_KEEP_ALIVE="1")
    try:
        port = process.wait_for("daemon listening on port").split()[-1]
        process.wait_for(KEEP_ALIVE_MESSAGE)
        time.sleep(0.5)
        assert process.popen.poll() is None
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/result", timeout=10) as response:
            assert json.loads(response.read())["agent_exit_code"] == 5
        process.popen.send_signal(signal.SIGTERM)
        assert process.wait() == 5
    finally:
        process.kill()
    assert project.result()["stopped"] is False


@pytest.mark.parametrize("name", ["reference", "dummy", "sleeper"])
def test_builtin_agents_are_complete(name: str) -> None:
    directory = AGENTS / name
    info = json.loads((directory / "agent.json").read_text())
    assert info["name"] == name
    assert "version" not in info  # a built-in agent has the version of ssebench
    assert info["description"]
    run = directory / "run"
    assert os.access(run, os.X_OK)
    assert run.read_text().startswith("#!")
