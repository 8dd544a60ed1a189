"""The hand check of a task, run INSIDE its case image by `ssebench tasks check`.

Standard library only: it is fed to the image's python3 on standard input, so the
image needs nothing it does not already have. It plays the two outcomes an author must
see (docs/adding-a-task.md, "Checking a task"):

    unpatched   build and test pass, hidden_test FAILS
    patched     reference.patch applies; build, test and hidden_test pass

each in a fresh copy of the project (without its .git, as the evaluator grades), with
hidden/ copied over the tree before hidden_test, as an unprivileged user with a
scratch HOME and TMPDIR, and a time limit per command. The commands' output goes to
standard error as it comes; standard output gets one JSON object per step, which
`ssebench tasks check` turns into its verdict.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

# Where the case image keeps the task's private files (case.Dockerfile); a test points
# these at a folder laid out the same way.
TASK_DIR = Path(os.environ.get("SSEBENCH_CHECK_TASK_DIR", "/ssebench/task"))
TIMEOUT_SECONDS = int(os.environ.get("SSEBENCH_CHECK_TIMEOUT", "900"))
# nobody:nogroup, present in every Debian image: the commands never run as root.
UNPRIVILEGED = 65534
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def report(outcome: str, step: str, exit_code: int | None, detail: str = "") -> None:
    line = {"outcome": outcome, "step": step, "exit_code": exit_code, "detail": detail}
    print(json.dumps(line), flush=True)


def say(text: str) -> None:
    print(f"--- {text}", file=sys.stderr, flush=True)


def give_away(path: Path) -> None:
    """The tree and the scratch folders belong to the unprivileged user (as root only)."""
    if os.getuid() != 0:
        return
    for root, folders, files in os.walk(path):
        for name in [*folders, *files]:
            os.lchown(os.path.join(root, name), UNPRIVILEGED, UNPRIVILEGED)
    os.lchown(path, UNPRIVILEGED, UNPRIVILEGED)


def drop_privileges() -> None:
    if os.getuid() == 0:
        os.setgroups([])
        os.setgid(UNPRIVILEGED)
        os.setuid(UNPRIVILEGED)


def run_step(command: str, tree: Path, scratch: Path) -> int | None:
    """Exit status of `sh -c command` in tree; None when it ran out of time."""
    env = {
        "PATH": PATH,
        "HOME": str(scratch / "home"),
        "TMPDIR": str(scratch / "tmp"),
        "LANG": "C.UTF-8",
    }
    process = subprocess.Popen(
        ["/bin/sh", "-c", command],
        cwd=tree,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=sys.stderr,
        stderr=sys.stderr,
        preexec_fn=drop_privileges,
        start_new_session=True,
    )
    try:
        return process.wait(timeout=TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return None


def play(outcome: str, task: dict[str, str], patched: bool) -> None:
    with tempfile.TemporaryDirectory(prefix=f"ssebench-check-{outcome}-") as folder:
        scratch = Path(folder)
        tree = scratch / "tree"
        shutil.copytree(
            task["source_dir"], tree, symlinks=True, ignore=shutil.ignore_patterns(".git")
        )
        (scratch / "home").mkdir()
        (scratch / "tmp").mkdir()
        if patched:
            say(f"{outcome}: git apply reference.patch")
            applied = subprocess.run(
                ["git", "apply", "--whitespace=nowarn", str(TASK_DIR / "reference.patch")],
                cwd=tree,
                stdout=sys.stderr,
                stderr=sys.stderr,
                check=False,
            )
            report(outcome, "patch", applied.returncode)
            if applied.returncode != 0:
                return
        give_away(scratch)
        for step in ("build", "test", "hidden_test"):
            if step == "hidden_test" and (TASK_DIR / "hidden").is_dir():
                shutil.copytree(TASK_DIR / "hidden", tree, symlinks=True, dirs_exist_ok=True)
                give_away(tree)
            say(f"{outcome}: {step}: {task[step]}")
            status = run_step(task[step], tree, scratch)
            detail = "" if status is not None else f"no exit within {TIMEOUT_SECONDS}s"
            report(outcome, step, status, detail)
            if status != 0 and step != "hidden_test":
                return  # the later steps would say nothing more


def main() -> int:
    task = json.loads((TASK_DIR / "task.json").read_text(encoding="utf-8"))
    play("unpatched", task, patched=False)
    play("patched", task, patched=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
