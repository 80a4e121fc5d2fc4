"""Everything a domain author needs, in one import (docs/extending.md, "A new domain")::

    from harness_gym.extend import Domain, HarnessEnv, ToolTable, ToolError, object_schema, register_env

The domain's roles and where each name comes from:

- **data**: :class:`Task`, :class:`Document` and :class:`Candidate`; the task-file readers (:func:`read_jsonl`,
  :func:`read_json`, :func:`read_documents`, :func:`parse_task`, :func:`require`, :func:`write_jsonl`) and
  :class:`TaskFileError`, the one-line error that names file, line, task and field;
- **generator** (``generate.py``): :func:`generator_main` (its command line; ``--out`` defaults to the domain's
  folder in its :attr:`Domain.assets_dir`), :func:`pick`, :func:`quota`, :func:`mix_counts`, :func:`deal`,
  :func:`family_splits`, and the readers of hand-written ``sources/``: :func:`read_vocabulary`,
  :func:`read_markdown_documents`, :func:`fill_placeholders`;
- **tools** (``tools.py``): :class:`ToolTable`, :func:`object_schema`, :class:`ToolError`, :class:`ToolResult`,
  :class:`ToolSpec`, :class:`ToolCall` (the rule: a tool returns its output or a :class:`ToolResult`, and refuses
  by raising :class:`ToolError`; :meth:`ToolTable.call` makes every outcome a result);
- **checker and grader**: :class:`Draft`, :class:`CheckResult`, :class:`Context`, :class:`Sandbox`, and the
  bounded readers of hostile drafts (:func:`loads_json`, :func:`parse_expression`, :func:`literal_value`,
  :func:`parse_source`, which raise :class:`InputLimitError`);
- **domain and env**: :class:`Domain` (with :data:`WHOLE_PAYLOAD` for :attr:`Domain.hidden_payload_keys`),
  :class:`HarnessEnv` (override :meth:`HarnessEnv.grade_draft` to grade under an env setting), :func:`document_env`;
- **registration**: :func:`register_env` (the ``-v1`` and ``-v2`` ids, as the shipped envs are registered).
"""

from __future__ import annotations

from harness_gym import register_env
from harness_gym.core.domain import WHOLE_PAYLOAD, Domain, Retrieved
from harness_gym.core.env_class import document_env
from harness_gym.core.intake import InputLimitError, literal_value, loads_json, parse_expression, parse_source
from harness_gym.core.sandbox import Sandbox
from harness_gym.core.taskfile import (
    TaskFileError,
    parse_task,
    read_documents,
    read_json,
    read_jsonl,
    require,
    write_jsonl,
)
from harness_gym.core.tool_calls import ToolSpec
from harness_gym.core.types import SPLITS, Candidate, CheckResult, Context, Document, Draft, Task, ToolCall, ToolResult
from harness_gym.domains.generation import deal, family_splits, generator_main, mix_counts, pick, quota
from harness_gym.domains.source_files import fill_placeholders, read_markdown_documents, read_vocabulary
from harness_gym.domains.tool_table import ToolError, ToolTable, object_schema
from harness_gym.env import HarnessEnv

__all__ = [
    "SPLITS", "WHOLE_PAYLOAD", "Candidate", "CheckResult", "Context", "Document", "Domain", "Draft", "HarnessEnv",
    "InputLimitError", "Retrieved", "Sandbox", "Task", "TaskFileError", "ToolCall", "ToolError", "ToolResult",
    "ToolSpec", "ToolTable", "deal", "document_env", "family_splits", "fill_placeholders", "generator_main",
    "literal_value", "loads_json", "mix_counts", "object_schema", "parse_expression", "parse_source", "parse_task",
    "pick", "quota", "read_documents", "read_json", "read_jsonl", "read_markdown_documents", "read_vocabulary",
    "register_env", "require", "write_jsonl",
]
