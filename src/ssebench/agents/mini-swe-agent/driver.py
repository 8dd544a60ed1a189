"""Drives mini-swe-agent through its Python API; run by `run` with the install's Python.

    install/bin/python3 driver.py < settings.json

stdin: {"task", "model", "api_base", "step_limit", "seconds", "tools_dir"}; the key is
in the environment (OPENAI_API_KEY), never in argv or a file. The agent is mini-swe-
agent's own DefaultAgent with its default configuration (config/mini.yaml: the bash
tool through tool calls, `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` to stop),
config.yaml's settings over it, a LitellmModel pointed at the proxy and a
LocalEnvironment in the current directory (the source tree).

stdout carries one JSON object per line and nothing else: the dialog events of the
trajectory as each message is added (an assistant message, its bash calls as tool
events, their results), a usage event, and last {"type": "end", "status", "reason",
"model_error"}. Anything mini-swe-agent or LiteLLM print goes to stderr, the agent log.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any

# The events' own stream, before anything can print to stdout: whatever mini-swe-agent
# (rich) and LiteLLM print goes to stderr instead.
EVENTS = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
os.dup2(2, 1)
sys.stdout = sys.stderr

# Read at import time by mini-swe-agent and LiteLLM. `run` sets them too; here they
# also hold for a driver started by hand.
for _name, _value in {
    "MSWEA_SILENT_STARTUP": "1",
    "MSWEA_COST_TRACKING": "ignore_errors",
    "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": "3",
    "LITELLM_TELEMETRY": "False",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
}.items():
    os.environ.setdefault(_name, _value)

# LiteLLM's response objects do not match pydantic's idea of them when mini-swe-agent
# dumps them; the dump is right, the warning is noise in the agent log.
warnings.filterwarnings("ignore", message="Pydantic serializer warnings", category=UserWarning)

import litellm  # noqa: E402
import yaml  # noqa: E402
from minisweagent.agents.default import DefaultAgent  # noqa: E402
from minisweagent.config import get_config_path  # noqa: E402
from minisweagent.environments.local import LocalEnvironment  # noqa: E402
from minisweagent.exceptions import FormatError  # noqa: E402
from minisweagent.models.litellm_model import LitellmModel  # noqa: E402
from minisweagent.utils.serialize import recursive_merge  # noqa: E402

HERE = Path(__file__).resolve().parent
OUTPUT_LIMIT = 16 * 1024
REASON_LIMIT = 1000
# How the agent calls the tool layer's test_patch: it has bash only, no MCP client.
TEST_PATCH_NOTE = """
In this environment the `test_patch` tool is a command: run `test_patch` (no arguments)
with your bash tool. It prints PASSED or FAILED with the end of the log."""
# Variables the agent's commands must not see: the key, and what the install's own
# Python needs to start (the commands run the image's programs, not the install's).
PRIVATE_VARIABLES = ("OPENAI_API_KEY", "PYTHONHOME", "LD_LIBRARY_PATH")


class ModelUnusable(Exception):
    """The model could not be used, after mini-swe-agent's own retries."""


