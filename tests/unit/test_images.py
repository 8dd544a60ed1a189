"""Image names, layer digests and builds, against a fake `docker` on PATH (no daemon).

FakeDocker is also what tests/unit/test_docker_backend.py drives the backend with.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ssebench.errors import ImageUnavailableError, UserError
from ssebench.extensions import ImageRequest
from ssebench.host.docker_cli import run_docker
from ssebench.images.builds import (
    build_argv,
    build_case_images,
    build_environment,
    build_layer,
    buildx_available,
    ensure_layers,
    prepare_images,
)
from ssebench.images.layers import (
    DIGEST_LABEL,
    Layer,
    agent_layer,
    case_layer,
    environment_layer,
    run_layers,
)
from ssebench.images.output import BuildOutput
from ssebench.tasks import Task, load_task

TINY_TASK = Path(__file__).resolve().parents[1] / "fixtures" / "datasets" / "tiny" / "tiny-add"
UNREACHABLE = (
    "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
    "Is the docker daemon running?"
)

# The fake docker: records each call, then answers with the first rule that matches.
FAKE_DOCKER_PROGRAM = r"""
import json, os, stat, sys, time
from pathlib import Path

root = Path(os.environ["FAKE_DOCKER_ROOT"])
argv = sys.argv[1:]
record = {"argv": argv, "buildkit": os.environ.get("DOCKER_BUILDKIT")}
if "--env-file" in argv:
    env_file = Path(argv[argv.index("--env-file") + 1])
    record["env_file"] = {
        "path": str(env_file),
        "fifo": stat.S_ISFIFO(env_file.stat().st_mode),
        "content": env_file.read_text(),
    }
with open(root / "calls.jsonl", "a") as calls:
    calls.write(json.dumps(record) + "\n")


def matches(rule):
    pattern = rule["args"]
    if len(pattern) > len(argv):
        return False
    if not all(want in ("*", got) for want, got in zip(pattern, argv)):
        return False
    if rule.get("if_exists") and not (root / rule["if_exists"]).exists():
        return False
    if rule.get("unless_exists") and (root / rule["unless_exists"]).exists():
        return False
    return True


for rule in json.loads((root / "rules.json").read_text()):
    if matches(rule):
        break
else:
    rule = {}
for marker in rule.get("create", []):
    (root / marker).touch()
sys.stdout.write(rule.get("stdout", ""))
sys.stdout.flush()
sys.stderr.write(rule.get("stderr", ""))
deadline = time.monotonic() + rule.get("sleep", 0)
while time.monotonic() < deadline:
    if rule.get("until_exists") and (root / rule["until_exists"]).exists():
        break
    time.sleep(0.02)
for marker in rule.get("remove", []):
    (root / marker).unlink(missing_ok=True)
sys.exit(rule.get("exit", 0))
"""

# Beside it a fake `iptables`, so that no unit test touches the host's firewall: it
# records each call and fails with the message in iptables-fails, if that file exists.
FAKE_IPTABLES_PROGRAM = r"""
import json, os, sys
from pathlib import Path

root = Path(os.environ["FAKE_DOCKER_ROOT"])
with open(root / "iptables.jsonl", "a") as calls:
    calls.write(json.dumps(sys.argv[1:]) + "\n")
failure = root / "iptables-fails"
if failure.exists():
    sys.stderr.write(failure.read_text())
    sys.exit(4)
