"""WorkerProfile: the parameters of the simulated frozen LLM for one domain
(docs/harness_mdp.md, "Workers").

Profiles live as JSON in ``envs_data/profiles/<domain>.json`` (the ``-v1`` envs' worker) and
``envs_data/profiles/v2/<domain>.json`` (the ``-v2`` envs' worker, pinned to the fidelity cards in
``envs_data/fidelity/``): ``{"domain": ..., "params": {...}, "rationale": {param: why}}``. Every parameter has a
rationale saying which real-model behaviour it stands for. The parameters added for ``-v2`` (``task_ability_sd``,
``task_ability_seed``, ``fix_decay``, ``fix_needs_evidence``, ``distractor_weight``, ``closed_book_share``) default to
values that leave the worker exactly as ``-v1`` had it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

from harness_gym.core.paths import data_path
from harness_gym.core.taskfile import TaskFileError, read_json, require

PROFILE_VERSIONS: tuple[str, ...] = ("v1", "v2")
"""The shipped profile sets: ``profile="v2"`` (what the ``-v2`` env ids pass) picks ``envs_data/profiles/v2``."""

LOG_ODDS_PARAMS: frozenset[str] = frozenset({"draft_logit_base", "evidence_weight", "difficulty_weight"})
"""The parameters in log-odds, in [-:data:`MAX_LOG_ODDS`, :data:`MAX_LOG_ODDS`]."""
NON_NEGATIVE_PARAMS: frozenset[str] = frozenset({"task_ability_sd", "task_ability_seed", "distractor_weight"})
"""Parameters >= 0 that are not probabilities: the spread of the per-task ability and the weight of irrelevant
items (log-odds, at most :data:`MAX_LOG_ODDS`) and the ability's seed (a whole number below 2**32). Every other
parameter is a probability (or a mean or spread of one) in [0, 1]."""
MAX_LOG_ODDS = 20.0
"""The log-odds parameters lie in [-20, 20] (a probability between 2e-9 and 1 - 2e-9; the shipped profiles use
at most 6): a larger one says nothing more and can only overflow."""
MAX_SEED = 2**32
"""The ability seed lies in [0, 2**32)."""


def param_bounds(name: str) -> tuple[float, float]:
    """The closed range a profile parameter must lie in (the seed's upper end excluded)."""
    if name in LOG_ODDS_PARAMS:
        return -MAX_LOG_ODDS, MAX_LOG_ODDS
    if name == "task_ability_seed":
        return 0.0, float(MAX_SEED)
    if name in NON_NEGATIVE_PARAMS:
        return 0.0, MAX_LOG_ODDS
    return 0.0, 1.0


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
    @property
    def is_v1(self) -> bool:
        """Whether every mechanism of ``-v2`` is off: always, for a profile without them."""
        return True

    @classmethod
    def load(cls, path: str | Path) -> WorkerProfile:
        """Read a profile JSON file; unknown or mistyped parameters raise a :class:`TaskFileError`. A file that sets
        any parameter of :class:`WorkerProfileV2` is read as one (and then needs a rationale for each of its
        parameters)."""
        raw = read_json(path)
        if not isinstance(raw, dict):
            raise TaskFileError(path, "a profile must be a JSON object")
        params = require(raw, "params", dict, path=path)
        rationale = require(raw, "rationale", dict, path=path)
        kind = WorkerProfileV2 if cls is WorkerProfile and any(name in _V2_ONLY for name in params) else cls
        known = {f.name for f in fields(kind)}
        for name in params:
            if name not in known:
                raise TaskFileError(path, f"unknown profile parameter; known: {sorted(known)}", field=f"params.{name}")
        values = {name: require(params, name, float, path=path) for name in params}
        missing = sorted(known - set(rationale))
        if missing:
            raise TaskFileError(path, f"no rationale for {missing}", field="rationale")
        profile = kind(**values)
        profile.validate(str(path))
        return profile

    @classmethod
    def for_domain(cls, domain: str, version: str = "v1", assets_dir: str | Path | None = None) -> WorkerProfile:
        """The profile of ``version`` (:data:`PROFILE_VERSIONS`) in a domain's assets folder:
        ``profiles/<domain>.json`` for ``"v1"``, ``profiles/<version>/<domain>.json`` otherwise.

        :param domain: the domain's name
        :param version: the profile set
        :param assets_dir: the domain's :attr:`~harness_gym.core.domain.Domain.assets_dir` (``None``: the shipped
            ``envs_data``)
        :raises ValueError: for an unknown version
        """
        if version not in PROFILE_VERSIONS:
            raise ValueError(f"unknown worker profile version {version!r}; expected one of {PROFILE_VERSIONS}")
        parts = ("profiles", f"{domain}.json") if version == "v1" else ("profiles", version, f"{domain}.json")
        return cls.load(data_path(*parts) if assets_dir is None else Path(assets_dir).joinpath(*parts))

    def validate(self, where: str = "profile") -> None:
        """Raise :class:`TaskFileError` naming ``where`` and the parameter unless every probability lies in [0, 1]
        and every log-odds parameter in [-:data:`MAX_LOG_ODDS`, :data:`MAX_LOG_ODDS`] (NaN lies in neither)."""
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TaskFileError(where, f"expected a number, got {type(value).__name__}", field=f"params.{f.name}")
            low, high = param_bounds(f.name)
            if not low <= value <= high or (f.name == "task_ability_seed" and value == high):
                raise TaskFileError(where, f"must lie in [{low:g}, {high:g}], got {value}", field=f"params.{f.name}")
        seed = getattr(self, "task_ability_seed", 0.0)
        if seed != int(seed):
            raise TaskFileError(where, f"must be a whole number, got {seed}", field="params.task_ability_seed")
        if self.tool_error_prob + self.tool_wrong_prob > 1.0:
            raise TaskFileError(where, f"tool_error_prob + tool_wrong_prob must be <= 1, got "
                                f"{self.tool_error_prob} + {self.tool_wrong_prob}", field="params.tool_wrong_prob")


@dataclass(frozen=True)
class WorkerProfileV2(WorkerProfile):
    """A profile of the ``-v2`` worker: :class:`WorkerProfile`'s parameters and the mechanisms the fidelity cards
    (``envs_data/fidelity/``) need. Their defaults switch every one off, so a :class:`WorkerProfileV2` with the
    defaults behaves as the :class:`WorkerProfile` with the same other values. A separate class, so that a
    :class:`WorkerProfile` (and the fingerprint of every ``-v1`` configuration) is what it was.

    :param task_ability_sd: standard deviation, in log-odds, of a per-task latent ability shared by every draft and
        repair of that task, in every episode of it: the task-persistent part of a model's failures (0: none)
    :param task_ability_seed: the seed (a whole number) that, with the task id, fixes each task's latent ability and
        whether it is in the closed-book share; never the episode's seed
    :param fix_decay: factor on the repair probability for each further REVISE on the same draft lineage (since the
        last DRAFT): round r succeeds with ``fix_decay ** (r - 1)`` times round 1's probability (1: no decay)
    :param fix_needs_evidence: how much of a repair needs the task's evidence in context: the repair probability is
        ``g * fix + (1 - g) * p_draft`` with ``g = 1 - fix_needs_evidence * (1 - coverage)``, so without the evidence a
        repair is no better than a fresh draft (feedback points at a fault, it does not supply a missing fact; 0: the
        feedback alone suffices)
    :param distractor_weight: log-odds removed from a draft per ``log1p`` of the irrelevant items gathered
        (retrieved documents that are not the task's, successful tool calls that are not its evidence calls)
    :param closed_book_share: share of the tasks whose facts the model already holds: drafting them counts as full
        evidence coverage (0: none)
    """

    task_ability_sd: float = 0.0
    task_ability_seed: float = 0.0
    fix_decay: float = 1.0
    fix_needs_evidence: float = 0.0
    distractor_weight: float = 0.0
    closed_book_share: float = 0.0

    @property
    def is_v1(self) -> bool:
        """Whether every mechanism of ``-v2`` is off (the worker then behaves, draw for draw, as ``-v1``)."""
        return (self.task_ability_sd == 0.0 and self.fix_decay == 1.0 and self.fix_needs_evidence == 0.0
                and self.distractor_weight == 0.0 and self.closed_book_share == 0.0)


_V2_ONLY = frozenset(f.name for f in fields(WorkerProfileV2)) - frozenset(f.name for f in fields(WorkerProfile))
"""The parameters only a :class:`WorkerProfileV2` has."""
