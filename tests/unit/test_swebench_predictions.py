"""Predictions files (swebench/predictions.py): every form the official harness reads,
each bad line one problem that names it, and the official report's shape key by key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ssebench.errors import UserError
from ssebench.swebench.predictions import (
    ERROR,
    RESOLVED,
    UNRESOLVED,
    Prediction,
    official_report,
    read_predictions,
)

GOOD = {"instance_id": "a__b-1", "model_name_or_path": "org/model", "model_patch": "diff\n"}

# swebench 4.1.0, swebench/harness/reporting.py make_run_report: the keys it writes when
# it is given no Docker client (the three unstopped/unremoved keys come only with one).
OFFICIAL_KEYS = [
    "total_instances",
    "submitted_instances",
    "completed_instances",
    "resolved_instances",
    "unresolved_instances",
    "empty_patch_instances",
    "error_instances",
    "completed_ids",
    "incomplete_ids",
    "empty_patch_ids",
    "submitted_ids",
    "resolved_ids",
    "unresolved_ids",
    "error_ids",
    "schema_version",
]


def write(tmp_path: Path, text: str, name: str = "predictions.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_json_lines_a_json_array_and_an_object_by_instance_read_alike(tmp_path: Path) -> None:
    other = {**GOOD, "instance_id": "a__b-2", "model_patch": None}
    forms = {
        "lines.jsonl": f"{json.dumps(GOOD)}\n\n{json.dumps(other)}\n",
        "array.json": json.dumps([GOOD, other], indent=2),
        "object.json": json.dumps({"a__b-1": GOOD, "a__b-2": other}, indent=2),
    }
    for name, text in forms.items():
        found = read_predictions(write(tmp_path, text, name))
        assert found.problems == [], name
        assert list(found.by_instance) == ["a__b-1", "a__b-2"], name
        assert found.by_instance["a__b-1"].patch == "diff\n"
        assert found.by_instance["a__b-2"].empty and found.by_instance["a__b-2"].patch == ""
        assert found.models == ["org/model"]


def test_each_bad_line_is_one_problem_naming_it_and_the_others_are_kept(tmp_path: Path) -> None:
    lines = [
        json.dumps(GOOD),
        "{not json",
        json.dumps(["a list"]),
        json.dumps({"model_name_or_path": "m", "model_patch": ""}),
        json.dumps({"instance_id": "a__b-3", "model_patch": ""}),
        json.dumps({"instance_id": "a__b-4", "model_name_or_path": "m", "model_patch": 7}),
        json.dumps({**GOOD, "model_patch": "later\n"}),
    ]
    path = write(tmp_path, "\n".join(lines) + "\n")
    found = read_predictions(path)
    assert [problem.split(":")[0] for problem in found.problems] == [
        f"--predictions {path} line {number}" for number in (2, 3, 4, 5, 6, 7)
    ]
    assert "not JSON" in found.problems[0] and found.problems[0].endswith("; skipped")
    assert "no instance_id" in found.problems[2]
    assert "a__b-3: no model_name_or_path" in found.problems[3]
    assert "model_patch is not a string" in found.problems[4]
    assert "again (first at line 1)" in found.problems[5]
    # The later line wins, as in the official harness (a dict by instance ID).
    assert found.by_instance["a__b-1"].patch == "later\n"
    assert list(found.by_instance) == ["a__b-1"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", "holds no predictions"), ("[]", "holds no predictions")],
)
def test_a_file_without_predictions_is_one_error(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(UserError, match=expected):
        read_predictions(write(tmp_path, text))


def test_a_file_that_cannot_be_read_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such file"):
        read_predictions(tmp_path / "missing.jsonl")
    with pytest.raises(UserError, match="is a folder"):
        read_predictions(tmp_path)
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe{}")
    with pytest.raises(UserError, match="not UTF-8"):
        read_predictions(binary)


def test_the_official_report_has_the_harness_keys_in_its_order_and_counts() -> None:
    def prediction(instance_id: str, patch: str = "diff\n") -> Prediction:
        return Prediction(instance_id, "org/model", patch, "line 1")

    dataset = ["r-1", "r-2", "r-3", "r-4", "r-5", "r-6"]
    predictions = {
        "r-1": prediction("r-1"),
        "r-2": prediction("r-2"),
        "r-3": prediction("r-3", "  \n"),
        "r-4": prediction("r-4"),
        "r-5": prediction("r-5"),
    }
    outcomes = {"r-1": RESOLVED, "r-2": UNRESOLVED, "r-4": ERROR}  # r-5: never graded
    report = official_report(dataset, predictions, outcomes)
    assert list(report) == OFFICIAL_KEYS
    assert report["total_instances"] == 6
    assert report["submitted_instances"] == 5
    assert report["completed_instances"] == 2 and report["completed_ids"] == ["r-1", "r-2"]
    assert report["resolved_instances"] == 1 and report["resolved_ids"] == ["r-1"]
    assert report["unresolved_instances"] == 1 and report["unresolved_ids"] == ["r-2"]
    assert report["empty_patch_instances"] == 1 and report["empty_patch_ids"] == ["r-3"]
    assert report["error_instances"] == 2 and report["error_ids"] == ["r-4", "r-5"]
    assert report["incomplete_ids"] == ["r-6"]
    assert report["submitted_ids"] == ["r-1", "r-2", "r-3", "r-4", "r-5"]
    assert report["schema_version"] == 2
