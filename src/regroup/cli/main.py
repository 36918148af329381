"""``regroup``: the command line.

Each subcommand lives in its own module with ``add_parser(subparsers)`` and
``run(args) -> int``. A user mistake (bad input, bad option) is one line on
stderr and exit code 2, never a traceback (``UsageError``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from regroup import __version__
from regroup.cli import analyze, assign, demo, groups, replay, serve, simulate, sweep
from regroup.cli.errors import UsageError

__all__ = ["main"]

_SUBCOMMANDS = (assign, replay, serve, groups, simulate, sweep, analyze, demo)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="regroup",
        description="Apache Kafka's consumer-group rebalance protocols, in Python.",
    )
    parser.add_argument("--version", action="version", version=f"regroup {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in _SUBCOMMANDS:
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