"""


class FakeDocker:
    """A `docker` executable first on PATH whose answers a test chooses.

    on(...) adds a rule: argv prefix ("*" matches any word), output, exit status, a sleep
    (cut short once until_exists appears), and marker files to create or remove, which
    later rules can require (if_exists / unless_exists). Unmatched calls exit 0 silently,
    except `docker buildx version`: no plugin, as on a plain Debian install.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.rules: list[dict[str, Any]] = []
        self.fallbacks = [{"args": ["buildx", "version"], "exit": 1}]
        bin_dir = root / "bin"
        bin_dir.mkdir(parents=True)
        program = bin_dir / "docker"
        program.write_text(f"#!{sys.executable}\n{FAKE_DOCKER_PROGRAM}")
        program.chmod(0o755)
        firewall = bin_dir / "iptables"
        firewall.write_text(f"#!{sys.executable}\n{FAKE_IPTABLES_PROGRAM}")
        firewall.chmod(0o755)
        self.bin_dir = bin_dir
        self._save()

    def on(
        self,
        *args: str,
        stdout: str = "",
        stderr: str = "",
        status: int = 0,
        sleep: float = 0,
        until_exists: str | None = None,
        create: tuple[str, ...] = (),
        remove: tuple[str, ...] = (),
        if_exists: str | None = None,
        unless_exists: str | None = None,
    ) -> FakeDocker:
        self.rules.append(
            {
                "args": list(args),
                "stdout": stdout,
                "stderr": stderr,
                "exit": status,
                "sleep": sleep,
                "until_exists": until_exists,
                "create": list(create),
                "remove": list(remove),
                "if_exists": if_exists,
                "unless_exists": unless_exists,
            }
        )
        self._save()
        return self

    def _save(self) -> None:
        (self.root / "rules.json").write_text(json.dumps(self.rules + self.fallbacks))

    def records(self) -> list[dict[str, Any]]:
        path = self.root / "calls.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def calls(self) -> list[list[str]]:
        return [record["argv"] for record in self.records()]

    def calls_of(self, *prefix: str) -> list[list[str]]:
        return [argv for argv in self.calls() if argv[: len(prefix)] == list(prefix)]

    def iptables_calls(self) -> list[list[str]]:
        path = self.root / "iptables.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]


def fake_docker_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDocker]:
    """The body of a fake_docker fixture: the fake first on PATH for one test."""
    fake = FakeDocker(tmp_path / "fake-docker")
    monkeypatch.setenv("FAKE_DOCKER_ROOT", str(fake.root))
    monkeypatch.setenv("PATH", f"{fake.bin_dir}{os.pathsep}{os.environ['PATH']}")
    # No Engine API socket there: what reads through the API falls back to the fake CLI.
    monkeypatch.setenv("DOCKER_HOST", f"unix://{fake.root}/no-docker.sock")
    # The answer about buildx is cached per process: neither take nor leave the fake's.
    buildx_available.cache_clear()
    yield fake
    buildx_available.cache_clear()


@pytest.fixture
def fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDocker]:
    yield from fake_docker_on_path(tmp_path, monkeypatch)


# --- helpers ------------------------------------------------------------------------


@pytest.fixture
def task(tmp_path: Path) -> Task:
    """A copy of the tiny task, free to change."""
    folder = tmp_path / "tiny" / "tiny-add"
    shutil.copytree(TINY_TASK, folder)
    return load_task(folder, dataset="tiny")


@pytest.fixture
def agent_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "agent"
    folder.mkdir()
    (folder / "agent.json").write_text('{"name": "solver", "version": "2.0"}')
    run = folder / "run"
    run.write_text("#!/bin/sh\nexit 0\n")
    run.chmod(0o755)
    return folder


def layers_of(task: Task, agent_dir: Path, **options: Any) -> tuple[Layer, Layer, Layer]:
    return run_layers(
        ImageRequest(
            task_id=task.id,
            dataset=task.dataset,
            agent="solver",
            agent_version="2.0",
            task_dir=task.path,
            agent_dir=agent_dir,
            **options,
        )
    )


def labels_answer(layer: Layer) -> str:
    return json.dumps({DIGEST_LABEL: layer.digest}) + "\n"


# --- names --------------------------------------------------------------------------


