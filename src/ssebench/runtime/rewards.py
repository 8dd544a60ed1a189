"""Grading by a reward: a task graded on the container's final state (an imported
Harbor or Terminal-Bench task) is decided by what its own tests find there.

Once the agent's processes are gone (the supervisor swept its user; this sweeps it
again, and the task commands' runner too):
1. final.patch, the workdir's diff against the base commit, is kept as a record;
2. the tests are copied from the image's root-only hidden folder to /tests, made anew
   (the agent never saw them), and /logs/verifier is made anew for the verifier's user:
   nothing the agent left in either survives;
3. the verifier command runs as the verifier's user, with its env, in the workdir, for
   at most its timeout, its output going (redacted) to evaluator.log;
4. the reward is read from /logs/verifier/reward.json (a map of names to numbers) or
   else reward.txt (one number), each opened without following a link, only as a
   regular file of at most REWARD_MAX_BYTES; or (Terminal-Bench 1.x) it is 1 when
   pytest's short summary in the output lists tests and every one passed.
No reward is an error of the run, never a reward of 0.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

from .accounts import Account, Accounts, make_directory
from .config import Layout, Task, Verifier
from .evaluator import Grader, write_patch
from .logs import LogFile, RedactingStream, Redactor
from .processes import run, sweep_user
from .repository import BaseRepository, count_patch_files

REWARD_JSON = "reward.json"
REWARD_TXT = "reward.txt"
REWARD_MAX_BYTES = 64 * 1024
# How much of the verifier's output is searched for pytest's short summary.
SUMMARY_MAX_BYTES = 4 * 1024 * 1024
NO_REWARD = "No reward: the tests wrote neither /logs/verifier/reward.json nor reward.txt"
_SUMMARY_START = re.compile(rb"^=+ short test summary info =+\s*$", re.MULTILINE)
_SUMMARY_LINE = re.compile(rb"^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED)\b", re.MULTILINE)


class RewardUnreadable(Exception):
    """A reward file that is there but cannot be taken: the message says why."""


def read_reward_file(path: Path) -> bytes | None:
    """The bytes of a reward file: None when there is none; RewardUnreadable when it is
    a link, FIFO, device or directory, or larger than REWARD_MAX_BYTES."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as error:
        # ELOOP: the last component is a symbolic link.
        raise RewardUnreadable(
            f"{path.name} cannot be opened as a file ({error.strerror})"
        ) from None
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise RewardUnreadable(f"{path.name} is not a regular file")
        if status.st_size > REWARD_MAX_BYTES:
            raise RewardUnreadable(f"{path.name} is over {REWARD_MAX_BYTES} bytes")
        data = os.read(fd, REWARD_MAX_BYTES + 1)
        if len(data) > REWARD_MAX_BYTES:
            raise RewardUnreadable(f"{path.name} is over {REWARD_MAX_BYTES} bytes")
        return data
    finally:
        os.close(fd)


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise RewardUnreadable(f"{where} is not a finite number")
    return float(value)


def parse_reward_json(data: bytes) -> dict[str, float]:
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise RewardUnreadable(f"{REWARD_JSON} is not JSON") from None
    if not isinstance(document, dict) or not document:
        raise RewardUnreadable(f"{REWARD_JSON} is not a map of names to numbers")
    return {
        str(name): _number(value, f"{REWARD_JSON}'s {name!r}") for name, value in document.items()
    }


def parse_reward_txt(data: bytes) -> dict[str, float]:
    text = data.decode("utf-8", "replace").strip()
    if not text:
        raise RewardUnreadable(f"{REWARD_TXT} is empty")
    try:
        return {"reward": _number(float(text), REWARD_TXT)}
    except ValueError:
        raise RewardUnreadable(f"{REWARD_TXT} is not one number") from None


def read_rewards(verifier_logs: Path) -> dict[str, float]:
    """The reward the tests wrote: reward.json first, else reward.txt."""
    for name, parse in ((REWARD_JSON, parse_reward_json), (REWARD_TXT, parse_reward_txt)):
        data = read_reward_file(verifier_logs / name)
        if data is not None:
            return parse(data)
    raise RewardUnreadable(NO_REWARD)


