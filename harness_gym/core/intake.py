"""Explicit bounds on worker output where the host reads it: parsing, comparison and the env's intake
(docs/harness_mdp.md, "Hostile output").

Every draft, revision, tool call, program output, SQL statement and reply is hostile input. The host reads it
through the functions here, each with a stated bound on length, nesting depth and integer size, so that no
output can make a step raise, hang or grow the host's memory past a documented bound; output past a bound is a
failed draft, a failed check or a tool error, never an exception out of ``env.step``.

- :func:`loads_json` parses JSON text of at most :data:`MAX_JSON_CHARS` characters, nested at most
  :data:`MAX_NESTING` levels, with integer literals of at most :data:`MAX_INT_DIGITS` digits;
- :func:`parse_expression` parses one Python expression (a literal, a calculator's arithmetic) of at most
  :data:`MAX_LITERAL_CHARS` characters, nested at most :data:`MAX_NESTING` levels, with integers of at most
  :data:`MAX_INT_BITS` bits (a hexadecimal literal escapes Python's own 4300-digit limit), and
  :func:`literal_value` evaluates a literal parsed so; :func:`parse_source` parses a module of at most
  :data:`MAX_SOURCE_CHARS` characters;
- :func:`accept_draft`, :func:`accept_tool_call`, :func:`accept_check` and :func:`accept_confidence` are the
  env's intake of what a :class:`~harness_gym.workers.Worker` returns: text cut at :data:`MAX_DRAFT_CHARS`,
  read as UTF-8 (bytes and lone surrogates become U+FFFD), tool arguments bounded like JSON, wrong types
  turned into an unusable output (an empty draft, a malformed tool call, a failed self-check).
"""

from __future__ import annotations

import ast
import json
import math
import numbers
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np

from harness_gym.core.types import CheckResult, Draft, ToolCall

MAX_JSON_CHARS = 256 * 1024
"""The longest JSON text parsed (characters). The longest draft any shipped candidate bank holds is a few KiB."""
MAX_NESTING = 64
"""The deepest nesting of arrays and objects (or of a Python literal's containers) parsed; shipped drafts nest
at most 5 levels. Far below Python's recursion limit, so nothing that walks a parsed value can recurse out."""
MAX_INT_DIGITS = 100
"""The most digits of an integer literal in JSON: every such integer converts to a float and formats back."""
MAX_ARG_INT_BITS = math.floor(MAX_INT_DIGITS * math.log2(10))
"""The most bits of an integer in a tool call's arguments (332: every such integer has at most
:data:`MAX_INT_DIGITS` digits)."""
MAX_INT_BITS = 4096
"""The most bits of an integer in a Python literal (about 1233 decimal digits, well inside the 4300 digits
Python formats); a larger one is out of bounds rather than an error when it is printed or compared."""
MAX_LITERAL_CHARS = 64 * 1024
"""The longest Python literal text parsed (characters)."""
MAX_SOURCE_CHARS = 256 * 1024
"""The longest Python source the host parses to inspect it (characters); the longest shipped reference has a few
hundred. Longer source still runs in the sandbox; the host just does not look into it."""
MAX_DRAFT_CHARS = 1024 * 1024
"""A draft's content is cut at this many characters at intake (as a model's token limit cuts a reply)."""
MAX_TOOL_ARGS_CHARS = 64 * 1024
"""The most characters of text and keys a tool call's arguments may hold; a larger call is malformed."""
MAX_NAME_CHARS = 200
"""The longest tool name accepted."""
MAX_FEEDBACK_CHARS = 4096
"""A self-check's feedback is cut at this many characters."""


class InputLimitError(ValueError):
    """Worker output past one of this module's bounds; the message names the bound and the value found."""


