"""The images of the Helm chart's services (deploy/images/*.Dockerfile): litellm (the
local stack's proxy image, deploy/compose/litellm, plus the configuration generated
from models/), catalog (the pilot dataset's manifest), webui, and postgres (a database
the chart's StatefulSet can run where postgres:16 cannot be pulled). Each build gets a
context made here from the checkout, so only what the image needs is sent to the daemon.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from ssebench import __version__
from ssebench.errors import UserError
from ssebench.host.docker_cli import failure_reason, run_docker
from ssebench.host.scratch import scratch_folder
from ssebench.images.layers import add_build_ca

SERVICES = ("litellm", "catalog", "webui", "postgres")
BUILD_TIMEOUT_SECONDS = 1800.0


def checkout() -> Path:
    """The source tree these images are built from: the one this module is in."""
    root = Path(__file__).resolve().parents[3]
    if not (root / "deploy" / "images").is_dir() or not (root / "pyproject.toml").is_file():
        raise UserError("build-services needs a checkout of ssebench (deploy/images is missing)")
    return root


def _ignore(_folder: str, names: list[str]) -> list[str]:
    return [name for name in names if name in ("__pycache__", ".pytest_cache", ".mypy_cache")]


BuildArguments = dict[str, str]


def _litellm(root: Path, context: Path, database: bool) -> BuildArguments:
    """FROM the local stack's proxy image (built here when missing; with the database,
    the one `ssebench proxy up` runs with its database), so the chart's proxy and the
    local stack's are one image definition."""
    from ssebench.proxy.models import ModelCatalog
    from ssebench.proxy.stack import LocalStack

    stack = LocalStack(root / "deploy" / "compose", database=database)
    try:
        base = stack.build(services=("litellm",))["litellm"]  # at once when it exists
    except UserError as error:
        if not database:
            raise
        raise UserError(
            f"{error}. For the Helm chart: `ssebench images build-services "
            "--no-database`, and install with litellm.database=false"
        ) from None
    text = ModelCatalog.load(root / "models").litellm_config_text()
    (context / "config.yaml").write_text(text, encoding="utf-8")
    return {"BASE_IMAGE": base}


def _catalog(root: Path, context: Path, _database: bool) -> BuildArguments:
    shutil.copytree(root / "src/ssebench", context / "ssebench", ignore=_ignore)
    shutil.copyfile(root / "datasets/pilot/manifest.json", context / "manifest.json")
    return {}


def _postgres(root: Path, context: Path, _database: bool) -> BuildArguments:
    shutil.copyfile(root / "deploy/images/postgres-entrypoint.sh", context / "entrypoint.sh")
    return {}


def _webui(root: Path, context: Path, _database: bool) -> BuildArguments:
    project = context / "project"
    project.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copyfile(root / name, project / name)
    shutil.copytree(root / "src", project / "src", ignore=_ignore)
    shutil.copytree(root / "models", context / "models", ignore=_ignore)
    shutil.copytree(root / "datasets/pilot", context / "datasets/pilot", ignore=_ignore)
    return {}


# name -> a function that fills the build context from the checkout, given whether the
# proxy gets its database layer, and returns the build's arguments.
CONTEXTS: dict[str, Callable[[Path, Path, bool], BuildArguments]] = {
    "litellm": _litellm,
    "catalog": _catalog,
    "webui": _webui,
    "postgres": _postgres,
}


def service_image(name: str, *, registry: str, tag: str | None = None) -> str:
    return f"{registry.rstrip('/')}/{name}:{tag or __version__}"


def build_service(
    name: str,
    *,
    registry: str,
    tag: str | None = None,
    push: bool = False,
    database: bool = True,
) -> str:
    """Build one service's image (and push it); return its name. database=False builds
    the proxy without LiteLLM's database layer (for litellm.database=false), where its
    Prisma client cannot be made. Raises UserError."""
    if name not in CONTEXTS:
        raise UserError(f"Unknown service {name!r}; the services are: {', '.join(SERVICES)}")
    root = checkout()
    image = service_image(name, registry=registry, tag=tag)
    with scratch_folder("service") as context:
        (context / "build-ca").mkdir()
        add_build_ca(context)
        arguments = CONTEXTS[name](root, context, database)
        dockerfile = root / "deploy" / "images" / f"{name}.Dockerfile"
        options = [f"--build-arg={key}={value}" for key, value in arguments.items()]
        done = run_docker(
            ["build", "--pull=false", *options, "-f", str(dockerfile), "-t", image, str(context)],
            timeout=BUILD_TIMEOUT_SECONDS,
        )
    if done.returncode != 0:
        tail = "\n".join(done.stdout.splitlines()[-15:])
        raise UserError(f"Building {image} failed: {failure_reason(done)}\n{tail}".rstrip())
    if push:
        pushed = run_docker(["push", image])
        if pushed.returncode != 0:
            raise UserError(f"Pushing {image} failed: {failure_reason(pushed)}")
    return image
