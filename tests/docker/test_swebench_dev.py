"""The real SWE-bench dev instances (../shared/datasets/swebench-dev/), imported with no
--specs (the official tables) and checked for real on Docker with `ssebench dataset check`.

The environments are made as on a machine that cannot pull: Python 3.9 from Debian
(ssebench/python:3.9, scripts/seed-python-image.sh, which .ci/run runs), which the
default --python-images auto falls back to when python:3.9-slim cannot be pulled, and
in place of pydicom 2.0's Python 3.8 (--python-substitute 3.8=3.9, no Debian release
carries 3.8). pydicom's tests fetch data files at test time, which grading (without
network) cannot: ssebench's offline additions to the official pydicom specs
(offline_additions.yaml: the data files from PyPI's pydicom-data, and a proxy on a
closed loopback port so that a download fails at once instead of retrying) make them
pass. One import and one check (eight runs, two at once) serve every test of the
module.
"""

from __future__ import annotations

import json
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ssebench.images.layers import environment_layer
from ssebench.tasks import load_dataset
from tests.cli import last_line_verdict, ssebench, start_ssebench
from tests.docker.conftest import SESSION_PREFIX
from tests.polling import wait_until
from tests.registry import docker, local_registry, rate_limited
from tests.swebench_dev import INSTANCES, unpack_repositories

pytestmark = pytest.mark.docker
RESOLVED = ("pylint-dev-astroid-1268", "sqlfluff-sqlfluff-2386", "pydicom-pydicom-1194")


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a folder of this module's, the imported dataset in it)."""
    root = tmp_path_factory.mktemp("swebench-dev")
    repos = unpack_repositories(root / "repos")
    dataset = root / "dev"
    imported = ssebench(
        "dataset", "import", "swebench", str(INSTANCES), "--out", str(dataset),
        "--repos", str(repos), "--python-substitute", "3.8=3.9",
    )  # fmt: skip
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert "imported pydicom__pydicom-1194 as " in imported.stdout, imported.stdout
    # Docker was asked once for the four instances of Python 3.9.
    fallback = "python:3.9-slim cannot be pulled here ("
    assert imported.stderr.count(fallback) == 1, imported.stderr
    return root, dataset


@pytest.fixture(scope="module")
def check(dev: tuple[Path, Path]) -> tuple[dict[str, Any], str]:
    root, dataset = dev
    report_path = root / "check.json"
    started = time.monotonic()
    checked = ssebench(
        "dataset", "check", str(dataset), "--jobs", "2", "--results", str(root / "results"),
        "--report", str(report_path), "--run-id-prefix", f"{SESSION_PREFIX}-dev",
        timeout=2400,
    )  # fmt: skip
    print(f"dataset check of the 4 dev instances: {time.monotonic() - started:.0f} s")
    # pydicom-1458's record is spoiled.
    assert checked.returncode == 1, checked.stdout[-3000:] + checked.stderr[-3000:]
    report: dict[str, Any] = json.loads(report_path.read_text())
    return report, checked.stdout


def verdict(report: dict[str, Any], task: str) -> dict[str, Any]:
    found: dict[str, Any] = next(item for item in report["tasks"] if item["task"] == task)
    return found


@pytest.mark.parametrize("task", RESOLVED)
def test_the_gold_patch_is_resolved_and_the_dummy_is_not(
    check: tuple[dict[str, Any], str], task: str
) -> None:
    found = verdict(check[0], task)
    assert found["sound"], found["problems"]
    run_dir = Path(found["runs"]["reference"]["run_dir"])
    tests = json.loads((run_dir / "result.json").read_text())["tests"]
    assert tests["resolved"] is True and tests["FAIL_TO_PASS"]["failure"] == []
    assert tests["PASS_TO_PASS"]["failure"] == []
    environment = tests["environment"]
    assert environment["spec"].startswith("official swebench 4."), environment
    if task == "pydicom-pydicom-1194":
        # What ssebench changed of the official spec, in the result itself.
        assert environment["deviations"][0].startswith("ssebench added pydicom-data==1.0.0 ")
        assert environment["deviations"][1] == "Python 3.9 in place of the specification's 3.8"


def test_every_dummy_run_is_not_resolved(check: tuple[dict[str, Any], str]) -> None:
    for item in check[0]["tasks"]:
        assert item["runs"]["dummy"]["status"] == "failed", item
        assert item["runs"]["dummy"]["error_msg"] == "Not resolved", item


