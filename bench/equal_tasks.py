"""A dataset of N equal synthetic tasks, written on demand for bench_eval_jobs.py: the
speed-up of `eval --jobs N` over `--jobs 1` is only visible where no task is much longer
than the others (over the pilot, the longest task alone is most of the wall time).

Every task is the same small Python project with one bug (a wrong modulus), the same
reference patch, and a hidden test that does a fixed amount of single-threaded work
(ROUNDS steps of a loop, 1 to 2 s of one core here) before it checks the answer: the
tasks differ only in their ID, so each has its own case image and run, and all take the
same time.

    python bench/equal_tasks.py DIR [COUNT]    writes the dataset and its manifest

bench_scale.py makes them tiny (rounds=TINY_ROUNDS: the hidden test is instant), so
that what it measures is the harness and the platform, not the tests.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from common import SSEBENCH

ROUNDS = 20_000_000
TINY_ROUNDS = 1_000
GOOD_MODULUS = 1_000_003
BAD_MODULUS = 1_000_033

SPIN = '''"""A checksum that takes a fixed amount of work."""


def spin(rounds):
    total = 0
    for step in range(rounds):
        total = (total * 31 + step) % {modulus}
    return total
'''

VISIBLE_TEST = """import unittest

from spin import spin


class SpinTest(unittest.TestCase):
    def test_no_rounds(self):
        self.assertEqual(spin(0), 0)


if __name__ == "__main__":
    unittest.main()
"""

HIDDEN_TEST = """import unittest

from spin import spin


class HiddenSpinTest(unittest.TestCase):
    def test_many_rounds(self):
        self.assertEqual(spin({rounds}), {expected})


if __name__ == "__main__":
    unittest.main()
"""

PATCH = f"""diff --git a/spin.py b/spin.py
--- a/spin.py
+++ b/spin.py
@@ -5,4 +5,4 @@ def spin(rounds):
     total = 0
     for step in range(rounds):
-        total = (total * 31 + step) % {BAD_MODULUS}
+        total = (total * 31 + step) % {GOOD_MODULUS}
     return total
"""

TASK = """id: {task_id}
project: spin
language: python
description: The checksum of spin() is wrong (synthetic bench task, all tasks equal)
source_dir: /src/spin
packages: [python3]
prompt: |
  spin(rounds) returns the wrong checksum: its modulus must be {good}.
build: python3 -m compileall -q .
test: python3 -m unittest discover -s tests -q
hidden_test: python3 -m unittest discover -s hidden_tests -q
"""


def expected(rounds: int) -> int:
    total = 0
    for step in range(rounds):
        total = (total * 31 + step) % GOOD_MODULUS
    return total


def write_equal_tasks(
    folder: Path, count: int, rounds: int = ROUNDS, prefix: str = "equal"
) -> Path:
    """count equal tasks under folder (a new dataset named <prefix>-<count>, the tasks
    <prefix>-01 and on), with their manifest, whose hidden test spins rounds steps;
    returns folder."""
    answer = expected(rounds)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dataset.yaml").write_text(
        f"name: {prefix}-{count}\nversion: 1\n"
        f"description: {count} equal synthetic tasks (bench/equal_tasks.py)\n"
    )
    for number in range(1, count + 1):
        task_id = f"{prefix}-{number:03d}" if count > 99 else f"{prefix}-{number:02d}"
        task = folder / task_id
        (task / "repo" / "tests").mkdir(parents=True, exist_ok=True)
        (task / "hidden" / "hidden_tests").mkdir(parents=True, exist_ok=True)
        (task / "task.yaml").write_text(TASK.format(task_id=task_id, good=GOOD_MODULUS))
        (task / "repo" / "spin.py").write_text(SPIN.format(modulus=BAD_MODULUS))
        (task / "repo" / "tests" / "test_spin.py").write_text(VISIBLE_TEST)
        hidden = HIDDEN_TEST.format(rounds=rounds, expected=answer)
        (task / "hidden" / "hidden_tests" / "test_hidden_spin.py").write_text(hidden)
        (task / "reference.patch").write_text(PATCH)
    subprocess.run(
        [*SSEBENCH, "dataset", "manifest", str(folder)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return folder


if __name__ == "__main__":
    write_equal_tasks(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 4)
