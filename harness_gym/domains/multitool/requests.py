"""The multi-tool request types: how each kind of task is worded (``sources/requests.json``) and how many tool calls
it chains, and the parser that reads a prompt back.

A request type's wording names the quantities it asks to combine (an order's amount and the rate of its date, a
route's distance and its measured time ...), so the length of the chain is visible in the prompt. The generator
fills the wording with :meth:`RequestType.prompt`; the domain reads prompts with :class:`RequestParser`, from the
visible prompt and the public wordings only (what a harness that knows its application's request types holds).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness_gym.core.taskfile import TaskFileError, read_json, require
from harness_gym.domains.source_files import source_path

REQUESTS_FILE = source_path("multitool", "requests.json")
MAX_STEPS = 5
_SLOT = re.compile(r"\{([a-z_]+)\}")


@dataclass(frozen=True)
class RequestType:
    """One kind of request: its family name, how many tool calls its answer chains and its wording (a format
    string with named slots such as ``{order}``)."""

    family: str
    steps: int
    text: str

    def prompt(self, **slots: object) -> str:
        """The wording with its slots filled.

        :param slots: slot name -> value, one per slot of the wording
        """
        return self.text.format(**slots)

    def pattern(self) -> re.Pattern[str]:
        """A regular expression matching exactly the prompts of this type, one named group per slot."""
        out, seen, at = ["^"], set(), 0
        for match in _SLOT.finditer(self.text):
            out.append(re.escape(self.text[at:match.start()]))
            name = match.group(1)
            out.append(f"(?P={name})" if name in seen else f"(?P<{name}>.+?)")
            seen.add(name)
            at = match.end()
        out += [re.escape(self.text[at:]), "$"]
        return re.compile("".join(out))


def read_requests(path: Path = REQUESTS_FILE) -> tuple[dict[str, RequestType], dict[str, RequestType]]:
    """The in-distribution and the out-of-distribution request types of ``sources/requests.json``.

    :param path: the request-types file
    """
    raw = read_json(path)
    if not isinstance(raw, dict):
        raise TaskFileError(path, "expected an object with 'in_distribution' and 'out_of_distribution'")
    groups: list[dict[str, RequestType]] = []
    seen: set[str] = set()
    for group in ("in_distribution", "out_of_distribution"):
        types = {}
        for family, rec in require(raw, group, dict, path=path).items():
            if not isinstance(rec, dict):
                raise TaskFileError(path, "expected an object", task_id=family)
            if family in seen:
                raise TaskFileError(path, f"request type {family!r} is listed twice", task_id=family)
            seen.add(family)
            steps = require(rec, "steps", int, path=path, task_id=family)
            if not 1 <= steps <= MAX_STEPS:
                raise TaskFileError(path, f"steps must lie in 1..{MAX_STEPS}, got {steps}", task_id=family,
                                    field="steps")
            types[family] = RequestType(family, steps, require(rec, "text", str, path=path, task_id=family))
        groups.append(types)
    return groups[0], groups[1]


@dataclass(frozen=True)
class ParsedRequest:
    """What a prompt asks: its request type and the values in its slots."""

    type: RequestType
    slots: Mapping[str, str]


class RequestParser:
    """Reads prompts back into :class:`ParsedRequest`.

    :param types: every request type a prompt may follow
    """

    def __init__(self, types: Mapping[str, RequestType]) -> None:
        self._patterns = [(t, t.pattern()) for _, t in sorted(types.items())]

    def parse(self, prompt: str) -> ParsedRequest | None:
        """The request a prompt makes, or ``None`` when it follows no request type.

        :param prompt: the task's prompt
        """
        for rtype, pattern in self._patterns:
            match = pattern.match(prompt)
            if match:
                return ParsedRequest(rtype, match.groupdict())
        return None