def test_the_spoiled_record_is_reported_as_its_defect(check: tuple[dict[str, Any], str]) -> None:
    report, stdout = check
    spoiled = verdict(report, "pydicom-pydicom-1458")
    assert not spoiled["sound"]
    assert len(spoiled["failed_tests"]["PASS_TO_PASS"]) == 44
    assert all("/n/fs/" in name for name in spoiled["failed_tests"]["PASS_TO_PASS"])
    assert spoiled["problems"][1].startswith("the record's defect: 44 failed test IDs")
    assert "pydicom-pydicom-1458: the reference run failed 44 PASS_TO_PASS:" in stdout
    for name in spoiled["failed_tests"]["PASS_TO_PASS"]:
        assert f"\n  {name}\n" in stdout
    assert [item["task"] for item in report["tasks"] if not item["sound"]] == [
        "pydicom-pydicom-1458"
    ]


# -- ssebench grade --predictions (issue 47): the gold patches as a predictions file ----


@dataclass(frozen=True)
class Graded:
    results: Path
    first_pass: str  # what the interrupted grade said
    graded_first: list[Path]  # the runs graded before the interruption
    second_pass: str
    report_path: Path
    report: dict[str, Any]
    official: dict[str, Any]


def prediction(instance_id: str, model: str, patch: str) -> dict[str, str]:
    return {"instance_id": instance_id, "model_name_or_path": model, "model_patch": patch}


def write_predictions(path: Path, rows: list[dict[str, Any] | str]) -> Path:
    path.write_text(
        "".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows)
    )
    return path


def graded_runs(results: Path) -> list[Path]:
    """The given-patch runs under results with a grade (passed or failed, not stopped)."""
    found = []
    for summary_path in results.glob("*/*/given-patch/*/summary.json"):
        if summary_path.parent.is_symlink():
            continue  # `latest`
        summary = json.loads(summary_path.read_text())
        if summary["status"] in ("passed", "failed") and not summary.get("stopped"):
            found.append(summary_path.parent)
    return sorted(found)


@pytest.fixture(scope="module")
def graded(dev: tuple[Path, Path], check: tuple[dict[str, Any], str]) -> Graded:
    """The gold patches graded, interrupted with SIGINT once a run is graded, then the
    same command again to the end. After the check, so the images are built."""
    root, dataset = dev
    records = [json.loads(line) for line in INSTANCES.read_text().splitlines() if line.strip()]
    predictions = write_predictions(
        root / "gold.jsonl",
        [
            prediction(record["instance_id"], "org/gold", record["patch"])
            for record in records
        ],
    )  # fmt: skip
    results = root / "grade-results"
    report, official = root / "grade.json", root / "official.json"
    arguments = (
        "grade", "--predictions", str(predictions), "--dataset", str(dataset),
        "--results", str(results), "--jobs", "2", "--report", str(report),
        "--official-report", str(official), "--run-id-prefix", f"{SESSION_PREFIX}-grade",
    )  # fmt: skip
    process = start_ssebench(*arguments)
    try:
        wait_until(lambda: graded_runs(results) != [], "a graded prediction", 900)
        process.send_signal(signal.SIGINT)
        first_pass, _ = process.communicate(timeout=900)
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGINT, first_pass[-3000:]
    graded_first = graded_runs(results)
    second = ssebench(*arguments, timeout=1800)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    return Graded(
        results,
        first_pass,
        graded_first,
        second.stdout + second.stderr,
        report,
        json.loads(report.read_text()),
        json.loads(official.read_text()),
    )


def test_graded_gold_patches_give_the_checks_verdicts(
    graded: Graded, check: tuple[dict[str, Any], str]
) -> None:
    passed_in_check = {
        item["task"]
        for item in check[0]["tasks"]
        if item["runs"]["reference"]["status"] == "passed"
    }
    by_task = {line["task"]: line for line in graded.report["predictions"]}
    assert {task for task, line in by_task.items() if line["outcome"] == "resolved"} == (
        passed_in_check
    )
    assert set(RESOLVED) <= passed_in_check
    spoiled = by_task["pydicom-pydicom-1458"]
    assert spoiled["outcome"] == "unresolved", spoiled
    assert spoiled["reason"] == "failed: 44 PASS_TO_PASS", spoiled
    official = graded.official
    assert official["resolved_instances"] == len(passed_in_check) == 3
    assert official["unresolved_ids"] == ["pydicom__pydicom-1458"]
    assert official["error_ids"] == [] and official["empty_patch_ids"] == []
    assert official["total_instances"] == official["submitted_instances"] == 4
    # ssebench's own report, which `ssebench report` reads: the model is the run's model.
    shown = ssebench("report", str(graded.report_path), "--format", "json")
    assert shown.returncode == 0, shown.stderr
    (entry,) = json.loads(shown.stdout)["entries"]
    assert (entry["agent"], entry["model"]) == ("given-patch", "org/gold")
    assert entry["resolved_rate"]["count"] == 3 and entry["resolved_rate"]["of"] == 4


