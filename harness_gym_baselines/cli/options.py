"""The shared option groups of every harness-gym command, in one place: which command takes which
(:data:`COMMAND_OPTIONS`), the flags of each group (:func:`add_shared_options`), their argparse types, the
parser that reports a mistake in one line and shows every default, and the helpers that add a command.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeAlias

from harness_gym.core.prices import price_profiles
from harness_gym.running.parallel import BACKENDS, PARALLEL_MODES
from harness_gym.running.rollout import Policy
from harness_gym.workers import WORKER_NAMES
from harness_gym_baselines.common.options import (
    UsageError,
    budget_units_value,
    check_policy_value,
    closest,
    positive_int,
    prices_name,
)
from harness_gym_baselines.evaluate import (
    LLM_ERROR_RATE_WARNING,
    LLM_SERVER_ERROR_RATE_LIMIT,
)
from harness_gym_baselines.policies.open_loop import is_script_name
from harness_gym_baselines.policies.registry import POLICIES, make_policy, policy_help

WORKER_FLAGS: tuple[tuple[str, str, Any, str], ...] = (
    ("base_url", "--base-url", str, "OpenAI-compatible endpoint, e.g. http://127.0.0.1:8011/v1 (default: none; "
                                    "needed unless every call is replayed from --cache)"),
    ("model", "--model", str, "model name the server knows (default: none; required with --worker openai)"),
    ("api_key", "--api-key", str, "API key (default: $OPENAI_API_KEY, or none for a local server)"),
    ("temperature", "--temperature", float, "sampling temperature (default: 0)"),
    ("max_tokens", "--max-tokens", int, "completion token limit per call (default: 512)"),
    ("timeout_s", "--timeout-s", float, "seconds before a call times out, then retried (default: 60)"),
    ("max_retries", "--max-retries", int, "retries of a failed call before the step fails (default: 3)"),
    ("cache", "--cache", str, "SQLite record/replay file of the model's calls (default: none, no cache)"),
    ("cache_mode", "--cache-mode", str, "off, record, replay or auto (default: auto with --cache, else off)"),
)
"""``--worker openai`` options: (keyword of ``gym.make``, flag, type, help); see docs/llm_worker.md."""

COMMAND_OPTIONS: dict[str, tuple[str, ...]] = {
    "list": ("json",),
    "calibrate": ("json",),
    "doctor": ("json",),
    "eval": ("policy", "run", "env", "cost-weight", "scale", "llm-errors", "progress", "json"),
    "compare": ("policies", "run", "env", "cost-weight", "scale", "llm-errors", "progress", "json", "width"),
    "frontier": ("labelled-policies", "run", "env", "progress", "json"),
    "search-script": ("env", "progress", "json"),
    "card": ("progress", "json"),
    "play": ("policy", "env", "cost-weight", "width"),
    "collect": ("policy", "env", "cost-weight", "scale", "progress", "json"),
    "merge-cache": ("json",),
    "train": (),
    "view": (),
    "reproduce": ("progress", "json"),
    "train (offline trainer)": ("progress", "json"),
    "train (online trainer)": ("env", "cost-weight", "progress", "json"),
}
"""The shared option groups of every command, the one place they are chosen (``tests/test_cli_options.py``
walks every parser against it):

- ``policy`` / ``policies`` / ``labelled-policies``: ``--policy`` once / repeated / repeated with an optional
  ``LABEL[@W]=`` prefix; each value a registered name, an open-loop script, a model file or ``module:callable``;
- ``env``: ``--env-kwarg KEY=VALUE`` (repeated), ``--worker``, ``--sandbox``, ``--prices``, ``--budget-units``,
  ``--recording`` and the ``--worker openai`` flags (:data:`WORKER_FLAGS`);
- ``cost-weight``: ``--cost-weight W``, the env's reward ``Q - W * cost`` (the commands that score several cost
  weights at once, ``frontier`` and ``search-script``, take ``--cost-weights W,W,...`` instead);
- ``run``: ``--episodes``, ``--split``, ``--seed``; ``scale``: ``--num-envs``, ``--parallel``, ``--backend``,
  ``--address``, ``--envs-per-actor``; ``width``: ``--width``;
- ``llm-errors``: ``--max-llm-error-rate X``, exit 1 when more than that share of the LLM worker's requests
  failed; without it, exit 1 when more than :data:`~harness_gym_baselines.evaluate.LLM_SERVER_ERROR_RATE_LIMIT`
  failed for a fault of the server (:func:`llm_error_status`);