# ----- text ---------------------------------------------------------------------------------------------------
def as_text(value: str | bytes) -> str:
    """``value`` as a plain, UTF-8-encodable ``str``: bytes are decoded as UTF-8 and lone surrogates (which no
    encoder writes) replaced, both by U+FFFD.

    :param value: text or bytes from a worker
    """
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    text = str.__str__(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


# ----- JSON -----------------------------------------------------------------------------------------------------
_JSON_STRUCTURE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def json_too_deep(text: str, max_depth: int = MAX_NESTING) -> bool:
    """Whether arrays and objects in JSON ``text`` nest deeper than ``max_depth`` (strings are skipped; an
    unterminated string counts what follows it as structure, which only makes invalid JSON look deeper).

    :param text: the JSON text
    :param max_depth: the deepest nesting allowed
    """
    if text.count("[") + text.count("{") <= max_depth:
        return False
    depth = 0
    for match in _JSON_STRUCTURE.finditer(text):
        char = match.group()
        if char in "[{":
            depth += 1
            if depth > max_depth:
                return True
        elif char in "]}":
            depth -= 1
    return False


def loads_json(text: str, *, max_chars: int = MAX_JSON_CHARS, max_depth: int = MAX_NESTING,
               max_int_digits: int = MAX_INT_DIGITS) -> Any:
    """Parse JSON text within bounds.

    :param text: the JSON text
    :param max_chars: the longest text parsed
    :param max_depth: the deepest nesting of arrays and objects
    :param max_int_digits: the most digits of one integer literal
    :raises json.JSONDecodeError: for text that is not JSON
    :raises InputLimitError: for text past a bound (the message names it)
    """
    if len(text) > max_chars:
        raise InputLimitError(f"the JSON text has {len(text)} characters; at most {max_chars} are read")
    if json_too_deep(text, max_depth):
        raise InputLimitError(f"the JSON text nests arrays or objects deeper than {max_depth} levels")
    if text.startswith("\ufeff"):  # what json.loads refuses before decoding
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _bounded_decoder(max_int_digits).decode(text)


@lru_cache(maxsize=16)
def _bounded_decoder(max_int_digits: int) -> json.JSONDecoder:
    """The decoder ``json.loads(text, parse_int=...)`` makes per call, made once per bound (it keeps no state
    between calls)."""

    def bounded_int(digits: str) -> int:
        if len(digits) - digits.startswith("-") > max_int_digits:
            raise InputLimitError(f"an integer in the JSON text has {len(digits)} digits; at most {max_int_digits}")
        return int(digits)

    return json.JSONDecoder(parse_int=bounded_int)


# ----- Python literals ------------------------------------------------------------------------------------------
def int_in_bounds(value: int, max_bits: int = MAX_INT_BITS) -> bool:
    """Whether integer ``value`` has at most ``max_bits`` bits (so that it formats and compares safely)."""
    return value.bit_length() <= max_bits


def _check_literal_tree(node: ast.AST, max_depth: int, max_bits: int) -> None:
    stack = [(node, 0)]
    while stack:
        current, depth = stack.pop()
        if depth > max_depth:
            raise InputLimitError(f"the expression nests deeper than {max_depth} levels")
        if isinstance(current, ast.Constant) and type(current.value) is int and not int_in_bounds(current.value,
                                                                                                  max_bits):
            raise InputLimitError(f"an integer in the expression has {current.value.bit_length()} bits; at most "
                                  f"{max_bits}")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(current))


def parse_source(source: str, *, max_chars: int = MAX_SOURCE_CHARS) -> ast.Module:
    """The syntax tree of Python module ``source`` (a draft the host inspects without running it), within bounds.

    :param source: the source
    :param max_chars: the longest source parsed
    :raises SyntaxError: for source that does not parse
    :raises InputLimitError: for source past a bound, including the parser's own nesting limit
    """
    if len(source) > max_chars:
        raise InputLimitError(f"the source has {len(source)} characters; at most {max_chars} are read")
    try:
        return ast.parse(source)
    except (RecursionError, MemoryError):  # the parser's own depth limit, on text within max_chars
        raise InputLimitError("the source nests deeper than the parser allows") from None
    except ValueError as exc:  # a NUL byte, or a decimal integer past Python's 4300-digit limit
        raise InputLimitError(f"the source cannot be read: {exc}") from None


