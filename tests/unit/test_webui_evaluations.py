"""The web UI's evaluation view without a browser: the reports of the results folder,
one report as a matrix, two side by side, reports an agent could have influenced, and
the models the launcher offers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette.testclient")

from ssebench.cli.eval import PartialReports
from ssebench.extensions import ProxyEndpoint
from ssebench.reports.summary import summarize_entries
from ssebench.results.directory import write_json
from ssebench.webui.models import offered_models
from tests.unit.test_webui import AUTH, daemon, make_client  # noqa: F401

HOSTILE_TASK = "<img src=x onerror=alert(1)>"


def run(task: str, agent: str, attempt: int, status: str | None, **extra: Any) -> dict[str, Any]:
    return {
        "task": task,
        "agent": agent,
        "model": "none",
        "attempt": attempt,
        "state": "done" if status else "running",
        "status": status,
        "skipped": False,
        "run_id": f"{agent}-{task[:6]}-{attempt}".replace("<", "x").replace(" ", "-"),
        "run_dir": "/results/x",
        "error_msg": None,
        "start_attempts": 1,
        "start_retries": [],
        "seconds": 10.0 if status else None,
        "spend": 0.5 if agent == "dummy" and status else None,
        **extra,
    }


def report(runs: list[dict[str, Any]], agents: tuple[str, ...], **extra: Any) -> dict[str, Any]:
    matrix = [(agent, "none") for agent in agents]
    return {
        "schema": 2,
        "command": "eval",
        "dataset": {"name": "pilot", "version": "1", "path": "/d"},
        "backend": "docker",
        "matrix": [{"agent": agent, "model": model} for agent, model in matrix],
        "attempts": 2,
        "started_at": "2026-12-01T10:00:00Z",
        "finished_at": "2026-12-01T10:05:00Z",
        "elapsed_seconds": 300.0,
        "interrupted": False,
        "in_progress": False,
        "counts": {"total": len(runs)},
        "spend": 1.0,
        "entries": summarize_entries(runs, matrix, 2),
        "runs": runs,
        **extra,
    }


@pytest.fixture
def results(tmp_path: Path) -> Path:
    both = [
        run("task-a", "reference", 1, "passed"),
        run("task-a", "dummy", 1, "failed"),
        run("task-a", "reference", 2, "passed"),
        run("task-a", "dummy", 2, "failed", error_msg="x" * 5000),
        run(HOSTILE_TASK, "reference", 1, "passed", run_id="../../etc/passwd"),
        run(HOSTILE_TASK, "dummy", 1, "error", error_msg="<script>alert(1)</script>"),
        run(HOSTILE_TASK, "reference", 2, "passed"),
        run(HOSTILE_TASK, "dummy", 2, None, state="queued", run_id=None),
    ]
    write_json(tmp_path / "eval-20261201-100000.json", report(both, ("reference", "dummy")))
    dummy = [run(task, "dummy", n, "failed") for task in ("task-a", HOSTILE_TASK) for n in (1, 2)]
    write_json(tmp_path / "eval-20261201-110000.json", report(dummy, ("dummy",)))
    os.utime(tmp_path / "eval-20261201-100000.json", (1_000_000, 1_000_000))
    # Not reports: a link (to a file outside), another name, a run directory.
    (tmp_path / "eval-linked.json").symlink_to(tmp_path / "eval-20261201-110000.json")
    (tmp_path / "notes.json").write_text("{}")
    (tmp_path / "eval-broken.json").write_text("{not json")
    return tmp_path


@pytest.fixture
def web(results: Path, daemon: str) -> Any:  # noqa: F811
    client, _ = make_client(results, daemon)
    with client:
        yield client


def get(web: Any, path: str) -> Any:
    return web.get(path, headers=AUTH)


def test_the_list_holds_the_reports_newest_first_and_no_link(web: Any) -> None:
    answer = get(web, "/api/evaluations")
    assert answer.status_code == 200
    reports = answer.json()["reports"]
    names = [item["name"] for item in reports]
    assert names[:2] == ["eval-20261201-110000.json", "eval-broken.json"] or set(names) == {
        "eval-20261201-110000.json",
        "eval-broken.json",
        "eval-20261201-100000.json",
    }
    assert "eval-linked.json" not in names and "notes.json" not in names
    assert names[-1] == "eval-20261201-100000.json"
    broken = next(item for item in reports if item["name"] == "eval-broken.json")
    assert "not JSON" in broken["problem"]
    first = next(item for item in reports if item["name"] == "eval-20261201-100000.json")
    assert first["matrix"] == [
        {"agent": "reference", "model": "none"},
        {"agent": "dummy", "model": "none"},
    ]


def test_a_report_is_a_matrix_with_rates_spend_and_duration(web: Any) -> None:
    data = get(web, "/api/evaluations/eval-20261201-100000.json").json()
    assert [row["task"] for row in data["rows"]] == ["task-a", HOSTILE_TASK]
    reference, dummy = data["columns"]
    assert reference["resolved_rate"]["value"] == 1.0 and reference["resolved_rate"]["ci95"]
    assert reference["pass_at_k"]["1"]["value"] == 1.0
    assert dummy["spend"] == 1.5 and reference["spend"] is None
    assert dummy["seconds"] == 30.0
    task_a, hostile = data["rows"]
    assert [cell["outcome"] for cell in task_a["cells"]] == ["passed", "failed"]
    # An error and a queued attempt, nothing graded: the cell is an error.
    assert hostile["cells"][1]["outcome"] == "error"
    assert [attempt["status"] for attempt in hostile["cells"][1]["attempts"]] == ["error", None]
    # A run ID that is not one gets no link; long messages are cut; text stays text.
    assert hostile["cells"][0]["attempts"][0]["run_id"] is None
    assert len(task_a["cells"][1]["attempts"][1]["error_msg"]) <= 2000
    assert hostile["cells"][1]["attempts"][0]["error_msg"] == "<script>alert(1)</script>"


def test_a_column_graded_by_rewards_shows_its_mean_reward_per_task(web: Any, results: Path) -> None:
    """Tasks graded by a reward (docs/harbor.md): the mean per task by key, recomputed
    from the runs; a key whose mean is not a finite number, or a key that is not a
    text, is left out; a column of tasks without rewards has none."""
    rewarded = [
        run("task-a", "reference", 1, "passed", reward={"correctness": 1.0, "speed": 1.0}),
        run("task-a", "reference", 2, "failed", reward={"correctness": 1.0, "speed": 0.0}),
        run("task-b", "reference", 1, "failed", reward={"correctness": 0.0, "nan": float("nan")}),
        run("task-a", "dummy", 1, "failed"),
    ]
    write_json(results / "eval-20261201-120000.json", report(rewarded, ("reference", "dummy")))
    data = get(web, "/api/evaluations/eval-20261201-120000.json").json()
    reference, dummy = data["columns"]
    means = reference["mean_reward_per_task"]
    assert sorted(means) == ["correctness", "speed"], means
    assert means["correctness"]["value"] == 0.5  # task-a 1.0, task-b 0.0
    assert means["speed"]["value"] == 0.5  # task-a's mean; task-b has none
    assert dummy["mean_reward_per_task"] == {}
    plain = get(web, "/api/evaluations/eval-20261201-100000.json").json()
    assert all(column["mean_reward_per_task"] == {} for column in plain["columns"])


def test_a_report_in_progress_says_so(web: Any, results: Path) -> None:
    runs = [
        run("task-a", "reference", 1, None, state="running"),
        run("task-a", "reference", 2, None),
    ]
    write_json(
        results / "eval-live.json",
        report(runs, ("reference",), in_progress=True, finished_at=None),
    )
    data = get(web, "/api/evaluations/eval-live.json").json()
    assert data["in_progress"] is True and data["finished_at"] is None
    assert data["rows"][0]["cells"][0]["outcome"] == "pending"


def test_two_reports_side_by_side_show_the_flips(web: Any) -> None:
    path = "/api/evaluations/eval-20261201-100000.json/compare?with=eval-20261201-110000.json"
    same = get(web, path).json()
    # By default the same agent and model: dummy failed in both, nothing flipped.
    assert [pair["first"]["agent"] for pair in same["pairs"]] == ["dummy"]
    assert same["pairs"][0]["gained"] == [] and same["pairs"][0]["lost"] == []
    chosen = get(web, path + "&first_entry=0&second_entry=0").json()
    (pair,) = chosen["pairs"]
    assert pair["first"]["agent"] == "reference" and pair["second"]["agent"] == "dummy"
    assert sorted(pair["lost"]) == sorted(["task-a", HOSTILE_TASK]) and pair["gained"] == []
    flips = {task["task"]: task["flip"] for task in pair["tasks"]}
    assert flips == {"task-a": "lost", HOSTILE_TASK: "lost"}
    assert get(web, path + "&first_entry=5&second_entry=0").status_code == 400
    assert get(web, path + "&first_entry=0").status_code == 400


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/api/evaluations/eval-missing.json", 404),
        ("/api/evaluations/eval-linked.json", 404),
        ("/api/evaluations/notes.json", 400),
        ("/api/evaluations/eval-broken.json", 400),
        ("/api/evaluations/..eval-x.json", 400),
        ("/api/evaluations/eval-20261201-100000.json/compare", 400),
        ("/api/evaluations/eval-20261201-100000.json/compare?with=../notes.json", 400),
    ],
)
def test_bad_report_names_are_refused(web: Any, path: str, status: int) -> None:
    answer = get(web, path)
    assert answer.status_code == status, answer.text
    assert "error" in answer.json()


def test_a_path_in_the_name_reaches_no_route(web: Any) -> None:
    assert get(web, "/api/evaluations/..%2F..%2Fetc%2Fpasswd").status_code == 404


def test_hosted_mode_shows_the_evaluations(results: Path, daemon: str) -> None:  # noqa: F811
    client, _ = make_client(results, daemon, hosted=True)
    with client:
        assert client.get("/api/evaluations", headers=AUTH).status_code == 200
        page = client.get("/api/evaluations/eval-20261201-100000.json", headers=AUTH)
        assert page.status_code == 200


def test_the_partial_report_is_written_while_runs_change(tmp_path: Path) -> None:
    class Run:
        def __init__(self) -> None:
            self.state, self.status = "queued", None

    class Stand:
        runs = [Run()]

        def report(self, extra: dict[str, Any]) -> dict[str, Any]:
            return {**extra, "finished_at": "now", "runs": [run.state for run in self.runs]}

    path = tmp_path / "eval-x.json"
    partial = PartialReports(Stand(), path, {"command": "eval"})  # type: ignore[arg-type]
    partial.write()
    import json

    written = json.loads(path.read_text())
    assert written["in_progress"] is True and written["finished_at"] is None
    partial.written_at = 0.0
    path.unlink()
    partial.maybe_write()  # nothing changed: nothing written
    assert not path.exists()
    Stand.runs[0].state = "running"
    partial.maybe_write()
    assert json.loads(path.read_text())["runs"] == ["running"]


def test_the_models_of_the_files_say_which_key_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "one.yaml").write_text(
        "provider: acme\nkey_variable: ACME_KEY_FOR_TEST\n"
        "models:\n  - name: acme-large\n    litellm_model: openai/acme-large\n"
    )
    (tmp_path / "local.yaml").write_text(
        "provider: local\napi_base: http://127.0.0.1:8000\n"
        "models:\n  - name: local-small\n    litellm_model: openai/x\n"
    )
    monkeypatch.setenv("SSEBENCH_MODELS_DIR", str(tmp_path))
    monkeypatch.delenv("ACME_KEY_FOR_TEST", raising=False)
    monkeypatch.delenv("LITELLM_MASTER_KEY", raising=False)
    offered = offered_models(None)
    by_name = {model["name"]: model for model in offered["models"]}
    assert by_name["acme-large"]["key_missing"] is True
    assert by_name["local-small"]["key_missing"] is False
    assert "LITELLM_MASTER_KEY" in offered["problem"]
    monkeypatch.setenv("ACME_KEY_FOR_TEST", "secret-value-never-shown")
    offered = offered_models(None)
    assert not any(model["key_missing"] for model in offered["models"])
    assert "secret-value-never-shown" not in str(offered)


def test_a_backend_proxy_that_does_not_answer_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LITELLM_MASTER_KEY", "sk-master-never-shown")
    offered = offered_models(ProxyEndpoint("http://127.0.0.1:9", "http://proxy:4000"))
    assert offered["source"] == "proxy" and offered["models"] == []
    assert "does not answer" in offered["problem"]
    assert "sk-master-never-shown" not in offered["problem"]


def test_a_grade_report_is_listed_and_shown_as_an_evaluation(
    results: Path,
    daemon: str,  # noqa: F811
) -> None:
    """`ssebench grade` writes grade-<time>.json in the eval report's schema (command
    grade): the web UI lists and shows it; its official-shape sibling is not a report."""
    runs = [
        run("task-a", "given-patch", 1, "passed"),
        run(HOSTILE_TASK, "given-patch", 1, "failed"),
    ]
    write_json(
        results / "grade-20261201-120000.json",
        report(runs, ("given-patch",), command="grade"),
    )
    write_json(results / "org__model.grade-20261201-120000.json", {"resolved_ids": []})
    client, _ = make_client(results, daemon)
    with client:
        names = [item["name"] for item in get(client, "/api/evaluations").json()["reports"]]
        assert "grade-20261201-120000.json" in names
        assert "org__model.grade-20261201-120000.json" not in names
        shown = get(client, "/api/evaluations/grade-20261201-120000.json")
        assert shown.status_code == 200, shown.text
        data = shown.json()
        assert [row["task"] for row in data["rows"]] == ["task-a", HOSTILE_TASK]
        assert [cell["outcome"] for row in data["rows"] for cell in row["cells"]] == [
            "passed",
            "failed",
        ]
