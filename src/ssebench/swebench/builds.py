"""What an instance's environment is built from: its own build (5.x rows), the official
prebuilt image, or the environment written from its install specification (classic
instances; environments.py), and the test command the hidden step runs."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ssebench.swebench.environments import (
    ENVIRONMENT,
    MIN_RUNTIME_PYTHON,
    PACKAGE_FOLDER,
    SETUP_FOLDER,
    EnvironmentUnavailable,
    dockerfile,
    import_root,
    included_files,
    plan_environment,
    setup_files,
    test_setup,
    test_setup_for,
)
from ssebench.swebench.instances import Instance, InstanceSkipped
from ssebench.swebench.markers import script_test_command
from ssebench.swebench.python_images import PythonImageSource
from ssebench.swebench.repositories import commit_date, export_tree, show
from ssebench.swebench.specs import Spec, find_spec

# Where the project lives in the container: where the official images keep it.
SOURCE_DIR = "/testbed"

# Appended to a 5.x instance's own Dockerfile: the case layer is built on it as root
# and makes the source folder's single base commit itself, so a clone's history (which
# holds the fix) must not stay in the image.
OWN_DOCKERFILE_FOOTER = f"""
# Added by `ssebench dataset import swebench`: the case layer, built on this image as
# root, makes {SOURCE_DIR} one base commit; the history of a clone must not stay.
USER root
RUN rm -rf {SOURCE_DIR}/.git
"""


@dataclass(frozen=True)
class Build:
    """How an instance's environment is built and its tests are run."""

    dockerfile: str
    test_command: str
    log_parser: str
    eval_type: str
    # Run before the tests' start marker (the official eval_commands, PYTHONPATH).
    test_setup: str = ""
    # Further files of the environment's build context, by relative path.
    context_files: dict[str, str] = field(default_factory=dict)
    # What the environment was made of, for swebench.json (official-form specs).
    environment: dict[str, object] | None = None


@dataclass(frozen=True)
class EnvironmentOptions:
    """How the environments of official-form specs are made (docs/datasets.md)."""

    # Where each spec's Python X.Y image comes from (--python-images; asked once a version).
    python_images: PythonImageSource = field(default_factory=PythonImageSource)
    resolve_by_date: bool = True
    # Python versions the user lets another stand in for: {"3.8": "3.9"}.
    python_substitutes: dict[str, str] = field(default_factory=dict)
    # REGISTRY/NAMESPACE of the official prebuilt images, which then are the
    # environments (official_image_dockerfile); None builds them here.
    official_images: str | None = None
    official_tag: str = "latest"


def build_for(
    instance: Instance,
    specs: list[Spec],
    test_files: list[str],
    *,
    clone: Path,
    tree: Path,
    environment_dir: Path,
    options: EnvironmentOptions,
) -> Build:
    """The instance's own build (5.x) or its specification's; InstanceSkipped if neither."""
    if instance.has_own_build:
        assert instance.eval_script is not None
        if instance.log_parser is None:
            raise InstanceSkipped("it has an eval_script but no log_parser")
        command = script_test_command(instance.eval_script)
        if command is None:
            raise InstanceSkipped(
                "its eval_script has no test command between the "
                "': '>>>>> Start Test Output'' and ': '>>>>> End Test Output'' markers"
            )
        if instance.dockerfile is not None:
            own = instance.dockerfile.rstrip("\n")
        else:
            # A row that names its environment's image and no dockerfile: that image as
            # written, pulled by the build like any FROM.
            own = f"# The instance's image (its row has no dockerfile).\nFROM {instance.image}"
        return Build(
            own + "\n" + OWN_DOCKERFILE_FOOTER,
            command,
            instance.log_parser,
            instance.eval_type,
        )
    spec = find_spec(specs, instance.repo, instance.version)
    if spec is None:
        hint = "add one to --specs FILE" if specs else "pass --specs FILE with one"
        raise InstanceSkipped(
            f"it has no dockerfile/eval_script of its own and there is no install "
            f"specification for {instance.repo} version {instance.version}; {hint}"
        )
    if spec.official_form:
        return official_build(
            instance,
            spec,
            test_files,
            clone=clone,
            tree=tree,
            environment_dir=environment_dir,
            options=options,
        )
    assert spec.test_cmd is not None and spec.log_parser is not None
    command = f"{spec.test_cmd} {' '.join(shlex.quote(path) for path in test_files)}"
    return Build(spec.dockerfile(), command, instance.log_parser or spec.log_parser, spec.eval_type)


# The official harness leaves files of these kinds out of the test command
# (NON_TEST_EXTS of swebench.harness.constants).
NON_TEST_SUFFIXES = (
    ".json",
    ".png",
    "csv",
    ".txt",
    ".md",
    ".jpg",
    ".jpeg",
    ".pkl",
    ".yml",
    ".yaml",
    ".toml",
)