- ``progress``: ``--no-progress`` (every command that draws progress bars); ``json``: ``--json`` (every command
  that ends with a summary prints it as JSON instead).

A trainer's own flags come from its config dataclass (:mod:`harness_gym_baselines.common.dataclass_flags`); an
online trainer (one whose config has ``env_id``) gets the ``env`` group on top, offline ones evaluate on the
dataset's own env.
"""

DEFAULT_EPISODES = 100
"""``--episodes`` of the ``run`` option group when not given (and no ``--recording`` sets the episodes)"""


def episode_count(args: argparse.Namespace) -> int:
    """``--episodes``, or :data:`DEFAULT_EPISODES` when not given.

    :param args: the parsed command line
    """
    return DEFAULT_EPISODES if args.episodes is None else int(args.episodes)


def load_policy_arg(value: str) -> Policy:
    """The controller of a ``--policy`` value; a model file that does not load is a :class:`UsageError`
    naming the file.

    :param value: a value accepted by :func:`policy_name`
    """
    if not Path(value).is_file():
        return make_policy(value)
    try:
        return make_policy(value)
    except UsageError as exc:  # the file's format or trainer, already said in one line
        raise UsageError(f"--policy {exc}") from exc
    except Exception as exc:  # torch / zip / format errors of a user's file are reported, not raised
        raise UsageError(f"--policy {value}: cannot load this model file: {type(exc).__name__}: {exc}") from exc


# ----- the options: types, the shared groups of COMMAND_OPTIONS, the parser --------------------------------
def policy_name(value: str) -> str:
    """``--policy`` values: a registered name, an open-loop script name, an existing model file or an importable
    ``module:callable`` (argparse ``type``; :func:`harness_gym_baselines.common.options.check_policy_value`
    says what is wrong with any other).

    :param value: what was given on the command line
    """
    if is_script_name(value):
        return value
    try:
        return check_policy_value(value, tuple(POLICIES))
    except UsageError as exc:
        raise argparse.ArgumentTypeError(f"{value!r}: {str(exc).removeprefix(f'--policy {value}: ')}") from None


def labelled_policy(value: str) -> str:
    """``frontier``'s ``--policy`` values: ``[LABEL[@W]=]POLICY`` with ``POLICY`` any value :func:`policy_name`
    accepts (argparse ``type``).

    :param value: what was given on the command line
    """
    from harness_gym_baselines.experiments.frontier import parse_policy_spec

    policy_name(parse_policy_spec(value)[1])
    return value


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Help that shows every option's default: ``(default: X)`` is appended where the text does not state one
    already; a flag without a value shows ``(default: off)``. An option whose default is ``None`` must say in
    its text what leaving it out means (``tests/test_cli_options.py`` checks every option)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (not action.option_strings or "default" in text or action.required or action.default is None
                or action.default is argparse.SUPPRESS):
            return text
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            shown = "off" if isinstance(action, argparse._StoreTrueAction) else "on"
        elif isinstance(action.default, (list, tuple)) and not action.default:
            shown = "none"
        else:
            shown = "%(default)s"
        return f"{text} (default: {shown})" if text else f"default: {shown}"


class OneLineErrorParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (``PROG: error: MESSAGE (see PROG --help)``), exit 2,
    and whose help shows every default (:class:`DefaultsHelpFormatter`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        choice = re.match(r"argument (\S+): invalid choice: '(.*?)' \(choose from (.*)\)$", message)
        if choice:
            message += closest(choice.group(2), re.findall(r"'([^']*)'", choice.group(3)))
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        """``ArgumentParser.parse_args``, with unrecognised arguments reported by the subcommand that got them
        and the closest flags of that subcommand suggested (``--episods``: did you mean ``--episodes``?)."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            parser: argparse.ArgumentParser = self
            for action in self._actions:
                if isinstance(action, argparse._SubParsersAction):
                    parser = action.choices.get(getattr(parsed, action.dest, None), self)
            flags = [flag for action in parser._actions for flag in action.option_strings]
            hints = "".join(closest(extra.split("=", 1)[0], flags) for extra in extras if extra.startswith("-"))
            parser.error(f"unrecognized arguments: {' '.join(extras)}{hints}")
        return parsed


