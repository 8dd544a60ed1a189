"""What a run keeps from its agent at grading: any say in its grade beyond its patch.

One run per backend and mode (difficulty 3, --keep-alive): as `model`, the agent plants
git hooks, an fsmonitor, filter and diff drivers, a test module that runs at grading,
stand-ins for the hidden tests, forged result and dialog files and a process that
should outlive it; then it exits. After grading, the tests check each plant from the
runtime's side, and that the grade is the one the patch deserves: the sleeper fixed
nothing, so the hidden tests fail.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

import pytest

from tests.integrity import probes
from tests.integrity.conftest import (
    KINDS,
    RUNNER_USER,
    HeldRun,
    start_held_run,
)

MARKERS = "/tmp/sse-integrity"
ARCHIVE = "/tmp/sse-archive"
SOURCE = "/src/semver"
# Every hook git knows of (githooks(5)); planted in .git/hooks and in a core.hooksPath.
HOOKS = (
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-receive",
    "update",
    "proc-receive",
    "post-receive",
    "post-update",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "sendemail-validate",
    "fsmonitor-watchman",
    "p4-changelist",
    "p4-prepare-changelist",
    "p4-post-changelist",
    "p4-pre-submit",
    "post-index-change",
)
# Leaves a marker named after what ran it and the uid it ran as.
PAYLOAD = f"""#!/bin/sh
mkdir -p -m 1777 {MARKERS} 2>/dev/null
touch "{MARKERS}/$1.$(id -u)"
"""
# A filter (and textconv) driver passes its input on, after leaving its marker.
FILTER = PAYLOAD + "exec cat\n"
# A test module in the tree: the task's test command runs it at grading. It says who it
# is, and what it could reach, in its marker and on stderr (evaluator.log).
TEST_PAYLOAD = f"""import os, sys
def attempt(path):
    try:
        with open(path, "w") as f:
            f.write("forged")
        return "wrote " + path
    except OSError as error:
        return type(error).__name__
uid = os.getuid()
report = [attempt("/var/lib/ssebench/results/result.json"), attempt("/ssebench/task/task.json")]
os.makedirs("{MARKERS}", mode=0o1777, exist_ok=True)
with open("{MARKERS}/test-payload.%d" % uid, "w") as f:
    f.write(" ".join(report))
print("SSE-INTEGRITY-PAYLOAD uid=%d %s" % (uid, report), file=sys.stderr)
"""
STUB_TEST = """import unittest
class Passes(unittest.TestCase):
    def test_passes(self):
        pass
"""
# A process that outlives the agent if it can: it ticks (the time) into the archive.
SURVIVOR = f"""import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.closerange(0, 3)
        while True:
            with open("{ARCHIVE}/survivor.ticks", "a") as f:
                f.write("%.3f\\n" % time.time())
            time.sleep(0.1)
