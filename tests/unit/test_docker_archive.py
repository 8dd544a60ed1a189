"""The Docker backend's archive (issue 14, item 4), against a fake `docker`: the agent's
archive is a volume of the run's own, copied into the run directory after the run by
the safe extractor, and removed by cleanup and by prune."""

from __future__ import annotations

import io
import json
import os
import socket
import stat
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssebench.backends.docker import DockerBackend
from ssebench.backends.docker.names import archive_volume_name, container_name
from ssebench.errors import BackendError, UserError
from ssebench.extensions import ARCHIVE_TARGET, RunHandle
from ssebench.labels import ARCHIVE_OF, DEADLINE, KEEP, PAIR, RUNNER_HOST, RUNNER_PID
from tests.unit.test_docker_backend import a_container, make_spec
from tests.unit.test_images import FakeDocker, fake_docker_on_path

RUN_ID = "20240501-120000-abcdef"
VOLUME = archive_volume_name(RUN_ID)
HELPER = f"{container_name(RUN_ID)}-archive-copy"
SELECTOR = f"label={ARCHIVE_OF}={RUN_ID}"


@pytest.fixture
def fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDocker]:
    yield from fake_docker_on_path(tmp_path, monkeypatch)


def handle() -> RunHandle:
    return RunHandle(
        backend="docker",
        run_id=RUN_ID,
        name=container_name(RUN_ID),
        details={"archive": VOLUME, "image": "ssebench/agent-x/tiny-add:1"},
    )


def tar_text(*members: tuple[str, bytes, bytes | None, int]) -> str:
    """An ASCII tar stream, as the text the fake docker prints: (name, type, data, mode)."""
    return tar_stream(*members).decode("ascii")


