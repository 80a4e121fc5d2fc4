"""Prompts for a live LLM worker: the gathered context as text, per-domain prompt files, reply parsing.

Three parts, each usable on its own:

- :func:`render_context` turns a :class:`~harness_gym.core.types.Context` into the text a model reads
  (task statement, observations, retrieved documents, tool calls and results, the current draft, the last
  check). It is the one definition of "what the worker has seen", so token counts of any worker can use it.
- :class:`PromptSet` holds one domain's prompts, read from ``envs_data/prompts/<domain>.json`` on top of
  ``envs_data/prompts/defaults.json`` (see ``docs/llm_worker.md`` for the file format).
- ``parse_*`` functions read a model's reply tolerantly: fenced or bare code, JSON with stray prose,
  SQL statements, a tool call as JSON, a confidence, a pass/fail verdict. Each returns ``None`` when the
  reply holds nothing of the wanted form, so the caller can count an unparseable reply.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness_gym.core.paths import data_path
from harness_gym.core.taskfile import TaskFileError, read_json
from harness_gym.core.tool_calls import ToolSpec
from harness_gym.core.types import Context, ToolCall

MAX_ITEM_CHARS = 1500
"""Longest text of one context item (an observation, a document, a tool output, the draft) before it is
cut with ``" [...]"``: keeps prompts inside a small model's context window."""

DRAFT_FORMATS: tuple[str, ...] = ("python", "json", "sql_or_list", "answer")
"""Reply formats a domain's draft can take (``draft_format`` in its prompt file)."""

ACTIONS: tuple[str, ...] = ("draft", "revise", "tool", "self_check", "confidence")
"""The worker calls that have a prompt; each is a user-message template in the prompt files."""

SLOTS: frozenset[str] = frozenset({"context", "tools", "draft", "feedback"})
"""Placeholders a template may use, written ``{{name}}``."""

_SLOT_RE = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")


def _cut(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit].rstrip() + " [...]"


def context_sections(ctx: Context, *, max_item_chars: int = MAX_ITEM_CHARS) -> list[tuple[str, str]]:
    """The gathered context as ``(heading, body)`` sections, in a fixed order; empty sections are left out.

    :param ctx: the worker's context
    :param max_item_chars: longest text of one item before it is cut
    """
    task = ctx.task
    sections: list[tuple[str, str]] = [("Task", task.prompt.strip())]
    if ctx.observed:
        sections.append(("Observations", "\n".join(f"- {_cut(task.observations[i], max_item_chars)}"
                                                   for i in ctx.observed)))
    if ctx.documents:
        sections.append(("Retrieved documents", "\n\n".join(
            f"[{doc.doc_id}] {doc.title}\n{_cut(doc.text, max_item_chars)}" for doc in ctx.documents)))
    if ctx.tool_history:
        lines = []
        for n, (call, result) in enumerate(ctx.tool_history, start=1):
            args = call.args_json()
            got = f"-> {_cut(result.output, max_item_chars)}" if result.ok else f"-> ERROR: {_cut(result.error, max_item_chars)}"
            lines.append(f"{n}. {call.name or '(malformed call)'} {args} {got}")
        sections.append(("Tool calls", "\n".join(lines)))
    if ctx.draft is not None:
        sections.append((f"Current draft (version {ctx.draft.version})",
                         _cut(ctx.draft.content, 4 * max_item_chars) or "(empty)"))
    if ctx.last_check is not None:
        verdict = "passed" if ctx.last_check.passed else "failed"
        on = f" on version {ctx.checked_version}" if ctx.checked_version >= 0 else ""
        sections.append((f"Last check{on}: {verdict}", _cut(ctx.last_check.feedback, max_item_chars) or "(no feedback)"))
    return sections


def render_context(ctx: Context, *, max_item_chars: int = MAX_ITEM_CHARS) -> str:
    """The gathered context as Markdown-like text: one ``## heading`` per non-empty section.

    :param ctx: the worker's context
    :param max_item_chars: longest text of one item before it is cut
    """
    return "\n\n".join(f"## {head}\n{body}" for head, body in context_sections(ctx, max_item_chars=max_item_chars))


@lru_cache(maxsize=65536)
def _cut_chars(text: str, limit: int) -> int:
    return len(_cut(text, limit))


