"""The research-QA question formats: the question templates of ``sources/questions.json``, how a task's prompt
is written (a bare question, or a passage followed by the question) and the parser that reads a prompt back.

The generator writes prompts with :func:`question_prompt` and :func:`passage_prompt`; the domain reads them with
:class:`QuestionParser`, which needs only the visible prompt, the public templates and the encyclopedia's titles
(what a harness holds). The parse gives the question's visible structure: which relations it chains (so how many
hops it takes), the entity it starts from and whether a passage came with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from harness_gym.core.taskfile import TaskFileError, read_json, require
from harness_gym.domains.fictional_world import ATTRIBUTES, RELATIONS
from harness_gym.domains.source_files import source_path

QUESTIONS_FILE = source_path("research_qa", "questions.json")
_PASSAGE = "Passage: "
_QUESTION = "\n\nQuestion: "
_ANSWER_WITH = "\n\nAnswer with "


@dataclass(frozen=True)
class Template:
    """A question template: the relation path from the start entity and the question text."""

    name: str
    start_kind: str
    path: tuple[str, ...]
    """Relation names; the last may be an attribute name (the answer is then a number)."""
    text: str
    """Format string with ``{s}``, the start entity's name."""

    @property
    def hops(self) -> int:
        return len(self.path)


def read_templates(path: Path = QUESTIONS_FILE) -> tuple[tuple[Template, ...], tuple[Template, ...]]:
    """The in-distribution and the out-of-distribution question templates of ``sources/questions.json``.

    :param path: the templates file
    """
    raw = read_json(path)
    if not isinstance(raw, dict):
        raise TaskFileError(path, "expected an object with 'in_distribution' and 'out_of_distribution'")
    known = set(RELATIONS) | {attr for kind in ATTRIBUTES.values() for attr in kind}
    groups = []
    names: set[str] = set()
    for group in ("in_distribution", "out_of_distribution"):
        templates = []
        for i, rec in enumerate(require(raw, group, list, path=path)):
            where = f"{group}[{i}]"
            if not isinstance(rec, dict):
                raise TaskFileError(path, "expected an object", field=where)
            hops = require(rec, "path", list, path=path, task_id=where)
            if not hops or not all(h in known for h in hops):
                raise TaskFileError(path, f"every hop must be one of {sorted(known)}, got {hops!r}", task_id=where,
                                    field="path")
            text = require(rec, "text", str, path=path, task_id=where)
            if text.count("{s}") != 1:
                raise TaskFileError(path, "the text must hold '{s}' (the start entity) exactly once", task_id=where,
                                    field="text")
            name = require(rec, "name", str, path=path, task_id=where)
            if name in names:
                raise TaskFileError(path, f"template name {name!r} is used twice", task_id=where, field="name")
            names.add(name)
            templates.append(Template(name, require(rec, "start_kind", str, path=path, task_id=where), tuple(hops),
                                      text))
        groups.append(tuple(templates))
    return groups[0], groups[1]


def question_prompt(question: str) -> str:
    """The prompt of a question over the encyclopedia: the question alone.

    :param question: the question text
    """
    return question


def passage_prompt(passage: str, question: str, answer_format: str) -> str:
    """The prompt of a reading-comprehension question: the passage that answers it, the question, and the answer
    format (so that the prompt is all the task needs).

    :param passage: the text the answer is read from
    :param question: the question text
    :param answer_format: how to reply (e.g. "the city's full name")
    """
    return f"{_PASSAGE}{passage}{_QUESTION}{question}{_ANSWER_WITH}{answer_format} only."


@dataclass(frozen=True)
class ParsedQuestion:
    """What a prompt shows: the question, the passage handed over with it (``""``: none), the template it follows
    and the entity it starts from."""

    question: str
    passage: str
    template: Template
    start: str

    @property
    def hops(self) -> int:
        """How many relations the question chains."""
        return self.template.hops


class QuestionParser:
    """Reads prompts back into :class:`ParsedQuestion`: matches the question against every template (the most
    specific first) and accepts a match only when the slot holds an entity the encyclopedia knows.

    :param templates: every template a prompt may follow
    :param entities: the encyclopedia's entity names
    """

    def __init__(self, templates: tuple[Template, ...], entities: frozenset[str]) -> None:
        self.entities = entities
        ordered = sorted(templates, key=lambda t: (-len(t.text), t.name))
        self._patterns = [(t, re.compile("^" + re.escape(t.text).replace(re.escape("{s}"), "(?P<s>.+)") + "$"))
                          for t in ordered]

    def parse(self, prompt: str) -> ParsedQuestion | None:
        """The question a prompt asks, or ``None`` when it follows no template with a known entity.

        :param prompt: the task's prompt
        """
        passage, question = "", prompt
        if prompt.startswith(_PASSAGE) and _QUESTION in prompt:
            passage, _, rest = prompt[len(_PASSAGE):].partition(_QUESTION)
            question = rest.partition(_ANSWER_WITH)[0]
        for template, pattern in self._patterns:
            match = pattern.match(question)
            if match and match.group("s") in self.entities:
                return ParsedQuestion(question, passage, template, match.group("s"))
        return None