"""
FORGED_GRADED = {"seq": 9999, "type": "graded", "status": "passed", "error_msg": None}


def plant_script() -> str:
    writes = {
        f"{SOURCE}/.git/sse-payload.sh": PAYLOAD,
        f"{SOURCE}/.git/sse-filter.sh": FILTER,
        f"{SOURCE}/tests/test_zz_integrity_payload.py": TEST_PAYLOAD,
        f"{SOURCE}/hidden_tests/test_hidden_prerelease_order.py": STUB_TEST,
        f"{SOURCE}/hidden_tests/test_zz_extra.py": STUB_TEST,
        f"{SOURCE}/.gitattributes": "* filter=sse diff=sse merge=sse\n",
        f"{ARCHIVE}/result.json": json.dumps({"status": "passed", "error_msg": None}),
        f"{ARCHIVE}/summary.json": json.dumps({"status": "passed", "error_msg": None}),
    }
    lines = ["set -e", f"mkdir -p {SOURCE}/hidden_tests {SOURCE}/.git/sse-hooks {ARCHIVE}"]
    for path, text in writes.items():
        lines.append(f"printf %s {shlex.quote(text)} > {path}")
    lines.append(f"chmod +x {SOURCE}/.git/sse-payload.sh {SOURCE}/.git/sse-filter.sh")
    for hook in HOOKS:
        for folder in (".git/hooks", ".git/sse-hooks"):
            lines.append(
                f"printf '#!/bin/sh\\nexec {SOURCE}/.git/sse-payload.sh hook-{hook}\\n' "
                f"> {SOURCE}/{folder}/{hook} && chmod +x {SOURCE}/{folder}/{hook}"
            )
    config = {
        "core.fsmonitor": f"{SOURCE}/.git/sse-payload.sh fsmonitor",
        "core.hooksPath": f"{SOURCE}/.git/sse-hooks",
        "filter.sse.clean": f"{SOURCE}/.git/sse-filter.sh filter-clean",
        "filter.sse.smudge": f"{SOURCE}/.git/sse-filter.sh filter-smudge",
        "filter.sse.required": "true",
        "diff.sse.textconv": f"{SOURCE}/.git/sse-filter.sh textconv",
        "diff.external": f"{SOURCE}/.git/sse-payload.sh external-diff",
        "core.pager": f"{SOURCE}/.git/sse-payload.sh pager",
        "core.editor": f"{SOURCE}/.git/sse-payload.sh editor",
        "merge.sse.driver": f"{SOURCE}/.git/sse-payload.sh merge-driver",
    }
    for key, value in config.items():
        lines.append(f"git -C {SOURCE} config {key} {shlex.quote(value)}")
    # A change to a tracked file, so that the patch is not empty.
    lines.append(f"echo 'Integrity suite was here.' >> {SOURCE}/README.md")
    # The dialog, rewritten: the file is root's, but the archive folder is the agent's,
    # so it can replace the file with its own copy holding a harness event of its own.
    lines += [
        f"cp {ARCHIVE}/dialog.jsonl /tmp/dialog.copy && rm -f {ARCHIVE}/dialog.jsonl",
        f"printf '%s\\n' {shlex.quote(json.dumps(FORGED_GRADED))} >> /tmp/dialog.copy",
        f"mv /tmp/dialog.copy {ARCHIVE}/dialog.jsonl",
    ]
    # Where the grade is written: must be refused (root's, 0700).
    lines.append("set +e")
    for target in ("result.json", "harness-events.jsonl"):
        lines.append(
            f"echo forged > /var/lib/ssebench/results/{target} 2>/dev/null "
            f"&& echo 'FORGED {target}'"
        )
    lines.append(f"python3 -c {shlex.quote(SURVIVOR)}")
    lines.append("true")
    return "\n".join(lines)


# The dialog post of a harness event, and the tools at difficulty 3.
AGENT_REQUESTS = r"""
import json, urllib.request, urllib.error
def call(method, path, body=None):
    request = urllib.request.Request("http://127.0.0.1:4263" + path, method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            return [response.status, response.read().decode()]
    except urllib.error.HTTPError as error:
        return [error.code, error.read().decode()]
print(json.dumps({
    "graded": call("POST", "/dialog", {"type": "graded", "status": "passed"}),
    "agent_exited": call("POST", "/dialog", {"type": "agent_exited", "exit_code": 0}),
    "build": call("POST", "/tools/build"),
    "test": call("POST", "/tools/test"),
    "diff": call("GET", "/diff"),
}))
"""


@dataclass
class Graded:
    run: HeldRun
    planted: str
    requests: dict[str, list[object]]
    mcp: dict[str, object]
    markers: list[str]
    runner_uid: int
    agent_uid: int
    summary: dict[str, object]

    def file(self, relative: str) -> str:
        return (self.run.run_dir / relative).read_text()


@pytest.fixture(scope="module", params=KINDS)
def graded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Graded]:
    kind = request.param
    if kind.startswith("kubernetes"):
        request.getfixturevalue("cluster")
    results = tmp_path_factory.mktemp(f"graded-{kind}")
    run = start_held_run(kind, results, "graded", "--difficulty", "3", keep_alive=True)
    try:
        planted = run.as_model(plant_script())
        assert planted.returncode == 0, planted.stdout + planted.stderr
        requests = run.python_as_model(AGENT_REQUESTS, timeout=600)
        mcp = run.python_as_model(probes.DAEMON_API, timeout=600)
        agent_uid = int(run.as_model("id -u").stdout)
        run.end_agent()
        run.wait_graded_and_kept()
        listing = run.as_user(None, f"ls -1 {MARKERS} 2>/dev/null; id -u {RUNNER_USER}")
        *markers, runner_uid = listing.stdout.split()
        summary = run.stop()
        answers: dict[str, list[object]] = requests  # type: ignore[assignment]
        yield Graded(
            run, planted.stdout, answers, mcp, markers, int(runner_uid), agent_uid, summary
        )
    finally:
        run.close()


def test_the_grade_is_the_one_the_patch_deserves(graded: Graded) -> None:
    """Protection: grading (src/ssebench/runtime/evaluator.py) applies final.patch to a
    pristine copy of the base commit and runs the task's own commands; nothing the agent
    planted beside its patch counts. The sleeper fixed nothing: the hidden tests fail."""
    summary = graded.summary
    assert summary["status"] == "failed", summary
    assert summary["error_msg"] == "Hidden test failed", summary
    steps = {step["name"]: step["ok"] for step in json.loads(graded.file("result.json"))["steps"]}
    assert steps == {"apply": True, "build": True, "test": True, "hidden_test": False}, steps
    patch = graded.file("final.patch")
    assert "Integrity suite was here." in patch and "test_zz_integrity_payload" in patch


def test_hidden_tests_come_from_the_task_not_the_tree(graded: Graded) -> None:
    """Protection: Evaluator._overlay_hidden copies the task's hidden tests (root-only,
    /ssebench/task/hidden) over the scratch tree after the patch is applied, replacing
    a file of the same name the patch brought (workspace.py overlay); the hidden command
    is the task's. The attempt: a passing stand-in for the hidden test module in the
    tree, under its real name (the prompt does not give it; the agent guessed right)."""
    log = graded.file("evaluator.log")
    hidden_part = log[log.rindex("== hidden_test") :]
    assert "test_numeric_identifiers_compare_as_numbers" in hidden_part, hidden_part[-3000:]
    assert "FAILED" in hidden_part


def test_git_hooks_filters_and_fsmonitor_never_run(graded: Graded) -> None:
    """Protection: root never runs git in the agent's repository (repository.py): diffs
    use a root-only bare copy taken before the agent started, with the agent's tree as
    a bare work tree, GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null, and
    core.hooksPath=/dev/null, core.fsmonitor=false on the command line; the filter and
    diff drivers named in .gitattributes are defined only in the agent's .git/config,
    which that git never reads. Grading applies the patch with `git apply` outside any
    repository. The attempt: every hook, in .git/hooks and in a core.hooksPath; an
    fsmonitor; clean/smudge filters, a textconv and external diff, a pager, an editor
    and a merge driver; then the agent asked the daemon for its diff, and was graded."""
    git_markers = [marker for marker in graded.markers if not marker.startswith("test-payload.")]
    assert git_markers == [], git_markers
    assert graded.requests["diff"][0] == 200
    # The attributes file is just a file of the patch; applying it ran nothing.
    assert ".gitattributes" in graded.file("final.patch")


def test_a_payload_in_the_tree_runs_as_the_runner_in_a_scratch_copy(graded: Graded) -> None:
    """Protection: every task command runs as the runner user (sse-runner) in a scratch
    copy (workspace.py Workspace._run, processes.py Child), never as root and never as
    the agent; the grade (/var/lib/ssebench/results, root 0700) and the task files are
    out of its reach. The attempt: a test module in the tree, which the task's test
    command runs at grading: it leaves a marker with its uid and tries to write
    result.json and task.json."""
    assert graded.runner_uid not in (0, graded.agent_uid)
    assert graded.markers == [f"test-payload.{graded.runner_uid}"], graded.markers
    log = graded.file("evaluator.log")
    refused = "['PermissionError', 'PermissionError']"
    assert f"SSE-INTEGRITY-PAYLOAD uid={graded.runner_uid} {refused}" in log


def test_forging_the_grade_and_the_harness_events(graded: Graded) -> None:
    """Protection: result.json and harness-events.jsonl are written by root into
    /var/lib/ssebench/results (0700 under a 0700 parent; entrypoint.py _open_logs); the
    agent's dialog posts cannot take a runtime type (dialog.py RUNTIME_EVENT_TYPES); the
    host takes the grade from summary.json and the harness events from
    harness-events.jsonl only, and shows archive/ lines as the agent's
    (webui/dialog.py merged_events). The attempt: write both files, post a `graded`
    event, and forge one in archive/dialog.jsonl, plus a result.json and summary.json
    in the archive."""
    from ssebench.webui.dialog import merged_events

    assert "FORGED" not in graded.planted, graded.planted
    for kind in ("graded", "agent_exited"):
        status, body = graded.requests[kind]
        assert status == 400 and "reserved for the runtime" in str(body), (kind, body)
    harness = [json.loads(line) for line in graded.file("harness-events.jsonl").splitlines()]
    grades = [event for event in harness if event["type"] == "graded"]
    assert [event["status"] for event in grades] == ["failed"], harness
    events, _ = merged_events(graded.run.run_dir)
    forged = [event for event in events if event.get("seq") == FORGED_GRADED["seq"]]
    assert forged and all(event["origin"] == "agent" and event.get("claim") for event in forged)
    shown = [e for e in events if e.get("type") == "graded" and e.get("origin") == "harness"]
    assert [event["status"] for event in shown] == ["failed"]
    # The forged files in the archive stay the agent's words: the grade is not theirs.
    assert json.loads(graded.file("archive/result.json"))["status"] == "passed"
    assert graded.summary["status"] == "failed"


def test_a_check_difficulty_3_withholds(graded: Graded) -> None:
    """Protection: TOOLS_BY_DIFFICULTY (src/ssebench/runtime/daemon.py): difficulty 3
    gives no tool; MCP's test_patch then runs no check. The attempt: the build and
    test tools over HTTP and test_patch over MCP."""
    for tool in ("build", "test"):
        status, body = graded.requests[tool]
        assert status == 403 and json.loads(str(body))["allowed"] == [], (tool, body)
    answers: dict[str, list[object]] = graded.mcp["answers"]  # type: ignore[assignment]
    text = json.dumps(answers["mcp tools/call test_patch"])
    assert "unittest" not in text and "compileall" not in text, text


def test_no_process_of_the_agent_survives_into_grading(graded: Graded) -> None:
    """Protection: once the agent exits, every process of its user is killed
    (processes.py sweep_user, from supervision.py supervise_agent and, in sidecar mode,
    agent_side.py) before the daemon is told and grading starts; double-forked,
    setsid'd processes included, as they are found by uid. The attempt: a process that
    left its session and ticks into the archive every 0.1 s; its last tick must come
    before the agent_exited event, and the run stayed up (kept alive) after grading."""
    ticks = [float(line) for line in graded.file("archive/survivor.ticks").split()]
    assert len(ticks) >= 3, ticks  # it did run
    harness = [json.loads(line) for line in graded.file("harness-events.jsonl").splitlines()]
    exited = next(event for event in harness if event["type"] == "agent_exited")
    graded_at = next(event for event in harness if event["type"] == "graded")
    exited_at = datetime.fromisoformat(exited["ts"].replace("Z", "+00:00")).timestamp()
    graded_ts = datetime.fromisoformat(graded_at["ts"].replace("Z", "+00:00")).timestamp()
    assert max(ticks) <= exited_at, (max(ticks), exited_at)
    assert graded_ts >= exited_at
