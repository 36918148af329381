"""Output of the long commands: files checked before any work, progress while it runs.

A long run must not be lost to a typo at its end: ``check_writable`` refuses,
up front and in one line, a path whose folder does not exist or is a file, a
path that is a directory, and a path that cannot be written (tried: opened
for appending, which changes no existing file; a file the probe created is
removed again).

A long run must not be silent either: ``run_with_progress`` is the one progress
bar (runs simulated, log splits parsed), and ``run_phases`` runs a command's named
phases (starting Spark, reading the logs, each table written, the report) under it,
the bar naming the phase under way. The work runs in a thread while the main thread
draws and waits, so Ctrl-C reaches the main thread at once (``KeyboardInterrupt``
raised from here), whatever the work is blocked in.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from regroup.cli.errors import UsageError

__all__ = ["PhaseCounter", "check_writable", "run_phases", "run_with_progress"]


def check_writable(option: str, path: str) -> None:
    """``UsageError`` unless ``path`` can be created or overwritten as a file."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise UsageError(f"{option} {path!r} is a directory")
    parent = folder
    while not os.path.exists(parent) and os.path.dirname(parent) != parent:
        parent = os.path.dirname(parent)
    if os.path.exists(parent) and not os.path.isdir(parent):
        raise UsageError(f"{option}: {parent!r} is a file, not a directory")
    if not os.path.isdir(folder):
        raise UsageError(f"{option}: no such directory {folder!r}")
    # A real probe, not os.access (which says yes to root, even on /proc): open for
    # appending (an existing file is not changed) and remove what the probe created.
    existed = os.path.exists(path)
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as error:
        raise UsageError(f"{option}: cannot write {path!r}: {error.strerror}") from None
    if not existed:
        os.unlink(path)


def run_with_progress(
    total: int, done: Any, work: Callable[[], None], *, label: str, unit: str
) -> None:
    """Run ``work()`` in a thread; on a terminal, a progress bar on stderr of ``done.value``
    out of ``total`` meanwhile, and the name of the step under way when ``done`` has a
    ``current`` (``PhaseCounter``). ``work``'s error is raised here; Ctrl-C raises
    ``KeyboardInterrupt`` here while ``work`` goes on in its (daemon) thread, for the
    caller to stop what it runs. ``label`` heads the bar, ``unit`` names what it counts."""
    failure: list[BaseException] = []

    def target() -> None:
        try:
            work()
        except BaseException as error:
            failure.append(error)

    thread = threading.Thread(target=target, name=f"regroup {label}", daemon=True)
    if not sys.stderr.isatty() or (total < 2 and not hasattr(done, "current")):
        thread.start()
        while thread.is_alive():
            thread.join(0.5)
    else:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        def describe() -> str:
            return str(getattr(done, "current", "") or unit)

        with Progress(
            TextColumn(label),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            console=Console(stderr=True),
            transient=True,
        ) as progress:
            task = progress.add_task(describe(), total=total)
            thread.start()
            while thread.is_alive():
                thread.join(0.25)
                progress.update(task, completed=min(total, done.value), description=describe())
    if failure:
        raise failure[0]


class PhaseCounter:
    """What ``run_with_progress`` shows of ``run_phases``: ``value`` phases done and the
    ``current`` one's name; ``started`` lists every phase as it began."""

    def __init__(self) -> None:
        self.value = 0
        self.current = ""
        self.started: list[str] = []


def run_phases(label: str, phases: Sequence[tuple[str, Callable[[], Any]]]) -> list[Any]:
    """Run ``phases`` (name, work) in order under one ``run_with_progress`` bar headed
    ``label`` and naming the phase under way; each work's result, in order."""
    counter = PhaseCounter()
    results: list[Any] = []

    def work() -> None:
        for name, step in phases:
            counter.current = name
            counter.started.append(name)
            results.append(step())
            counter.value += 1

    run_with_progress(len(phases), counter, work, label=label, unit="phases")
    return results