def pytest_summary_reward(output: bytes) -> dict[str, float]:
    """Terminal-Bench 1.x: 1 when pytest's short summary lists tests and all passed."""
    starts = list(_SUMMARY_START.finditer(output))
    if not starts:
        raise RewardUnreadable("No reward: the tests' output has no pytest short summary")
    outcomes = [match.group(1) for match in _SUMMARY_LINE.finditer(output, starts[-1].end())]
    if not outcomes:
        raise RewardUnreadable("No reward: pytest's short summary lists no test")
    return {"reward": 1.0 if all(outcome == b"PASSED" for outcome in outcomes) else 0.0}


class RewardEvaluator(Grader):
    """Grades a task that has a verifier; fills grading as it goes."""

    def __init__(
        self,
        *,
        task: Task,
        verifier: Verifier,
        repository: BaseRepository,
        accounts: Accounts,
        layout: Layout,
        environment: dict[str, str],
        log: LogFile,
        redactor: Redactor,
        progress: Callable[[str], None],
    ) -> None:
        super().__init__(log=log, redactor=redactor, progress=progress)
        self.task = task
        self.verifier = verifier
        self.repository = repository
        self.accounts = accounts
        self.layout = layout
        self.environment = environment

    @property
    def verifier_logs(self) -> Path:
        return self.layout.logs_root / "verifier"

    def _grade(self) -> None:
        # Nothing the agent (or a task command) started may run on into grading.
        for account in (self.accounts.agent, self.accounts.runner):
            sweep_user(account)
        patch = self.repository.diff()
        self.grading.patch = patch
        write_patch(self.layout.results / "final.patch", patch)
        self._say(f"final.patch: {len(patch)} bytes, {count_patch_files(patch)} files (a record)")

        account = self._verifier_account()
        self._fresh_tests()
        _remove(self.verifier_logs)
        make_directory(self.layout.logs_root, None, 0o755)
        make_directory(self.verifier_logs, account, 0o755)

        verifier = self.verifier
        self.log.line(f"== verifier: $ {verifier.command} (as {account.name})")
        output = bytearray()

        def log_and_keep(data: bytes) -> None:
            self.log.write(data)
            if len(output) < SUMMARY_MAX_BYTES:
                output.extend(data[: SUMMARY_MAX_BYTES - len(output)])

        sink = RedactingStream(self.redactor, log_and_keep)
        try:
            completed = run(
                ["/bin/sh", "-c", verifier.command],
                account=account,
                cwd=self.task.source_dir,
                env=self._environment(account),
                timeout=verifier.timeout,
                sink=sink,
            )
        finally:
            sink.close()
            if account.uid != 0:
                sweep_user(account)
        # Its exit status is recorded; the reward alone decides (Harbor's rule).
        self._record_step("verifier", completed)
        if completed.timed_out:
            self.grading.error = f"Verifier timed out after {round(verifier.timeout)}s"
            return
        try:
            if verifier.reward == "pytest-summary":
                reward = pytest_summary_reward(bytes(output))
            else:
                reward = read_rewards(self.verifier_logs)
        except RewardUnreadable as problem:
            self.grading.error = str(problem)
            self._say(str(problem))
            return
        self.grading.reward = reward
        self._say("reward: " + ", ".join(f"{name} {value:g}" for name, value in reward.items()))

    def _verifier_account(self) -> Account:
        if self.accounts.agent.is_current:
            return self.accounts.agent  # tests: everything runs as the invoking user
        return Account.lookup(self.verifier.user)

    def _fresh_tests(self) -> None:
        """/tests made anew from the hidden tests: root's, readable by the verifier."""
        tests = self.layout.tests_dir
        _remove(tests)
        hidden = self.layout.hidden_dir
        if hidden.is_dir():
            shutil.copytree(hidden, tests, symlinks=True)
        else:
            tests.mkdir(parents=True)
        for directory, _subdirectories, files in os.walk(tests):
            os.chmod(directory, 0o755)
            for name in files:
                path = os.path.join(directory, name)
                if not os.path.islink(path):
                    os.chmod(path, 0o755 if os.stat(path).st_mode & 0o111 else 0o644)

    def _environment(self, account: Account) -> dict[str, str]:
        env = dict(self.environment)
        env.setdefault("LANG", "C.UTF-8")
        env.update(HOME=str(account.home), USER=account.name, LOGNAME=account.name)
        env.update(self.verifier.env)
        return env


def _remove(path: Path) -> None:
    """Remove a file, link or tree at path without following links in it."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(status.st_mode):
        shutil.rmtree(path)
    else:
        path.unlink()
