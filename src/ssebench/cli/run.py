"""`ssebench run`: one task, one agent, one model, on one backend."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ssebench.agents import load_agent
from ssebench.backends import load_backend, selected_backend_name
from ssebench.errors import UserError
from ssebench.extensions import Egress
from ssebench.host.output import write_or_drop
from ssebench.results.directory import check_run_id, make_results_root, new_run_id
from ssebench.runner import Runner, RunSettings, task_timeout
from ssebench.stopping import RunAbandoned, StopRequest, stop_on_signals
from ssebench.tasks.sources import resolve_dataset

if TYPE_CHECKING:
    from ssebench.proxy import ModelAccessPlan, ModelSession

PREBUILT_VARIABLE = "SSEBENCH_PREBUILT"
EGRESS_VARIABLE = "SSEBENCH_EGRESS"
REGISTRY_VARIABLE = "SSEBENCH_REGISTRY"
DEFAULT_REGISTRY = "ssebench"


def add_dataset_options(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--local",
        metavar="DIR",
        help="a dataset folder (default: $SSEBENCH_DATASET or ./datasets/pilot)",
    )
    source.add_argument("--catalog", metavar="URL", help="a task catalog service")


def add_agents_dir_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--agents-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder of agent folders, or one agent folder (repeatable; also "
        "$SSEBENCH_AGENTS_PATH); see `ssebench agents list`",
    )


def add_agent_options(parser: argparse.ArgumentParser, *, whose: str) -> None:
    """--agent, --agents-dir, --model and --budget; whose budget: "the run's" or
    "each run's"."""
    parser.add_argument("--agent", required=True, help="the agent (reference, dummy, ...)")
    add_agents_dir_option(parser)
    parser.add_argument("--model", help="the model; optional for agents that need none")
    parser.add_argument(
        "--budget",
        type=float,
        metavar="USD",
        help=f"the most {whose} model key may spend, in USD (default 10)",
    )


def add_backend_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend", help="docker (default), kubernetes, or an extension; also $SSEBENCH_BACKEND"
    )
    parser.add_argument(
        "--prebuilt",
        action="store_true",
        help="use published images, build nothing (also SSEBENCH_PREBUILT=1)",
    )


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "run",
        help="run one agent on one task and grade it",
        description="Run one agent on one task in a container, grade the patch it leaves, "
        "and record the run under --results.",
    )
    parser.add_argument("--task", required=True, help="the task ID")
    add_agent_options(parser, whose="the run's")
    add_dataset_options(parser)
    add_backend_options(parser)
    parser.add_argument(
        "--build", action="store_true", help="rebuild the image layers even when cached"
    )
    parser.add_argument(
        "--tool-layer",
        metavar="NAME",
        help="NOT AVAILABLE YET, refused: another tool layer from an extension; ssebench "
        "builds its own only (docs/image-layers.md, 'Other tool layers and plugins')",
    )
    parser.add_argument(
        "--plugin",
        action="append",
        metavar="NAME",
        help="NOT AVAILABLE YET, refused: a plugin that adds files to the tool layer; "
        "plugins.yaml is not read either (docs/image-layers.md)",
    )
    parser.add_argument("--mode", choices=("sandbox", "sidecar"), default="sandbox")
    parser.add_argument("--run-id", help="the run's ID (default: YYYYMMDD-HHMMSS-<hex>)")
    parser.add_argument(
        "--timeout",
        type=int,
        help="seconds the agent may run (default: the task's own, as an imported Harbor "
        "task has, else 3600)",
    )
    add_step_timeout(parser)
    parser.add_argument(
        "--difficulty",
        type=int,
        choices=(1, 2, 3),
        default=2,
        help="which daemon tools the agent gets: 1 build+tests, 2 build, 3 none",
    )
    parser.add_argument(
        "--egress",
        choices=("restricted", "open"),
        help="restricted (default): the proxy only; open: internet too (also $SSEBENCH_EGRESS)",
    )
    parser.add_argument(
        "--keep-container",
        action="store_true",
        help="leave containers and volumes when the run ends (on kubernetes the task "
        "container also keeps running after grading, as with --keep-alive)",
    )
    parser.add_argument(
        "--keep-alive",
        action="store_true",
        help="after grading, the container waits to be stopped "
        "(ssebench runs stop) so it can be inspected",
    )
    parser.add_argument("--platform", help="linux/<arch> of the images and containers")
    parser.add_argument("--require-pass", action="store_true", help="exit 1 unless the run passed")
    parser.add_argument(
        "--results",
        default="results",
        metavar="DIR",
        help="where run directories go (default ./results)",
    )
    parser.set_defaults(handler=run_command)


def _refuse_tool_layer_options(arguments: argparse.Namespace, prebuilt: bool) -> None:
    """--tool-layer and --plugin are named by the contract, and not implemented yet:
    refused in one line each, never silently ignored."""
    given = [
        option
        for option, value in (
            ("--tool-layer", arguments.tool_layer),
            ("--plugin", arguments.plugin),
        )
        if value
    ]
    if not given:
        return
    if prebuilt:
        raise UserError(
            f"--prebuilt excludes {' and '.join(given)}: prebuilt images carry the tool "
            "layer and plugins they were built with"
        )
    raise UserError(
        f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} not available yet: "
        "ssebench builds its own tool layer only, with no plugins (docs/image-layers.md, "
        "'Other tool layers and plugins')"
    )


def settings_from_arguments(
    arguments: argparse.Namespace, backend_name: str, builds: bool
) -> RunSettings:
    """The run settings of `ssebench run`'s options (eval and the batch commands make
    theirs with it too). UserError for an option that cannot be."""
    prebuilt = arguments.prebuilt or os.environ.get(PREBUILT_VARIABLE, "") in ("1", "true")
    if prebuilt and arguments.build:
        raise UserError("--prebuilt excludes --build: prebuilt images are used as published")
    _refuse_tool_layer_options(arguments, prebuilt)
    if not prebuilt and not builds:
        raise UserError(
            f"The {backend_name} backend cannot build images; pass --prebuilt to use images "
            f"published under ${REGISTRY_VARIABLE}"
        )
    egress_name = arguments.egress or os.environ.get(EGRESS_VARIABLE) or "restricted"
    if egress_name not in ("restricted", "open"):
        raise UserError(f"${EGRESS_VARIABLE} must be restricted or open, not {egress_name!r}")
    egress: Egress = "open" if egress_name == "open" else "restricted"
    if arguments.timeout is not None and arguments.timeout <= 0:
        raise UserError("--timeout must be a positive number of seconds")
    step_timeout = getattr(arguments, "step_timeout", None)
    if step_timeout is not None and step_timeout <= 0:
        raise UserError("--step-timeout must be a positive number of seconds")
    if arguments.platform and not arguments.platform.startswith("linux/"):
        raise UserError("--platform must look like linux/<arch>, e.g. linux/amd64")
    run_id = check_run_id(arguments.run_id) if arguments.run_id else new_run_id()
    agent = load_agent(arguments.agent, arguments.agents_dir)
    if agent.needs_model and not arguments.model:
        raise UserError(f"The {agent.name} agent needs a model: pass --model NAME")
    if arguments.budget is not None and not arguments.model:
        raise UserError("--budget limits the run's model key: it needs --model")
    if arguments.catalog and not prebuilt:
        raise UserError("--catalog needs --prebuilt: a catalog has the tasks' metadata, not files")
    task = resolve_dataset(arguments.local, arguments.catalog).task(arguments.task)
    return RunSettings(
        task=task,
        agent=agent,
        model=arguments.model,
        run_id=run_id,
        results_root=Path(arguments.results).resolve(),
        backend=backend_name,
        mode=arguments.mode,
        timeout=task_timeout(task) if arguments.timeout is None else arguments.timeout,
        timeout_from_task=arguments.timeout is None,
        step_timeout=step_timeout,
        difficulty=arguments.difficulty,
        egress=egress,
        keep=arguments.keep_container,
        keep_alive=arguments.keep_alive,
        platform=arguments.platform,
        prebuilt=prebuilt,
        rebuild=arguments.build,
        registry=os.environ.get(REGISTRY_VARIABLE) or DEFAULT_REGISTRY,
    )


def add_step_timeout(parser: argparse.ArgumentParser) -> None:
    """--step-timeout, shared by run, eval and dataset check."""
    parser.add_argument(
        "--step-timeout",
        type=int,
        metavar="SECONDS",
        help="seconds each grading step (build, tests, hidden tests) may run "
        "(default: the container's, 900)",
    )


def run_command(arguments: argparse.Namespace) -> int:
    backend_name = selected_backend_name(arguments.backend)
    backend = load_backend(backend_name)
    settings = settings_from_arguments(arguments, backend_name, backend.builds_images)
    make_results_root(settings.results_root)
    # A reference run applies the task's patch: it makes no key and starts no proxy.
    plan: ModelAccessPlan | None = None
    if settings.model and not settings.agent.is_reference:
        # Here: a run without a model starts without the key client and the stack's code.
        from ssebench.proxy import plan_model_access

        plan = plan_model_access(settings.model, arguments.budget, backend.proxy())
    runner = Runner(backend)
    runner.say(f"preparing images for {settings.task.id} / {settings.agent.name}")
    images = runner.prepare(settings)
    session: ModelSession | None = None
    stop = StopRequest()
    try:
        if plan is not None:
            session = plan.open(settings.run_id, runner.say)
            settings = dataclasses.replace(settings, model_env=session.env())
        with stop_on_signals(stop, sys.stderr):
            outcome = runner.run(settings, images, stop, model_session=session)
    except RunAbandoned as abandoned:  # before the run had a directory to record in
        if session is not None:
            session.finish(runner.say)  # its key is revoked all the same
        sys.stderr.flush()
        os._exit(128 + abandoned.signum)
    finally:
        if session is not None:
            session.finish(runner.say)  # a no-op when the runner has finished it
    # The verdict's line may find its reader gone; the exit status below still holds it.
    write_or_drop(sys.stdout, f"{outcome.status}\t{outcome.run_dir}\n")
    if stop.exit_status is not None:
        # A second signal: recorded, and the process ends now. Not through the
        # interpreter's shutdown, which the backend's threads (a Kubernetes run's
        # output, still copied to stdout) can abort.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(stop.exit_status)
    if arguments.require_pass and outcome.status != "passed":
        return 1
    return 0
