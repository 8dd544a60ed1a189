"""agent_kit, the wrappers' shared part: the whole-number settings and stopping the
agent from inside the reading of its output."""

from __future__ import annotations

import os
import time

import pytest

from ssebench.runtime import agent_kit


def test_a_whole_number_setting_is_read_or_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSE_MAX_TURNS", raising=False)
    assert agent_kit.whole_number("SSE_MAX_TURNS", 40) == 40
    monkeypatch.setenv("SSE_MAX_TURNS", " 7 ")
    assert agent_kit.whole_number("SSE_MAX_TURNS", 40) == 7


@pytest.mark.parametrize("value", ["0", "-3", "ten", "2.5"])
def test_a_bad_whole_number_names_its_variable(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("SSE_MAX_TURNS", value)
    with pytest.raises(
        ValueError, match=f"SSE_MAX_TURNS must be a whole number >= 1, not '{value}'"
    ):
        agent_kit.whole_number("SSE_MAX_TURNS", 40)


def test_stop_agent_from_on_line_ends_the_agent_and_its_whole_group(tmp_path) -> None:
    # The agent leaves a child in its group (as a shell tool would), says so, then waits.
    child_file = tmp_path / "child.pid"
    script = f"sleep 300 & echo $! > {child_file}; echo started; wait"
    lines: list[str] = []

    def on_line(line: str) -> None:
        lines.append(line)
        if line == "started":
            agent_kit.stop_agent()

    started = time.monotonic()
    status, timed_out = agent_kit.run_streaming(
        ["sh", "-c", script], env=dict(os.environ), cwd=str(tmp_path), on_line=on_line,
        until=time.monotonic() + 120,
    )  # fmt: skip
    assert lines == ["started"]
    assert status < 0 and not timed_out, status  # ended by a signal, not by its deadline
    assert time.monotonic() - started < 30
    child = int(child_file.read_text())
    for _ in range(50):  # the group's TERM reached the child too
        if not os.path.exists(f"/proc/{child}") or _zombie(child):
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the agent's child {child} outlived stop_agent")


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
