"""A small real Python project as a git repository with history, and SWE-bench-format
instances of three of its bugs, for the import's unit and Docker tests.

The repository `acme/shapes` grows over six commits; each bug is fixed upstream in the
commit after its base, so an import that took the wrong tree would show it:

    A  initial: area_rect, area_circle, their tests
    B  perimeter_rect, with a bug        <- base of acme__shapes-1 (5.x: own dockerfile)
    C  perimeter_rect fixed, tested
    D  scale(), with a bug               <- base of acme__shapes-2 (classic, --specs 1.0)
    E  Point on attrs (a pinned PyPI     <- base of acme__shapes-3 (classic, --specs 2.0)
       dependency), with a bug
    F  scale() and Point fixed

acme__shapes-1-overeager is instance 1 with a patch that fixes the bug but breaks a
PASS_TO_PASS test (area_rect): its reference run must not be resolved.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = "acme/shapes"
IDENTITY = ["-c", "user.name=Shapes Dev", "-c", "user.email=dev@localhost"]
PYTEST_PIN = "pytest==8.3.3"
ATTRS_PIN = "attrs==23.2.0"

GEOMETRY_A = '''"""Areas and perimeters of plane shapes."""

import math


def area_rect(width, height):
    return width * height


def area_circle(radius):
    return math.pi * radius**2
'''
GEOMETRY_B = (
    GEOMETRY_A
    + """

def perimeter_rect(width, height):
    return width + height
"""
)
GEOMETRY_FIXED = GEOMETRY_B.replace("return width + height", "return 2 * (width + height)")
GEOMETRY_OVEREAGER = GEOMETRY_FIXED.replace("return width * height", "return width * width")
TEST_GEOMETRY = """import math

from shapes.geometry import area_circle, area_rect


def test_area_rect():
    assert area_rect(2, 3) == 6


def test_area_circle():
    assert math.isclose(area_circle(1), math.pi)
"""
TEST_GEOMETRY_FIXED = (
    TEST_GEOMETRY.replace(
        "from shapes.geometry import area_circle, area_rect",
        "from shapes.geometry import area_circle, area_rect, perimeter_rect",
    )
    + """

def test_perimeter_rect():
    assert perimeter_rect(2, 3) == 10
"""
)
SCALE = '''"""Scaling shapes about the origin."""


def scale(points, factor):
    return [(x * factor, y) for x, y in points]
'''
SCALE_FIXED = SCALE.replace("(x * factor, y)", "(x * factor, y * factor)")
TEST_SCALE = """from shapes.scale import scale


def test_scale_empty():
    assert scale([], 3) == []
"""
TEST_SCALE_FIXED = (
    TEST_SCALE
    + """

def test_scale_both_axes():
    assert scale([(1, 2)], 3) == [(3, 6)]
"""
)
POINT = '''"""Points of the plane."""

import attrs


@attrs.frozen
class Point:
    x: float
    y: float

    def distance_to(self, other):
        return abs(self.x - other.x) + abs(self.y - other.y)
'''
POINT_FIXED = POINT.replace(
    "return abs(self.x - other.x) + abs(self.y - other.y)",
    "return math.hypot(self.x - other.x, self.y - other.y)",
).replace("import attrs\n", "import math\n\nimport attrs\n")
TEST_POINT = """from shapes.point import Point


def test_points_compare_by_value():
    assert Point(1, 2) == Point(1, 2)
"""
TEST_POINT_FIXED = (
    TEST_POINT
    + """

def test_distance_345():
    assert Point(0, 0).distance_to(Point(3, 4)) == 5
