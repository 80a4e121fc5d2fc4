"""The harness-gym command: evaluate, compare, trace, collect, train and reproduce harness controllers.

:func:`build_parser` adds the commands in the order ``harness-gym --help`` lists them (:data:`COMMANDS`, each
defined in the module of its group); :func:`main` runs one.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from harness_gym_baselines.cli import data, envs, evaluation, reproduce, training
from harness_gym_baselines.cli.options import OneLineErrorParser, Subparsers
from harness_gym_baselines.common.dataclass_flags import doc_summary
from harness_gym_baselines.common.options import UsageError, check_env_id

COMMANDS: tuple[Callable[[Subparsers], None], ...] = (
    envs.add_list, reproduce.add_calibrate, envs.add_doctor, evaluation.add_eval, evaluation.add_compare,
    evaluation.add_frontier, evaluation.add_card, evaluation.add_search_script, envs.add_play, data.add_collect,
    data.add_merge_cache, training.add_train, data.add_view, reproduce.add_reproduce,
)
"""the function that adds each command's parser, in the order of ``harness-gym --help``"""


def build_parser() -> OneLineErrorParser:
    """The parser of ``harness-gym``: ``--debug`` and one sub-parser per entry of :data:`COMMANDS`."""
    parser = OneLineErrorParser(prog="harness-gym", description=doc_summary(__doc__),
                                epilog="A mistake in the arguments is reported in one line with exit status 2; "
                                       "--debug (anywhere on the line) shows the traceback instead.")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in COMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``harness-gym``: a :class:`~harness_gym_baselines.common.options.UsageError` is printed as one line with exit status 2,
    any other error as one line with status 1; ``--debug`` (anywhere) raises it with its traceback.

    :param argv: the arguments (default ``sys.argv[1:]``)
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    args = build_parser().parse_args(argv)
    args.argv = ["harness-gym", *argv]  # the command as given, for manifests
    try:
        for env_id in ([args.env_id] if isinstance(getattr(args, "env_id", None), str) else getattr(args, "env_id", [])):
            check_env_id(env_id)
        return int(args.func(args) or 0)
    except UsageError as exc:
        if debug:
            raise
        print(f"harness-gym {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        if debug:
            raise
        print(f"harness-gym {args.command}: error: {type(exc).__name__}: {exc} (rerun with --debug for the "
              "traceback)", file=sys.stderr)
        return 1

