from __future__ import annotations

import ast
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ssebench import extensions
from ssebench.errors import BackendError, UserError
from ssebench.extensions import (
    ImageRequest,
    Mount,
    RunHandle,
    RunSpec,
    SidecarPair,
    prebuilt_images,
)
from ssebench.testing.fake import FakeBackend

SENTINEL = "sentinel-secret-5be1c0de"


def make_spec(**changes: object) -> RunSpec:
    fields: dict[str, object] = {
        "run_id": "r1",
        "task_name": "t",
        "mode": "sandbox",
        "image": "img",
        "results": Mount(target="/var/lib/ssebench/results", source="/tmp/r"),
        "archive": Mount(target="/tmp/sse-archive", source="/tmp/r/archive"),
        "env": {"SSE_API_KEY": SENTINEL},
    }
    fields.update(changes)
    return RunSpec(**fields)  # type: ignore[arg-type]


def test_env_is_not_in_repr_or_str() -> None:
    spec = make_spec()
    assert SENTINEL not in repr(spec)
    assert SENTINEL not in str(spec)
    pair = SidecarPair(
        run_id="p",
        environment_image="e",
        source_dir="/src/x",
        volumes=("a", "b"),
        env={"SSE_API_KEY": SENTINEL},
    )
    assert SENTINEL not in repr(make_spec(sidecar=pair))
    assert pair.shared_env()["SSE_API_KEY"] == SENTINEL


def test_run_spec_is_frozen() -> None:
    with pytest.raises(AttributeError):
        make_spec().image = "other"  # type: ignore[misc]


def test_prebuilt_names_follow_the_spec_table() -> None:
    request = ImageRequest(
        task_id="py-x",
        dataset="pilot",
        agent="reference",
        agent_version="3",
        registry="reg.example/team/",
        tool_version="7",
    )
    assert prebuilt_images(request).run == "reg.example/team/agent-reference/py-x:3"
    assert prebuilt_images(request).environment is None
    sidecar = prebuilt_images(ImageRequest(**{**request.__dict__, "mode": "sidecar"}))
    assert sidecar.run == "reg.example/team/agent-reference/sidecar:3"
    assert sidecar.environment == "reg.example/team/tool-sidecar/py-x:7"


def test_sidecar_pair_shares_four_mounts() -> None:
    pair = SidecarPair(
        run_id="p", environment_image="e", source_dir="/src/x", volumes=("src-vol", "sock-vol")
    )
    results = Mount(target="/var/lib/ssebench/results", source="/tmp/r")
    archive = Mount(target="/tmp/sse-archive", source="/tmp/r/archive")
    mounts = pair.shared_mounts(results, archive)
    assert [mount.target for mount in mounts] == [
        "/src/x",
        "/run/ssebench",
        "/var/lib/ssebench/results",
        "/tmp/sse-archive",
    ]
    assert [mount.kind for mount in mounts[:2]] == ["volume", "volume"]


def test_mount_content_is_reachable_without_host_paths(tmp_path: Path) -> None:
    patch = tmp_path / "patch.diff"
    patch.write_bytes(b"diff\n")
    assert Mount(target="/reference/patch.diff", source=str(patch)).read_content() == b"diff\n"


def test_optional_methods_raise_backend_error() -> None:
    handle = RunHandle(backend="fake", run_id="r", name="n")
    with pytest.raises(BackendError):
        FakeBackend().endpoint(handle, 4263)
    with pytest.raises(BackendError):
        FakeBackend().exec_argv(handle, ["true"])
    assert FakeBackend().proxy() is None


def test_all_names_every_public_definition() -> None:
    tree = ast.parse(Path(extensions.__file__).read_text())
    defined = {
        node.name for node in tree.body if isinstance(node, ast.ClassDef | ast.FunctionDef)
    } | {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    imported_errors = {"BackendError", "UserError", "ImageUnavailableError", "ResultsGoneError"}
    # The container CLI helpers it offers backends, defined in host/container_cli.py.
    helpers = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module == "ssebench.host.container_cli"
        for alias in node.names
    }
    assert helpers == {
        "ContainerCli",
        "cli_exec_argv",
        "cli_failure",
        "end_process",
        "run_cli",
        "seconds_left",
        "wait_until_created",
    }
    public = {name for name in defined if not name.startswith("_")} | imported_errors | helpers
    assert public == set(extensions.__all__)


