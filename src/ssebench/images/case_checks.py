"""`ssebench tasks check`: a task's build and tests, run inside its case image.

The check an author does by hand (docs/adding-a-task.md), but with the image's
toolchain rather than this machine's: the case image is built (or reused), and a
container of it with no network plays in_image_check.py, which is fed to the image's
own python3. This module turns the steps it reports into a verdict.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ssebench.errors import UserError
from ssebench.host.docker_cli import DOCKER, docker_missing
from ssebench.images.builds import build_case_images
from ssebench.images.output import BuildOutput
from ssebench.tasks.model import Task

SCRIPT = Path(__file__).with_name("in_image_check.py")
# What root in the check's container needs to hand the scratch tree to the unprivileged
# user, switch to it, and remove the tree afterwards; nothing else.
CAPABILITIES = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID")
# (outcome, step) -> what the task needs: the step passes (True) or fails (False).
EXPECTED = {
    ("unpatched", "build"): True,
    ("unpatched", "test"): True,
    ("unpatched", "hidden_test"): False,
    ("patched", "patch"): True,
    ("patched", "build"): True,
    ("patched", "test"): True,
    ("patched", "hidden_test"): True,
}


@dataclass(frozen=True)
class Step:
    outcome: str
    step: str
    exit_code: int | None  # None: it ran out of time
    detail: str = ""

    @property
    def expected_to_pass(self) -> bool:
        return EXPECTED[(self.outcome, self.step)]

    @property
    def as_expected(self) -> bool:
        if self.exit_code is None:
            return False  # a timeout is neither a pass nor a real test failure
        return (self.exit_code == 0) == self.expected_to_pass

    def line(self) -> str:
        status = self.detail or f"exit {self.exit_code}"
        want = "pass" if self.expected_to_pass else "fail"
        verdict = "ok" if self.as_expected else f"WRONG: it must {want}"
        return f"{self.outcome:<10} {self.step:<12} {status:<10} {verdict}"


@dataclass(frozen=True)
class TaskCheck:
    task: str
    image: str
    steps: tuple[Step, ...]

    @property
    def problems(self) -> list[str]:
        found = [
            f"{step.outcome} {step.step} "
            + (step.detail or f"exited {step.exit_code}")
            + f" (it must {'pass' if step.expected_to_pass else 'fail'})"
            for step in self.steps
            if not step.as_expected
        ]
        done = {(step.outcome, step.step) for step in self.steps}
        missing = [f"{outcome} {step}" for outcome, step in EXPECTED if (outcome, step) not in done]
        if missing and not found:
            found.append(f"{', '.join(missing)} did not run")
        return found

    @property
    def ok(self) -> bool:
        return not self.problems


def parse_steps(output: str) -> tuple[Step, ...]:
    steps = []
    for line in output.splitlines():
        try:
            data = json.loads(line)
        except ValueError:
            raise UserError(f"The check wrote an unexpected line: {line[:200]!r}") from None
        steps.append(
            Step(
                outcome=str(data["outcome"]),
                step=str(data["step"]),
                exit_code=data["exit_code"],
                detail=str(data.get("detail", "")),
            )
        )
    return tuple(steps)


def check_argv(image: str, task: Task, platform: str | None) -> list[str]:
    name = f"ssebench-check-{task.id}-{secrets.token_hex(3)}"
    argv = [DOCKER, "run", "--rm", "-i", "--name", name, "--label", f"ssebench.check={task.id}"]
    argv += ["--network", "none", "--cap-drop", "ALL"]
    for capability in CAPABILITIES:
        argv += ["--cap-add", capability]
    argv += ["--security-opt", "no-new-privileges"]
    if platform:
        argv += ["--platform", platform]
    return [*argv, "--entrypoint", "python3", image, "-"]


def check_task(
    task: Task,
    *,
    platform: str | None = None,
    rebuild: bool = False,
    log: TextIO | None = None,
    output: BuildOutput | None = None,
) -> TaskCheck:
    """Build (or reuse) task's case image and play the check in it; the commands'
    output goes to log (standard error by default). Raises UserError."""
    (image,) = build_case_images([task], platform=platform, rebuild=rebuild, output=output)
    try:
        done = subprocess.run(
            check_argv(image, task, platform),
            input=SCRIPT.read_text(encoding="utf-8"),
            stdout=subprocess.PIPE,
            stderr=log or sys.stderr,
            text=True,
            errors="replace",
            check=False,
        )
    except FileNotFoundError:
        raise docker_missing() from None
    if done.returncode != 0:
        raise UserError(
            f"The check of {task.id} could not run in {image} (docker exited "
            f"{done.returncode}); its output is above"
        )
    return TaskCheck(task=task.id, image=image, steps=parse_steps(done.stdout))