def context_chars(ctx: Context, *, max_item_chars: int = MAX_ITEM_CHARS) -> int:
    """``len(render_context(ctx, max_item_chars=...))``, summed over the sections' parts without building the
    text (the simulated worker meters every call's prompt with it; ``tests/test_prompt_metering.py`` holds the
    two equal).

    :param ctx: the worker's context
    :param max_item_chars: longest text of one item before it is cut
    """
    task = ctx.task
    heads_and_bodies = [4 + _cut_chars(task.prompt, len(task.prompt))]  # "Task", prompt.strip()
    if ctx.observed:
        observations = task.observations
        heads_and_bodies.append(12 + sum(3 + _cut_chars(observations[i], max_item_chars) for i in ctx.observed) - 1)
    if ctx.documents:
        heads_and_bodies.append(19 + sum(6 + len(doc.doc_id) + len(doc.title) + _cut_chars(doc.text, max_item_chars)
                                         for doc in ctx.documents) - 2)
    if ctx.tool_history:
        lines = 0
        for n, (call, result) in enumerate(ctx.tool_history, start=1):
            got = (3 + _cut_chars(result.output, max_item_chars) if result.ok
                   else 10 + _cut_chars(result.error, max_item_chars))
            lines += len(str(n)) + 5 + len(call.name or "(malformed call)") + len(call.args_json()) + got
        heads_and_bodies.append(10 + lines - 1)
    if ctx.draft is not None:
        draft_chars = _cut_chars(ctx.draft.content, 4 * max_item_chars)
        heads_and_bodies.append(len(f"Current draft (version {ctx.draft.version})") + (draft_chars or 7))
    if ctx.last_check is not None:
        verdict = "passed" if ctx.last_check.passed else "failed"
        on = f" on version {ctx.checked_version}" if ctx.checked_version >= 0 else ""
        feedback_chars = _cut_chars(ctx.last_check.feedback, max_item_chars)
        heads_and_bodies.append(len(f"Last check{on}: {verdict}") + (feedback_chars or 13))
    # each section is "## " + head + "\n" + body, and the sections are joined by "\n\n"
    return sum(heads_and_bodies) + 4 * len(heads_and_bodies) + 2 * (len(heads_and_bodies) - 1)


def render_tools(tools: Mapping[str, ToolSpec]) -> str:
    """One line per tool: its name, its JSON-schema arguments and its description.

    :param tools: the domain's tools by name
    """
    if not tools:
        return "(this task has no tools)"
    lines = []
    for name in sorted(tools):
        spec = tools[name]
        params = dict(spec.parameters).get("properties", {})
        args = ", ".join(f"{arg}: {dict(schema).get('type', 'any')}" for arg, schema in params.items())
        note = " (write: belongs in the plan, not a tool call)" if spec.writes else ""
        lines.append(f"- {name}({args}): {spec.description}{note}")
    return "\n".join(lines)


