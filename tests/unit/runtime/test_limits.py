"""The container's limits as the entrypoint logs them, read from cgroup v2 and v1 files."""

from __future__ import annotations

from pathlib import Path

from ssebench.runtime import limits


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text + "\n")
    return root


def test_cgroup_v2(tmp_path: Path) -> None:
    root = write(tmp_path, {"cpu.max": "150000 100000", "memory.max": str(2048 * 2**20)})
    assert limits.describe(root) == "1.5 CPUs, 2048 MiB of memory"
    write(tmp_path, {"cpu.max": "max 100000", "memory.max": "max"})
    assert limits.describe(root) == "no CPU limit, no memory limit"


def test_cgroup_v1(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "cpu/cpu.cfs_quota_us": "100000",
            "cpu/cpu.cfs_period_us": "100000",
            "memory/memory.limit_in_bytes": str(4 * 2**30),
        },
    )
    assert limits.describe(root) == "1 CPU, 4096 MiB of memory"
    write(
        tmp_path,
        {"cpu/cpu.cfs_quota_us": "-1", "memory/memory.limit_in_bytes": "9223372036854771712"},
    )
    assert limits.describe(root) == "no CPU limit, no memory limit"


def test_nothing_readable_is_no_limit(tmp_path: Path) -> None:
    assert limits.describe(tmp_path) == "no CPU limit, no memory limit"
