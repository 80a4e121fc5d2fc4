"""WorkerProfile: the parameters of the simulated frozen LLM for one domain
(docs/harness_mdp.md, "Workers").

Profiles live as JSON in ``envs_data/profiles/<domain>.json``: ``{"domain": ..., "params": {...},
"rationale": {param: why}}``. Every parameter has a rationale saying which real-model behaviour it stands for.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

from harness_gym.core.taskfile import TaskFileError, read_json, require
from harness_gym.paths import data_path

LOG_ODDS_PARAMS: frozenset[str] = frozenset({"draft_logit_base", "evidence_weight", "difficulty_weight"})
"""The parameters in log-odds; every other one is a probability (or a mean or spread of one) in [0, 1]."""
MAX_LOG_ODDS = 20.0
"""The log-odds parameters lie in [-20, 20] (a probability between 2e-9 and 1 - 2e-9; the shipped profiles use
at most 5.5): a larger one says nothing more and can only overflow."""


@dataclass(frozen=True)
class WorkerProfile:
    """How the simulated worker behaves in a domain.

    :param draft_logit_base: log-odds that a draft is correct with no evidence gathered, on a task of difficulty 0
    :param evidence_weight: log-odds added when all of the task's required evidence has been gathered
    :param difficulty_weight: log-odds removed on a task of difficulty 1 (linear in difficulty)
    :param fix_base: probability that REVISE after failed feedback produces a correct draft, for a bare "fail"
    :param fix_specificity: added to ``fix_base`` when the feedback names the fault exactly (specificity 1)
    :param fix_evidence: added to the fix probability at full evidence coverage
    :param break_prob: probability that a REVISE without a failure to fix breaks a correct draft
    :param tool_error_prob: probability that a proposed tool call is malformed (wrong or missing argument)
    :param tool_wrong_prob: probability that a proposed tool call is well-formed but wrong (a wrong id, unit or
        argument value, from :meth:`~harness_gym.core.domain.Domain.wrong_tool_calls`): its result is real,
        and not the evidence the task needs
    :param repeat_after_error_prob: probability that, right after a tool error, the worker proposes the same call again
    :param confidence_correct: mean self-reported confidence for a correct draft (at full evidence coverage, on
        a task of difficulty 0)
    :param confidence_wrong: the same for a wrong draft; the gap to ``confidence_correct`` against
        ``confidence_noise`` sets how well confidence separates correct from wrong drafts at equal evidence
        (AUROC = Phi(gap / (noise * sqrt 2)))
    :param confidence_evidence: confidence added between no evidence and full evidence coverage
    :param confidence_difficulty: confidence removed on a task of difficulty 1 (linear in difficulty)
    :param confidence_noise: standard deviation of the confidence around its mean
    :param selfcheck_tpr: probability that the worker's self-check passes a correct draft
    :param selfcheck_fpr: probability that the worker's self-check passes a wrong draft
    :param selfcheck_repeat: probability that a self-check of content already judged in the episode repeats the
        first verdict (otherwise the verdict is drawn afresh from the two rates above)
    :param unusable_reply_prob: probability that a DRAFT or REVISE reply cannot be used as a draft (it does not
        parse into the domain's format, or is empty): the step yields an empty draft, which is checked and
        graded like any other
    """

    draft_logit_base: float = -0.5
    evidence_weight: float = 2.5
    difficulty_weight: float = 1.5
    fix_base: float = 0.25
    fix_specificity: float = 0.45
    fix_evidence: float = 0.15
    break_prob: float = 0.15
    tool_error_prob: float = 0.15
    tool_wrong_prob: float = 0.15
    repeat_after_error_prob: float = 0.3
    confidence_correct: float = 0.85
    confidence_wrong: float = 0.80
    confidence_evidence: float = 0.1
    confidence_difficulty: float = 0.1
    confidence_noise: float = 0.15
    selfcheck_tpr: float = 0.8
    selfcheck_fpr: float = 0.4
    selfcheck_repeat: float = 0.9
    unusable_reply_prob: float = 0.0

    @classmethod
    def load(cls, path: str | Path) -> WorkerProfile:
        """Read a profile JSON file; unknown or mistyped parameters raise a :class:`TaskFileError`."""
        raw = read_json(path)
        if not isinstance(raw, dict):
            raise TaskFileError(path, "a profile must be a JSON object")
        params = require(raw, "params", dict, path=path)
        rationale = require(raw, "rationale", dict, path=path)
        known = {f.name for f in fields(cls)}
        for name in params:
            if name not in known:
                raise TaskFileError(path, f"unknown profile parameter; known: {sorted(known)}", field=f"params.{name}")
        values = {name: require(params, name, float, path=path) for name in params}
        missing = sorted(known - set(rationale))
        if missing:
            raise TaskFileError(path, f"no rationale for {missing}", field="rationale")
        profile = cls(**values)
        profile.validate(str(path))
        return profile

    @classmethod
    def for_domain(cls, domain: str) -> WorkerProfile:
        """The profile shipped in ``envs_data/profiles/<domain>.json``."""
        return cls.load(data_path("profiles", f"{domain}.json"))

    def validate(self, where: str = "profile") -> None:
        """Raise :class:`TaskFileError` naming ``where`` and the parameter unless every probability lies in [0, 1]
        and every log-odds parameter in [-:data:`MAX_LOG_ODDS`, :data:`MAX_LOG_ODDS`] (NaN lies in neither)."""
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TaskFileError(where, f"expected a number, got {type(value).__name__}", field=f"params.{f.name}")
            low, high = (-MAX_LOG_ODDS, MAX_LOG_ODDS) if f.name in LOG_ODDS_PARAMS else (0.0, 1.0)
            if not low <= value <= high:
                raise TaskFileError(where, f"must lie in [{low:g}, {high:g}], got {value}", field=f"params.{f.name}")
        if self.tool_error_prob + self.tool_wrong_prob > 1.0:
            raise TaskFileError(where, f"tool_error_prob + tool_wrong_prob must be <= 1, got "
                                f"{self.tool_error_prob} + {self.tool_wrong_prob}", field="params.tool_wrong_prob")
