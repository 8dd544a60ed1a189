"""The images of the Helm chart's services (deploy/images/*.Dockerfile): litellm (the
proxy, with the configuration generated from models/), catalog (the pilot dataset's
manifest) and webui. Each build gets a context made here from the checkout, so only
what the image needs is sent to the daemon.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from ssebench import __version__
from ssebench.errors import UserError
from ssebench.images import failure_reason, run_docker

SERVICES = ("litellm", "catalog", "webui")
CA_BUNDLE_VARIABLE = "SSEBENCH_BUILD_CA_BUNDLE"
BUILD_TIMEOUT_SECONDS = 1800.0


def checkout() -> Path:
    """The source tree these images are built from: the one this module is in."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "deploy" / "images").is_dir() or not (root / "pyproject.toml").is_file():
        raise UserError("build-services needs a checkout of ssebench (deploy/images is missing)")
    return root


def _ignore(_folder: str, names: list[str]) -> list[str]:
    return [name for name in names if name in ("__pycache__", ".pytest_cache", ".mypy_cache")]


def _litellm(root: Path, context: Path) -> None:
    from ssebench.proxy.models import ModelCatalog

    shutil.copyfile(root / "deploy/compose/litellm/requirements.txt", context / "requirements.txt")
    text = ModelCatalog.load(root / "models").litellm_config_text()
    (context / "config.yaml").write_text(text, encoding="utf-8")


def _catalog(root: Path, context: Path) -> None:
    shutil.copytree(root / "src/ssebench", context / "ssebench", ignore=_ignore)
    shutil.copyfile(root / "datasets/pilot/manifest.json", context / "manifest.json")


def _webui(root: Path, context: Path) -> None:
    project = context / "project"
    project.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copyfile(root / name, project / name)
    shutil.copytree(root / "src", project / "src", ignore=_ignore)
    shutil.copytree(root / "models", context / "models", ignore=_ignore)
    shutil.copytree(root / "datasets/pilot", context / "datasets/pilot", ignore=_ignore)


CONTEXTS: dict[str, Callable[[Path, Path], None]] = {
    "litellm": _litellm,
    "catalog": _catalog,
    "webui": _webui,
}


def service_image(name: str, *, registry: str, tag: str | None = None) -> str:
    return f"{registry.rstrip('/')}/{name}:{tag or __version__}"


def build_service(name: str, *, registry: str, tag: str | None = None, push: bool = False) -> str:
    """Build one service's image (and push it); return its name. Raises UserError."""
    if name not in CONTEXTS:
        raise UserError(f"Unknown service {name!r}; the services are: {', '.join(SERVICES)}")
    root = checkout()
    image = service_image(name, registry=registry, tag=tag)
    with tempfile.TemporaryDirectory(prefix="ssebench-service-") as scratch:
        context = Path(scratch)
        (context / "build-ca").mkdir()
        bundle = os.environ.get(CA_BUNDLE_VARIABLE) or os.environ.get("PIP_CERT")
        if bundle and Path(bundle).is_file():
            shutil.copyfile(bundle, context / "build-ca" / "ca-bundle.crt")
        CONTEXTS[name](root, context)
        dockerfile = root / "deploy" / "images" / f"{name}.Dockerfile"
        done = run_docker(
            ["build", "--pull=false", "-f", str(dockerfile), "-t", image, str(context)],
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