def share_value(value: str) -> float:
    """``--max-llm-error-rate`` values: a number in [0, 1] (argparse ``type``).

    :param value: what was given on the command line
    """
    try:
        share = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r}: expected a share between 0 and 1, e.g. 0.05") from None
    if not 0.0 <= share <= 1.0:
        raise argparse.ArgumentTypeError(f"{value!r}: a share is between 0 and 1")
    return share


def _add_env_options(p: argparse.ArgumentParser, given: set[str]) -> None:
    if "env_kwargs" not in given:
        p.add_argument("--env-kwarg", action="append", default=[], metavar="KEY=VALUE",
                       help="constructor argument of the env, VALUE read as JSON when it parses (repeatable), "
                            "e.g. --env-kwarg budget=40 --env-kwarg data_dir=PATH")
    p.add_argument("--worker", default=None, choices=WORKER_NAMES,
                   help="the frozen LLM: simulated or openai, any OpenAI-compatible server (default: simulated; "
                        "openai with --recording)")
    p.add_argument("--sandbox", default=None, help="sandbox backend: process or docker (default: process)")
    if "prices" not in given:
        p.add_argument("--prices", default=None, type=prices_name, metavar="PROFILE",
                       help="price profile BASE[+OVERLAY...] (docs/cost.md; default: cheap-hosted): "
                            + ", ".join(price_profiles()))
    if "budget_units" not in given:
        p.add_argument("--budget-units", default=argparse.SUPPRESS, type=budget_units_value, metavar="auto|none|UNITS",
                       help="cost budget per episode in units of US$0.0001: auto (the default: twice the largest "
                            "episode cost of the reference controllers; none on the public-benchmark adapters, "
                            "docs/cost.md), none (no cost budget) or a number")
    p.add_argument("--recording", default=None, metavar="MANIFEST",
                   help="replay a recording of a real model's calls, e.g. envs_data/recordings/smollm2.json: "
                        "--worker openai with the recording's cache in replay mode and its model and sampling "
                        "settings (docs/llm_worker.md; default: none)")
    for key, flag, kind, text in WORKER_FLAGS:
        p.add_argument(flag, dest=key, type=kind, default=None, help=f"with --worker openai: {text}")


def _add_scale_options(p: argparse.ArgumentParser) -> None:
    """``--num-envs``, ``--parallel``, ``--backend``, ``--address``, ``--envs-per-actor`` (docs/scale_out.md)."""
    p.add_argument("--num-envs", type=int, default=1, metavar="N",
                   help="episodes played at once (default: 1, one after another); same results for any N "
                        "with the simulated worker")
    p.add_argument("--parallel", choices=PARALLEL_MODES, default=None,
                   help="processes or threads (default: threads for --worker openai, else processes)")
    p.add_argument("--backend", choices=BACKENDS, default="local",
                   help="local (this machine) or ray (a Ray cluster; needs the [ray] extra)")
    p.add_argument("--address", default=None, metavar="ADDR",
                   help="the Ray cluster to join, e.g. auto or ray://HOST:10001 (default: start Ray locally)")
    p.add_argument("--envs-per-actor", type=int, default=1, metavar="K",
                   help="with --backend ray: envs per actor, played in the actor's threads (for LLM workers)")