# ----- prompt files ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PromptSet:
    """One domain's prompts.

    :param domain: the domain name
    :param system: the system message of every call
    :param templates: a user-message template per entry of :data:`ACTIONS`
    :param draft_format: how a draft is read from a reply, one of :data:`DRAFT_FORMATS`
    :param self_check_specificity: the ``specificity`` of a self-check's feedback (it names no failing case)
    :param source: the files the prompts were read from (for error messages)
    """

    domain: str
    system: str
    templates: Mapping[str, str]
    draft_format: str
    self_check_specificity: float
    source: str

    @classmethod
    def for_domain(cls, domain: str, folder: str | Path | None = None) -> PromptSet:
        """Read ``defaults.json`` and ``<domain>.json`` from ``folder`` (default ``envs_data/prompts``); a folder
        without a ``defaults.json`` of its own uses the shipped one.

        Keys of the domain file replace those of the defaults; ``templates`` are merged per action. Every domain
        needs its file, whichever worker runs it (the simulated worker meters its prompts from it).

        :param domain: the domain name
        :param folder: the prompt folder
        :raises TaskFileError: when ``<domain>.json`` is missing, or for a malformed file (naming file and field)
        """
        root = Path(folder) if folder is not None else data_path("prompts")
        domain_file = root / f"{domain}.json"
        if not domain_file.is_file():
            raise TaskFileError(domain_file, f"no prompt file for domain {domain!r}: every domain needs one, with "
                                "any worker (docs/extending.md, 'A new domain'; another folder: prompts_dir=)")
        defaults = root / "defaults.json"
        if not defaults.is_file():
            defaults = data_path("prompts", "defaults.json")
        merged: dict[str, Any] = {}
        templates: dict[str, str] = {}
        sources = []
        for path in (defaults, domain_file):
            raw = read_json(path)
            if not isinstance(raw, dict):
                raise TaskFileError(path, "a prompt file must be a JSON object")
            unknown = set(raw) - {"system", "templates", "draft_format", "self_check_specificity", "notes"}
            if unknown:
                raise TaskFileError(path, f"unknown keys {sorted(unknown)}")
            for action, text in raw.get("templates", {}).items():
                if action not in ACTIONS:
                    raise TaskFileError(path, f"unknown action; expected one of {ACTIONS}", field=f"templates.{action}")
                if not isinstance(text, (str, list)):
                    raise TaskFileError(path, "a template is a string or a list of lines", field=f"templates.{action}")
                text = "\n".join(text) if isinstance(text, list) else text
                bad = set(_SLOT_RE.findall(text)) - SLOTS
                if bad:
                    raise TaskFileError(path, f"unknown placeholders {sorted(bad)}; known: {sorted(SLOTS)}",
                                        field=f"templates.{action}")
                templates[action] = text
            merged.update({k: v for k, v in raw.items() if k != "templates"})
            sources.append(str(path))
        where = " + ".join(sources)
        missing = [a for a in ACTIONS if a not in templates]
        if missing:
            raise TaskFileError(where, f"no template for {missing}", field="templates")
        system = merged.get("system", "")
        system = "\n".join(system) if isinstance(system, list) else system
        fmt = merged.get("draft_format")
        if fmt not in DRAFT_FORMATS:
            raise TaskFileError(where, f"draft_format must be one of {DRAFT_FORMATS}, got {fmt!r}", field="draft_format")
        spec = merged.get("self_check_specificity", 0.1)
        if isinstance(spec, bool) or not isinstance(spec, (int, float)) or not 0.0 <= spec <= 1.0:
            raise TaskFileError(where, f"must be a number in [0, 1], got {spec!r}", field="self_check_specificity")
        return cls(domain=domain, system=str(system), templates=templates, draft_format=fmt,
                   self_check_specificity=float(spec), source=where)

    def messages(self, action: str, **slots: str) -> list[dict[str, str]]:
        """The chat messages of one call: the system message and the filled user template.

        :param action: one of :data:`ACTIONS`
        :param slots: text for the template's placeholders (``context``, ``tools``, ``draft``, ``feedback``)
        """
        template = self.templates[action]

        def fill(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in slots:
                raise KeyError(f"{self.source}: template {action!r} uses {{{{{name}}}}} but no value was given")
            return slots[name]

        user = _SLOT_RE.sub(fill, template)
        out = [{"role": "system", "content": self.system}] if self.system else []
        out.append({"role": "user", "content": user})
        return out


# ----- reply parsing --------------------------------------------------------------------------------------
_FENCE_RE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
_SQL_START = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|WITH|REPLACE)\b", re.I)
_PY_START = re.compile(r"^(def |class |import |from \w[\w.]* import |async def |@)")


def fenced_blocks(reply: str) -> list[tuple[str, str]]:
    """``(language, body)`` of every fenced code block in ``reply`` (an unclosed last fence runs to the end).

    :param reply: the model's reply
    """
    return [(m.group(1).lower(), m.group(2).strip("\n")) for m in _FENCE_RE.finditer(reply)]


def parse_python(reply: str) -> str | None:
    """Python source from a reply: the first fenced block that parses (``python``/``py`` ones first), else
    the text from the first line that starts like code; ``None`` when nothing looks like Python.

    :param reply: the model's reply
    """
    blocks = fenced_blocks(reply)
    ordered = [b for lang, b in blocks if lang in ("python", "py", "python3")] + \
              [b for lang, b in blocks if lang not in ("python", "py", "python3")]
    for body in ordered:
        if _parses(body):
            return body.strip() + "\n"
    lines = reply.splitlines()
    for i, line in enumerate(lines):
        if _PY_START.match(line):
            body = "\n".join(lines[i:])
            # drop trailing prose one line at a time until what is left parses
            tail = body.splitlines()
            while tail and not _parses("\n".join(tail)):
                tail.pop()
            if tail:
                return "\n".join(tail).strip() + "\n"
            return body.strip() + "\n"
    if ordered:
        return ordered[0].strip() + "\n"
    return None


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return bool(source.strip())


def _json_candidates(text: str) -> list[Any]:
    """Every JSON value that starts at a ``{`` or ``[`` of ``text`` and decodes (leniently), in order."""
    decoder = json.JSONDecoder(strict=False)
    found: list[Any] = []
    pos = 0
    while True:
        starts = [i for i in (text.find("{", pos), text.find("[", pos)) if i >= 0]
        if not starts:
            return found
        start = min(starts)
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            repaired = _repair_json(text[start:])
            value = None
            if repaired is not None:
                try:
                    value, _ = decoder.raw_decode(repaired)
                except json.JSONDecodeError:
                    value = None
            if value is None:
                pos = start + 1
                continue
            found.append(value)
            pos = start + 1
            continue
        found.append(value)
        pos = end


def _repair_json(text: str) -> str | None:
    """A best-effort fix of the commonest slips: trailing commas, Python literals, a missing closing bracket."""
    fixed = re.sub(r",\s*([}\]])", r"\1", text)
    fixed = re.sub(r"\bTrue\b", "true", re.sub(r"\bFalse\b", "false", re.sub(r"\bNone\b", "null", fixed)))
    depth = 0
    in_str = False
    escape = False
    closers: list[str] = []
    for i, ch in enumerate(fixed):
        if in_str:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch in "{[":
            closers.append("}" if ch == "{" else "]")
            depth += 1
        elif ch in "}]":
            if not closers:
                return fixed[:i]
            closers.pop()
            depth -= 1
            if depth == 0:
                return fixed[: i + 1]
    if in_str or not closers:
        return None
    return fixed + "".join(reversed(closers))


def parse_json_object(reply: str, *, want_keys: tuple[str, ...] = ()) -> dict[str, Any] | None:
    """The JSON object in a reply (fenced ``json`` blocks first, then the text), tolerating prose around
    it, newlines inside strings, trailing commas and Python literals. With ``want_keys``, the first object
    having one of those keys wins; ``None`` when no object is found.

    :param reply: the model's reply
    :param want_keys: keys that identify the wanted object
    """
    texts = [b for lang, b in fenced_blocks(reply) if lang in ("json", "")] + [reply]
    fallback: dict[str, Any] | None = None
    for text in texts:
        for value in _json_candidates(text):
            if not isinstance(value, dict):
                continue
            if not want_keys or any(k in value for k in want_keys):
                return value
            fallback = fallback if fallback is not None else value
    return fallback


def parse_sql_or_list(reply: str) -> str | None:
    """One SQL statement (a fenced ``sql`` block, else the first statement in the text, up to its ``;`` or a
    blank line), or, failing that, a Python/JSON list literal of answer values; ``None`` when neither is there.

    :param reply: the model's reply
    """
    for lang, body in fenced_blocks(reply):
        if lang in ("sql", "mysql", "sqlite", "") and _SQL_START.match(body):
            return _one_statement(body)
    m = _SQL_IN_TEXT.search(reply)
    if m is not None:
        return _one_statement(reply[m.start():])
    for value in _json_candidates(reply):
        if isinstance(value, list):
            return repr(value)
    for m in re.finditer(r"\[[^\[\]]*\]", reply):
        try:
            value = ast.literal_eval(m.group(0))
        except (ValueError, SyntaxError):
            continue
        if isinstance(value, list):
            return repr(value)
    return None


_SQL_IN_TEXT = re.compile(r"\b(SELECT\s.+?\sFROM\s|INSERT\s+INTO\s|UPDATE\s+\S.*?\sSET\s|DELETE\s+FROM\s)",
                          re.I | re.S)


def _one_statement(text: str) -> str | None:
    out: list[str] = []
    quote = ""
    for ch in text:
        if quote:
            out.append(ch)
            if ch == quote:
                quote = ""
            continue
        if ch in "'\"`":
            quote = ch
        elif ch == ";":
            break
        out.append(ch)
    stmt = "".join(out)
    # a statement ends at the first blank line (prose after it is commentary)
    stmt = re.split(r"\n\s*\n", stmt, maxsplit=1)[0]
    stmt = " ".join(stmt.split())
    return stmt or None


def parse_answer(reply: str) -> str | None:
    """A short answer: the first non-empty line, without an ``Answer:`` prefix, quotes or a final period;
    ``None`` for an empty reply.

    :param reply: the model's reply
    """
    for line in reply.splitlines():
        line = line.strip().strip("*").strip()
        if not line:
            continue
        line = re.sub(r"^(final\s+)?answer\s*[:\-]\s*", "", line, flags=re.I).strip()
        line = line.strip("\"'`").rstrip(".").strip()
        if line:
            return line
    return None


