"""Runs launched from the page: `ssebench run` as a child process, one per launch.

The command is an argument vector, never a shell string, and every value goes in as
`--option=value`, so a value cannot be read as another option. The child gets this
process's environment without the web UI's token. Its output goes to a file under
<results>/.webui/launches/, which the page shows until the run's container appears.

The tasks come from the catalog service of $SSEBENCH_CATALOG when it is set (in the
Helm chart), and a launch then runs `--catalog URL --prebuilt`, since a catalog has
the tasks' metadata and the prebuilt images carry their files; otherwise from the
dataset folder (--local, $SSEBENCH_DATASET or ./datasets/pilot), passed as --local.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ssebench.agents import Agent, discover_agents
from ssebench.errors import SsebenchError, UserError
from ssebench.results.directory import check_run_id, new_run_id
from ssebench.tasks.dataset import Dataset
from ssebench.tasks.sources import resolve_dataset
from ssebench.webui.settings import TOKEN_VARIABLE, WebSettings

MODEL_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$")
LAUNCH_DIR = Path(".webui") / "launches"
OUTPUT_LIMIT = 256 * 1024
# Variables of this process that a launched run must not inherit.
WITHHELD_VARIABLES = (TOKEN_VARIABLE,)


@dataclass
class Launch:
    run_id: str
    task: str
    agent: str
    model: str | None
    output: Path
    process: subprocess.Popen[bytes] = field(repr=False)

    @property
    def running(self) -> bool:
        return self.process.poll() is None


class Launcher:
    def __init__(self, settings: WebSettings, results: Path) -> None:
        self.settings = settings
        self.results = results
        self.launches: dict[str, Launch] = {}

    def dataset(self) -> Dataset:
        """The launcher's tasks. Raises UserError/TaskError when the source is unusable."""
        if self.settings.catalog:
            from ssebench.tasks.catalog import load_catalog

            return load_catalog(self.settings.catalog)
        return resolve_dataset(self.settings.dataset, None)

    def agents(self) -> dict[str, Agent]:
        """The agents a launch may name: the built-in ones, the settings' agent folders,
        $SSEBENCH_AGENTS_PATH's and the extensions' (ssebench.agents)."""
        return {agent.name: agent for agent in discover_agents(self.settings.agents_dirs)}

    def options(self) -> dict[str, Any]:
        """What the launch form offers: the dataset's tasks and the agents."""
        dataset = self.dataset()
        return {
            "dataset": dataset.name,
            "tasks": [
                {"id": task.id, "language": task.language, "description": task.description}
                for task in dataset.tasks
            ],
            "agents": [
                {
                    "name": agent.name,
                    "description": agent.description,
                    "needs_model": agent.needs_model,
                }
                for agent in self.agents().values()
            ],
        }

    def source_dir(self, task_id: str) -> str | None:
        """Where the task's tree is in its container, for the terminal to start in."""
        try:
            return self.dataset().task(task_id).source_dir
        except SsebenchError:
            return None

    def argv(self, *, run_id: str, task: str, agent: str, model: str | None) -> list[str]:
        """The `ssebench run` command of a launch; checks every value first."""
        check_run_id(run_id)
        dataset = self.dataset()
        dataset.task(task)  # raises TaskError naming the known tasks
        agents = self.agents()
        if agent not in agents:
            raise UserError(f"Unknown agent {agent!r}; the agents are: {', '.join(agents)}")
        if model is not None and not MODEL_PATTERN.match(model):
            raise UserError("A model name is letters, digits and . _ : / @ + - (200 at most)")
        if model is None and agents[agent].needs_model:
            raise UserError(f"The {agent} agent needs a model")
        argv = [
            sys.executable,
            "-m",
            "ssebench.cli.main",
            "run",
            "--keep-container",
            f"--run-id={run_id}",
            f"--backend={self.settings.backend}",
            *(
                [f"--catalog={self.settings.catalog}", "--prebuilt"]
                if self.settings.catalog
                else [f"--local={dataset.path.resolve()}"]
            ),
            f"--task={task}",
            f"--agent={agent}",
            *(f"--agents-dir={folder}" for folder in self.settings.agents_dirs),
            f"--results={self.results}",
        ]
        if model is not None:
            argv.append(f"--model={model}")
        return argv

    def launch(
        self, *, task: str, agent: str, model: str | None, run_id: str | None = None
    ) -> Launch:
        run_id = run_id or new_run_id()
        if run_id in self.launches:
            raise UserError(f"A run with the ID {run_id!r} was already launched")
        argv = self.argv(run_id=run_id, task=task, agent=agent, model=model)
        output = self.results / LAUNCH_DIR / f"{run_id}.log"
        output.parent.mkdir(parents=True, exist_ok=True)
        environment = {
            key: value for key, value in os.environ.items() if key not in WITHHELD_VARIABLES
        }
        with output.open("wb") as sink:
            try:
                process = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    env=environment,
                    # Its own session: a Ctrl-C at the web UI's terminal does not stop
                    # the runs it launched, which record themselves as usual.
                    start_new_session=True,
                )
            except OSError as error:
                raise UserError(f"Cannot start ssebench run: {error.strerror}") from None
        launch = Launch(run_id, task, agent, model, output, process)
        self.launches[run_id] = launch
        return launch

    def starting(self) -> list[str]:
        """Launches whose run is not recorded yet (their `ssebench run` still works)."""
        return [run_id for run_id, launch in self.launches.items() if launch.running]

    def output(self, run_id: str) -> str | None:
        launch = self.launches.get(run_id)
        if launch is None:
            return None
        try:
            with launch.output.open("rb") as handle:
                size = handle.seek(0, 2)
                handle.seek(max(0, size - OUTPUT_LIMIT))
                return handle.read().decode("utf-8", errors="replace")
        except OSError:
            return ""

    def interrupt(self, run_id: str) -> bool:
        """SIGTERM to a launch's runner, which stops the run and records it."""
        launch = self.launches.get(run_id)
        if launch is None or not launch.running:
            return False
        try:
            launch.process.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            return False
        return True

    def reap(self) -> None:
        """Collect the exit status of finished launches, so none stays a zombie."""
        for launch in self.launches.values():
            launch.process.poll()
