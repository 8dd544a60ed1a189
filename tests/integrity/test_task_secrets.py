"""What a run keeps from its agent: the reference patch, the hidden tests, the task
files, the fix through git, the admin socket and the checks its difficulty withholds.
Each test is one attempt, made as `model` inside a held run; each must fail."""

from __future__ import annotations

import json

from tests.integrity import probes
from tests.integrity.conftest import HIDDEN_WORD, REFERENCE_WORD, TASK_DIR, HeldRun


def test_the_words_the_suite_looks_for_are_in_the_task() -> None:
    """The attempts below look for these words; they must be in what they stand for,
    or finding nothing would prove nothing."""
    assert REFERENCE_WORD in (TASK_DIR / "reference.patch").read_text()
    assert REFERENCE_WORD not in "".join(p.read_text() for p in (TASK_DIR / "repo").rglob("*.py"))
    hidden = "".join(p.read_text() for p in (TASK_DIR / "hidden").rglob("*.py"))
    assert HIDDEN_WORD in hidden


def test_reading_the_reference_patch_hidden_tests_and_task_files(held_run: HeldRun) -> None:
    """Protection: the task files (task.json, hidden/) are in /ssebench/task, root's and
    0700 (made so by the image's task layer, src/ssebench/images/layers.py); the reference patch
    is never in the image of an agent other than `reference` (it reaches that one as a
    mount); grading's copies live under /var/lib/ssebench-grade/private (0700,
    src/ssebench/runtime/entrypoint.py _prepare). The attempt: the known places, then
    every file the agent can read, searched for words of the reference patch and the
    hidden tests."""
    done = held_run.as_model(
        "for f in /reference/patch.diff /reference.patch /ssebench/task/task.json "
        "/ssebench/task/hidden /var/lib/ssebench-grade/private/base.git "
        "/var/lib/ssebench/results; do ls -d $f >/dev/null 2>&1 && "
        'cat $f >/dev/null 2>&1 && echo "READ $f"; done; '
        f"grep -rlsI -e {REFERENCE_WORD} -e {HIDDEN_WORD} / "
        "--exclude-dir=proc --exclude-dir=sys --exclude-dir=dev; "
        "ls /ssebench/task 2>&1; true",
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "READ" not in done.stdout, done.stdout
    # grep printed nothing it found: only ls's refusal is left.
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    # (In sidecar mode the agent's container has no /ssebench at all.)
    assert lines in (
        ["ls: cannot open directory '/ssebench/task': Permission denied"],
        ["ls: cannot access '/ssebench/task': No such file or directory"],
    ), lines


def test_the_daemon_and_mcp_serve_no_task_file(held_run: HeldRun) -> None:
    """Protection: the daemon's agent API (src/ssebench/runtime/daemon.py) has no route
    that reads a file: prompt, diff (of the agent's own tree), dialog, status, result
    (after grading only) and the tools, which build and test a scratch copy and return
    their output; MCP (src/ssebench/runtime/mcp.py) offers one tool, test_patch, the
    same check. The admin routes do not exist on the agent's listeners. The attempt:
    every route, the admin ones, paths that lead out of the API, every MCP tool and
    some that do not exist."""
    seen = held_run.probe_once(probes.DAEMON_API)
    answers: dict[str, list[object]] = seen["answers"]  # type: ignore[assignment]
    assert seen["tools"] == ["test_patch"]
    everything = json.dumps(answers)
    assert REFERENCE_WORD not in everything and HIDDEN_WORD not in everything
    assert '"hidden_test"' not in everything  # the hidden command is not even named
    for route in ("GET /admin/status", "POST /admin/result", "POST /admin/agent-exited"):
        assert answers[route][0] == 404, (route, answers[route])
    for route in (
        "GET /task",
        "GET /hidden",
        "GET /reference",
        "GET /ssebench/task/hidden/hidden_tests",
    ):
        assert answers[route][0] == 404, (route, answers[route])
    assert answers["GET /result"][0] == 404  # not graded yet
    for name in ("read_file", "hidden_tests", "reference_patch"):
        assert "error" in json.dumps(answers[f"mcp tools/call {name}"][1]).lower()
    # The prompt is the task's statement, nothing more of task.json.
    prompt = json.loads(str(answers["GET /prompt"][1]))
    assert set(prompt) == {"task", "prompt"}


def test_recovering_the_fix_from_git(held_run: HeldRun) -> None:
    """Protection: the task's source tree is a repository of one commit, the base,
    made when the image is built (src/ssebench/images/layers.py): no history, no other refs,
    no reflog of the fix, no packed or dangling objects; the task's own history never
    enters the image. The attempt: log --all, reflog, stash, every object in the object
    store (loose, packed, dangling), and the words of the fix in .git/."""
    done = held_run.as_model(
        "cd /src/semver || exit 3; "
        "echo COMMITS $(git log --all --format=%H | wc -l); "
        "echo REFLOG $(git reflog --all --format=%H | sort -u | wc -l); "
        "echo STASH $(git stash list | wc -l); "
        "echo PACKS $(ls .git/objects/pack | wc -l); "
        "git fsck --unreachable --dangling --no-reflogs 2>&1 | grep -c -e dangling -e unreachable; "
        f"git cat-file --batch-all-objects --batch | grep -c -e {REFERENCE_WORD} -e {HIDDEN_WORD}; "
        f"grep -rlsa -e {REFERENCE_WORD} -e {HIDDEN_WORD} .git | wc -l"
    )
    lines = done.stdout.split()
    assert lines == [
        "COMMITS", "1", "REFLOG", "1", "STASH", "0", "PACKS", "0", "0", "0", "0",
    ], done.stdout + done.stderr  # fmt: skip


def test_reaching_the_admin_socket(held_run: HeldRun) -> None:
    """Protection: the admin socket /run/ssebench/admin.sock is root's, mode 0600, and
    checks its peer's uid (SO_PEERCRED) against root's (src/ssebench/runtime/unixhttp.py);
    the admin routes exist on it only (daemon.py dispatch). The attempt: connect and
    ask, as the agent."""
    seen = held_run.python_as_model(probes.ADMIN_SOCKET)
    assert seen == {"/run/ssebench/admin.sock": "PermissionError"}


def test_getting_a_check_the_difficulty_withholds(held_run: HeldRun) -> None:
    """Protection: TOOLS_BY_DIFFICULTY in src/ssebench/runtime/daemon.py: at difficulty 2
    (the held runs') the build tool only; the test tool answers 403, and MCP's
    test_patch runs the strongest check allowed, the build. (Difficulty 3, no tool at
    all, is tried by the grading test's run.) The attempt: the test tool over HTTP, and
    test_patch over MCP."""
    seen = held_run.probe_once(probes.DAEMON_API)
    answers: dict[str, list[object]] = seen["answers"]  # type: ignore[assignment]
    status, body = answers["POST /tools/test"]
    assert status == 403 and json.loads(str(body))["allowed"] == ["build"]
    assert answers["POST /tools/build"][0] == 200
    called = json.loads(str(answers["mcp tools/call test_patch"][1]))
    text = json.dumps(called["result"])
    assert "build" in text and "unittest" not in text, text