def parse_expression(text: str, *, max_chars: int = MAX_LITERAL_CHARS, max_depth: int = MAX_NESTING,
                     max_bits: int = MAX_INT_BITS) -> ast.expr:
    """The syntax tree of one Python expression (a literal, a calculator's arithmetic), within bounds; the caller
    decides which nodes it evaluates. A tree within ``max_depth`` can be walked recursively.

    :param text: the expression
    :param max_chars: the longest text parsed
    :param max_depth: the deepest nesting of the tree
    :param max_bits: the most bits of an integer constant (1000 keeps every one convertible to a float)
    :raises SyntaxError: for text that does not parse as one expression
    :raises InputLimitError: for text past a bound, including the parser's own nesting limit
    """
    if len(text) > max_chars:
        raise InputLimitError(f"the expression has {len(text)} characters; at most {max_chars} are read")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (RecursionError, MemoryError):  # the parser's own depth limit, on text within max_chars
        raise InputLimitError("the expression nests deeper than the parser allows") from None
    except ValueError as exc:  # a NUL byte, or a decimal integer past Python's 4300-digit limit
        raise InputLimitError(f"the expression cannot be read: {exc}") from None
    _check_literal_tree(tree.body, max_depth, max_bits)
    return tree.body


def literal_value(text: str, *, max_chars: int = MAX_LITERAL_CHARS) -> Any:
    """``ast.literal_eval`` of ``text`` within the bounds of :func:`parse_expression`.

    :param text: the literal
    :param max_chars: the longest text parsed
    :raises SyntaxError, ValueError: for text that is not a literal (:class:`InputLimitError` past a bound)
    """
    return ast.literal_eval(parse_expression(text, max_chars=max_chars))


# ----- the env's intake of worker output ---------------------------------------------------------------------------
def _is_index(value: Any, size: int) -> bool:
    return type(value) is int and -1 <= value < size


def accept_draft(raw: Any, previous: Draft | None, n_candidates: int) -> Draft:
    """The draft the env keeps for what ``Worker.draft`` / ``Worker.revise`` returned: its content as text cut
    at :data:`MAX_DRAFT_CHARS`, its candidate index (-1 unless it names one of the task's candidates) and a
    version one more than ``previous``'s. A return that is not a :class:`Draft`, ``str`` or ``bytes`` (or a
    ``Draft`` whose content is neither) is an unusable output: an empty draft.

    :param raw: what the worker returned
    :param previous: the current draft, if any
    :param n_candidates: the size of the task's candidate bank
    """
    version = (previous.version if previous is not None else 0) + 1
    content: Any = raw.content if isinstance(raw, Draft) else raw
    candidate = raw.candidate if isinstance(raw, Draft) and _is_index(raw.candidate, n_candidates) else -1
    text = as_text(content)[:MAX_DRAFT_CHARS] if isinstance(content, (str, bytes, bytearray)) else ""
    if isinstance(raw, Draft) and text is raw.content and candidate == raw.candidate and version == raw.version:
        return raw
    return Draft(content=text, candidate=candidate, version=version)


def _json_problem(value: Any, where: str, depth: int, budget: list[int]) -> tuple[Any, str]:
    """``value`` as plain JSON data (text normalised), or a problem naming where it breaks a bound."""
    if depth > MAX_NESTING:
        return None, f"{where}: nested deeper than {MAX_NESTING} levels"
    if value is None or isinstance(value, (bool, np.bool_)):
        return None if value is None else bool(value), ""
    if isinstance(value, numbers.Integral):
        if not int_in_bounds(int(value), MAX_ARG_INT_BITS):
            return None, f"{where}: an integer of {int(value).bit_length()} bits (at most {MAX_ARG_INT_BITS})"
        return int(value), ""
    if isinstance(value, (float, np.floating)):
        return float(value), ""
    if isinstance(value, (str, bytes, bytearray)):
        text = as_text(value)
        budget[0] -= len(text)
        return text, f"{where}: the arguments hold more than {MAX_TOOL_ARGS_CHARS} characters" if budget[0] < 0 else ""
    if isinstance(value, (list, tuple)):
        items = []
        for i, item in enumerate(value):
            got, problem = _json_problem(item, f"{where}[{i}]", depth + 1, budget)
            if problem:
                return None, problem
            items.append(got)
        return items, ""
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                return None, f"{where}: a key of type {type(key).__name__} (keys are strings)"
            key = as_text(key)
            budget[0] -= len(key)
            got, problem = _json_problem(item, f"{where}.{key[:40]}", depth + 1, budget)
            if problem:
                return None, problem
            out[key] = got
        return out, ""
    return None, f"{where}: a value of type {type(value).__name__} is not JSON"


