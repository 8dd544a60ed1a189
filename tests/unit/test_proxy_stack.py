"""The local stack's images against a fake `docker` on PATH: the proxy's image with the
database has LiteLLM's Prisma client (a build argument, a tag of its own), and a build
that cannot make that client is one clear line naming the way out (--no-database);
only `up` needs the master key, and a compose failure is one line."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssebench.errors import UserError
from ssebench.proxy.models import MASTER_KEY_VARIABLE
from ssebench.proxy.stack import (
    NO_PRISMA_MESSAGE,
    PRISMA_FAILURE_MARKER,
    LocalStack,
    compose_failure_reason,
)
from tests.cli import ssebench
from tests.unit.test_images import FakeDocker, fake_docker_on_path

# What a legacy `docker build` writes when the Dockerfile's Prisma step fails.
FAILED_PRISMA_BUILD = (
    'Step 8/13 : RUN set -eu; ... echo "ssebench:" "prisma-client-unavailable"; exit 1\n'
    " ---> Running in 4646a6e432e7\n"
    "subprocess.CalledProcessError: Command '['python3', '-m', 'nodeenv']' returned 1.\n"
    f"{PRISMA_FAILURE_MARKER}\n"
)


@pytest.fixture
def fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDocker]:
    yield from fake_docker_on_path(tmp_path, monkeypatch)


def missing_images(fake: FakeDocker) -> FakeDocker:
    return fake.on("image", "inspect", status=1, stderr="Error: No such image\n")


def test_the_database_stack_has_a_proxy_image_of_its_own() -> None:
    with_database = LocalStack(database=True).images()
    without = LocalStack(database=False).images()
    assert set(with_database) == {"litellm", "postgres"} and set(without) == {"litellm"}
    assert with_database["litellm"] == without["litellm"] + "-prisma"


def test_only_the_database_image_generates_the_prisma_client(fake_docker: FakeDocker) -> None:
    missing_images(fake_docker)
    LocalStack(database=False).build()
    LocalStack(database=True).build()
    builds = {argv[-2]: argv for argv in fake_docker.calls_of("build")}
    plain = LocalStack(database=False).images()["litellm"]
    prisma, postgres = LocalStack(database=True).images().values()
    assert "--build-arg" not in builds[plain]
    assert builds[prisma][builds[prisma].index("--build-arg") + 1] == "PRISMA_CLIENT=generate"
    assert "--build-arg" not in builds[postgres]


def test_build_of_some_services_only(fake_docker: FakeDocker) -> None:
    missing_images(fake_docker)
    built = LocalStack(database=True).build(services=("litellm",))
    assert list(built) == ["litellm"] and built["litellm"].endswith("-prisma")
    assert len(fake_docker.calls_of("build")) == 1


def test_a_prisma_client_out_of_reach_is_one_clear_line(fake_docker: FakeDocker) -> None:
    missing_images(fake_docker)
    fake_docker.on(
        "build", stdout=FAILED_PRISMA_BUILD, stderr="The command ... returned 1\n", status=1
    )
    with pytest.raises(UserError) as raised:
        LocalStack(database=True).build()
    assert str(raised.value) == NO_PRISMA_MESSAGE
    assert "\n" not in NO_PRISMA_MESSAGE and "--no-database" in NO_PRISMA_MESSAGE


def test_the_prisma_step_listed_by_a_failed_build_is_not_taken_for_its_failure(
    fake_docker: FakeDocker,
) -> None:
    # The build lists the step's command, which holds the marker in two quoted words.
    missing_images(fake_docker)
    fake_docker.on("build", stdout=FAILED_PRISMA_BUILD.rsplit("\n", 2)[0], status=1)
    with pytest.raises(UserError, match=r"^Building ssebench/litellm:.*-prisma failed"):
        LocalStack(database=True).build()


def test_proxy_up_says_it_in_one_line_and_exits_1(fake_docker: FakeDocker) -> None:
    missing_images(fake_docker)
    fake_docker.on("build", stdout=FAILED_PRISMA_BUILD, status=1)
    fake_docker.on("compose", "version")
    done = ssebench("proxy", "up", env={"LITELLM_MASTER_KEY": "sk-unit-test-master"}, timeout=60)
    assert done.returncode == 1
    errors = [
        line for line in done.stderr.splitlines() if not line.startswith("ssebench: building")
    ]
    assert errors == [f"ssebench: error: {NO_PRISMA_MESSAGE}"]
    assert not fake_docker.calls_of("compose", "-p")
    assert "sk-unit-test-master" not in done.stdout + done.stderr


# What docker-compose 1.29 wrote when `up` could not start the proxy: progress, the
# reason, and a last line that only says something failed.
FAILED_COMPOSE_UP = (
    'Creating network "ssebench_default" with the default driver\n'
    "Creating ssebench_litellm_1 ... \n"
    "Creating ssebench_litellm_1 ... error\n"
    "\n"
    "ERROR: for ssebench_litellm_1  Cannot start service litellm: driver failed "
    "programming external connectivity: Bind for 127.0.0.1:4000 failed: port is already "
    "allocated\n"
    "\n"
    "ERROR: for litellm  Cannot start service litellm: driver failed programming external "
    "connectivity: Bind for 127.0.0.1:4000 failed: port is already allocated\n"
    "ERROR: Encountered errors while bringing up the project.\n"
)


def test_a_compose_failure_is_its_reason_in_one_line() -> None:
    done = subprocess.CompletedProcess(["docker-compose"], 1, "", FAILED_COMPOSE_UP)
    assert compose_failure_reason(done) == (
        "Cannot start service litellm: driver failed programming external connectivity: "
        "Bind for 127.0.0.1:4000 failed: port is already allocated"
    )
    silent = subprocess.CompletedProcess(["docker-compose"], 3, "", "Stopping x ... done\n")
    assert compose_failure_reason(silent) == "it exited with status 3"


def test_proxy_down_failing_is_one_line_without_the_master_key(
    fake_docker: FakeDocker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(MASTER_KEY_VARIABLE, raising=False)
    fake_docker.on("compose", "version")
    fake_docker.on("compose", "-p", stderr=FAILED_COMPOSE_UP, status=1)
    done = ssebench("proxy", "down", timeout=60)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "ssebench: error: docker compose down failed: Cannot start service litellm: driver "
        "failed programming external connectivity: Bind for 127.0.0.1:4000 failed: port is "
        "already allocated"
    ]


def compose_config(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The real docker-compose reading the stack's files: `config` interpolates them as
    `down` does, without asking the Docker daemon anything."""
    program = shutil.which("docker-compose")
    if program is None:
        pytest.skip("docker-compose is not installed (Debian: apt-get install docker-compose)")
    stack = LocalStack(database=True)
    files = ["-f", str(stack.compose_dir / "docker-compose.yml")]
    files += ["-f", str(stack.compose_dir / "docker-compose.database.yml")]
    return subprocess.run(
        [program, "-p", "ssebench", *files, "config", "--quiet"],
        cwd=stack.compose_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_only_up_needs_the_master_key_in_composes_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(MASTER_KEY_VARIABLE, raising=False)
    stack = LocalStack(database=True)
    stopping = compose_config(stack._environment(starts=False))
    assert stopping.returncode == 0, stopping.stderr
    starting = compose_config(stack._environment(starts=True))
    assert starting.returncode != 0 and "LITELLM_MASTER_KEY" in starting.stderr
    monkeypatch.setenv(MASTER_KEY_VARIABLE, "sk-unit-test-master")
    assert stack._environment(starts=False)[MASTER_KEY_VARIABLE] == "sk-unit-test-master"