"""
)
# Its first step is word for word the one the import writes from a specification, so
# the build cache serves both.
INSTANCE_DOCKERFILE = f"""FROM debian:bookworm-slim AS base
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\
      ca-certificates git python3 python3-venv \\
 && rm -rf /var/lib/apt/lists/*

FROM base AS install
COPY build-ca/ /tmp/build-ca/
RUN python3 -m venv /opt/venv \\
 && if [ -f /tmp/build-ca/ca-bundle.crt ]; then export PIP_CERT=/tmp/build-ca/ca-bundle.crt; fi \\
 && /opt/venv/bin/pip install --no-cache-dir '{PYTEST_PIN}'

FROM base
COPY --from=install /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /testbed
"""
SPECS_YAML = f"""specs:
  - repo: {REPO}
    versions: ["1.0"]
    pip: ["{PYTEST_PIN}"]
    test_cmd: python -m pytest -rA -p no:cacheprovider
    log_parser: parse_log_pytest
  - repo: {REPO}
    versions: ["2.0"]
    packages: [python3-venv]
    pip: ["{PYTEST_PIN}", "{ATTRS_PIN}"]
    test_cmd: python -m pytest -rA -p no:cacheprovider
    log_parser: parse_log_pytest
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *IDENTITY, *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


def _write(repo: Path, files: dict[str, str]) -> None:
    for path, content in files.items():
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    _write(repo, files)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD").strip()


def _diff(repo: Path, files: dict[str, str]) -> str:
    """The patch (git diff) that makes files so, against HEAD; the tree is left clean."""
    _write(repo, files)
    _git(repo, "add", "-A", "-N")
    patch = _git(repo, "diff")
    _git(repo, "reset", "-q", "--hard")
    _git(repo, "clean", "-q", "-fd")
    return patch


def _eval_script(base: str, test_file: str, test_patch: str) -> str:
    """An eval script in the official harness's shape."""
    return "\n".join(
        [
            "#!/bin/bash",
            "set -uxo pipefail",
            "cd /testbed",
            f"git checkout {base} {test_file}",
            "git apply -v - <<'EOF_114329324912'",
            test_patch.rstrip("\n"),
            "EOF_114329324912",
            ": '>>>>> Start Test Output'",
            f"python -m pytest -rA -p no:cacheprovider {test_file}",
            ": '>>>>> End Test Output'",
            f"git checkout {base} {test_file}",
            "",
        ]
    )


@dataclass(frozen=True)
class ShapesProject:
    repos: Path  # the --repos folder
    clone: Path
    instances: list[dict[str, Any]]

    def write_instances(self, path: Path, extra: list[Any] | None = None) -> Path:
        lines = [json.dumps(item) for item in [*self.instances, *(extra or [])]]
        path.write_text("\n".join(lines) + "\n")
        return path


def make_shapes_project(root: Path) -> ShapesProject:
    repos = root / "repos"
    clone = repos / "acme__shapes"
    clone.mkdir(parents=True)
    _git(clone, "init", "-q", "-b", "main")
    _commit(
        clone,
        {
            "README.md": "# shapes\n\nPlane geometry helpers. Test: python -m pytest\n",
            ".gitignore": "__pycache__/\n.pytest_cache/\n",
            "shapes/__init__.py": "",
            "shapes/geometry.py": GEOMETRY_A,
            "tests/test_geometry.py": TEST_GEOMETRY,
        },
        "Initial shapes: rectangle and circle areas",
    )
    base_1 = _commit(clone, {"shapes/geometry.py": GEOMETRY_B}, "Add perimeter_rect")
    gold_1 = _diff(clone, {"shapes/geometry.py": GEOMETRY_FIXED})
    overeager_1 = _diff(clone, {"shapes/geometry.py": GEOMETRY_OVEREAGER})
    tests_1 = _diff(clone, {"tests/test_geometry.py": TEST_GEOMETRY_FIXED})
    _commit(
        clone,
        {"shapes/geometry.py": GEOMETRY_FIXED, "tests/test_geometry.py": TEST_GEOMETRY_FIXED},
        "Fix perimeter_rect: both pairs of sides",
    )
    base_2 = _commit(
        clone, {"shapes/scale.py": SCALE, "tests/test_scale.py": TEST_SCALE}, "Add scale()"
    )
    gold_2 = _diff(clone, {"shapes/scale.py": SCALE_FIXED})
    tests_2 = _diff(clone, {"tests/test_scale.py": TEST_SCALE_FIXED})
    base_3 = _commit(
        clone,
        {
            "shapes/point.py": POINT,
            "tests/test_point.py": TEST_POINT,
            "requirements.txt": f"{ATTRS_PIN}\n",
        },
        "Add Point, on attrs",
    )
    gold_3 = _diff(clone, {"shapes/point.py": POINT_FIXED})
    tests_3 = _diff(clone, {"tests/test_point.py": TEST_POINT_FIXED})
    _commit(
        clone,
        {
            "shapes/scale.py": SCALE_FIXED,
            "tests/test_scale.py": TEST_SCALE_FIXED,
            "shapes/point.py": POINT_FIXED,
            "tests/test_point.py": TEST_POINT_FIXED,
        },
        "Fix scale() and Point.distance_to",
    )
    geometry_p2p = [
        "tests/test_geometry.py::test_area_rect",
        "tests/test_geometry.py::test_area_circle",
    ]
    first = {
        "instance_id": "acme__shapes-1",
        "repo": REPO,
        "base_commit": base_1,
        "patch": gold_1,
        "test_patch": tests_1,
        "problem_statement": "perimeter_rect is wrong\n\n"
        "`perimeter_rect(2, 3)` returns 5; a 2 by 3 rectangle's perimeter is 10.\n",
        "hints_text": "",
        "created_at": "2026-01-01T00:00:00Z",
        "version": "1.0",
        "environment_setup_commit": base_1,
        "FAIL_TO_PASS": json.dumps(["tests/test_geometry.py::test_perimeter_rect"]),
        "PASS_TO_PASS": json.dumps(geometry_p2p),
        "dockerfile": INSTANCE_DOCKERFILE,
        "eval_script": _eval_script(base_1, "tests/test_geometry.py", tests_1),
        "log_parser": "parse_log_pytest",
        "eval_type": "pass_and_fail",
    }
    instances = [
        first,
        {
            **first,
            "instance_id": "acme__shapes-1-overeager",
            "patch": overeager_1,
        },
        {
            "instance_id": "acme__shapes-2",
            "repo": REPO,
            "base_commit": base_2,
            "patch": gold_2,
            "test_patch": tests_2,
            "problem_statement": "scale() leaves y alone\n\n"
            "`scale([(1, 2)], 3)` gives `[(3, 2)]` instead of `[(3, 6)]`.\n",
            "version": "1.0",
            "environment_setup_commit": base_2,
            "FAIL_TO_PASS": ["tests/test_scale.py::test_scale_both_axes"],
            "PASS_TO_PASS": ["tests/test_scale.py::test_scale_empty"],
        },
        {
            "instance_id": "acme__shapes-3",
            "repo": REPO,
            "base_commit": base_3,
            "patch": gold_3,
            "test_patch": tests_3,
            "problem_statement": "Point.distance_to is not the distance\n\n"
            "The distance from (0, 0) to (3, 4) comes out as 7; it is 5.\n",
            "version": "2.0",
            "environment_setup_commit": base_3,
            "FAIL_TO_PASS": ["tests/test_point.py::test_distance_345"],
            "PASS_TO_PASS": ["tests/test_point.py::test_points_compare_by_value"],
        },
    ]
    return ShapesProject(repos=repos, clone=clone, instances=instances)


# The dataset name of the Docker and Kubernetes tests' imports: the same name and content
# give the same image names and digests, so the images are built once for both.
DATASET_NAME = "swebench-shapes"


def import_shapes(root: Path, *instance_ids: str) -> Path:
    """Make the project under root and import its instances (all, or these) through the
    CLI, as the dataset DATASET_NAME; the dataset folder."""
    from tests.cli import ssebench

    project = make_shapes_project(root)
    instances = project.write_instances(root / "instances.jsonl")
    specs = root / "specs.yaml"
    specs.write_text(SPECS_YAML)
    dataset = root / "dataset"
    selected = ["--instances", *instance_ids] if instance_ids else []
    done = ssebench(
        "dataset", "import", "swebench", str(instances), "--out", str(dataset),
        "--repos", str(project.repos), "--specs", str(specs), "--name", DATASET_NAME,
        *selected,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return dataset