class ProxyModel(LitellmModel):  # type: ignore[misc]
    """LitellmModel with the key kept out of its configuration (which mini-swe-agent
    serializes and hands to its templates) and every failure to get an answer
    turned into ModelUnusable."""

    def __init__(self, *, api_key: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._api_key = api_key

    def _query(self, messages: list[dict[str, str]], **kwargs: Any) -> Any:
        return super()._query(messages, api_key=self._api_key, **kwargs)

    def query(self, messages: list[dict[str, str]], **kwargs: Any) -> dict[str, Any]:
        try:
            answer: dict[str, Any] = super().query(messages, **kwargs)
            return answer
        except FormatError:
            raise  # the model answered; the agent tells it how to answer
        except Exception as error:
            raise ModelUnusable(describe(error)) from error


class Redactor:
    def __init__(self, secret: str) -> None:
        self.secret = secret

    def __call__(self, text: str) -> str:
        return text.replace(self.secret, "[redacted]") if self.secret else text


class StreamingAgent(DefaultAgent):  # type: ignore[misc]
    """DefaultAgent that emits each message of its trajectory as it is added."""

    def __init__(self, *args: Any, emit: Emitter, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.emit = emit

    def add_messages(self, *messages: dict[str, Any]) -> list[dict[str, Any]]:
        added: list[dict[str, Any]] = super().add_messages(*messages)
        for message in messages:
            self.emit.message(message)
        return added


class Emitter:
    """Turns trajectory messages into dialog events on the events stream."""

    def __init__(self, redact: Redactor) -> None:
        self.redact = redact
        self.step = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.commands: dict[str, str] = {}
        self.running: list[str] = []

    def send(self, event: dict[str, Any]) -> None:
        EVENTS.write(self.redact(json.dumps(event)) + "\n")

    def message(self, message: dict[str, Any]) -> None:
        role = message.get("role")
        extra = message.get("extra") or {}
        if role == "assistant":
            self.assistant(message, extra)
        elif role == "tool" or (role == "user" and "returncode" in extra):
            self.observation(message, extra)
        elif role == "exit":
            self.exit(message, extra)
        elif role == "user" and extra.get("interrupt_type"):
            # mini-swe-agent's answer to a reply it could not use (no or a bad tool call).
            self.send({"type": "message", "role": "user", "text": clip(text_of(message))})

    def assistant(self, message: dict[str, Any], extra: dict[str, Any]) -> None:
        self.step += 1
        event: dict[str, Any] = {"type": "message", "role": "assistant", "step": self.step}
        event["text"] = text_of(message)
        usage = (extra.get("response") or {}).get("usage") or {}
        if isinstance(usage, dict):
            names = {"input_tokens": "prompt_tokens", "output_tokens": "completion_tokens"}
            counts: dict[str, int] = {
                ours: usage[theirs]
                for ours, theirs in names.items()
                if isinstance(usage.get(theirs), int)
            }
            self.input_tokens += counts.get("input_tokens", 0)
            self.output_tokens += counts.get("output_tokens", 0)
            if counts:
                event["usage"] = counts
        self.send(event)
        for index, action in enumerate(extra.get("actions") or []):
            call_id = str(action.get("tool_call_id") or f"step{self.step}-{index}")
            command = str(action.get("command", ""))
            self.commands[call_id] = command
            self.running.append(call_id)
            self.send(
                {
                    "type": "tool",
                    "id": call_id,
                    "name": "bash",
                    "status": "running",
                    "input": clip(command),
                }
            )

    def observation(self, message: dict[str, Any], extra: dict[str, Any]) -> None:
        call_id = str(message.get("tool_call_id") or f"step{self.step}-0")
        output = str(extra.get("raw_output") or "")
        if extra.get("exception_info"):
            output = f"{output}\n{extra['exception_info']}".strip()
        returncode = extra.get("returncode")
        if call_id in self.running:
            self.running.remove(call_id)
        self.send(
            {
                "type": "tool",
                "id": call_id,
                "name": "bash",
                "status": "success" if returncode == 0 else "error",
                "input": clip(self.commands.get(call_id, "")),
                "output": clip(output),
                "exit_code": returncode,
            }
        )

    def exit(self, message: dict[str, Any], extra: dict[str, Any]) -> None:
        """The agent's last word: a bash call that submitted (its output is the
        submission, and mini-swe-agent adds no result for it) ends here."""
        submitted = extra.get("exit_status") == "Submitted"
        for call_id in self.running:
            self.send(
                {
                    "type": "tool",
                    "id": call_id,
                    "name": "bash",
                    "status": "success" if submitted else "error",
                    "input": clip(self.commands.get(call_id, "")),
                    "output": clip(text_of(message)),
                }
            )
        self.running.clear()

    def usage(self, agent: DefaultAgent | None) -> None:
        event: dict[str, Any] = {
            "type": "usage",
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }
        if agent is not None:
            event["model_calls"] = agent.n_calls
            event["cost_usd"] = agent.cost
        self.send(event)

    def end(self, status: str, reason: str, *, model_error: bool = False) -> None:
        self.send(
            {
                "type": "end",
                "status": status,
                "reason": clip(reason, REASON_LIMIT),
                "model_error": model_error,
            }
        )


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def clip(text: str, limit: int = OUTPUT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters left out ...]\n{text[-half:]}"


def describe(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def configuration(settings: dict[str, Any]) -> dict[str, Any]:
    """mini-swe-agent's default configuration, then config.yaml's, then the run's."""
    default = yaml.safe_load(get_config_path("mini").read_text())
    ours = yaml.safe_load((HERE / "config.yaml").read_text())
    path = f"{settings['tools_dir']}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"
    run = {
        "agent": {
            "step_limit": int(settings["step_limit"]),
            "wall_time_limit_seconds": max(int(settings["seconds"]), 1),
        },
        "environment": {"cwd": os.getcwd(), "env": {"PATH": path}},
        "model": {
            "model_name": f"openai/{settings['model']}",
            "model_kwargs": {"api_base": settings["api_base"]},
        },
    }
    merged: dict[str, Any] = recursive_merge(default, ours, run)
    return merged


def ending(exit_info: dict[str, Any], step_limit: int) -> tuple[str, str]:
    status = str(exit_info.get("exit_status", ""))
    if status == "Submitted":
        return "success", "the agent submitted its work"
    if status == "TimeExceeded":
        return "timeout", "the run's time was up"
    if status == "LimitsExceeded":
        return "error", f"the step limit ({step_limit}) was reached"
    if status == "RepeatedFormatError":
        return "error", "the model's answers had no usable bash call, several times in a row"
    return "error", f"mini-swe-agent stopped: {status or 'no exit status'}"


def main() -> int:
    settings = json.load(sys.stdin)
    key = os.environ.get("OPENAI_API_KEY", "")
    for name in PRIVATE_VARIABLES:
        os.environ.pop(name, None)
    litellm.suppress_debug_info = True
    litellm.telemetry = False
    emitter = Emitter(Redactor(key))
    agent = None
    try:
        config = configuration(settings)
        agent = StreamingAgent(
            ProxyModel(api_key=key, **config["model"]),
            LocalEnvironment(**config["environment"]),
            emit=emitter,
            **config["agent"],
        )
        exit_info = agent.run(settings["task"] + "\n" + TEST_PATCH_NOTE)
    except ModelUnusable as error:
        emitter.usage(agent)
        emitter.end("error", str(error), model_error=True)
        return 0
    except Exception as error:
        emitter.usage(agent)
        emitter.end("error", f"mini-swe-agent failed: {describe(error)}")
        return 0
    emitter.usage(agent)
    emitter.end(*ending(exit_info, int(settings["step_limit"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