def tar_stream(*members: tuple[str, bytes, bytes | None, int]) -> bytes:
    """A tar stream as an agent could leave it: (name, type, data, mode); a link points
    at /etc/passwd."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for name, kind, data, mode in members:
            info = tarfile.TarInfo(name)
            info.type, info.mode = kind, mode
            if kind == tarfile.SYMTYPE:
                info.linkname = "/etc/passwd"
            if data is not None:
                info.size = len(data)
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def test_start_gives_the_archive_a_volume_never_a_host_folder(
    fake_docker: FakeDocker, tmp_path: Path
) -> None:
    a_container(fake_docker)
    backend = DockerBackend()
    started = backend.start(make_spec(tmp_path))
    [create] = fake_docker.calls_of("volume", "create")
    assert create[-1] == VOLUME
    assert f"{ARCHIVE_OF}={RUN_ID}" in create
    assert f"{RUNNER_PID}={os.getpid()}" in create
    assert f"{RUNNER_HOST}={socket.gethostname()}" in create
    assert f"{KEEP}=false" in create
    assert any(word.startswith(f"{DEADLINE}=") for word in create)
    [run] = fake_docker.calls_of("run")
    assert f"type=volume,source={VOLUME},target={ARCHIVE_TARGET}" in run
    assert not any(str(tmp_path / "run" / "archive") in word for word in run)
    assert started.details["archive"] == VOLUME
    backend.wait(started, 30)
    backend.cleanup(started)


def test_a_failed_start_removes_the_archive_volume(fake_docker: FakeDocker, tmp_path: Path) -> None:
    fake_docker.on("network", "inspect")
    fake_docker.on("container", "inspect", status=1, stderr="Error: No such container\n")
    fake_docker.on("run", stderr="docker: Error response from daemon: No such image\n", status=125)
    fake_docker.on(
        "volume", "ls", "--quiet", "--filter", SELECTOR, unless_exists="gone", stdout=VOLUME + "\n"
    )
    fake_docker.on("volume", "rm", create=("gone",))
    with pytest.raises(BackendError):
        DockerBackend().start(make_spec(tmp_path))
    assert fake_docker.calls_of(
        "volume", "ls", "--quiet", "--filter", f"label={ARCHIVE_OF}={RUN_ID}"
    )
    assert fake_docker.calls_of("volume", "rm", "--force", VOLUME)


def test_an_existing_volume_of_the_run_id_is_refused_and_kept(
    fake_docker: FakeDocker, tmp_path: Path
) -> None:
    fake_docker.on("volume", "ls", "--quiet", "--filter", f"name={VOLUME}", stdout=VOLUME + "\n")
    with pytest.raises(BackendError, match=f"The volume {VOLUME} exists already"):
        DockerBackend().start(make_spec(tmp_path))
    assert not fake_docker.calls_of("run")
    assert not fake_docker.calls_of("volume", "create")
    assert not fake_docker.calls_of("volume", "rm")


def test_cleanup_removes_the_helper_and_the_volume(fake_docker: FakeDocker) -> None:
    selector = f"label={ARCHIVE_OF}={RUN_ID}"
    fake_docker.on("ps", "--all", "--quiet", "--filter", selector, stdout="helper-id\n")
    fake_docker.on(
        "volume", "ls", "--quiet", "--filter", SELECTOR, unless_exists="gone", stdout=VOLUME + "\n"
    )
    fake_docker.on("volume", "rm", create=("gone",))
    DockerBackend().cleanup(handle())
    assert fake_docker.calls_of("rm", "--force", "--volumes", "helper-id")
    assert fake_docker.calls_of("volume", "rm", "--force", VOLUME)


def test_a_kept_run_keeps_its_volume(fake_docker: FakeDocker) -> None:
    kept = RunHandle(backend="docker", run_id=RUN_ID, name="x", details={"keep": "true"})
    DockerBackend().cleanup(kept)
    assert fake_docker.calls() == []


def test_collect_results_copies_through_the_safe_extractor(
    fake_docker: FakeDocker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stream = tar_text(
        ("./", tarfile.DIRTYPE, None, 0o755),
        ("./notes.md", tarfile.REGTYPE, b"mine\n", 0o4777),
        ("./dialog.jsonl", tarfile.FIFOTYPE, None, 0o644),
        ("./passwd", tarfile.SYMTYPE, None, 0o777),
    )
    fake_docker.on("cp", f"{HELPER}:{ARCHIVE_TARGET}/.", "-", stdout=stream)
    (tmp_path / "archive").mkdir()
    DockerBackend().collect_results(handle(), tmp_path)
    [create] = fake_docker.calls_of("create")
    assert f"type=volume,source={VOLUME},target={ARCHIVE_TARGET},readonly" in create
    assert create[create.index("--network") + 1] == "none"
    assert f"{ARCHIVE_OF}={RUN_ID}" in create
    assert (tmp_path / "archive" / "notes.md").read_text() == "mine\n"
    assert stat.S_IMODE((tmp_path / "archive" / "notes.md").stat().st_mode) == 0o755
    assert sorted(path.name for path in (tmp_path / "archive").iterdir()) == ["notes.md"]
    assert "skipped 2 entries of the archive" in capsys.readouterr().err
    assert fake_docker.calls_of("rm", "--force", "--volumes", HELPER)


def test_an_archive_over_a_cap_fails_the_copy(
    fake_docker: FakeDocker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSEBENCH_ARCHIVE_MAX_FILES", "2")
    stream = tar_text(*((f"./f{index}", tarfile.REGTYPE, b"x", 0o644) for index in range(5)))
    fake_docker.on("cp", stdout=stream)
    (tmp_path / "archive").mkdir()
    with pytest.raises(BackendError, match=r"archive of .* was not copied: more than 2 entries"):
        DockerBackend().collect_results(handle(), tmp_path)
    assert fake_docker.calls_of("rm", "--force", "--volumes", HELPER)


def test_a_failed_docker_cp_names_docker_s_reason(fake_docker: FakeDocker, tmp_path: Path) -> None:
    fake_docker.on("cp", status=1, stderr="Error response from daemon: no such volume\n")
    (tmp_path / "archive").mkdir()
    with pytest.raises(BackendError, match="no such volume"):
        DockerBackend().collect_results(handle(), tmp_path)


def test_a_bad_cap_setting_is_one_clear_line(
    fake_docker: FakeDocker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSEBENCH_ARCHIVE_MAX_BYTES", "2G")
    with pytest.raises(UserError, match="SSEBENCH_ARCHIVE_MAX_BYTES must be a positive whole"):
        DockerBackend().collect_results(handle(), tmp_path)


def test_prune_removes_archive_volumes_whose_run_is_gone(fake_docker: FakeDocker) -> None:
    host, now = socket.gethostname(), time.time()
    later = str(int(now) + 3600)
    dead = _dead_pid()
    volumes = {
        "runner-gone": {RUNNER_HOST: host, RUNNER_PID: str(dead), DEADLINE: later},
        "deadline-passed": {RUNNER_HOST: "elsewhere", RUNNER_PID: "1", DEADLINE: "1000"},
        "kept": {RUNNER_HOST: host, RUNNER_PID: str(dead), DEADLINE: "1000", KEEP: "true"},
        "live": {RUNNER_HOST: host, RUNNER_PID: str(os.getpid()), DEADLINE: later},
        "other-host": {RUNNER_HOST: "elsewhere", RUNNER_PID: str(dead), DEADLINE: later},
    }
    listing = ("volume", "ls", "--quiet", "--filter", f"label={ARCHIVE_OF}")
    fake_docker.on(*listing, stdout="\n".join(volumes) + "\n")
    inspected = [
        {"Name": name, "Labels": {ARCHIVE_OF: "r", **found}} for name, found in volumes.items()
    ]
    fake_docker.on("volume", "inspect", stdout=json.dumps(inspected))
    removed = DockerBackend().remove_abandoned(now, host)
    assert removed == ["runner-gone", "deadline-passed"]
    assert [argv[-1] for argv in fake_docker.calls_of("volume", "rm")] == removed
    # Never --force: docker refuses a volume that a container still uses.
    assert all("--force" not in argv for argv in fake_docker.calls_of("volume", "rm"))


def test_prune_removes_sidecar_volumes_whose_runner_died_before_the_container(
    fake_docker: FakeDocker,
) -> None:
    """A sidecar runner killed after making the pair's volumes and before the
    environment container: no container for prune to find, only the volumes."""
    host, now = socket.gethostname(), time.time()
    runner = {RUNNER_HOST: host, RUNNER_PID: str(_dead_pid()), DEADLINE: str(int(now) + 3600)}
    names = ["ssebench-p-source", "ssebench-p-sockets"]
    fake_docker.on("volume", "ls", "--quiet", "--filter", f"label={PAIR}", stdout="\n".join(names))
    inspected = [{"Name": name, "Labels": {PAIR: "p", **runner}} for name in names]
    fake_docker.on("volume", "inspect", stdout=json.dumps(inspected))
    assert DockerBackend().remove_abandoned(now, host) == names


def _dead_pid() -> int:
    """The ID of a process that has ended."""
    import subprocess

    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid
