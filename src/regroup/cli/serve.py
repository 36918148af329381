"""``regroup serve``: run the Kafka wire-protocol server (``regroup.server``).

Real Kafka clients (kafka-python, aiokafka, confluent-kafka) connect to
``--host:--port`` as to a one-broker cluster: they produce, fetch, and form
consumer groups of both protocols against regroup's coordinator. With
``--data-dir`` the log, the coordinator's records (SQLite) and the events
(JSON lines) live on disk, and a restart resumes where the server stopped. A
data dir whose store is corrupt, or deleted beside the partition logs, is
refused with one line saying how to proceed (``--allow-empty-coordinator``).
Broker configs use Kafka's names: ``--config group.initial.rebalance.delay.ms=0``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from regroup.cli.errors import UsageError
from regroup.coordinator.config import GroupCoordinatorConfig, InvalidConfigError

if TYPE_CHECKING:  # the server (asyncio, kio) loads only when `serve` runs
    from regroup.server.app import ServerOptions

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the Kafka wire-protocol server",
        description="Serve Kafka clients: a one-broker cluster with regroup's group coordinator.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=9092, help="port (0: any free port)")
    parser.add_argument("--data-dir", type=Path, default=None, help="keep state on disk here")
    parser.add_argument("--events", type=Path, default=None, help="events as JSON lines here")
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a broker config by Kafka's name (repeatable)",
    )
    parser.add_argument(
        "--partitions", type=int, default=1, help="partitions of auto-created topics"
    )
    parser.add_argument(
        "--no-auto-create", action="store_true", help="do not create topics on Metadata"
    )
    parser.add_argument(
        "--allow-empty-coordinator",
        action="store_true",
        help="start with no groups and no committed offsets when the data dir has partition "
        "logs but no coordinator.db (refused otherwise)",
    )
    parser.add_argument(
        "--control",
        action="store_true",
        help="serve the test control channel (regroup ctl: fault injection); tests only",
    )
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    parser.set_defaults(run=run)


def _config(pairs: list[str]) -> GroupCoordinatorConfig:
    properties: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"--config expects NAME=VALUE, got {pair!r}")
        properties[name.strip()] = value.strip()
    try:
        return GroupCoordinatorConfig.from_properties(properties)
    except InvalidConfigError as exc:
        raise UsageError(str(exc)) from None


def options_from_args(args: argparse.Namespace) -> ServerOptions:
    from regroup.server.app import ServerOptions

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be 0-65535, got {args.port}")
    if args.partitions < 1:
        raise UsageError("--partitions must be at least 1")
    return ServerOptions(
        host=args.host,
        port=args.port,
        data_dir=args.data_dir,
        events_path=args.events,
        config=_config(args.config),
        auto_create_topics=not args.no_auto_create,
        default_partitions=args.partitions,
        allow_empty_coordinator=args.allow_empty_coordinator,
        control=args.control,
    )


async def _serve(options: ServerOptions) -> None:
    from regroup.server.app import RegroupServer
    from regroup.server.store import StoreError

    try:
        server = RegroupServer(options)
    except StoreError as exc:  # a corrupt or missing store: one line, exit 2 (no traceback)
        raise UsageError(str(exc)) from None
    try:
        await server.start()
    except OSError as exc:
        await server.stop()
        raise UsageError(f"cannot listen on {options.host}:{options.port}: {exc}") from None
    print(f"regroup serving on {options.host}:{server.port}", file=sys.stderr, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await server.stop()


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    options = options_from_args(args)
    asyncio.run(_serve(options))
    return 0