def test_layer_names(task: Task, agent_dir: Path) -> None:
    case, tool, agent = layers_of(task, agent_dir, tool_version="3")
    assert case.image == f"ssebench/case/tiny/tiny-add:{case.digest[:12]}"
    assert tool.image == "ssebench/tool/tiny-add:3"
    assert agent.image == "ssebench/agent-solver/tiny-add:2.0"
    assert tool.build_args["BASE_IMAGE"] == case.image
    assert agent.build_args == {
        "BASE_IMAGE": tool.image,
        "INSTALL_IMAGE": "ssebench/agent-install-empty:1",
        "AGENT_NAME": "solver",
        "AGENT_VERSION": "2.0",
    }


def test_case_build_args_are_the_tasks(task: Task) -> None:
    task = replace(task, packages=("gcc", "make"), base_image="debian:trixie-slim")
    layer = case_layer(task)
    assert layer.build_args == {
        "BASE_IMAGE": "debian:trixie-slim",
        "PACKAGES": "gcc make",
        "SOURCE_DIR": "/src/tiny",
    }


def test_a_name_docker_refuses_is_a_user_error(task: Task) -> None:
    with pytest.raises(UserError, match="image name"):
        case_layer(replace(task, id="ends-with-"))
    with pytest.raises(UserError, match="agent version"):
        agent_layer(task, case_layer(task), agent="a", version="-1", agent_dir=TINY_TASK)


def test_building_needs_the_task_folder(agent_dir: Path) -> None:
    request = ImageRequest(task_id="x", dataset="d", agent="a", agent_version="1")
    with pytest.raises(UserError, match="task's folder"):
        run_layers(request)


# --- digests ------------------------------------------------------------------------


def test_digest_is_stable_and_follows_the_content(task: Task) -> None:
    before = case_layer(task).digest
    assert case_layer(task).digest == before
    source = task.path / "repo" / "tiny.py"
    source.write_text(source.read_text() + "# changed\n")
    assert case_layer(task).digest != before


def test_digest_ignores_caches_but_not_the_executable_bit(task: Task) -> None:
    before = case_layer(task).digest
    cache = task.path / "repo" / "__pycache__"
    cache.mkdir()
    (cache / "tiny.cpython-311.pyc").write_bytes(b"\0")
    assert case_layer(task).digest == before
    (task.path / "repo" / "tiny.py").chmod(0o755)
    assert case_layer(task).digest != before


@pytest.mark.parametrize(
    "change",
    [
        {"packages": ("gcc",)},
        {"base_image": "debian:trixie-slim"},
        {"source_dir": "/src/other"},
        {"prompt": "another prompt"},
    ],
)
def test_digest_follows_the_task_metadata(task: Task, change: dict[str, Any]) -> None:
    assert case_layer(replace(task, **change)).digest != case_layer(task).digest


def test_digest_of_a_layer_covers_its_parents(task: Task, agent_dir: Path) -> None:
    _, tool, agent = layers_of(task, agent_dir)
    hidden = next((task.path / "hidden").rglob("*.py"))
    hidden.write_text(hidden.read_text() + "\n")
    _, changed_tool, changed_agent = layers_of(task, agent_dir)
    assert changed_tool.image == tool.image  # same version tag...
    assert changed_tool.digest != tool.digest  # ...but not current any more
    assert changed_agent.digest != agent.digest


def test_digest_follows_the_platform(task: Task) -> None:
    assert case_layer(task, platform="linux/arm64").digest != case_layer(task).digest


# --- build contexts -----------------------------------------------------------------


def test_case_context(task: Task, tmp_path: Path) -> None:
    (task.path / "repo" / "__pycache__").mkdir()
    (task.path / "repo" / "tiny.py").chmod(0o600)
    context = tmp_path / "context"
    context.mkdir()
    case_layer(task).write_context(context)
    files = sorted(path.relative_to(context).as_posix() for path in context.rglob("*"))
    assert "repo/tiny.py" in files
    assert "task/reference.patch" in files
    assert not [name for name in files if "__pycache__" in name]
    assert (context / "repo" / "tiny.py").stat().st_mode & 0o777 == 0o644
    assert json.loads((context / "task" / "task.json").read_text()) == task.container_metadata()
    assert (context / "task" / "hidden").is_dir()


