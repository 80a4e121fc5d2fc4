"""The policy registry: every controller the command line and the experiments can name, declared once.

``harness-gym eval/compare/play/collect --policy NAME`` accept a name of :data:`POLICIES`, the path of a
model file written by a trainer (loaded by that trainer, :mod:`harness_gym_baselines.policies.model_files`) or
``module:callable``, the import path of a function or class returning any object that implements
:class:`harness_gym.running.rollout.Policy` (or of such an object itself; see docs/evaluate.md). Their choices and help
text come from here. Adding a controller is one entry in :data:`POLICIES`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness_gym.running.rollout import Policy
from harness_gym_baselines.policies.behaviour import BehaviourPolicy
from harness_gym_baselines.policies.cascade import CASCADES, CascadePolicy, is_cascade_name
from harness_gym_baselines.policies.coverage import CoveragePolicy
from harness_gym_baselines.policies.open_loop import ScriptPolicy, is_script_name
from harness_gym_baselines.policies.scripted import OraclePolicy, RandomPolicy, StaticPolicy, ThoroughPolicy


@dataclass(frozen=True)
class PolicyEntry:
    """A registered controller."""

    factory: Callable[[], Policy]
    """builds a fresh instance"""
    summary: str
    """one line for ``--help``"""


POLICIES: dict[str, PolicyEntry] = {
    "random": PolicyEntry(RandomPolicy, "uniform over the applicable actions"),
    "static": PolicyEntry(StaticPolicy, "the static harness: gather a little evidence, draft, submit"),
    "forced-check": PolicyEntry(lambda: StaticPolicy(check=True), "the static harness with CHECK before SUBMIT"),
    "thorough": PolicyEntry(ThoroughPolicy, "gather everything (4 observations, 4 documents, 3 tool results), draft, "
                                            "check, revise or redraft until a check passes"),
    "oracle": PolicyEntry(OraclePolicy, "reads the hidden state (an upper reference, not a baseline)"),
    "behaviour": PolicyEntry(BehaviourPolicy, "the seeded mixture of harness runs (static script plus noise)"),
    "coverage": PolicyEntry(CoveragePolicy, "the seeded coverage mixture of the offline comparison's buffers "
                                            "(named scripts, random episodes, per-step deviations; "
                                            "policies/coverage.py)"),
    **{name: PolicyEntry(lambda script=script, name=name: CascadePolicy(script, name), f"{summary} (tiered envs "
                         f"only; {script}, policies/cascade.py)") for name, (script, summary) in CASCADES.items()},
}
POLICY_NAMES: tuple[str, ...] = tuple(POLICIES)


def policy_help() -> str:
    """The ``--policy`` help text: every registered name with its summary, then the model-file form."""
    names = "; ".join(f"{name}: {entry.summary}" for name, entry in POLICIES.items())
    return (f"a registered policy ({names}), an open-loop script O<a>-R<b>-T<c>-D-T<p>-C<k> (e.g. the winner of "
            "harness-gym search-script), the path of a trained model file, or module:callable returning a "
            "harness_gym.running.rollout.Policy (docs/evaluate.md)")


def is_policy(obj: object) -> bool:
    """Whether ``obj`` has what :class:`harness_gym.running.rollout.Policy` asks: ``name``, ``reset`` and ``act``."""
    return (isinstance(getattr(obj, "name", None), str) and callable(getattr(obj, "reset", None))
            and callable(getattr(obj, "act", None)) and not isinstance(obj, type))


def load_callable_policy(spec: str) -> Policy:
    """The policy named by ``module:callable``: the object itself if it implements the Policy protocol, else
    what calling it with no arguments returns (a class or a factory function), which must implement it.

    :param spec: ``"package.module:name"`` (``name`` may be dotted), importable from ``sys.path``
    """
    from harness_gym_baselines.common.options import UsageError, resolve_callable

    obj = resolve_callable(spec)
    if is_policy(obj):
        return obj
    if not callable(obj):
        raise UsageError(f"--policy {spec}: {type(obj).__name__} object is neither a policy nor callable")
    try:
        policy = obj()
    except TypeError as exc:  # the callable needs arguments: not a factory of a policy
        raise UsageError(f"--policy {spec}: calling {spec}() failed ({exc}); module:callable must name a policy "
                         "or something that returns one when called without arguments") from exc
    if not is_policy(policy):
        raise UsageError(f"--policy {spec}: {spec}() returned a {type(policy).__name__}, which lacks the "
                         "harness_gym.running.rollout.Policy protocol (a str `name`, `reset(env, seed)`, `act(obs, env)`)")
    return policy


def make_policy(name: str) -> Policy:
    """A registered policy by name, or the controller stored in a trained model file.

    :param name: a key of :data:`POLICIES`, an open-loop script name
        (:mod:`harness_gym_baselines.policies.open_loop`), a cascade script name of the tiered envs
        (:mod:`harness_gym_baselines.policies.cascade`), the path of a model file (loaded by the trainer that wrote it, or
        any Stable-Baselines3 zip: :func:`harness_gym_baselines.policies.model_files.load_model_file`), or
        ``module:callable`` (:func:`load_callable_policy`)
    """
    if name in POLICIES:
        return POLICIES[name].factory()
    if is_script_name(name):
        return ScriptPolicy(name)
    if is_cascade_name(name):
        return CascadePolicy(name)
    if not Path(name).is_file() and ":" in name:
        return load_callable_policy(name)
    if Path(name).is_file():
        from harness_gym_baselines.policies.model_files import load_model_file

        return load_model_file(name)
    raise ValueError(f"unknown policy {name!r}: expected one of {POLICY_NAMES}, a script name such as "
                     "O1-R2-T0-D-T0-C2, the path of a model file or module:callable")
