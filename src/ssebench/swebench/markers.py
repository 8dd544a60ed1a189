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


def hidden_test_command(test_command: str) -> str:
    """The task's hidden_test: the test command between the markers; exits with its status."""
    return (
        f"echo '{START_MARKER}'\n"
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
    """The output of the last hidden-test step in an evaluator.log (None if it never ran).

    The header line (which quotes the command, markers included) is left out, so only
    what the command printed is searched for the markers.
    """
    header = log.rfind(HIDDEN_STEP_HEADER)
    if header < 0:
        return None
    line_end = log.find("\n", header)
    if line_end < 0:
        return ""
    # The header quotes a multi-line command; its output starts after the last line of it.
    body = log[line_end + 1 :]
    start = body.find(f"\n{START_MARKER}")
    if body.startswith(START_MARKER):
        return body
    return body[start + 1 :] if start >= 0 else body