def scale_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keywords of ``evaluate`` / ``collect`` that :func:`_add_scale_options` parsed, checked.

    :param args: the parsed command line
    """
    if args.num_envs < 1:
        raise UsageError(f"--num-envs must be >= 1, got {args.num_envs}")
    if args.envs_per_actor < 1:
        raise UsageError(f"--envs-per-actor must be >= 1, got {args.envs_per_actor}")
    if args.address is not None and args.backend != "ray":
        raise UsageError(f"--address {args.address} needs --backend ray")
    return {"num_envs": args.num_envs, "parallel": args.parallel, "backend": args.backend,
            "address": args.address, "envs_per_actor": args.envs_per_actor}


def add_shared_options(p: argparse.ArgumentParser, groups: Sequence[str], *, json_help: str = "",
                       policy: dict[str, Any] | None = None, given: set[str] | frozenset[str] = frozenset()) -> None:
    """Add the option groups of :data:`COMMAND_OPTIONS` to a command's parser, the same flags everywhere.

    :param p: the command's parser
    :param groups: its groups, e.g. ``COMMAND_OPTIONS["eval"]``
    :param json_help: the ``--json`` help (what the JSON holds)
    :param policy: ``default`` / ``help`` of a ``policy`` group that differ from the required ``--policy``
    :param given: destinations the command already has (a trainer's config fields), not added again
    """
    unknown = set(groups) - {"policy", "policies", "labelled-policies", "env", "cost-weight", "run", "scale",
                             "llm-errors", "progress", "json", "width"}
    if unknown:
        raise ValueError(f"unknown option group(s) {sorted(unknown)}")
    policy = policy or {}
    if "policy" in groups:
        p.add_argument("--policy", type=policy_name, default=policy.get("default"),
                       required="default" not in policy, help=policy.get("help", policy_help()))
    if "policies" in groups:
        p.add_argument("--policy", action="append", required=True, type=policy_name,
                       help=f"repeatable; {policy_help()}")
    if "labelled-policies" in groups:
        p.add_argument("--policy", action="append", default=[], type=labelled_policy,
                       metavar="[LABEL[@W]=]POLICY",
                       help="repeatable; added to static, forced-check, thorough, random and oracle: any --policy "
                            "value of harness-gym eval, optionally labelled, with @W the cost weight it was "
                            "trained at (models of one label trained at several weights are joined into a curve)")
    if "run" in groups:
        p.add_argument("--episodes", type=positive_int, default=None,
                       help=f"episodes per policy (default: {DEFAULT_EPISODES}); with --recording, every recorded "
                            "(task, seed) pair of the env unless given")
        p.add_argument("--split", default="test", choices=("train", "val", "test", "ood"), help="task split")
        p.add_argument("--seed", type=int, default=0,
                       help="episode i resets with seed * 1000003 + i: the same tasks for every policy")
    if "env" in groups:
        _add_env_options(p, set(given))
    if "cost-weight" in groups and "cost_weight" not in given:
        p.add_argument("--cost-weight", default=None, type=float, metavar="W",
                       help="reward = Q - W * cost units (default: 0)")
    if "scale" in groups:
        _add_scale_options(p)
    if "llm-errors" in groups:
        p.add_argument("--max-llm-error-rate", type=share_value, default=None, metavar="X",
                       help="exit 1 after the summary when more than this share (0..1) of the LLM worker's requests "
                            f"failed (default: exit 1 when more than {LLM_SERVER_ERROR_RATE_LIMIT:g} failed for a "
                            f"fault of the server, i.e. not counting unparseable replies; above "
                            f"{LLM_ERROR_RATE_WARNING:g} of any kind a warning on stderr)")
    if "width" in groups:
        p.add_argument("--width", type=positive_int, default=None,
                       help="columns of the output (default: the terminal's); long text wraps, nothing is cut")
    if "progress" in groups and "progress" not in given:
        p.add_argument("--no-progress", dest="progress", action="store_false",
                       help="draw no progress bars (for logs; default: bars on stderr)")
    if "json" in groups:
        p.add_argument("--json", action="store_true", help=json_help or "print the summary as JSON")




Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""what ``ArgumentParser.add_subparsers`` returns: the commands of ``harness-gym``"""


def add_command(sub: Subparsers, name: str, help_text: str, func: Any, json_help: str = "",
                **kwargs: Any) -> argparse.ArgumentParser:
    """Add the command ``name`` (run by ``func``) to ``sub``; its shared option groups are those of
    :data:`COMMAND_OPTIONS`, added by :func:`add_shared` after the command's own options.

    :param sub: the commands of ``harness-gym``
    :param name: the command's name
    :param help_text: its line in ``harness-gym --help`` (and its description unless ``description`` is given)
    :param func: ``func(args) -> int`` runs it
    :param json_help: the ``--json`` help (what the JSON holds)
    :param kwargs: ``description``, and the keywords of :func:`add_shared_options` (``policy``)
    """
    p = sub.add_parser(name, help=help_text, description=kwargs.pop("description", help_text))
    p.set_defaults(func=func, _groups=COMMAND_OPTIONS[name], _json_help=json_help, _shared=kwargs)
    return p


def add_shared(p: argparse.ArgumentParser) -> None:
    """Add a command's shared option groups (after its own options, so that ``--help`` lists those first).

    :param p: a parser that :func:`add_command` made
    """
    add_shared_options(p, p.get_default("_groups"), json_help=p.get_default("_json_help"),
                       **p.get_default("_shared"))
