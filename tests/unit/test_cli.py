"""The real `ssebench` command in a subprocess, with the fake backend."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli import (
    last_line_verdict,
    run_arguments,
    ssebench,
    ssebench_with_reader_gone,
    start_ssebench,
)

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "datasets" / "tiny"


def tiny_run(tmp_path: Path, agent: str, run_id: str, *extra: str) -> list[str]:
    results = tmp_path / "results"
    return run_arguments(TINY, "tiny-add", agent, run_id, results, "--backend", "fake", *extra)


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_run_passes_and_records(tmp_path: Path) -> None:
    done = ssebench(*tiny_run(tmp_path, "reference", "cli-1", "--require-pass"))
    assert done.returncode == 0, done.stderr
    status, run_dir = last_line_verdict(done.stdout)
    assert status == "passed"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["config"]["backend"] == "fake"
    assert summary["config"]["model"] == "none"


def test_require_pass_exits_1_on_a_failed_grade(tmp_path: Path) -> None:
    assert ssebench(*tiny_run(tmp_path, "dummy", "cli-2")).returncode == 0
    assert ssebench(*tiny_run(tmp_path, "dummy", "cli-3", "--require-pass")).returncode == 1


@pytest.mark.parametrize(
    ("agent", "status", "exit_status"), [("reference", "passed", 0), ("dummy", "failed", 1)]
)
def test_a_run_whose_reader_is_gone_is_recorded_with_its_verdict(
    tmp_path: Path, agent: str, status: str, exit_status: int
) -> None:
    """`ssebench run --require-pass ... | head`, head gone before the first line: the run
    used to end at its first line (unrecorded, its result.json empty) with exit status 0."""
    arguments = tiny_run(tmp_path, agent, "cli-gone", "--require-pass")
    assert ssebench_with_reader_gone(*arguments, timeout=120) == exit_status
    run_dir = tmp_path / "results" / "tiny-add" / "none" / agent / "cli-gone"
    assert json.loads((run_dir / "result.json").read_text())["status"] == status
    assert json.loads((run_dir / "summary.json").read_text())["status"] == status


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--run-id", "latest"], "Invalid run ID"),
        (["--prebuilt", "--build"], "--prebuilt excludes --build"),
        # Named by the contract, not implemented yet: refused, never silently ignored.
        (["--prebuilt", "--tool-layer", "x"], "--prebuilt excludes --tool-layer: prebuilt"),
        (["--prebuilt", "--plugin", "p"], "--prebuilt excludes --plugin: prebuilt"),
        (["--tool-layer", "x"], "--tool-layer is not available yet"),
        (["--plugin", "p", "--plugin", "q"], "--plugin is not available yet"),
        (["--tool-layer", "x", "--plugin", "p"], "--tool-layer and --plugin are not available"),
        (["--task", "nope"], "No task 'nope'"),
        (["--agent", "nope"], "Unknown agent 'nope'"),
        (["--backend", "nope"], "Unknown backend 'nope'; installed backends:"),
        (
            ["--backend", "broken"],
            "Backend 'broken' (ssebench_fake_ext.broken:BrokenBackend) failed to import",
        ),
        (["--backend", "kubernetes"], "cannot build images; pass --prebuilt"),
        (["--local", "/nonexistent"], "no such dataset folder"),
        (["--timeout", "0"], "--timeout must be a positive"),
    ],
)
def test_bad_input_is_one_line_and_exit_1(tmp_path: Path, extra: list[str], expected: str) -> None:
    arguments = tiny_run(tmp_path, "reference", "cli-bad") + extra
    assert expected in one_line_error(ssebench(*arguments))


def broken_dataset(tmp_path: Path, task_yaml: str) -> Path:
    """A copy of the tiny dataset whose tiny-add/task.yaml is broken: "not-utf8" (bytes
    that are not UTF-8) or "folder" (a folder of that name)."""
    dataset = tmp_path / "dataset"
    shutil.copytree(TINY, dataset)
    task_file = dataset / "tiny-add" / "task.yaml"
    task_file.unlink()
    if task_yaml == "folder":
        task_file.mkdir()
    else:
        task_file.write_bytes(b"id: tiny-add\ntitle: \xff\xfe\n")
    return dataset


@pytest.mark.parametrize(
    ("task_yaml", "expected"),
    [
        ("not-utf8", "task.yaml: not UTF-8 text (byte 20); save it as UTF-8"),
        ("folder", "task.yaml: cannot be read (Is a directory); a task.yaml must be a file"),
    ],
)
def test_a_broken_task_yaml_is_one_line_and_exit_1(
    tmp_path: Path, task_yaml: str, expected: str
) -> None:
    dataset = broken_dataset(tmp_path, task_yaml)
    assert expected in one_line_error(ssebench("tasks", "list", "--local", str(dataset)))
    arguments = run_arguments(
        dataset, "tiny-add", "reference", "cli-bad", tmp_path / "r", "--backend", "fake"
    )
    assert expected in one_line_error(ssebench(*arguments))


@pytest.mark.parametrize("command", ["eval", "run"])
def test_results_that_is_a_file_is_one_line_and_exit_1(tmp_path: Path, command: str) -> None:
    results = tmp_path / "results"
    results.write_text("not a folder\n")
    if command == "eval":
        arguments = ["eval", "--dataset", str(TINY), "--agent", "reference", "--backend", "fake"]
        done = ssebench(*arguments, "--results", str(results))
        assert "--results" in one_line_error(done) and "is a file" in done.stderr
    else:
        arguments = run_arguments(TINY, "tiny-add", "reference", "cli-file", results)
        done = ssebench(*arguments, "--backend", "fake")
        assert "--results" in one_line_error(done) and "is a file" in done.stderr
    assert results.read_text() == "not a folder\n"


def test_unknown_backend_names_the_installed_ones() -> None:
    line = one_line_error(ssebench("runs", "--backend", "nope", "list"))
    assert "Unknown backend 'nope'" in line
    assert "docker" in line and "fake" in line and "kubernetes" in line


def test_help_does_not_import_the_kubernetes_client() -> None:
    probe = (
        "import sys\n"
        "from ssebench.cli.main import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m == 'kubernetes' or "
        "m.startswith('kubernetes.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def start_run(
    tmp_path: Path, agent: str, run_id: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    return start_ssebench(*tiny_run(tmp_path, agent, run_id), env=env)


def wait_for_line(process: subprocess.Popen[str], text: str, seconds: float = 30) -> list[str]:
    assert process.stdout is not None
    seen = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        seen.append(line)
        if text in line:
            return seen
    raise AssertionError(f"{text!r} never appeared in: {seen}")


def test_sigterm_during_wait_stops_and_records(tmp_path: Path) -> None:
    process = start_run(tmp_path, "sleeper", "sig-1")
    wait_for_line(process, "agent running")
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 0, output
    run_dir = tmp_path / "results/tiny-add/none/sleeper/sig-1"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["exit_code"] == 143
    assert summary["stopped"] is True
    listed = json.loads(ssebench("runs", "--backend", "fake", "list", "--json").stdout)
    assert "sig-1" not in [run["run_id"] for run in listed["runs"]]


def test_second_signal_ends_the_process_at_once(tmp_path: Path) -> None:
    # A container that ignores SIGTERM keeps the first stop waiting for its grace period.
    process = start_run(tmp_path, "sleeper", "sig-2", env={"SSEBENCH_FAKE_BEHAVIOUR": "stubborn"})
    try:
        wait_for_line(process, "agent running")
        process.send_signal(signal.SIGTERM)
        wait_for_line(process, "ignoring SIGTERM")
        started = time.monotonic()
        process.send_signal(signal.SIGINT)
        # wait, not communicate: the container, left to the backend, holds the pipe.
        assert process.wait(timeout=20) == 128 + signal.SIGINT
        assert time.monotonic() - started < 10
        summary = json.loads(
            (tmp_path / "results/tiny-add/none/sleeper/sig-2/summary.json").read_text()
        )
        assert summary["stopped"] is True and summary["status"] == "error"
        assert "second SIGINT" in summary["error_msg"]
        # Not removed by the runner: the container still runs.
        assert ssebench("runs", "--backend", "fake", "inspect", "sig-2").returncode == 0
    finally:
        ssebench("runs", "--backend", "fake", "remove", "sig-2")
        process.kill()
        process.communicate()


def make_fake_run(state: Path, folder: str, run_id: str) -> None:
    (state / folder).mkdir()
    (state / folder / "meta.json").write_text(
        json.dumps(
            {
                "run_id": run_id,
                "image": "fake/pass",
                "created_at": "2026-01-01T00:00:00+00:00",
                "keep": True,
                "labels": {"ssebench.run-id": run_id, "ssebench.webui": "true"},
            }
        )
    )
    (state / folder / "exit_code").write_text("0")


def test_runs_json_shapes_and_exit_codes(fake_state: Path) -> None:
    make_fake_run(fake_state, "fake-a", "dup")
    make_fake_run(fake_state, "fake-b", "dup")
    make_fake_run(fake_state, "fake-c", "single")
    listed = json.loads(ssebench("runs", "--backend", "fake", "list", "--json").stdout)
    assert set(listed) == {"backend", "supports_exec", "runs"}
    assert listed["backend"] == "fake" and listed["supports_exec"] is False
    single = [run for run in listed["runs"] if run["run_id"] == "single"]
    assert single and set(single[0]) == {
        "run_id",
        "name",
        "state",
        "exit_code",
        "image",
        "labels",
        "created_at",
    }
    assert single[0]["state"] == "exited" and single[0]["exit_code"] == 0

    inspected = ssebench("runs", "--backend", "fake", "inspect", "single", "--json")
    assert inspected.returncode == 0 and json.loads(inspected.stdout)["name"] == "fake-c"
    assert ssebench("runs", "--backend", "fake", "inspect", "missing").returncode == 3
    assert ssebench("runs", "--backend", "fake", "inspect", "dup").returncode == 4
    assert ssebench("runs", "--backend", "fake", "logs", "missing").returncode == 3
    assert ssebench("runs", "--backend", "fake", "remove", "dup").returncode == 4
    removed = ssebench("runs", "--backend", "fake", "remove", "single")
    assert removed.returncode == 0, removed.stderr
    assert ssebench("runs", "--backend", "fake", "inspect", "single").returncode == 3
    for folder in ("fake-a", "fake-b"):
        ssebench("runs", "--backend", "fake", "remove", "dup")
        (fake_state / folder / "meta.json").unlink(missing_ok=True)


def test_runs_endpoint_on_a_backend_without_it_is_one_line(fake_state: Path) -> None:
    make_fake_run(fake_state, "fake-e", "ep")
    line = one_line_error(ssebench("runs", "--backend", "fake", "endpoint", "ep", "4263"))
    assert "cannot reach a run's ports" in line


def test_runs_results_reads_files_only(tmp_path: Path) -> None:
    ssebench(*tiny_run(tmp_path, "reference", "res-1"))
    ssebench(*tiny_run(tmp_path, "dummy", "res-2"))
    done = ssebench(
        "runs", "--backend", "nope", "results", "--json", "--dir", str(tmp_path / "results")
    )
    assert done.returncode == 0, done.stderr
    runs = json.loads(done.stdout)["runs"]
    assert {(run["run_id"], run["status"]) for run in runs} == {
        ("res-1", "passed"),
        ("res-2", "failed"),
    }
