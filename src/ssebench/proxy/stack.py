"""The local LiteLLM stack (deploy/compose/): the proxy and its Postgres.

Compose project `ssebench`: network `ssebench_default`, the proxy published on 127.0.0.1
only; the Docker backend connects the proxy to each model run's own network for the
run's life (backends/docker/network.py). The images are built here with `docker build`
(no registry is needed); the build context gets a CA bundle when
$SSEBENCH_BUILD_CA_BUNDLE (or $PIP_CERT) names one, for machines whose way to the
package index needs it. The proxy's configuration is generated from models/ into this
user's state folder; it names keys by their variables and holds no secret. Secrets
reach docker compose through its environment, never its arguments.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from ssebench.errors import UserError
from ssebench.extensions import ProxyEndpoint
from ssebench.host.docker_cli import failure_reason, run_docker
from ssebench.host.scratch import scratch_folder
from ssebench.images.layers import add_build_ca

from .models import MASTER_KEY_VARIABLE, ModelCatalog
from .stack_service import PROJECT, SERVICE, SERVICE_URL

PORT_VARIABLE = "SSEBENCH_PROXY_PORT"
DEFAULT_PORT = 4000
COMPOSE_DIR_VARIABLE = "SSEBENCH_COMPOSE_DIR"
DATABASE_VARIABLE = "SSEBENCH_PROXY_DATABASE"
BASE_FILE = "docker-compose.yml"
DATABASE_FILE = "docker-compose.database.yml"
READY_TIMEOUT_SECONDS = 180.0
# Images the stack builds: compose service -> (folder under deploy/compose, repository).
IMAGES = {"litellm": ("litellm", "ssebench/litellm"), "postgres": ("postgres", "ssebench/postgres")}
# With the database, the proxy's image has LiteLLM's Prisma client (litellm/Dockerfile),
# under a tag of its own; its build prints the marker when Prisma's tools are out of reach.
PRISMA_BUILD_ARGUMENT = "PRISMA_CLIENT=generate"
PRISMA_TAG_SUFFIX = "-prisma"
PRISMA_FAILURE_MARKER = "ssebench: prisma-client-unavailable"
# What docker compose gets for the master key when it only stops or reads the stack: the
# compose file insists on the variable (so that `up` by hand cannot start a proxy
# without one), but `down` and `logs` start nothing that would use it.
MASTER_KEY_NOT_NEEDED = "sk-not-needed-to-stop-the-stack"
# Lines of docker-compose's stderr that report progress, or say only that something
# above failed: never the reason.
_COMPOSE_PROGRESS = (
    "Creating",
    "Starting",
    "Stopping",
    "Removing",
    "Recreating",
    "Pulling",
    "Network ",
    "Container ",
    "Encountered errors",
)
NO_PRISMA_MESSAGE = (
    "The proxy's database layer cannot be built on this machine: LiteLLM's Prisma client "
    "needs Node.js, the Prisma CLI and Prisma's engines, which the build downloads from "
    "their publishers' servers and could not reach. Use `ssebench proxy up --no-database` "
    "(or SSEBENCH_PROXY_DATABASE=0): a proxy without per-run keys or spend records"
)


def default_compose_dir() -> Path:
    configured = os.environ.get(COMPOSE_DIR_VARIABLE)
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parents[3] / "deploy" / "compose"


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "ssebench" / "proxy"


def compose_command() -> list[str]:
    """`docker compose` (v2) where it works, else `docker-compose` (v1)."""
    try:
        v2 = subprocess.run(
            ["docker", "compose", "version"], capture_output=True, timeout=30, check=False
        )
        if v2.returncode == 0:
            return ["docker", "compose"]
    except (OSError, subprocess.TimeoutExpired):
        pass
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    raise UserError(
        "Neither `docker compose` nor `docker-compose` is installed; the local LiteLLM "
        "stack needs one (Debian: sudo apt-get install docker-compose)"
    )


def compose_failure_reason(completed: subprocess.CompletedProcess[str]) -> str:
    """docker compose's reasons for a failure, in one line: its progress lines and
    "ERROR:" prefixes left out, the remaining lines joined."""
    reasons: list[str] = []
    for raw in completed.stderr.splitlines():
        line = raw.strip().removeprefix("ERROR:").removeprefix("Error:").strip()
        if line.startswith("for ") and "  " in line:
            line = line.split("  ", 1)[1].strip()  # "for litellm  Cannot start ..."
        if not line or line.startswith(_COMPOSE_PROGRESS) or line in reasons:
            continue
        reasons.append(line.rstrip("."))
    if not reasons:
        return f"it exited with status {completed.returncode}"
    return "; ".join(reasons)


def image_tag(folder: Path) -> str:
    """A tag that changes with the build context's files."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


