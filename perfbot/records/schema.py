"""Reading the files perfbot is given, at the edge: once a loader here returns, its value is
whole, of the right types, and within the limits below; code past it may trust it.

Every file is read whole only if it is at most its size limit; JSON is parsed by pydantic-core
(nesting is bounded; a number too large for its field is refused, never expanded) and YAML by
PyYAML's safe loader with no aliases or anchors (so no "billion laughs") and no duplicate keys.
Validation is pydantic's, strict (a boolean is no integer, a string no number); its first
error becomes one line: the file, the place in it, what was expected, and the value shown at
most a few dozen characters long.
"""

from __future__ import annotations

import json
import math
import re
import reprlib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar

import yaml
from pydantic import AfterValidator, BeforeValidator, Field, TypeAdapter, ValidationError
from pydantic_core import PydanticCustomError

from ..characters import DESCRIBED, blanked, has_control
from ..errors import BadInput
from ..files import read_bytes

# A runner label naming a GPU kind, as the workflows check it (.github/perfbot/gpu-labels.sh): it
# names a runner, an artifact and a folder, so it is kept to what is safe in all three.
GPU_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")

T = TypeVar("T")

# Limits (documented in docs/files.md). They bound what a malformed or hostile file can cost.
MAX_JSON_BYTES = 64 * 1024 * 1024  # a results file of 10,000 benchmarks of 100 samples is ~20 MB
MAX_YAML_BYTES = 1024 * 1024  # thresholds and suites are hand-written, a few KB
MAX_SAMPLES = 10_000  # per benchmark (a run takes 30; a sequential A/B at most its --max-samples, 4000)
MAX_ITEMS = 10_000  # benchmarks, failures, comparisons, probes, overrides, cases per file
MAX_NAME = 200  # characters of a name (kernel, suite, case, dtype, a key)
MAX_TEXT = 2_000  # characters of a free text (a reason, an environment value)
MIN_MS, MAX_MS = 1e-5, 1e6  # a timed sample: 10 ns to about 17 minutes
MAX_DIM = 2**40  # a shape's dimension

_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = 40
_SHOWN.maxlist = _SHOWN.maxdict = 4
_SHOWN.maxlevel = 2
_SHOWN.maxlong = 40


def shown(value: Any) -> str:
    """A value for an error message: never longer than a line, however large the value."""
    try:
        return _SHOWN.repr(value)
    except ValueError:  # an integer of more digits than Python turns into text
        return f"an integer of {value.bit_length():,} bits" if isinstance(value, int) else type(value).__name__


def clean(text: str, limit: int = MAX_TEXT) -> str:
    """Text from a program's output (git, a compiler, an exception), made fit for a record: control
    characters (characters.py) become spaces, and it is cut to `limit` characters."""
    return blanked(text)[:limit]


def _printable(text: str) -> str:
    if has_control(text):
        raise ValueError(f"must not hold {DESCRIBED}")
    return text


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


def _int_only(value: Any) -> Any:
    if type(value) is not int:
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    return value


# On a Literal of integers (a format's or a version's number), which takes 1.0 and true for 1
# even in strict mode (1.0 == True == 1): `Annotated[Literal[1], IntOnly]`. Strict `int` fields
# refuse both already.
IntOnly = BeforeValidator(_int_only)

# Constrained types shared by the file formats. Every string a file holds meets NoControl, but
# for a kept disassembly and a bisect's recipe, which span lines and are never printed.
NoControl = AfterValidator(_printable)
Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME), NoControl]
Text = Annotated[str, Field(max_length=MAX_TEXT), NoControl]
# A label that may be empty (a benchmark outside any suite has suite "").
Label = Annotated[str, Field(max_length=MAX_NAME), NoControl]
Count = Annotated[int, Field(ge=0, le=2**63 - 1)]
Dim = Annotated[int, Field(ge=1, le=MAX_DIM)]
Ms = Annotated[float, Field(ge=MIN_MS, le=MAX_MS, allow_inf_nan=False)]
Finite = Annotated[float, AfterValidator(_finite)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]


_DEPTH = 4  # environment.gpu_state.before.clock_event_reasons is a list four levels down


def _bounded(value: Any, depth: int = 0, where: str = "") -> Any:
    """A JSON value of bounded size and depth, for the open-ended parts of a record (an
    environment, a launch config): objects and lists of at most 256 entries, four levels
    deep, of printable strings, integers, finite numbers, booleans and nulls."""
    at = f" at {where}" if where else ""
    if isinstance(value, dict):
        if depth >= _DEPTH or len(value) > 256:
            raise ValueError(f"an object nested too deep or too large{at}")
        for key, item in value.items():
            if not isinstance(key, str) or len(key) > MAX_NAME:
                raise ValueError(f"keys must be short strings{at}")
            _printable(key)
            _bounded(item, depth + 1, f"{where}.{key}" if where else key)
    elif isinstance(value, list):
        if depth >= _DEPTH or len(value) > 256:
            raise ValueError(f"a list nested too deep or too long{at}")
        for index, item in enumerate(value):
            _bounded(item, depth + 1, f"{where}[{index}]")
    elif isinstance(value, str):
        if len(value) > MAX_TEXT:
            raise ValueError(f"a string over {MAX_TEXT} characters{at}")
        _printable(value)
    elif isinstance(value, float):
        _finite(value)
    elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**63:
        raise ValueError(f"an integer out of range{at}")
    elif value is not None and not isinstance(value, (bool, int, float)):
        raise ValueError(f"not a JSON value{at}")
    return value


