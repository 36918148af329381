"""``regroup``: the command line.

Each subcommand lives in its own module with ``add_parser(subparsers)`` and
``run(args) -> int``. A user mistake (bad input, bad option) is one line on
stderr and exit code 2, never a traceback (``UsageError``).

Only the module of the command being run is imported (the assignors bring numpy,
the pipeline PySpark): ``regroup simulate`` does not pay for ``regroup sweep``.
``regroup --help``, or a command that is not one of ours, loads them all so that
argparse can list every command.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from regroup import __version__
from regroup.cli.errors import UsageError

__all__ = ["main"]

#: The subcommands in the order ``--help`` lists them; each is ``regroup.cli.<name>``.
_SUBCOMMANDS = (
    "assign",
    "replay",
    "serve",
    "groups",
    "snapshot",
    "ctl",
    "simulate",
    "compare",
    "soak",
    "sweep",
    "analyze",
    "history",
    "demo",
)


def _command_named(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` runs, when its first word is one (else ``None``: load all)."""
    first = next((word for word in argv if not word.startswith("-")), None)
    return first if first in _SUBCOMMANDS else None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with ``command``'s subparser only, or with every one when it is ``None``."""
    parser = argparse.ArgumentParser(
        prog="regroup",
        description="Apache Kafka's consumer-group rebalance protocols, in Python.",
    )
    parser.add_argument("--version", action="version", version=f"regroup {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _SUBCOMMANDS if command is None else (command,):
        importlib.import_module(f"regroup.cli.{name}").add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    command = _command_named(words)
    if command == "groups":  # kafka-consumer-groups.sh's --list, --delete ... spellings
        from regroup.cli.groups import kafka_words

        try:
            words = kafka_words(words)
        except UsageError as exc:
            print(f"regroup groups: error: {exc}", file=sys.stderr)
            return 2
    parser = build_parser(command)
    args = parser.parse_args(words)
    try:
        code: int = args.run(args)
    except UsageError as exc:
        print(f"regroup {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    return code


if __name__ == "__main__":
    sys.exit(main())