def test_an_interrupted_grading_grades_nothing_twice(graded: Graded) -> None:
    assert graded.graded_first, graded.first_pass[-2000:]
    runs = graded_runs(graded.results)
    tasks = [run.parts[-4] for run in runs]
    assert sorted(tasks) == sorted(set(tasks)), runs  # one grade per instance
    assert len(tasks) == 4
    assert set(graded.graded_first) <= set(runs)
    assert f"{len(graded.graded_first)} graded already" in graded.second_pass
    assert graded.report["counts"]["skipped"] == len(graded.graded_first)


def test_empty_unappliable_malformed_and_unknown_predictions(
    dev: tuple[Path, Path], graded: Graded
) -> None:
    root, dataset = dev
    unappliable = "diff --git a/nothere.py b/nothere.py\n--- a/nothere.py\n+++ b/nothere.py\n"
    unappliable += "@@ -1,2 +1,2 @@\n-a = 1\n+a = 2\n b = 3\n"
    predictions = write_predictions(
        root / "broken.jsonl",
        [
            prediction("pylint-dev__astroid-1268", "m", ""),
            prediction("sqlfluff__sqlfluff-2386", "m", unappliable),
            "{not json",
            prediction("django__django-1", "m", "x"),
        ],
    )  # fmt: skip
    official_path = root / "broken-official.json"
    done = ssebench(
        "grade", "--predictions", str(predictions), "--dataset", str(dataset),
        "--results", str(root / "broken-results"), "--official-report", str(official_path),
        "--run-id-prefix", f"{SESSION_PREFIX}-broken",
        timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"--predictions {predictions} line 3: not JSON" in done.stderr
    assert f"--predictions {predictions} line 4: django__django-1 is not in the dataset" in (
        done.stderr
    )
    assert re.search(r"sqlfluff__sqlfluff-2386 +unresolved +the patch does not apply", done.stdout)
    official = json.loads(official_path.read_text())
    assert official == {
        "total_instances": 4,
        "submitted_instances": 2,
        "completed_instances": 1,
        "resolved_instances": 0,
        "unresolved_instances": 1,
        "empty_patch_instances": 1,
        "error_instances": 0,
        "completed_ids": ["sqlfluff__sqlfluff-2386"],
        "incomplete_ids": ["pydicom__pydicom-1194", "pydicom__pydicom-1458"],
        "empty_patch_ids": ["pylint-dev__astroid-1268"],
        "submitted_ids": ["pylint-dev__astroid-1268", "sqlfluff__sqlfluff-2386"],
        "resolved_ids": [],
        "unresolved_ids": ["sqlfluff__sqlfluff-2386"],
        "error_ids": [],
        "schema_version": 2,
    }
    # Only the non-empty patch ran; the agent applied it as its own user, never root.
    (summary,) = [
        path
        for path in (root / "broken-results").glob("*/m/given-patch/*/summary.json")
        if not path.parent.is_symlink()  # `latest`
    ]
    assert summary.parent.parts[-4] == "sqlfluff-sqlfluff-2386"
    entrypoint_log = (summary.parent / "entrypoint.log").read_text()
    assert "starting the agent as model:" in entrypoint_log


# -- official prebuilt images as environments (issue 47) ---------------------------------


def test_an_official_image_pulled_through_a_rate_limit_is_the_environment(
    dev: tuple[Path, Path], check: tuple[dict[str, Any], str]
) -> None:
    """An image laid out as the official ones (the repository at /testbed, the
    environment `testbed` at /opt/miniconda3/envs/testbed: the check's astroid
    environment) in a real registry on loopback, behind a proxy that answers 429.
    The import names it; the check's two runs pull it through two refusals (tried
    again) and the reference passes on it, dummy fails; `ssebench images pull` and a
    --prebuilt run of each agent pull through one refusal each."""
    root, dataset = dev
    built = environment_layer(load_dataset(dataset).task("pylint-dev-astroid-1268"))
    assert built is not None
    name = "swebench/sweb.eval.x86_64.pylint-dev_1776_astroid-1268:latest"
    with local_registry() as port, rate_limited(port) as limit:
        published, pulled = f"127.0.0.1:{port}/{name}", f"{limit.address}/{name}"
        published_images: list[str] = []
        try:
            assert docker("tag", built.image, published).returncode == 0
            pushed = docker("push", published)
            assert pushed.returncode == 0, pushed.stderr
            docker("rmi", published)
            official = root / "official"
            imported = ssebench(
                "dataset", "import", "swebench", str(INSTANCES), "--out", str(official),
                "--instances", "pylint-dev__astroid-1268", "--repos", str(root / "repos"),
                "--official-images", f"{limit.address}/swebench",
            )  # fmt: skip
            assert imported.returncode == 0, imported.stdout + imported.stderr
            task = official / "pylint-dev-astroid-1268"
            assert f"FROM {pulled}\n" in (task / "environment" / "Dockerfile").read_text()
            record = json.loads((task / "swebench.json").read_text())["environment"]
            assert record["official_image"] is True and record["image"] == pulled

            limit.refuse_next(2)
            results = root / "official-results"
            checked = ssebench(
                "dataset", "check", str(official), "--jobs", "2", "--results", str(results),
                "--run-id-prefix", f"{SESSION_PREFIX}-official", timeout=1200,
            )  # fmt: skip
            assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
            assert re.search(r"pylint-dev-astroid-1268 +ok", checked.stdout)
            assert len(limit.refused) == 2
            # The reference and dummy runs prepare at once: each pull that the registry
            # refused was tried again (dockerd may join the two pulls into one).
            (log,) = results.glob("check-*.log")
            retried = log.read_text().count("refused the pull for its rate limit (429)")
            assert 1 <= retried <= 2

            docker("rmi", pulled)  # its layers stay with the images built on it
            # One image pulled alone: one refusal, met by the first try, and one try
            # more. (With two, a second try may not ask for what the proxy refuses:
            # dockerd can keep the manifest it read by digest, so the second refusal
            # is left over; the back-off's doubling is tests/unit/test_image_pulls.py's.)
            limit.refuse_next(1)
            ahead = ssebench("images", "pull", "--local", str(official), timeout=600)
            assert ahead.returncode == 0, ahead.stdout + ahead.stderr
            assert len(limit.refused) == 1
            assert ahead.stderr.count("refused the pull for its rate limit (429)") == 1
            assert f"pulled {pulled}" in ahead.stderr
            assert "1 of 1 images on this machine" in ahead.stdout

            # Prebuilt: the layers on the official image published to the registry, then
            # a --prebuilt run of each agent pulls its image through the rate limit.
            publish = ssebench(
                "images", "publish", "--registry", f"127.0.0.1:{port}/ssebench",
                "--tasks", "pylint-dev-astroid-1268", "--agents", "reference", "dummy",
                "--local", str(official), "--mode", "sandbox", "--json", timeout=900,
            )  # fmt: skip
            assert publish.returncode == 0, publish.stdout + publish.stderr
            for image in json.loads(publish.stdout)["images"]:
                published_images.append(image)
            for agent, verdict in (("reference", "passed"), ("dummy", "failed")):
                limit.refuse_next(1)
                run = ssebench(
                    "run", "--local", str(official), "--task", "pylint-dev-astroid-1268",
                    "--agent", agent, "--prebuilt", "--results", str(root / "prebuilt"),
                    "--run-id", f"{SESSION_PREFIX}-prebuilt-{agent}",
                    env={"SSEBENCH_REGISTRY": f"{limit.address}/ssebench"}, timeout=900,
                )  # fmt: skip
                assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
                assert last_line_verdict(run.stdout)[0] == verdict
                assert len(limit.refused) == 1
                assert run.stderr.count("refused the pull for its rate limit (429)") == 1
        finally:
            for image in (published, pulled, *published_images):
                docker("rmi", image)
            for image in published_images:
                docker("rmi", image.replace(f"127.0.0.1:{port}", limit.address))