@dataclass(frozen=True)
class StackStatus:
    running: bool
    healthy: bool
    host_url: str
    service_url: str
    containers: dict[str, str]
    database: bool


class LocalStack:
    def __init__(
        self,
        compose_dir: Path | None = None,
        *,
        port: int | None = None,
        database: bool | None = None,
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.compose_dir = compose_dir or default_compose_dir()
        raw_port = os.environ.get(PORT_VARIABLE, "")
        if port is None:
            if raw_port and not raw_port.isdigit():
                raise UserError(f"{PORT_VARIABLE} must be a port number")
            port = int(raw_port) if raw_port else DEFAULT_PORT
        self.port = port
        if database is None:
            database = os.environ.get(DATABASE_VARIABLE, "1") not in ("0", "false", "no")
        self.database = database
        self.say = say or (lambda message: None)

    @property
    def host_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def endpoint(self) -> ProxyEndpoint:
        return ProxyEndpoint(host_url=self.host_url, service_url=SERVICE_URL)

    def images(self) -> dict[str, str]:
        services = ["litellm", "postgres"] if self.database else ["litellm"]
        result = {}
        for service in services:
            folder, repository = IMAGES[service]
            tag = image_tag(self.compose_dir / folder)
            if service == SERVICE and self.database:
                tag += PRISMA_TAG_SUFFIX
            result[service] = f"{repository}:{tag}"
        return result

    def _files(self) -> list[str]:
        files = ["-f", str(self.compose_dir / BASE_FILE)]
        if self.database:
            files += ["-f", str(self.compose_dir / DATABASE_FILE)]
        return files

    def _environment(self, config: Path | None = None, *, starts: bool) -> dict[str, str]:
        env = dict(os.environ)
        if not starts and not env.get(MASTER_KEY_VARIABLE):
            env[MASTER_KEY_VARIABLE] = MASTER_KEY_NOT_NEEDED
        env["COMPOSE_PROJECT_NAME"] = PROJECT
        env[PORT_VARIABLE] = str(self.port)
        images = self.images()
        env["SSEBENCH_LITELLM_IMAGE"] = images["litellm"]
        if "postgres" in images:
            env["SSEBENCH_POSTGRES_IMAGE"] = images["postgres"]
        env["SSEBENCH_PROXY_CONFIG"] = str(config or self.config_path)
        return env

    @property
    def config_path(self) -> Path:
        return state_dir() / "litellm-config.yaml"

    def _compose(
        self, *arguments: str, config: Path | None = None, timeout: float = 600
    ) -> subprocess.CompletedProcess[str]:
        argv = [*compose_command(), "-p", PROJECT, *self._files(), *arguments]
        try:
            return subprocess.run(
                argv,
                cwd=self.compose_dir,
                # Only `up` starts a proxy: the others need no master key.
                env=self._environment(config, starts=arguments[0] == "up"),
                capture_output=True,
                text=True,
                errors="replace",
                stdin=subprocess.DEVNULL,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise UserError(
                f"docker compose {arguments[0]} did not finish in {timeout:.0f}s"
            ) from None

    # -- images ----------------------------------------------------------------------

    def build(
        self, *, force: bool = False, services: Collection[str] | None = None
    ) -> dict[str, str]:
        """Build the stack's images that are missing (all with force), or those of
        services only; return them. Raises UserError."""
        built = {}
        for service, image in self.images().items():
            if services is not None and service not in services:
                continue
            if not force and run_docker(["image", "inspect", image]).returncode == 0:
                built[service] = image
                continue
            self.say(f"building {image} (this takes a few minutes the first time)")
            with scratch_folder("build") as scratch:
                context = scratch / "context"
                shutil.copytree(self.compose_dir / IMAGES[service][0], context)
                add_build_ca(context)
                arguments = (
                    ["--build-arg", PRISMA_BUILD_ARGUMENT]
                    if image.endswith(PRISMA_TAG_SUFFIX)
                    else []
                )
                # --force-rm: a failed step leaves no stopped container behind.
                done = run_docker(
                    ["build", "--pull=false", "--force-rm", *arguments, "-t", image, str(context)]
                )
            if done.returncode != 0:
                if PRISMA_FAILURE_MARKER in done.stdout + done.stderr:
                    raise UserError(NO_PRISMA_MESSAGE)
                tail = "\n".join(done.stdout.splitlines()[-15:])
                raise UserError(f"Building {image} failed: {failure_reason(done)}\n{tail}".rstrip())
            built[service] = image
        return built

    # -- lifecycle -------------------------------------------------------------------

    def status(self) -> StackStatus:
        containers = {}
        listing = run_docker(
            [
                "ps",
                "-a",
                "--filter",
                f"label=com.docker.compose.project={PROJECT}",
                "--format",
                '{{.Label "com.docker.compose.service"}}\t{{.State}}',
            ]
        )
        for line in listing.stdout.splitlines():
            service, _, state = line.partition("\t")
            if service:
                containers[service] = state
        running = containers.get(SERVICE) == "running"
        return StackStatus(
            running=running,
            healthy=running and self._alive(),
            host_url=self.host_url,
            service_url=SERVICE_URL,
            containers=containers,
            database="postgres" in containers,
        )

    def _alive(self) -> bool:
        import urllib.request  # here: ~40 ms of imports only `proxy status` needs

        try:
            with urllib.request.urlopen(f"{self.host_url}/health/liveliness", timeout=5) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False

    def write_config(self, catalog: ModelCatalog) -> Path:
        path = self.config_path
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch = path.with_suffix(".tmp")
        scratch.write_text(catalog.litellm_config_text(), encoding="utf-8")
        scratch.replace(path)
        return path

    def up(self, catalog: ModelCatalog) -> StackStatus:
        if not os.environ.get(MASTER_KEY_VARIABLE):
            raise UserError(
                f"The LiteLLM stack needs ${MASTER_KEY_VARIABLE} (a secret of your choice "
                "starting with sk-): export it, and keep it for `ssebench run`"
            )
        self.build()
        config = self.write_config(catalog)
        self.say(f"starting the LiteLLM stack (project {PROJECT}) on {self.host_url}")
        done = self._compose("up", "-d", "--no-build", config=config)
        if done.returncode != 0:
            raise UserError(f"docker compose up failed: {compose_failure_reason(done)}")
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            status = self.status()
            if status.healthy:
                self.say("the LiteLLM proxy is ready")
                return status
            if SERVICE in status.containers and status.containers[SERVICE] in ("exited", "dead"):
                break
            time.sleep(2)
        logs = self._compose("logs", "--tail", "20", SERVICE)
        tail = "\n".join(logs.stdout.splitlines()[-20:])
        raise UserError(f"The LiteLLM proxy did not become ready; its last lines:\n{tail}")

    def ensure_up(self, catalog: ModelCatalog) -> StackStatus:
        status = self.status()
        if status.healthy:
            return status
        return self.up(catalog)

    def down(self) -> None:
        done = self._compose("down", "--remove-orphans")
        if done.returncode != 0:
            # A network an older ssebench's runs still use stays; the stack is down.
            if "active endpoints" in done.stderr and not self.status().containers:
                self.say("the stack is down; a network stays while runs still use it")
                return
            raise UserError(f"docker compose down failed: {compose_failure_reason(done)}")