def _process(status: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen([sys.executable, "-c", f"raise SystemExit({status})"])
    process.wait()
    return process


def _wait(process: subprocess.Popen[bytes], exists: bool = False, timeout: float = 5) -> None:
    extensions.wait_until_created(
        process,
        lambda: exists,
        name="box",
        program="cli",
        failed_statuses=(125,),
        timeout=timeout,
        backend="b",
        run_id="r",
    )


def test_wait_until_created_returns_once_the_container_exists_or_ran() -> None:
    _wait(_process(0), exists=True)
    _wait(_process(3))  # it ran and is gone: wait reports the status


def test_wait_until_created_names_a_run_that_could_not_start_or_never_came() -> None:
    with pytest.raises(
        BackendError, match=r"^cli run could not start the container box \(status 125\)"
    ):
        _wait(_process(125))
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with pytest.raises(BackendError, match=r"^The container box was not created in 0 s$"):
            _wait(sleeper, timeout=0.2)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_cli_failure_is_the_last_line_without_the_prefix() -> None:
    failed = extensions.run_cli(
        [
            sys.executable,
            "-c",
            "import sys; sys.stderr.write('noise\\nError: the reason\\n'); sys.exit(2)",
        ],
        missing=lambda: AssertionError("python is there"),
    )
    assert extensions.cli_failure(failed) == "the reason"
    silent = extensions.run_cli([sys.executable, "-c", "raise SystemExit(4)"], missing=RuntimeError)
    assert extensions.cli_failure(silent).endswith("exited with status 4")
    with pytest.raises(UserError, match=r"^not installed$"):
        extensions.run_cli(["/nonexistent/cli"], missing=lambda: UserError("not installed"))


def test_environment_container_is_a_sidecar_runs_environment_else_the_handles() -> None:
    single = RunHandle(backend="b", run_id="r", name="box")
    assert extensions.environment_container(single) == "box"
    pair = RunHandle(
        backend="b", run_id="r", name="box-agent", details={extensions.ENVIRONMENT_DETAIL: "box"}
    )
    assert extensions.environment_container(pair) == "box"


def _endpoint(
    networks: dict[str, dict[str, str] | None] | None,
    running: bool = True,
    preferred: str | None = None,
) -> str:
    return extensions.container_endpoint(
        RunHandle(backend="b", run_id="r", name="box"),
        4263,
        running=running,
        networks=networks,
        backend="b",
        platform="Cli",
        preferred=preferred,
    )


def test_container_endpoint_prefers_the_named_network_then_the_first_with_an_address() -> None:
    networks = {
        "none": {"IPAddress": ""},
        "a": {"IPAddress": "10.0.0.2"},
        "b": {"IPAddress": "10.0.0.3"},
    }
    assert _endpoint(networks) == "http://10.0.0.2:4263"
    assert _endpoint(networks, preferred="b") == "http://10.0.0.3:4263"
    assert _endpoint(networks, preferred="none") == "http://10.0.0.2:4263"
    assert _endpoint({"a": None, "b": {"IPAddress": "10.0.0.3"}}) == "http://10.0.0.3:4263"


def test_container_endpoint_of_a_stopped_or_unaddressed_container() -> None:
    with pytest.raises(BackendError, match=r"^The run r is not running$"):
        _endpoint({"a": {"IPAddress": "10.0.0.2"}}, running=False)
    for networks in (None, {}, {"a": {"IPAddress": ""}}):
        with pytest.raises(
            BackendError, match=r"^The container of r has no address on a Cli network$"
        ):
            _endpoint(networks)


def _python(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)


def test_end_process_lets_it_finish_then_terminates_then_kills() -> None:
    finishing = _python("import time; time.sleep(0.3)")
    extensions.end_process(finishing, finish_within=10)
    assert finishing.returncode == 0
    sleeper = _python("import time; time.sleep(30)")
    extensions.end_process(sleeper)
    assert sleeper.returncode == -signal.SIGTERM
    deaf = _python(
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
        " print('ready', flush=True); time.sleep(30)"
    )
    assert deaf.stdout is not None and deaf.stdout.readline() == b"ready\n"
    started = time.monotonic()
    extensions.end_process(deaf, grace=0.5)
    assert deaf.returncode == -signal.SIGKILL
    assert time.monotonic() - started < 10
    extensions.end_process(deaf)  # ended already: nothing to do
    for process in (finishing, sleeper, deaf):
        assert process.stdout is not None
        process.stdout.close()


def test_seconds_left_counts_from_the_start_and_keeps_its_floor() -> None:
    started = time.monotonic() - 3.0
    left = extensions.seconds_left(10.0, started)
    assert left is not None and 6.0 < left <= 7.0
    assert extensions.seconds_left(2.0, started) == 0.0
    assert extensions.seconds_left(2.0, started, at_least=1.0) == 1.0
    assert extensions.seconds_left(None, started, at_least=1.0) is None


def test_a_container_cli_says_its_own_failures_and_leaves_the_others() -> None:
    said: list[str] = []

    def check_failure(stderr: str) -> None:
        said.append(stderr)
        if "daemon" in stderr:
            raise UserError("the daemon cannot be reached")

    cli = extensions.ContainerCli(sys.executable, lambda: UserError("not installed"), check_failure)
    assert cli.run(["-c", "print('ok')"]).stdout == "ok\n" and said == []
    failed = cli.run(["-c", "import sys; sys.exit('no such container')"])
    assert failed.returncode == 1 and said == ["no such container\n"]
    assert extensions.cli_failure(failed) == "no such container"
    with pytest.raises(UserError, match="cannot be reached"):
        cli.run(["-c", "import sys; sys.exit('cannot reach the daemon')"])
    missing = extensions.ContainerCli(
        "/nonexistent/cli", lambda: UserError("not installed"), said.append
    )
    with pytest.raises(UserError, match="not installed"):
        missing.run(["ps"])
