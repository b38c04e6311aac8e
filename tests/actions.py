"""The part of GitHub Actions that the workflow tests emulate: `${{ }}` expressions (a job's
`if:`, its outputs, a step's env) and a job's `run:` steps, run in order as the runner runs them
(`bash -e`, each step's outputs read from its GITHUB_OUTPUT file, a failed step ending the job).
Steps that `uses:` an action are not run: a test says what each stood for (tests/test_workflows.py).

Expressions as GitHub evaluates them, to the extent the workflows use them: literals, context
paths (`needs.decide.outputs.accepted`, `steps.app.outputs.token`), `!`, `==` and `!=` (strings
compared case-insensitively), `&&` and `||` (which return an operand, as in JavaScript), and the
status functions; a job's `if:` without one is read as `success() && (...)`.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_TOKEN = re.compile(
    r"\s*(?:(?P<string>'(?:[^']|'')*')|(?P<number>-?\d+(?:\.\d+)?)|(?P<op>&&|\|\||==|!=|[!().,\[\]])"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_-]*)|(?P<star>\*))"
)
STATUS_FUNCTIONS = ("success", "failure", "always", "cancelled")


@dataclass
class Contexts:
    """What an expression can read; `needs` maps a job to {"result": ..., "outputs": {...}}."""

    github: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    vars: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    needs: dict[str, dict[str, Any]] = field(default_factory=dict)
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)
    matrix: dict[str, Any] = field(default_factory=dict)
    runner: dict[str, Any] = field(default_factory=lambda: {"temp": "/tmp/runner", "os": "Linux", "arch": "X64"})
    cancelled: bool = False


class _Parser:
    def __init__(self, text: str, contexts: Contexts) -> None:
        self.tokens: list[tuple[str, str]] = []
        position = 0
        while position < len(text.rstrip()):
            match = _TOKEN.match(text, position)
            if match is None:
                raise ValueError(f"cannot read the expression at {text[position:]!r}")
            kind = match.lastgroup or ""
            self.tokens.append((kind, match[kind]))
            position = match.end()
        self.at = 0
        self.contexts = contexts

    def peek(self) -> str | None:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        token = self.tokens[self.at]
        if expected is not None and token[1] != expected:
            raise ValueError(f"expected {expected!r}, got {token[1]!r}")
        self.at += 1
        return token

    def expression(self) -> Any:
        value = self.conjunction()
        while self.peek() == "||":
            self.take()
            right = self.conjunction()
            value = value if truthy(value) else right
        return value

    def conjunction(self) -> Any:
        value = self.negation()
        while self.peek() == "&&":
            self.take()
            right = self.negation()
            value = right if truthy(value) else value
        return value

    def negation(self) -> Any:
        if self.peek() == "!":
            self.take()
            return not truthy(self.negation())
        return self.comparison()

    def comparison(self) -> Any:
        left = self.primary()
        if self.peek() in ("==", "!="):
            operator = self.take()[1]
            right = self.primary()
            equal = _equal(left, right)
            return equal if operator == "==" else not equal
        return left

    def primary(self) -> Any:
        kind, text = self.take()
        if text == "(":
            inner = self.expression()
            self.take(")")
            return inner
        if kind == "string":
            return text[1:-1].replace("''", "'")
        if kind == "number":
            return float(text)
        if kind != "name":
            raise ValueError(f"unexpected {text!r}")
        if text in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[text]
        if self.peek() == "(":
            return self.call(text)
        value: Any = getattr(self.contexts, text)
        while self.peek() in (".", "["):
            if self.take()[1] == ".":
                key = self.take()[1]
            else:
                key = self.expression()
                self.take("]")
            value = value.get(key) if isinstance(value, Mapping) else None
        return value

    def call(self, name: str) -> Any:
        self.take("(")
        args = []
        while self.peek() != ")":
            args.append(self.expression())
            if self.peek() == ",":
                self.take()
        self.take(")")
        results = [job.get("result") for job in self.contexts.needs.values()]
        if name == "always":
            return True
        if name == "cancelled":
            return self.contexts.cancelled
        if name == "success":
            return not self.contexts.cancelled and all(r == "success" for r in results)
        if name == "failure":
            return any(r == "failure" for r in results)
        if name == "fromJSON":
            return json.loads(args[0])
        if name == "toJSON":
            return json.dumps(args[0])
        if name == "startsWith":
            return str(args[0]).lower().startswith(str(args[1]).lower())
        raise ValueError(f"no function {name}() here")


def truthy(value: Any) -> bool:
    return value not in (None, False, "", 0, 0.0)


def _equal(left: Any, right: Any) -> bool:
    if isinstance(left, str) and isinstance(right, str):
        return left.lower() == right.lower()
    if type(left) is type(right):
        return bool(left == right)
    return _number(left) == _number(right)


def _number(value: Any) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool | int | float):
        return float(value)
    try:
        return float(value) if str(value).strip() else 0.0
    except ValueError:
        return float("nan")


def evaluate(expression: str, contexts: Contexts) -> Any:
    """One expression, without its `${{ }}`."""
    parser = _Parser(expression, contexts)
    value = parser.expression()
    if parser.peek() is not None:
        raise ValueError(f"left over in {expression!r}: {parser.peek()!r}")
    return value


def interpolate(text: str, contexts: Contexts) -> str:
    """A value with `${{ }}` in it, each replaced by its value as text."""

    def replaced(match: re.Match[str]) -> str:
        value = evaluate(match[1], contexts)
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return value if isinstance(value, str) else json.dumps(value)

    return re.sub(r"\$\{\{(.*?)\}\}", replaced, text)


def job_runs(job: Mapping[str, Any], contexts: Contexts) -> bool:
    """Whether a job whose needs are in `contexts` runs: its `if:`, with `success() &&` before it
    unless it calls a status function itself. It sees only the jobs it needs."""
    needs = job.get("needs", [])
    needs = [needs] if isinstance(needs, str) else needs
    contexts = Contexts(**{**contexts.__dict__, "needs": {k: v for k, v in contexts.needs.items() if k in needs}})
    condition = str(job.get("if", "")).strip()
    if condition.startswith("${{") and condition.endswith("}}"):
        condition = condition[3:-2]
    if not condition:
        return bool(evaluate("success()", contexts))
    if not any(re.search(rf"\b{name}\(", condition) for name in STATUS_FUNCTIONS):
        condition = f"success() && ({condition})"
    return truthy(evaluate(condition, contexts))


@dataclass(frozen=True)
class JobRun:
    result: str  # success or failure
    outputs: dict[str, str]
    steps: dict[str, dict[str, Any]]  # by id: {"outcome": ..., "outputs": {...}}
    logs: list[subprocess.CompletedProcess[str]]


def run_job(
    job: Mapping[str, Any],
    contexts: Contexts,
    cwd: Path,
    env: Mapping[str, str],
    scratch: Path,
) -> JobRun:
    """A job's `run:` steps in order, each under `bash -e` in `cwd` with `env` and its own env
    interpolated; `uses:` steps are passed over as done. A step that fails ends the job, and
    later steps run only with `if: always()`. The job's outputs are its `outputs:` read from the
    steps' GITHUB_OUTPUT files."""
    scratch.mkdir(parents=True, exist_ok=True)
    contexts.steps = {}
    failed = False
    logs = []
    for index, step in enumerate(job.get("steps", [])):
        step_id = step.get("id", f"__step{index}")
        wanted = step.get("if")
        if wanted is None and failed:
            contexts.steps[step_id] = {"outcome": "skipped", "outputs": {}}
            continue
        if wanted is not None:
            wanted = str(wanted)
            if not any(re.search(rf"\b{name}\(", wanted) for name in STATUS_FUNCTIONS):
                wanted = f"success() && ({wanted})"
            # A step's status functions read the steps before it: stand them in as one need.
            status = Contexts(**{**contexts.__dict__, "needs": {"_": {"result": "failure" if failed else "success"}}})
            if not truthy(evaluate(wanted, status)):
                contexts.steps[step_id] = {"outcome": "skipped", "outputs": {}}
                continue
        if "run" not in step:
            contexts.steps[step_id] = {"outcome": "success", "outputs": {}}
            continue
        output = scratch / f"output-{index}"
        output.write_text("")
        step_env = {k: interpolate(str(v), contexts) for k, v in {**job.get("env", {}), **step.get("env", {})}.items()}
        done = subprocess.run(
            ["bash", "-e", "-c", step["run"]],
            cwd=cwd,
            env={**env, **step_env, "GITHUB_OUTPUT": str(output)},
            capture_output=True,
            text=True,
            timeout=300,
        )
        logs.append(done)
        outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
        contexts.steps[step_id] = {"outcome": "success" if done.returncode == 0 else "failure", "outputs": outputs}
        failed = failed or done.returncode != 0
    job_outputs = {name: interpolate(str(value), contexts) for name, value in job.get("outputs", {}).items()}
    return JobRun("failure" if failed else "success", job_outputs, dict(contexts.steps), logs)


def workflow_commands(log: str) -> list[str]:
    """The workflow commands the runner would act on in a step's log: each line that starts with
    `::`, except between `::stop-commands::TOKEN` and `::TOKEN::`, as those two lines themselves."""
    acted: list[str] = []
    stopped: str | None = None
    for line in log.splitlines():
        if stopped is not None:
            if line == f"::{stopped}::":
                stopped = None
            continue
        if line.startswith("::stop-commands::"):
            stopped = line.removeprefix("::stop-commands::")
            continue
        if line.startswith("::"):
            acted.append(line)
    return acted