def test_agent_context_is_the_agent_folder(task: Task, agent_dir: Path, tmp_path: Path) -> None:
    _, _, agent = layers_of(task, agent_dir)
    context = tmp_path / "context"
    context.mkdir()
    agent.write_context(context)
    assert sorted(path.name for path in context.iterdir()) == ["agent.json", "run"]
    assert (context / "run").stat().st_mode & 0o777 == 0o755


# --- build commands -----------------------------------------------------------------


def test_build_argv_with_buildx(task: Task) -> None:
    layer = case_layer(task, platform="linux/arm64")
    argv = build_argv(layer, Path("/ctx"), buildx=True)
    assert argv[:4] == ["docker", "buildx", "build", "--load"]
    assert argv[argv.index("--platform") + 1] == "linux/arm64"
    assert argv[argv.index("--tag") + 1] == layer.image
    assert f"{DIGEST_LABEL}={layer.digest}" in argv
    assert "BASE_IMAGE=debian:bookworm-slim" in argv
    assert argv[-1] == "/ctx"
    environment = build_environment(buildx=True)
    assert environment.get("DOCKER_BUILDKIT") == os.environ.get("DOCKER_BUILDKIT")


def test_build_argv_classic(task: Task) -> None:
    argv = build_argv(case_layer(task), Path("/ctx"), buildx=False)
    assert argv[:2] == ["docker", "build"]
    assert "--load" not in argv
    assert "--platform" not in argv
    assert build_environment(buildx=False)["DOCKER_BUILDKIT"] == "0"


@pytest.mark.parametrize(("buildx_status", "expected"), [(0, ["buildx", "build"]), (1, ["build"])])
def test_builder_follows_the_buildx_plugin(
    fake_docker: FakeDocker, task: Task, buildx_status: int, expected: list[str]
) -> None:
    fake_docker.on("buildx", "version", status=buildx_status)
    stream = io.StringIO()
    build_layer(case_layer(task), BuildOutput(stream=stream))
    builds = [argv for argv in fake_docker.calls() if "--tag" in argv]
    assert [argv[: len(expected)] for argv in builds] == [expected]
    build_record = next(record for record in fake_docker.records() if "--tag" in record["argv"])
    assert build_record["buildkit"] == (None if buildx_status == 0 else "0")


def test_buildx_is_asked_once(fake_docker: FakeDocker, task: Task) -> None:
    fake_docker.on("buildx", "version", status=1)
    output = BuildOutput(stream=io.StringIO())
    build_layer(case_layer(task), output)
    build_layer(case_layer(task), output)
    assert len(fake_docker.calls_of("buildx", "version")) == 1


# --- builds -------------------------------------------------------------------------


def test_build_output_is_streamed_with_the_layer_name(fake_docker: FakeDocker, task: Task) -> None:
    fake_docker.on("build", stdout="Step 1/9 : FROM x\nStep 2/9 : RUN y\n")
    stream = io.StringIO()
    build_layer(case_layer(task), BuildOutput(stream=stream))
    text = stream.getvalue()
    assert "building the case layer ssebench/case/tiny/tiny-add:" in text
    assert "  case | Step 2/9 : RUN y\n" in text
    assert "built ssebench/case/tiny/tiny-add:" in text


def test_failed_build_names_the_layer_and_the_end_of_its_log(
    fake_docker: FakeDocker, task: Task
) -> None:
    log = "".join(f"line {number}\n" for number in range(100))
    fake_docker.on("build", stdout=log + "E: Unable to locate package nosuch\n", status=1)
    stream = io.StringIO()
    layer = case_layer(task)
    with pytest.raises(UserError) as raised:
        build_layer(layer, BuildOutput(stream=stream, quiet=True))
    message = str(raised.value)
    assert isinstance(raised.value, ImageUnavailableError)
    assert f"case layer {layer.image} failed" in message
    assert "E: Unable to locate package nosuch" in message
    assert "line 99" in message and "line 10\n" not in message
    assert "line 99" not in stream.getvalue()  # quiet: the log only in the error


