"""`ssebench images`: publish the prebuilt images of tasks and agents, build the
images of the Helm chart's services, and publish the chart with them (docs/helm.md)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from ssebench.cli.output import print_json
from ssebench.cli.run import add_agents_dir_option, add_dataset_options
from ssebench.errors import UserError

if TYPE_CHECKING:
    from ssebench.image_layers import ImageBuilder

BACKEND_HELP = (
    "the backend whose image builder builds them: docker (default), podman, or an "
    "extension's (not read from $SSEBENCH_BACKEND: a run's backend need not build)"
)


def add_image_backend_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", default="docker", help=BACKEND_HELP)


def image_builder(backend_name: str) -> ImageBuilder:
    """The ImageBuilder of the backend so named. Raises UserError for a backend that
    does not build images."""
    from ssebench.backends import load_backend

    builder = load_backend(backend_name).image_builder()
    if builder is None:
        raise UserError(
            f"The backend {backend_name!r} does not build images; build with one that "
            "does (--backend docker or --backend podman)"
        )
    return builder


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "images", help="publish prebuilt images; build service images; publish the chart"
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True

    publish = actions.add_parser(
        "publish",
        help="build the images of tasks x agents and push or load them",
        description="Build the layers of every task and agent and give the images the "
        "names `ssebench run --prebuilt` uses: <registry>/agent-<agent>/<task>:<version> "
        "(sandbox), <registry>/agent-<agent>/sidecar:<version> and "
        "<registry>/tool-sidecar/<task>:<version> (sidecar). The backend's image builder "
        "(--backend) builds, names and pushes them, in its own image store.",
    )
    publish.add_argument("--registry", required=True, help="e.g. registry.example.com/ssebench")
    publish.add_argument("--tasks", nargs="+", required=True, metavar="TASK", help="IDs, or all")
    publish.add_argument("--agents", nargs="+", required=True, metavar="AGENT")
    add_agents_dir_option(publish)
    add_dataset_options(publish)
    publish.add_argument(
        "--mode",
        action="append",
        choices=("sandbox", "sidecar"),
        help="the run modes to publish for (repeatable; default both)",
    )
    add_image_backend_option(publish)
    publish.add_argument(
        "--load",
        choices=("local", "docker", "kind"),
        help="instead of pushing: keep them in the backend's local image store (local; "
        "docker is its older name), or load them from Docker's into kind",
    )
    publish.add_argument("--kind-cluster", default="kind", help="the kind cluster (default kind)")
    publish.add_argument("--platform", help="linux/<arch>")
    publish.add_argument("--build", action="store_true", help="rebuild the layers even when cached")
    publish.add_argument("--dry-run", action="store_true", help="print the names, build nothing")
    publish.add_argument("--json", action="store_true")
    publish.set_defaults(handler=publish_command)

    services = actions.add_parser(
        "build-services",
        help="build the litellm, catalog, webui and postgres images of the Helm chart",
        description="Build <registry>/litellm, <registry>/catalog, <registry>/webui and "
        "<registry>/postgres with the given tag (default: this ssebench's version), from "
        "this checkout. litellm is the local stack's proxy image (built first when "
        "missing) with the configuration generated from models/.",
    )
    services.add_argument("--registry", default="ssebench", help="default ssebench")
    services.add_argument("--tag", help="default: the version of ssebench")
    services.add_argument(
        "--only",
        action="append",
        choices=("litellm", "catalog", "webui", "postgres"),
        help="repeatable",
    )
    services.add_argument(
        "--no-database",
        action="store_true",
        help="litellm without LiteLLM's database layer (its Prisma client), for a release "
        "with litellm.database=false: where Prisma's tools cannot be downloaded",
    )
    services.add_argument("--push", action="store_true", help="push them after the build")
    services.add_argument("--json", action="store_true")
    services.set_defaults(handler=build_services_command)

    chart = actions.add_parser(
        "publish-chart",
        help="push the Helm chart (oci://R/charts/ssebench) and its service images to R",
        description="Package deploy/helm/ssebench with image.registry set to R and push it "
        "to oci://R/charts/ssebench under this ssebench's version, and push the service "
        "images R/litellm, R/catalog, R/webui and R/postgres with that tag, made before "
        "by `ssebench images build-services` (their local names: --images-from). Then "
        "`helm install NAME oci://R/charts/ssebench --version <version>` installs it.",
    )
    chart.add_argument(
        "--registry",
        help="host[:port]/path of the release; default $SSEBENCH_RELEASE_REGISTRY",
    )
    chart.add_argument(
        "--images-from",
        default="ssebench",
        metavar="REGISTRY",
        help="the registry part of the local service images (build-services' --registry; "
        "default ssebench)",
    )
    chart.add_argument("--no-images", action="store_true", help="push the chart only")
    chart.add_argument(
        "--plain-http", action="store_true", help="the registry speaks HTTP, not HTTPS"
    )
    chart.add_argument("--json", action="store_true")
    chart.set_defaults(handler=publish_chart_command)

    pull = actions.add_parser(
        "pull",
        help="pull the images a dataset's environments start from, ahead of an evaluation",
        description="Pull the images that the tasks' environment/Dockerfile start FROM (an "
        "imported SWE-bench dataset's official prebuilt images, say) that this machine "
        "lacks, one after the other, each tried again with back-off while the registry "
        "refuses it for its rate limit. Exit 1 when one could not be pulled.",
    )
    add_dataset_options(pull)
    pull.add_argument("--tasks", nargs="+", metavar="TASK", help="task IDs (default: all)")
    pull.add_argument("--platform", help="linux/<arch>")
    pull.set_defaults(handler=pull_command)


def publish_command(arguments: argparse.Namespace) -> int:
    from ssebench import image_layers
    from ssebench.agents import load_agent
    from ssebench.images import publish
    from ssebench.tasks.sources import resolve_dataset

    if arguments.catalog:
        raise UserError("images publish builds the tasks' images: it needs --local, not --catalog")
    if arguments.platform and not arguments.platform.startswith("linux/"):
        raise UserError("--platform must look like linux/<arch>, e.g. linux/amd64")
    builder = image_builder(arguments.backend)
    if arguments.load == "kind" and builder.store != "Docker":
        raise UserError(
            f"--load kind loads images from Docker's store, not from {builder.store}'s: "
            "publish with --backend docker, or push them (no --load) for the cluster to pull"
        )
    dataset = resolve_dataset(arguments.local, None)
    tasks = (
        list(dataset.tasks)
        if arguments.tasks == ["all"]
        else [dataset.task(task_id) for task_id in arguments.tasks]
    )
    agents = [load_agent(name, arguments.agents_dir) for name in dict.fromkeys(arguments.agents)]
    requests = publish.plan(
        tasks,
        agents,
        registry=arguments.registry,
        modes=tuple(dict.fromkeys(arguments.mode or publish.MODES)),
        platform=arguments.platform,
        rebuild=arguments.build,
    )
    if arguments.dry_run:
        names = publish.published_names(requests)
    else:
        publications = publish.build_all(
            requests,
            lambda request: image_layers.build_images(
                request, build=builder.build, image_labels=builder.image_labels
            ),
        )
        publish.deliver(
            publications,
            arguments.load or "push",
            tag=builder.tag,
            push=builder.push,
            kind_cluster=arguments.kind_cluster,
        )
        names = [item.name for item in publications]
    if arguments.json:
        print_json(
            {"target": arguments.load or "push", "dry_run": arguments.dry_run, "images": names}
        )
    else:
        for name in names:
            print(name)
    return 0


def build_services_command(arguments: argparse.Namespace) -> int:
    from ssebench.release.services import SERVICES, build_service

    built = [
        build_service(
            name,
            registry=arguments.registry,
            tag=arguments.tag,
            push=arguments.push,
            database=not arguments.no_database,
        )
        for name in (arguments.only or SERVICES)
    ]
    if arguments.json:
        print_json({"images": built})
    else:
        print("\n".join(built), file=sys.stdout)
    return 0


def publish_chart_command(arguments: argparse.Namespace) -> int:
    import os

    from ssebench.release.chart import publish_chart, release_registry

    registry = release_registry(arguments.registry, dict(os.environ))
    release = publish_chart(
        registry,
        images_from=None if arguments.no_images else arguments.images_from,
        plain_http=arguments.plain_http,
    )
    if arguments.json:
        print_json(
            {"chart": release.chart, "version": release.version, "images": list(release.images)}
        )
    else:
        print(f"{release.chart} {release.version}")
        for name in release.images:
            print(name)
    return 0


def pull_command(arguments: argparse.Namespace) -> int:
    from ssebench.images.output import BuildOutput
    from ssebench.images.pulls import base_images, image_exists, pull_with_back_off
    from ssebench.tasks.sources import resolve_dataset

    if arguments.catalog:
        raise UserError("images pull reads the tasks' files: pass --local DIR, not --catalog")
    dataset = resolve_dataset(arguments.local, None)
    wanted = set(arguments.tasks or ())
    unknown = sorted(wanted - {task.id for task in dataset.tasks})
    if unknown:
        raise UserError(f"No task {unknown[0]!r} in the dataset {dataset.path}")
    images: list[str] = []
    for task in dataset.tasks:
        folder = task.environment_dir
        if (wanted and task.id not in wanted) or folder is None:
            continue
        dockerfile = (folder / "Dockerfile").read_text(encoding="utf-8", errors="replace")
        images.extend(base_images(dockerfile))
    images = list(dict.fromkeys(images))
    output = BuildOutput()
    failed = []
    for number, image in enumerate(images, start=1):
        if image_exists(image):
            output.say(f"[{number}/{len(images)}] {image}: on this machine already")
            continue
        output.say(f"[{number}/{len(images)}] pulling {image}")
        reason = pull_with_back_off(image, platform=arguments.platform, output=output)
        if reason is not None:
            failed.append(image)
            output.say(f"[{number}/{len(images)}] {image}: not pulled: {reason}")
    print(f"{len(images) - len(failed)} of {len(images)} images on this machine")
    return 1 if failed else 0
