"""Publish the Helm chart as an OCI artifact, with the chart's service images, as a
release does (spec, kubernetes.txt, "Install": `helm install ssebench
oci://<registry>/charts/ssebench --version <version>`).

For a registry R and the version V of this ssebench (the chart's version and appVersion
must be V):

    oci://R/charts/ssebench:V     deploy/helm/ssebench, packaged with image.registry = R,
                                  so an install from R pulls its images from R
    R/<service>:V                 litellm, catalog, webui and postgres, as `ssebench
                                  images build-services` made them under another
                                  registry name (--images-from), tagged and pushed

The registry of a release is set in one place: RELEASE_REGISTRY_VARIABLE, or --registry.
The chart is packaged and pushed with helm-python-sdk (Helm's own library; no helm
binary), the images with the docker CLI.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ssebench import __version__
from ssebench.errors import UserError
from ssebench.host.docker_cli import run_docker
from ssebench.host.scratch import scratch_folder
from ssebench.images import publish
from ssebench.images.builds import docker_image_builder
from ssebench.release.services import SERVICES, service_image

__all__ = ["RELEASE_REGISTRY_VARIABLE", "ChartRelease", "publish_chart", "release_registry"]

# Where a release publishes its chart and images: the one place to set it.
RELEASE_REGISTRY_VARIABLE = "SSEBENCH_RELEASE_REGISTRY"
CHART_NAME = "ssebench"
HELM_MISSING = (
    "images publish-chart needs helm-python-sdk (Helm's library): pip install 'ssebench[helm]'"
)
# The image.registry line of values.yaml, the first `registry:` under `image:`.
_IMAGE_REGISTRY = re.compile(r"(?m)^(image:\n(?:[ \t]+.*\n|\n)*?[ \t]+registry:[ \t]*).*$")


@dataclass(frozen=True)
class ChartRelease:
    """What publish_chart pushed: the chart's oci:// reference, its version, the images."""

    chart: str
    version: str
    images: tuple[str, ...]


def release_registry(given: str | None, environment: dict[str, str]) -> str:
    """--registry, else $SSEBENCH_RELEASE_REGISTRY; UserError when neither is set."""
    registry = (given or environment.get(RELEASE_REGISTRY_VARIABLE, "")).strip().rstrip("/")
    if not registry:
        raise UserError(
            f"images publish-chart needs a registry: pass --registry R or set "
            f"{RELEASE_REGISTRY_VARIABLE} (the registry a release publishes to)"
        )
    if "://" in registry or not re.fullmatch(r"[A-Za-z0-9._:/-]+", registry):
        raise UserError(f"--registry {registry!r} must look like host[:port]/path, no scheme")
    return registry


def chart_folder() -> Path:
    return Path(__file__).resolve().parents[3] / "deploy" / "helm" / CHART_NAME


def _check_versions(chart: Path) -> str:
    meta = yaml.safe_load((chart / "Chart.yaml").read_text(encoding="utf-8"))
    versions = {str(meta.get("version")), str(meta.get("appVersion")), __version__}
    if len(versions) != 1:
        raise UserError(
            f"{chart / 'Chart.yaml'}: version {meta.get('version')} and appVersion "
            f"{meta.get('appVersion')} must both be ssebench's {__version__}"
        )
    return __version__


def with_registry(values: str, registry: str) -> str:
    """values.yaml's text with image.registry set to registry, comments kept."""
    changed, count = _IMAGE_REGISTRY.subn(lambda match: match.group(1) + registry, values, 1)
    if count != 1:
        raise UserError("deploy/helm/ssebench/values.yaml has no image.registry to set")
    return changed


def _helm() -> Any:
    try:
        import helm_python
    except ImportError:
        raise UserError(HELM_MISSING) from None
    return helm_python


def _push_chart(chart: Path, registry: str, version: str, plain_http: bool) -> str:
    helm = _helm()
    with scratch_folder("chart") as folder:
        copy = folder / CHART_NAME
        shutil.copytree(chart, copy)
        values = copy / "values.yaml"
        values.write_text(with_registry(values.read_text(encoding="utf-8"), registry), "utf-8")
        try:
            archive = helm.package(copy, destination=folder, version=version, app_version=version)
            helm.push(archive, f"oci://{registry}/charts", plain_http=plain_http)
        except helm.HelmError as error:
            reason = str(error).strip().splitlines()[-1] if str(error).strip() else "failed"
            raise UserError(f"Cannot push the chart to oci://{registry}/charts: {reason}") from None
    return f"oci://{registry}/charts/{CHART_NAME}"


def _push_images(registry: str, images_from: str, version: str) -> tuple[str, ...]:
    pairs = [
        (
            service_image(name, registry=images_from, tag=version),
            service_image(name, registry=registry, tag=version),
        )
        for name in SERVICES
    ]
    missing = [local for local, _ in pairs if run_docker(["image", "inspect", local]).returncode]
    if missing:
        raise UserError(
            f"{', '.join(missing)} not in the local Docker store: build them with `ssebench "
            f"images build-services --registry {images_from} --tag {version}` first"
        )
    docker = docker_image_builder()
    publications = [publish.Publication(local, name) for local, name in pairs]
    publish.deliver(publications, "push", tag=docker.tag, push=docker.push)
    return tuple(name for _, name in pairs)


def publish_chart(
    registry: str, *, images_from: str | None = "ssebench", plain_http: bool = False
) -> ChartRelease:
    """Push the service images (unless images_from is None), then the chart whose
    image.registry is registry. UserError naming what failed."""
    chart = chart_folder()
    version = _check_versions(chart)
    pushed = _push_images(registry, images_from, version) if images_from else ()
    reference = _push_chart(chart, registry, version, plain_http)
    return ChartRelease(chart=reference, version=version, images=pushed)
