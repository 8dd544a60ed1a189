"""The Podman backend's command lines, without Podman: values stay out of argv, the
ulimits stay within this process's own, and what Podman would misread is refused."""

from __future__ import annotations

import os
import resource

import pytest

from ssebench.backends import load_backend
from ssebench.backends.podman import PodmanBackend
from ssebench.backends.podman.options import (
    env_by_name,
    hardening_argv,
    mount_option,
    ulimit_argv,
)
from ssebench.extensions import BackendError, Mount, RunHandle, TaskResources

SECRET = "sk-podman-unit-9a7e"


def test_the_entry_point_loads_the_podman_backend() -> None:
    assert isinstance(load_backend("podman"), PodmanBackend)


def test_the_environment_goes_by_name_only() -> None:
    argv, environment = env_by_name({"SSE_API_KEY": SECRET, "TIMEOUT": "60"})
    assert argv == ["--env", "SSE_API_KEY", "--env", "TIMEOUT"]
    assert environment["SSE_API_KEY"] == SECRET
    assert SECRET not in " ".join(argv)


def test_a_bad_variable_name_is_refused_without_its_value() -> None:
    with pytest.raises(BackendError) as raised:
        env_by_name({"NOT VALID": SECRET})
    assert SECRET not in str(raised.value)


def test_ulimits_never_exceed_this_process_own() -> None:
    argv = ulimit_argv()
    limits = dict(value.split("=") for value in argv[1::2])
    for name, kind in (("nofile", resource.RLIMIT_NOFILE), ("nproc", resource.RLIMIT_NPROC)):
        soft, hard = (int(part) for part in limits[name].split(":"))
        assert soft == hard > 0
        own = resource.getrlimit(kind)[1]
        assert own == resource.RLIM_INFINITY or hard <= own
    assert set(argv) <= set(hardening_argv())


def test_hardening_drops_every_capability_but_the_entrypoint_s() -> None:
    argv = hardening_argv()
    assert argv[:2] == ["--cap-drop", "ALL"]
    assert "no-new-privileges" in argv and "--pids-limit" in argv and "--memory" in argv


def test_a_tasks_resources_are_its_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    argv = hardening_argv(TaskResources(cpus=1, memory_mb=512))
    assert argv[argv.index("--cpus") + 1] == "1" and argv[argv.index("--memory") + 1] == "512m"
    assert hardening_argv()[hardening_argv().index("--memory") + 1] == "4g"
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    argv = hardening_argv(TaskResources(cpus=8))
    assert argv[argv.index("--cpus") + 1] == "2"  # no more than the machine has


def test_mounts() -> None:
    assert mount_option(Mount(target="/t", source="/s", read_only=True)) == (
        "type=bind,source=/s,target=/t,readonly"
    )
    with pytest.raises(BackendError, match="comma"):
        mount_option(Mount(target="/t", source="/a,b"))


def test_exec_argv_passes_names_not_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROBE", SECRET)
    handle = RunHandle(backend="podman", run_id="r", name="ssebench-r")
    argv = PodmanBackend().exec_argv(handle, ["echo", "a b"], env_names=["PROBE"], user="model")
    assert argv == [
        "podman",
        "exec",
        "--user",
        "model",
        "--env",
        "PROBE",
        "ssebench-r",
        "echo",
        "a b",
    ]
    assert SECRET not in " ".join(argv)


def test_exec_argv_of_a_sidecar_run_names_the_environment_container() -> None:
    handle = RunHandle(
        backend="podman",
        run_id="r",
        name="ssebench-r-agent",
        details={"pair": "r", "environment": "ssebench-r"},
    )
    argv = PodmanBackend().exec_argv(handle, ["true"], tty=True, stdin=True)
    assert argv == ["podman", "exec", "--interactive", "--tty", "ssebench-r", "true"]


def test_rootless_gives_the_run_directory_back_to_the_containers_root(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 47001)
    _, environment = env_by_name({"SSE_RESULTS_OWNER": "47001:47001"})
    assert environment["SSE_RESULTS_OWNER"] == "0:0"
    monkeypatch.setattr("os.geteuid", lambda: 0)
    _, environment = env_by_name({"SSE_RESULTS_OWNER": "1000:1000"})
    assert environment["SSE_RESULTS_OWNER"] == "1000:1000"


@pytest.mark.parametrize(
    ("stderr", "names"),
    [
        (
            "Error: potentially insufficient UIDs or GIDs available in user namespace "
            "(requested 0:42 for /etc/gshadow)",
            "no subordinate UIDs/GIDs",
        ),
        ('exec: "newuidmap": executable file not found in $PATH', "newuidmap and newgidmap"),
        ("Error: cannot clone: Operation not permitted", "user namespaces"),
    ],
)
def test_rootless_setup_problems_are_one_line(
    monkeypatch: pytest.MonkeyPatch, stderr: str, names: str
) -> None:
    from ssebench.backends.podman.cli import rootless_problem

    monkeypatch.setattr("os.geteuid", lambda: 47001)
    problem = rootless_problem(stderr)
    assert problem is not None and names in str(problem)
    assert "\n" not in str(problem)
    monkeypatch.setattr("os.geteuid", lambda: 0)
    assert rootless_problem(stderr) is None