def _flat_plain_args(args: Any) -> dict[str, Any] | None:
    """What :func:`_json_problem` returns for a ``dict`` of ASCII ``str`` keys and values of the exact types
    ``str`` (ASCII), ``int``, ``float``, ``bool`` and ``None`` within its bounds (a copy of it), without
    building each value's location; ``None`` for anything else, which takes the general path."""
    if type(args) is not dict:
        return None
    budget = MAX_TOOL_ARGS_CHARS
    out = {}
    for key, value in args.items():
        if type(key) is not str or not key.isascii():
            return None
        budget -= len(key)
        kind = type(value)
        if kind is str:
            budget -= len(value)
            if budget < 0 or not value.isascii():
                return None
        elif kind is int:
            if not int_in_bounds(value, MAX_ARG_INT_BITS):
                return None
        elif kind is not float and kind is not bool and value is not None:
            return None
        out[key] = value
    return out


def accept_tool_call(raw: Any) -> tuple[ToolCall, str]:
    """The call the env records for what ``Worker.propose_tool_call`` returned, and why it is malformed ("" when
    it is not). A malformed call (not a :class:`ToolCall`, a name that is not text of at most
    :data:`MAX_NAME_CHARS` characters, arguments that are not a JSON object within the bounds of
    :func:`loads_json` and :data:`MAX_TOOL_ARGS_CHARS`) is recorded with its name and no arguments and never
    runs: it is a tool error. An empty or unknown name is the domain's own "unknown tool" error.

    :param raw: what the worker returned
    """
    if not isinstance(raw, ToolCall):
        return ToolCall(name="", args={}), f"malformed tool call: a {type(raw).__name__}, not a ToolCall"
    if not isinstance(raw.name, (str, bytes, bytearray)) or len(raw.name) > MAX_NAME_CHARS:
        return ToolCall(name="", args={}), (f"malformed tool call: the tool name must be text of at most "
                                            f"{MAX_NAME_CHARS} characters, got {type(raw.name).__name__}")
    name = as_text(raw.name)  # an empty or unknown name is the domain's "unknown tool" error
    if not isinstance(raw.args, Mapping):
        return ToolCall(name=name, args={}), f"malformed tool call: arguments must be an object, got " \
                                             f"{type(raw.args).__name__}"
    args = _flat_plain_args(raw.args)
    if args is not None:
        return ToolCall(name=name, args=args), ""
    args, problem = _json_problem(raw.args, "arguments", 0, [MAX_TOOL_ARGS_CHARS])
    if problem:
        return ToolCall(name=name, args={}), f"malformed tool call {name}: {problem}"
    return ToolCall(name=name, args=args), ""


def accept_check(raw: Any) -> CheckResult:
    """The self-check result the env keeps for what ``Worker.self_check`` returned: ``passed`` must be a bool,
    the feedback text is cut at :data:`MAX_FEEDBACK_CHARS`, ``specificity`` is clipped to [0, 1]; anything
    else is an unusable self-check, which fails.

    :param raw: what the worker returned
    """
    if not isinstance(raw, CheckResult) or not isinstance(raw.passed, (bool, np.bool_)):
        return CheckResult(passed=False, feedback="the self-check gave no usable verdict", specificity=0.0)
    feedback = as_text(raw.feedback)[:MAX_FEEDBACK_CHARS] if isinstance(raw.feedback, (str, bytes)) else ""
    return CheckResult(passed=bool(raw.passed), feedback=feedback, specificity=accept_confidence(raw.specificity))


def accept_confidence(raw: Any) -> float:
    """A probability from a worker: a finite real number clipped to [0, 1]; anything else (NaN, text, None) is 0.

    :param raw: what the worker returned
    """
    if isinstance(raw, (bool, np.bool_)) or not isinstance(raw, (numbers.Integral, float, np.floating)):
        return 0.0
    if isinstance(raw, numbers.Integral):
        return float(min(max(int(raw), 0), 1))
    value = float(raw)
    return min(max(value, 0.0), 1.0) if math.isfinite(value) else 0.0
