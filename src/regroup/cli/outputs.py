"""Output files of the commands, checked before any work is done.

A long run must not be lost to a typo at its end: ``check_writable`` refuses,
up front and in one line, a path whose folder does not exist or is a file, a
path that is a directory, and a path that cannot be written (tried: opened
for appending, which changes no existing file; a file the probe created is
removed again).
"""

from __future__ import annotations

import os

from regroup.cli.errors import UsageError

__all__ = ["check_writable"]


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