def test_build_of_an_unreachable_daemon(fake_docker: FakeDocker, task: Task) -> None:
    fake_docker.on("build", stderr=UNREACHABLE + "\n", status=1)
    with pytest.raises(UserError, match=r"^Docker is not reachable: Cannot connect") as raised:
        build_layer(case_layer(task), BuildOutput(stream=io.StringIO()))
    assert "Start the Docker daemon" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_current_layers_are_not_built_again(
    fake_docker: FakeDocker, task: Task, agent_dir: Path
) -> None:
    layers = layers_of(task, agent_dir)
    fake_docker.on("image", "inspect", "*", "*", layers[-1].image, stdout=labels_answer(layers[-1]))
    ensure_layers(layers, output=BuildOutput(stream=io.StringIO()))
    assert fake_docker.calls() == [
        ["image", "inspect", "--format", "{{json .Config.Labels}}", layers[-1].image]
    ]


def test_only_stale_layers_are_built_bottom_first(
    fake_docker: FakeDocker, task: Task, agent_dir: Path
) -> None:
    case, tool, agent = layers_of(task, agent_dir)
    fake_docker.on("image", "inspect", "*", "*", case.image, stdout=labels_answer(case))
    # The tool image exists but from other content: it is stale.
    fake_docker.on(
        "image", "inspect", "*", "*", tool.image, stdout='{"ssebench.layer-digest": "x"}'
    )
    fake_docker.on("image", "inspect", status=1, stderr="Error: No such image\n")
    ensure_layers([case, tool, agent], output=BuildOutput(stream=io.StringIO()))
    built = [argv[argv.index("--tag") + 1] for argv in fake_docker.calls() if "--tag" in argv]
    # The agent layer's input, its (here empty) install image, is built just before it.
    (install,) = agent.inputs
    assert built == [tool.image, install.image, agent.image]


def test_rebuild_builds_every_layer(fake_docker: FakeDocker, task: Task, agent_dir: Path) -> None:
    layers = layers_of(task, agent_dir)
    for layer in layers:
        fake_docker.on("image", "inspect", "*", "*", layer.image, stdout=labels_answer(layer))
    ensure_layers(layers, rebuild=True, output=BuildOutput(stream=io.StringIO()))
    built = [argv[argv.index("--tag") + 1] for argv in fake_docker.calls() if "--tag" in argv]
    case, tool, agent = layers
    assert built == [case.image, tool.image, "ssebench/agent-install-empty:1", agent.image]
    assert not fake_docker.calls_of("image", "inspect")


def test_build_case_images_returns_the_names(fake_docker: FakeDocker, task: Task) -> None:
    fake_docker.on("image", "inspect", status=1)
    names = build_case_images([task], output=BuildOutput(stream=io.StringIO()))
    assert names == [case_layer(task).image]
    assert len([argv for argv in fake_docker.calls() if "--tag" in argv]) == 1


# --- prepare_images -----------------------------------------------------------------


def prebuilt_request(**options: Any) -> ImageRequest:
    return ImageRequest(
        task_id="tiny-add",
        dataset="tiny",
        agent="reference",
        agent_version="1",
        prebuilt=True,
        registry="registry.example/ssebench",
        **options,
    )


def test_prebuilt_pulls_the_published_image(fake_docker: FakeDocker) -> None:
    result = prepare_images(
        prebuilt_request(platform="linux/arm64"), BuildOutput(stream=io.StringIO())
    )
    assert result.run == "registry.example/ssebench/agent-reference/tiny-add:1"
    assert fake_docker.calls() == [
        ["pull", "--quiet", "--platform", "linux/arm64", result.run],
    ]


