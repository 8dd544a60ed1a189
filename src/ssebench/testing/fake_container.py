"""The "container" of the fake backend: a process that acts like the runtime's entrypoint.

Usage: python -m ssebench.testing.fake_container BEHAVIOUR RESULTS_DIR STATE_DIR
It prints progress lines (to stdout and STATE_DIR/output.log), writes result.json into
RESULTS_DIR as the evaluator would, and writes its exit status to STATE_DIR/exit_code.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from ssebench.host.output import write_or_drop

STOPPED = 143


def main(behaviour: str, results: Path, state: Path) -> int:
    log = (state / "output.log").open("a", encoding="utf-8")

    def say(line: str) -> None:
        # A real container never writes to the runner's terminal, so a reader of it that
        # has gone (`ssebench run ... | head`) does not end it: nor does it end this one.
        write_or_drop(sys.stdout, line + "\n")
        log.write(line + "\n")
        log.flush()

    def grade(status: str, message: str | None, **extra: object) -> None:
        result = {"status": status, "error_msg": message, "task": "fake", **extra}
        temporary = results / ".result.json.tmp"
        temporary.write_text(json.dumps(result), encoding="utf-8")
        temporary.replace(results / "result.json")

    def finish(code: int) -> int:
        (state / "exit_code").write_text(str(code), encoding="utf-8")
        return code

    def on_term(signum: int, frame: FrameType | None) -> None:
        if behaviour == "stubborn":
            say("fake: ignoring SIGTERM")
            return
        say("fake: stopped, grading what is there")
        grade("failed", "Stopped", stopped=True)
        sys.exit(finish(STOPPED))

    signal.signal(signal.SIGTERM, on_term)
    say(f"fake: started ({behaviour}), model {os.environ.get('SSE_MODEL_NAME', 'none')}")
    if behaviour in ("sleep", "stubborn"):
        say("fake: agent running")
        while True:
            time.sleep(0.1)
    if behaviour == "crash":
        say("fake: crashed")
        return finish(2)
    if behaviour == "noresult":
        say("fake: exiting without a grade")
        return finish(1)
    passed = behaviour == "pass"
    grade("passed" if passed else "failed", None if passed else "Hidden test failed", stopped=False)
    say(f"fake: graded {'passed' if passed else 'failed'}")
    return finish(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])))