Record = Annotated[dict[str, Any], AfterValidator(_bounded)]


def read_limited(path: Path, kind: str, limit: int) -> bytes:
    """The bytes of a regular file the user named (files.read_bytes); over `limit` bytes is
    BadInput."""
    data = read_bytes(path, kind, limit)
    if len(data) > limit:
        raise BadInput(f"{path}: over {limit // (1024 * 1024)} MiB; a {kind} is never that large")
    return data


def load_json(path: Path, kind: str, adapter: TypeAdapter[T], limit: int = MAX_JSON_BYTES) -> T:
    """Parse and validate a JSON file in one pass."""
    data = read_limited(path, kind, limit)
    try:
        return adapter.validate_json(data, strict=True)
    except ValidationError as error:
        raise bad_input(f"{path}", error, kind) from None


def load_yaml(path: Path, kind: str, limit: int = MAX_YAML_BYTES) -> Any:
    """Parse a YAML file: no aliases, no anchors, no duplicate keys, at most `limit` bytes."""
    data = read_limited(path, kind, limit)
    try:
        return yaml.load(data.decode("utf-8"), _StrictLoader)
    except UnicodeDecodeError:
        raise BadInput(f"{path}: is not UTF-8 text") from None
    except yaml.YAMLError as error:
        raise BadInput(f"{path}: cannot read it as YAML: {_one_line(str(error))}") from None
    except ValueError as error:  # a value its constructor refuses: an integer of over 4300 digits, say
        raise BadInput(f"{path}: cannot read it as YAML: {_one_line(str(error))}") from None


def validate(where: str, value: Any, adapter: TypeAdapter[T], kind: str) -> T:
    """Validate an already parsed value (YAML's mappings)."""
    try:
        return adapter.validate_python(value, strict=True)
    except ValidationError as error:
        raise bad_input(where, error, kind) from None
    except RecursionError:
        raise BadInput(f"{where}: nested too deeply to be a {kind}") from None


def validate_message(where: str, value: Any, adapter: TypeAdapter[T], kind: str) -> T:
    """Validate a record that arrived as JSON (a worker's message), in the form it travelled."""
    try:
        return adapter.validate_json(json.dumps(value, allow_nan=False), strict=True)
    except ValidationError as error:
        raise bad_input(where, error, kind) from None
    except (RecursionError, TypeError, ValueError):
        raise BadInput(f"{where}: not a {kind} (nested too deeply, or not JSON)") from None


def bad_input(where: str, error: ValidationError, kind: str) -> BadInput:
    """The first of pydantic's errors as one line: where, what was expected, what was there."""
    errors = error.errors(include_url=False)
    # A misspelt key shows as an unknown key and as a missing one; the unknown one says more.
    first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    place = _place(first["loc"])
    more = f" (and {error.error_count() - 1} more problem(s))" if error.error_count() > 1 else ""
    if first["type"] == "json_invalid":
        return BadInput(f"{where}: not valid JSON (truncated?): {_one_line(first['msg'])}{more}")
    if first["type"] == "missing":
        return BadInput(f"{where}: {place or 'the ' + kind}: missing{more}")
    got = f", got {shown(first['input'])}" if "input" in first and first["type"] != "extra_forbidden" else ""
    message = _one_line(first["msg"]).replace("Extra inputs are not permitted", "unknown key")
    message = message.removeprefix("Value error, ").replace("Input should be ", "should be ")
    message = re.sub(r" or instance of \w+", "", message).replace("a valid dictionary", "a mapping (an object)")
    message = message.replace("should be an object", "should be a mapping (an object)")
    return BadInput(f"{where}: {place or 'the ' + kind}: {message}{got}{more}")


def _place(loc: tuple[Any, ...]) -> str:
    """("benchmarks", 3, "shape", "M") -> benchmarks[3].shape.M; pydantic's own labels (a
    union's branch, a validator) are left out."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif not re.fullmatch(r"[\w-]+\[.*\]|\[key\]|int|float|str|bool|none|list|dict|constrained-\w+", str(part)):
            name = str(part)
            text += ("." if text else "") + (name if len(name) <= 40 and not has_control(name) else shown(name))
    return text


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader without aliases or anchors (perfbot's YAML files need none, and an alias bomb
    expands to gigabytes) and with duplicate keys refused instead of the last one winning."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise yaml.composer.ComposerError(
                None, None, "anchors and aliases (&name, *name) are not allowed here", event.start_mark
            )
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, (Mapping, list)):
                raise yaml.constructor.ConstructorError(None, None, "a key must be a plain value", key_node.start_mark)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {shown(key)}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)
