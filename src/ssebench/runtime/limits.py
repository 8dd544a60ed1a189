"""The CPU and memory limits of this container, as its cgroup says (v2, else v1).

The entrypoint writes them into entrypoint.log, so that a run records what it had
(a task's own resources, the backend's defaults, or a user's) where an agent or a
test ran out of memory or time. Standard library only; Python 3.9.
"""

from __future__ import annotations

from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
# cgroup v1 writes "no limit" as a number near 2**63; anything from here on is none.
UNLIMITED_BYTES = 2**60


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None


def cpu_limit(root: Path = CGROUP_ROOT) -> float | None:
    """CPUs this container may use, or None for no limit (or none readable)."""
    v2 = _read(root / "cpu.max")
    if v2 is not None:
        quota, _, period = v2.partition(" ")
        if quota == "max" or not period:
            return None
        return _ratio(quota, period)
    v1_quota = _read(root / "cpu" / "cpu.cfs_quota_us")
    v1_period = _read(root / "cpu" / "cpu.cfs_period_us")
    if v1_quota is None or v1_period is None or v1_quota.startswith("-"):
        return None
    return _ratio(v1_quota, v1_period)


def _ratio(quota: str, period: str) -> float | None:
    try:
        return int(quota) / int(period) if int(period) > 0 else None
    except ValueError:
        return None


def memory_limit(root: Path = CGROUP_ROOT) -> int | None:
    """Bytes of memory this container may use, or None for no limit."""
    text = _read(root / "memory.max")
    if text is None:
        text = _read(root / "memory" / "memory.limit_in_bytes")
    if text is None or not text.isdigit() or int(text) >= UNLIMITED_BYTES:
        return None
    return int(text)


def describe(root: Path = CGROUP_ROOT) -> str:
    """One line for the log: "2 CPUs, 4096 MiB of memory"."""
    cpus, memory = cpu_limit(root), memory_limit(root)
    cpu_text = "no CPU limit" if cpus is None else f"{cpus:g} CPU{'' if cpus == 1 else 's'}"
    memory_text = "no memory limit" if memory is None else f"{memory // 2**20} MiB of memory"
    return f"{cpu_text}, {memory_text}"