def official_build(
    instance: Instance,
    spec: Spec,
    test_files: list[str],
    *,
    clone: Path,
    tree: Path,
    environment_dir: Path,
    options: EnvironmentOptions,
) -> Build:
    """The build of an official-form spec (environments.py): the repository at
    environment_setup_commit goes into the environment's context."""
    if spec.test_cmd is None:
        raise InstanceSkipped(f"its specification ({spec.origin}) has no test_cmd")
    if spec.log_parser is None and instance.log_parser is None:
        raise InstanceSkipped(f"its specification ({spec.origin}) names no log_parser")
    assert spec.python is not None
    if options.official_images is not None:
        return official_image_build(instance, spec, test_files, tree=tree, options=options)
    specified_python = spec.python
    substitute = options.python_substitutes.get(specified_python)
    if substitute is not None:
        spec = replace(spec, python=substitute)
    setup_commit = instance.environment_setup_commit or instance.base_commit
    requirements = read_requirements(clone, setup_commit, spec.requirements_paths)
    environment_yml = next(
        (
            text
            for text in (show(clone, setup_commit, path) for path in spec.environment_yml_paths)
            if text is not None
        ),
        None,
    )
    try:
        plan = plan_environment(
            spec,
            instance,
            image=options.python_images.image(substitute or specified_python),
            resolve_by_date=options.resolve_by_date,
            requirements_text=requirements,
            tree=tree,
            setup_commit_date=commit_date(clone, setup_commit),
            environment_yml_text=environment_yml,
        )
    except EnvironmentUnavailable as reason:
        raise InstanceSkipped(str(reason)) from None
    if substitute is not None:
        plan = replace(
            plan,
            deviations=(
                *plan.deviations,
                f"Python {substitute} in place of the specification's {specified_python}",
            ),
        )
    export_tree(clone, setup_commit, environment_dir / PACKAGE_FOLDER)
    directives = [path for path in test_files if not path.endswith(NON_TEST_SUFFIXES)]
    if instance.repo == "django/django":
        directives = [django_directive(path) for path in directives]
    command = f"{spec.test_cmd} {' '.join(shlex.quote(path) for path in directives)}"
    context = {f"{SETUP_FOLDER}/{name}": text for name, text in setup_files(plan).items()}
    return Build(
        dockerfile(plan, package_version=instance.version),
        command,
        instance.log_parser or spec.log_parser or "",
        spec.eval_type,
        test_setup=test_setup(plan, spec.eval_commands),
        context_files=context,
        environment={**plan.record(), "environment_setup_commit": setup_commit},
    )


def official_image(instance_id: str, namespace: str, tag: str) -> str:
    """The official harness's name of an instance's prebuilt image: `__` in the ID is
    written `_1776_`, and the name is lower case."""
    name = instance_id.replace("__", "_1776_").lower()
    return f"{namespace.rstrip('/')}/sweb.eval.x86_64.{name}:{tag}"


def official_image_build(
    instance: Instance,
    spec: Spec,
    test_files: list[str],
    *,
    tree: Path,
    options: EnvironmentOptions,
) -> Build:
    """The build of an official-form spec on the instance's official prebuilt image:
    the repository at /testbed and its environment `testbed`, as the published results
    used them. Only the test command is the spec's; nothing is installed."""
    assert spec.python is not None and options.official_images is not None
    if tuple(int(part) for part in spec.python.split(".")[:2]) < MIN_RUNTIME_PYTHON:
        raise InstanceSkipped(
            f"its official image's testbed environment has Python {spec.python}, first on "
            "PATH, and ssebench's runtime needs 3.9 or later there; build the environment "
            "here instead (without --official-images), with --python-substitute"
        )
    image = official_image(instance.instance_id, options.official_images, options.official_tag)
    directives = [path for path in test_files if not path.endswith(NON_TEST_SUFFIXES)]
    if instance.repo == "django/django":
        directives = [django_directive(path) for path in directives]
    command = f"{spec.test_cmd} {' '.join(shlex.quote(path) for path in directives)}"
    root = import_root(tree)
    plan_record = {
        "python": spec.python,
        "image": image,
        "official_image": True,
        "resolved_as_of": None,
        "spec": f"{spec.origin} ({spec.repo} {', '.join(spec.versions)})",
        "import_root": root,
        "deviations": [],
    }
    return Build(
        official_image_dockerfile(image),
        command,
        instance.log_parser or spec.log_parser or "",
        spec.eval_type,
        test_setup=test_setup_for(root, spec.eval_commands),
        environment=plan_record,
    )


def official_image_dockerfile(image: str) -> str:
    return (
        "# Written by `ssebench dataset import swebench --official-images`: the instance's\n"
        "# official prebuilt image, its environment `testbed` first on PATH (what the\n"
        "# harness's `conda activate testbed` does for the tests).\n"
        f"FROM {image}\n"
        f"ENV PATH={ENVIRONMENT}/bin:$PATH\n"
    )


def django_directive(path: str) -> str:
    """A Django test file as its runner names it: tests/a/b.py -> a.b."""
    path = path.removesuffix(".py")
    path = path.removeprefix("tests/")
    return path.replace("/", ".")


def read_requirements(clone: Path, commit: str, paths: Sequence[str]) -> str | None:
    """The first of paths in the clone at commit, with the files it includes (`-r`)
    first, as the harness reads them; None when none of paths is there."""
    for path in paths:
        text = show(clone, commit, path)
        if text is None:
            continue
        folder = path.rsplit("/", 1)[0] if "/" in path else ""
        included = []
        for name in included_files(text):
            extra = show(clone, commit, f"{folder}/{name}" if folder else name)
            if extra is not None:
                included.append(extra)
        return "\n".join([*included, text])
    return None