def test_prebuilt_falls_back_to_a_local_copy_with_a_warning(fake_docker: FakeDocker) -> None:
    fake_docker.on("pull", stderr="Error response from daemon: no route to registry\n", status=1)
    fake_docker.on("image", "inspect", stdout="sha256:1234\n")
    stream = io.StringIO()
    result = prepare_images(prebuilt_request(), BuildOutput(stream=stream))
    assert f"warning: cannot pull {result.run} (no route to registry)" in stream.getvalue()


def test_prebuilt_missing_everywhere(fake_docker: FakeDocker) -> None:
    fake_docker.on("pull", stderr="Error response from daemon: manifest unknown\n", status=1)
    fake_docker.on("image", "inspect", stderr="Error: No such image\n", status=1)
    with pytest.raises(ImageUnavailableError) as raised:
        prepare_images(prebuilt_request(), BuildOutput(stream=io.StringIO()))
    assert raised.value.image == "registry.example/ssebench/agent-reference/tiny-add:1"
    assert "manifest unknown" in str(raised.value)
    assert "--prebuilt" in str(raised.value)


def test_prebuilt_with_the_daemon_down(fake_docker: FakeDocker) -> None:
    fake_docker.on("pull", stderr=UNREACHABLE + "\n", status=1)
    with pytest.raises(UserError, match="Docker is not reachable"):
        prepare_images(prebuilt_request(), BuildOutput(stream=io.StringIO()))


def test_prepare_builds_the_agent_image(
    fake_docker: FakeDocker, task: Task, agent_dir: Path
) -> None:
    fake_docker.on("image", "inspect", status=1)
    request = ImageRequest(
        task_id=task.id,
        dataset=task.dataset,
        agent="solver",
        agent_version="2.0",
        task_dir=task.path,
        agent_dir=agent_dir,
    )
    result = prepare_images(request, BuildOutput(stream=io.StringIO()))
    assert result.run == "ssebench/agent-solver/tiny-add:2.0"
    assert result.environment is None


def test_docker_not_installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UserError, match="docker command is not installed"):
        run_docker(["version"])


# --- a task's own environment (environment/Dockerfile) -------------------------------


@pytest.fixture
def task_with_environment(task: Task, tmp_path: Path) -> Task:
    folder = tmp_path / "tiny-add"
    shutil.copytree(task.path, folder)
    (folder / "environment").mkdir()
    (folder / "environment" / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
    return load_task(folder, dataset="tiny")


def test_the_case_layer_starts_from_the_tasks_environment(task_with_environment: Task) -> None:
    environment = environment_layer(task_with_environment)
    assert environment is not None and environment.build_ca
    assert environment.image == f"ssebench/environment/tiny/tiny-add:{environment.digest[:12]}"
    case = case_layer(task_with_environment)
    assert case.build_args["BASE_IMAGE"] == environment.image
    assert case.inputs == (environment,)
    # A changed environment Dockerfile is a new environment and so a new case image.
    (task_with_environment.path / "environment" / "Dockerfile").write_text("FROM other\n")
    assert case_layer(task_with_environment).digest != case.digest


def test_a_task_without_environment_has_none(task: Task) -> None:
    assert environment_layer(task) is None
    assert case_layer(task).inputs == ()


def test_the_environment_is_built_before_the_case_layer(
    fake_docker: FakeDocker, task_with_environment: Task, tmp_path: Path
) -> None:
    fake_docker.on("image", "inspect", status=1, stderr="Error: No such image\n")
    names = build_case_images([task_with_environment], output=BuildOutput(io.StringIO()))
    built = [argv[argv.index("--tag") + 1] for argv in fake_docker.calls() if "--tag" in argv]
    environment = environment_layer(task_with_environment)
    assert environment is not None
    assert built == [environment.image, names[0]]