def parse_draft(reply: str, draft_format: str) -> str | None:
    """The draft content in a reply, read as ``draft_format`` (one of :data:`DRAFT_FORMATS`); JSON drafts
    come back re-serialised compactly. ``None`` when the reply holds no draft of that form.

    :param reply: the model's reply
    :param draft_format: the domain's draft format
    """
    if draft_format == "python":
        return parse_python(reply)
    if draft_format == "json":
        obj = parse_json_object(reply)
        return None if obj is None else json.dumps(obj, ensure_ascii=False)
    if draft_format == "sql_or_list":
        return parse_sql_or_list(reply)
    if draft_format == "answer":
        return parse_answer(reply)
    raise ValueError(f"unknown draft format {draft_format!r}; expected one of {DRAFT_FORMATS}")


_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARG_KEYS = ("arguments", "args", "parameters", "params", "input")


def parse_tool_call(reply: str, tools: Mapping[str, ToolSpec] | None = None) -> ToolCall | None:
    """A tool call from a reply: a JSON object ``{"name": ..., "arguments": {...}}`` (also ``tool``/``args``,
    OpenAI's ``{"function": {"name", "arguments": "<json>"}}``, or ``{TOOL: {...}}`` for a known tool name).
    ``None`` when there is no such object. The call is not validated here: the domain does that.

    :param reply: the model's reply
    :param tools: the domain's tools, to recognise ``{TOOL: {...}}`` objects
    """
    obj = parse_json_object(reply, want_keys=_NAME_KEYS)
    if obj is None:
        return None
    if isinstance(obj.get("function"), dict):
        obj = obj["function"]
    name = next((obj[k] for k in _NAME_KEYS if isinstance(obj.get(k), str)), None)
    if name is None:
        if tools and len(obj) == 1:
            (only, value), = obj.items()
            if only in tools and isinstance(value, dict):
                return ToolCall(name=only, args=value)
        return None
    args: Any = next((obj[k] for k in _ARG_KEYS if k in obj), None)
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            args = None
    if args is None:
        args = {k: v for k, v in obj.items() if k not in _NAME_KEYS}
    if not isinstance(args, dict):
        return ToolCall(name=name.strip(), args={"_arguments": args})
    return ToolCall(name=name.strip(), args=args)


_NUMBER_RE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?|\.\d+)\s*(%?)")


def parse_confidence(reply: str) -> float | None:
    """A confidence in [0, 1] from a reply: the first number there, read as a percentage when it is
    followed by ``%`` or lies in (1, 100]; ``None`` when there is none in range.

    :param reply: the model's reply
    """
    for m in _NUMBER_RE.finditer(reply):
        value = float(m.group(1))
        if m.group(2) == "%" or 1.0 < value <= 100.0:
            value /= 100.0
        if 0.0 <= value <= 1.0:
            return value
    return None


_PASS_WORDS = re.compile(r"\b(PASS|PASSED|CORRECT|YES|VALID)\b", re.I)
_FAIL_WORDS = re.compile(r"\b(FAIL|FAILED|INCORRECT|WRONG|NO|INVALID)\b", re.I)


def parse_verdict(reply: str) -> tuple[bool, str] | None:
    """A self-check verdict: ``(passed, reason)`` from the first PASS/FAIL-like word of the reply (the
    reason is the rest of the reply); ``None`` when the reply says neither.

    :param reply: the model's reply
    """
    good, bad = _PASS_WORDS.search(reply), _FAIL_WORDS.search(reply)
    if good is None and bad is None:
        return None
    passed = bad is None or (good is not None and good.start() < bad.start())
    hit = good if passed else bad
    assert hit is not None
    reason = (reply[:hit.start()] + reply[hit.end():]).strip(" :.-\n") or reply.strip()
    return passed, reason


def prompts_dir_of(assets_dir: str | Path | None) -> Path | None:
    """The prompt folder of a domain's assets folder (``<assets_dir>/prompts``); ``None`` for the shipped domains,
    whose prompts are :meth:`PromptSet.for_domain`'s default, ``envs_data/prompts``.

    :param assets_dir: the domain's :attr:`~harness_gym.core.domain.Domain.assets_dir`
    """
    return None if assets_dir is None else Path(assets_dir) / "prompts"
