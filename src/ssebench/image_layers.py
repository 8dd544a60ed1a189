"""The image layers of a run, as data, for every backend that builds images (public API).

A backend with builds_images = True does not need to know how ssebench lays out a task,
the runtime or an agent in an image. For an ImageRequest, layers_of(request) gives every
image build the run needs, bottom first, each as an ImageLayer: the image's name, its
Dockerfile, build args, labels and cache key, and write_context(folder), which lays
its build context out in an empty folder. build_images(request, build=, image_labels=)
does the whole job with two callables of the backend's own:

    build(layer, context)      build layer.image from the folder context with
                               layer.dockerfile, layer.build_args, layer.labels and
                               layer.platform (`docker build`, `podman build`, a
                               remote builder...); raise ImageUnavailableError on failure
    image_labels(image)        the labels of that image in the backend's image store,
                               or None when it has none

An image whose CACHE_KEY_LABEL equals the layer's cache_key is current and is not built
again; the key covers everything that goes into the image, its parent's key included,
so a changed task, runtime or agent folder gives a new key. The Docker backend builds
its images through exactly this API (docs/writing-a-backend.md, "Image layers").

run_build(argv, layer, ...) runs a build command the docker way (its log streamed,
prefixed with the layer's kind; one clear error with the log's last lines when it
fails), for a build callable that runs a CLI. A backend's image_builder() returns an
ImageBuilder (its build and image_labels callables, and how to tag and push an image):
with it, `ssebench images publish` and `ssebench build-case` work on that backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ssebench.extensions import (
    BuildContext,
    ImageBuilder,
    ImageLabels,
    ImageLayer,
    ImageRequest,
    Images,
)
from ssebench.host.scratch import scratch_folder
from ssebench.images import layers as layer_definitions
from ssebench.images.builds import build_missing, labels_from_json, run_build
from ssebench.images.output import BuildOutput
from ssebench.images.pulls import pull_missing_bases, pull_with_back_off
from ssebench.tasks.model import Task

__all__ = [
    "CACHE_KEY_LABEL",
    "BuildContext",
    "BuildOutput",
    "ImageBuilder",
    "ImageLabels",
    "ImageLayer",
    "LayerPlan",
    "build_case_images",
    "build_images",
    "labels_from_json",
    "layers_of",
    "pull_missing_bases",
    "pull_with_back_off",
    "run_build",
]

# The label that carries an image's cache key.
CACHE_KEY_LABEL = layer_definitions.DIGEST_LABEL


def _image_layer(layer: layer_definitions.Layer) -> ImageLayer:
    """The public view of one of the plan's layers."""
    return ImageLayer(
        kind=layer.kind,
        image=layer.image,
        dockerfile=layer.dockerfile,
        build_args=dict(layer.build_args),
        labels={CACHE_KEY_LABEL: layer.digest},
        cache_key=layer.digest,
        platform=layer.platform,
        layer=layer,
    )


@dataclass(frozen=True)
class LayerPlan:
    """What to build for a request. stacks: each image stack bottom first, with the
    images a layer copies from (agent-install) just before it; the last layer of a
    stack covers all below it, so a stack whose top is current needs no other build.
    images: the names the run uses once the stacks are built."""

    stacks: tuple[tuple[ImageLayer, ...], ...]
    images: Images

    @property
    def builds(self) -> list[ImageLayer]:
        """Every layer in build order, each once."""
        ordered: dict[str, ImageLayer] = {}
        for stack in self.stacks:
            for layer in stack:
                ordered.setdefault(layer.image, layer)
        return list(ordered.values())


def _stack(layers: Sequence[layer_definitions.Layer]) -> tuple[ImageLayer, ...]:
    return tuple(_image_layer(layer) for layer in layer_definitions.with_inputs(layers))


def layers_of(request: ImageRequest) -> LayerPlan:
    """The layers a run of request builds (sandbox: case, tool, agent; sidecar: case,
    tool for the environment and agent runtime, agent for the agent container).

    Raises UserError when the request lacks the task's or the agent's folder, or a
    name cannot be part of an image name.
    """
    if request.mode == "sidecar":
        environment, agent = layer_definitions.sidecar_layers(request)
        return LayerPlan(
            stacks=(_stack(environment), _stack(agent)),
            images=Images(run=agent[-1].image, environment=environment[-1].image),
        )
    layers = layer_definitions.run_layers(request)
    return LayerPlan(stacks=(_stack(layers),), images=Images(run=layers[-1].image))


def is_current(layer: ImageLayer, image_labels: ImageLabels) -> bool:
    """True when the image exists and was built from exactly what layer describes."""
    found = image_labels(layer.image)
    return found is not None and found.get(CACHE_KEY_LABEL) == layer.cache_key


def build_stack(
    stack: Sequence[ImageLayer], build: BuildContext, image_labels: ImageLabels, *, rebuild: bool
) -> None:
    """Build the layers of stack that are not current (all of them with rebuild), each
    in a scratch folder of its own that is removed afterwards."""

    def build_in_scratch(layer: ImageLayer) -> None:
        with scratch_folder(layer.kind) as context:
            layer.write_context(context)
            build(layer, context)

    build_missing(
        stack,
        rebuild=rebuild,
        is_current=lambda layer: is_current(layer, image_labels),
        build=build_in_scratch,
    )


def build_images(
    request: ImageRequest, *, build: BuildContext, image_labels: ImageLabels
) -> Images:
    """Build what request needs that is not current (everything with request.rebuild)
    and return the run's image names. For prepare_images without request.prebuilt.

    Raises UserError (ImageUnavailableError from build) when a layer cannot be built.
    """
    plan = layers_of(request)
    for stack in plan.stacks:
        build_stack(stack, build, image_labels, rebuild=request.rebuild)
    return plan.images


def build_case_images(
    tasks: Sequence[Task], builder: ImageBuilder, *, platform: str | None, rebuild: bool
) -> list[str]:
    """Build (or find current) the case image of every task, with its environment
    image when it has one; return the case images' names in order."""
    names = []
    for task in tasks:
        stack = _stack([layer_definitions.case_layer(task, platform=platform)])
        build_stack(stack, builder.build, builder.image_labels, rebuild=rebuild)
        names.append(stack[-1].image)
    return names
