"""``regroup serve``: run the Kafka wire-protocol server (``regroup.server``).

Real Kafka clients (kafka-python, aiokafka, confluent-kafka) connect to
``--host:--port`` as to a one-broker cluster: they produce, fetch, and form
consumer groups of both protocols against regroup's coordinator. With
``--data-dir`` the log, the coordinator's records (SQLite) and the events
(JSON lines) live on disk, and a restart resumes where the server stopped. A
data dir whose store is corrupt, or deleted beside the partition logs, is
refused with one line saying how to proceed (``--allow-empty-coordinator``).
Broker configs use Kafka's names: ``--config group.initial.rebalance.delay.ms=0``,
on the command line or in a properties file (``--config-file``, Kafka's
``server.properties``). The security configs (``listeners``,
``sasl.enabled.mechanisms``, ``ssl.keystore.location``, ``authorizer.class.name``,
``super.users``, ...; ``regroup.server.security.config``) go the same way: SASL
PLAIN/SCRAM and TLS listeners, and Kafka's ACL authorizer (docs/security.md).

The group coordinator logs what Kafka 4.x's logs, in its words and its
``server.log`` layout (``regroup.server.coordinator_log``: the Python logger
``regroup.kafka``): on stderr, or appended to ``--log-file``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from regroup.cli.errors import UsageError
from regroup.cli.options import parse_configs
from regroup.coordinator.config import GroupCoordinatorConfig, InvalidConfigError

if TYPE_CHECKING:  # the server (asyncio, kio) loads only when `serve` runs
    from regroup.server.app import ServerOptions
    from regroup.server.limits import ServerLimits
    from regroup.server.security.config import SecurityConfig

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the Kafka wire-protocol server",
        description="Serve Kafka clients: a one-broker cluster with regroup's group coordinator.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=9092, help="port (0: any free port)")
    parser.add_argument(
        "--brokers",
        type=int,
        default=1,
        metavar="N",
        help="brokers in this process: nodes 0..N-1 on ports PORT..PORT+N-1 (default 1)",
    )
    parser.add_argument(
        "--racks",
        default=None,
        metavar="A,B,C",
        help="broker.rack of each broker, one per broker, comma-separated",
    )
    parser.add_argument("--data-dir", type=Path, default=None, help="keep state on disk here")
    parser.add_argument("--events", type=Path, default=None, help="events as JSON lines here")
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a broker config by Kafka's name (repeatable; security configs too)",
    )
    parser.add_argument(
        "--config-file",
        type=Path,
        default=None,
        metavar="PATH",
        help="broker configs as a properties file (server.properties); --config wins",
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
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed the coordinator's randomness: classic member ids the same on every run "
        "for the same joins in the same order (tests; not with --data-dir)",
    )
    parser.add_argument(
        "--event-loop",
        choices=("asyncio", "uvloop"),
        default="asyncio",
        help="the event loop: asyncio's (default) or uvloop's (pip install 'regroup[uvloop]')",
    )
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    parser.add_argument(
        "--log-file",
        type=Path,
        default=None,
        metavar="PATH",
        help="write the group coordinator's log (Kafka 4.x's server.log lines) here, "
        "appended (default: stderr)",
    )
    parser.set_defaults(run=run)


def _properties(pairs: list[str], config_file: Path | None) -> dict[str, str]:
    """Every broker config given, by Kafka name: the ``--config-file`` first, ``--config`` wins."""
    from regroup.server.security.config import parse_properties

    properties: dict[str, str] = {}
    if config_file is not None:
        try:
            properties.update(parse_properties(config_file.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read --config-file {config_file}: {exc}") from None
    properties.update(parse_configs(pairs))
    return properties


def _config(properties: dict[str, str]) -> tuple[GroupCoordinatorConfig, ServerLimits]:
    """The coordinator's configs and the server's limits (``server.limits``), by Kafka name."""
    from regroup.server.limits import ServerLimits

    server_names = ServerLimits.kafka_names()
    limits = {k: v for k, v in properties.items() if k in server_names}
    try:
        config = GroupCoordinatorConfig.from_properties(
            {k: v for k, v in properties.items() if k not in server_names}
        )
        return config, ServerLimits.from_properties(limits)
    except (InvalidConfigError, ValueError) as exc:
        raise UsageError(str(exc)) from None


def _security(properties: dict[str, str]) -> SecurityConfig | None:
    """The security configs, or ``None`` when none is set (the server as before)."""
    from regroup.server.security.config import SecurityConfig, SecurityError

    if not properties:
        return None
    try:
        return SecurityConfig.from_properties(properties)
    except SecurityError as exc:
        raise UsageError(str(exc)) from None


def options_from_args(args: argparse.Namespace) -> ServerOptions:
    from regroup.server.app import ServerOptions

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be 0-65535, got {args.port}")
    if args.partitions < 1:
        raise UsageError("--partitions must be at least 1")
    if args.brokers < 1:
        raise UsageError(f"--brokers must be at least 1, got {args.brokers}")
    if args.port and args.port + args.brokers - 1 > 65535:
        raise UsageError(f"--port {args.port} leaves no room for {args.brokers} brokers")
    racks = tuple(r.strip() for r in args.racks.split(",")) if args.racks else ()
    if racks and (len(racks) != args.brokers or not all(racks)):
        raise UsageError(f"--racks needs one rack per broker ({args.brokers}), got {args.racks!r}")
    seed = args.seed
    if seed is not None and args.data_dir is not None:
        raise UsageError(
            "--seed with --data-dir would draw the member ids already in the store again "
            "after a restart: use one or the other"
        )
    from regroup.server.security.config import SECURITY_CONFIG_NAMES

    properties = _properties(args.config, args.config_file)
    security = {k: v for k, v in properties.items() if k in SECURITY_CONFIG_NAMES}
    config, limits = _config({k: v for k, v in properties.items() if k not in security})
    return ServerOptions(
        host=args.host,
        port=args.port,
        data_dir=args.data_dir,
        events_path=args.events,
        config=config,
        limits=limits,
        auto_create_topics=not args.no_auto_create,
        default_partitions=args.partitions,
        allow_empty_coordinator=args.allow_empty_coordinator,
        security=_security(security),
        control=args.control,
        brokers=args.brokers,
        racks=racks,
        seed=seed,
    )


async def _serve(options: ServerOptions) -> None:
    from regroup.server.app import RegroupServer
    from regroup.server.log.store import StoreError
    from regroup.server.security.acl import InvalidAclError
    from regroup.server.security.config import SecurityError
    from regroup.server.security.credentials import CredentialsError

    try:
        server = RegroupServer(options)
    except StoreError as exc:  # a corrupt or missing store: one line, exit 2 (no traceback)
        raise UsageError(str(exc)) from None
    except (SecurityError, CredentialsError, InvalidAclError) as exc:  # users, ACLs, TLS files
        raise UsageError(str(exc)) from None
    except ValueError as exc:  # several brokers with security, or a bad cluster shape
        raise UsageError(str(exc)) from None
    try:
        await server.start()
    except OSError as exc:
        await server.stop()
        raise UsageError(f"cannot listen on {options.host}:{options.port}: {exc}") from None
    print(f"regroup serving on {server.cluster.host}:{server.port}", file=sys.stderr, flush=True)
    if server.brokers is not None:
        for node in server.brokers.nodes:
            rack = "" if node.rack is None else f" (rack {node.rack})"
            print(f"  broker {node.node_id} on {node.host}:{node.port}{rack}", file=sys.stderr)
    if server.security is not None:
        for listener, (host, port) in server.security.bound.items():
            print(f"  listener {listener.name} on {host}:{port}", file=sys.stderr, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await server.stop()


def _loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """``--event-loop``: ``None`` for asyncio's own loop, else uvloop's (an optional extra)."""
    if name != "uvloop":
        return None
    try:
        import uvloop
    except ImportError:
        raise UsageError(
            "--event-loop uvloop needs uvloop: pip install 'regroup[uvloop]'"
        ) from None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def run(args: argparse.Namespace) -> int:
    level = getattr(logging, str(args.log_level).upper(), None)
    if not isinstance(level, int):
        raise UsageError(
            f"--log-level must be DEBUG, INFO, WARNING or ERROR, got {args.log_level!r}"
        )
    options = options_from_args(args)
    loop_factory = _loop_factory(args.event_loop)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from regroup.server.coordinator_log import detach, log_to_file, log_to_stream

    if args.log_file is None:
        handler = log_to_stream(level=level)
    else:
        try:
            handler = log_to_file(args.log_file, level=level)
        except OSError as exc:
            raise UsageError(f"cannot write --log-file {args.log_file}: {exc.strerror}") from None
    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            runner.run(_serve(options))
    finally:
        detach(handler)  # a process that runs serve again (tests) starts from a clean logger
    return 0
