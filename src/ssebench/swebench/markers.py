"""The hidden-test command of an imported task, and how its output is found again.

The command prints the official harness's markers around the instance's test command
and the command's exit status after them, as the harness's own eval scripts do, so the
package's log parser and its exit-status check read the output unchanged.
"""

from __future__ import annotations

import re

START_MARKER = ">>>>> Start Test Output"
END_MARKER = ">>>>> End Test Output"
EXIT_CODE_MARKER = ">>>>> Test Exit Code"
# The evaluator's header of the hidden-test step in evaluator.log (runtime/evaluator.py).
HIDDEN_STEP_HEADER = "== hidden_test: $ "
# The eval script's marker lines, as `: '>>>>> Start Test Output'` (a shell no-op that
# `set -x` prints) or as an echo.
_SCRIPT_MARKER = re.compile(r"""^\s*(?::|echo)\s+['"]?(>>>>> (?:Start|End) Test Output)['"]?\s*$""")


def hidden_test_command(test_command: str, *, setup: str = "") -> str:
    """The task's hidden_test: setup, then the test command between the markers; exits
    with the test command's status."""
    return (
        (f"{setup.strip()}\n" if setup.strip() else "") + f"echo '{START_MARKER}'\n"
        f"{test_command.strip()}\n"
        "ssebench_test_status=$?\n"
        f"echo '{END_MARKER}'\n"
        f'echo "{EXIT_CODE_MARKER}: $ssebench_test_status"\n'
        'exit "$ssebench_test_status"\n'
    )


def script_test_command(eval_script: str) -> str | None:
    """The test command of a 5.x eval_script: its lines between the start and end
    markers (None when the script has no such pair)."""
    lines = eval_script.splitlines()
    start = end = None
    for index, line in enumerate(lines):
        match = _SCRIPT_MARKER.match(line)
        if match and match.group(1) == START_MARKER and start is None:
            start = index
        elif match and match.group(1) == END_MARKER and start is not None:
            end = index
            break
    if start is None or end is None:
        return None
    command = "\n".join(line for line in lines[start + 1 : end] if line.strip())
    return command or None


def hidden_step_output(log: str) -> str | None:
    """The output of the hidden-test step in an evaluator.log (None if it never ran).

    The step's header is the first one: the step is the evaluator's last, so what the
    tests print (which the agent's code can shape) comes after it and cannot move it.
    The header quotes the command, markers included; the output starts at the first
    line that is the start marker.
    """
    header = log.find(HIDDEN_STEP_HEADER)
    if header < 0:
        return None
    body = log[header:]
    if f"\n{START_MARKER}" not in body:
        return body[body.find("\n") + 1 :] if "\n" in body else ""
    return body[body.index(f"\n{START_MARKER}") + 1 :]


def with_exit_status(output: str, exit_code: int) -> str:
    """output with the test command's exit status, as the evaluator recorded it, put
    first: the package's exit-status check reads the first such line, so a line the
    tests printed cannot stand in for it."""
    return f"{EXIT_CODE_MARKER}: {exit_code}\n{output}"
