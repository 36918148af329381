"""Instructions the server spends per produced record checking a batch, at two revisions.

Produce costs the server about a microsecond and a half per 100-byte record, most of it
the walk over a batch's records (``record_batch`` rule 3; Kafka's ``LogValidator`` reads
every record too). Over TCP the figure moves by a fifth between runs on this shared
machine; the instructions callgrind counts do not move. For each shape of record below,
this builds one uncompressed batch as a producer writes it and counts the instructions of
``check_client_batch`` on it (the CRC, the header checks and the walk), per record: run
``--reps`` times minus run zero times, so imports and building the batch are left out.

Shapes: ``plain`` (100-byte value, null key, no headers: the records benchmark's),
``keyed`` (a 36-byte key), ``headers`` (a key and two headers, a trace context and a
source), ``timestamps`` (records keeping their original timestamps, deltas up to 11
days), ``empty`` (20,000 empty values: three-byte offset deltas).

It needs valgrind. Usage::

    python benchmarks/record_walk.py --base 416ee1b      # that revision against this tree
"""

from __future__ import annotations

import argparse
import random
import shutil
import struct
import sys
import tempfile
from pathlib import Path

from crc32c import crc32c
from rich.console import Console
from rich.table import Table

from instructions import callgrind, export

REPO = Path(__file__).resolve().parent.parent
SHAPES = ("plain", "keyed", "headers", "timestamps", "empty")


def zigzag(value: int) -> bytes:
    """Kafka ``ByteUtils.writeVarlong``, written here: the batch is built in the child, under
    either revision's ``src``, so it uses nothing of regroup's."""
    raw = (value << 1) ^ (value >> 63)
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def sized(field: bytes | None) -> bytes:
    return zigzag(-1) if field is None else zigzag(len(field)) + field


def record(
    index: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes,
    headers: tuple[tuple[bytes, bytes], ...] = (),
) -> bytes:
    body = (
        b"\x00"
        + zigzag(timestamp_delta)
        + zigzag(index)
        + sized(key)
        + sized(value)
        + zigzag(len(headers))
        + b"".join(sized(name) + sized(header) for name, header in headers)
    )
    return zigzag(len(body)) + body


def batch(shape: str) -> tuple[bytes, int]:
    """One v2 batch of ``shape`` records and its record count."""
    rng = random.Random(shape)
    count = 20_000 if shape == "empty" else 3_000
    records = []
    for index in range(count):
        if shape == "plain":
            records.append(record(index, rng.randint(0, 20), None, b"x" * 100))
        elif shape == "keyed":
            key = f"{rng.getrandbits(128):032x}-key".encode()
            records.append(record(index, rng.randint(0, 20), key, b"x" * 100))
        elif shape == "headers":
            trace = f"00-{rng.getrandbits(128):032x}-{rng.getrandbits(64):016x}-01".encode()
            headers = ((b"traceparent", trace), (b"source", b"orders-service"))
            records.append(record(index, rng.randint(0, 20), b"k" * 36, b"x" * 100, headers))
        elif shape == "timestamps":
            records.append(record(index, rng.randint(0, 10**9), b"k" * 20, b"x" * 100))
        else:
            records.append(record(index, 0, None, b""))
    payload = b"".join(records)
    after_crc = struct.pack(">hiqqqhii", 0, count - 1, 0, 0, -1, -1, -1, count) + payload
    length = len(after_crc) + 9  # leader epoch, magic and CRC are counted too
    return struct.pack(">qiibI", 0, length, -1, 2, crc32c(after_crc)) + after_crc, count


def child(shape: str, reps: int) -> None:
    from regroup.server.log.record_batch import check_client_batch

    data, _ = batch(shape)
    for _ in range(reps):
        check_client_batch(data, 0, 1 << 30)


def instructions(src: Path, shape: str, reps: int) -> int:
    return callgrind(src, [__file__, "--child", shape, str(reps)])[0]


def per_record(src: Path, shape: str, reps: int) -> float:
    _, count = batch(shape)
    return (instructions(src, shape, reps) - instructions(src, shape, 0)) / (reps * count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", help="a revision to compare with this tree")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    if shutil.which("valgrind") is None:
        sys.exit("record_walk: needs valgrind (callgrind counts the instructions)")
    with tempfile.TemporaryDirectory(prefix="regroup-walk-") as tmp:
        trees = {"this tree": REPO / "src"}
        if args.base:
            trees = {args.base: export(args.base, Path(tmp) / "base"), **trees}
        table = Table(title="Instructions per record, check_client_batch on one batch")
        table.add_column("shape")
        for name in trees:
            table.add_column(name, justify="right")
        if args.base:
            table.add_column("ratio", justify="right")
        for shape in args.shapes.split(","):
            counts = [per_record(src, shape, args.reps) for src in trees.values()]
            ratio = [f"{counts[1] / counts[0]:.2f}"] if args.base else []
            table.add_row(shape, *(f"{count:,.0f}" for count in counts), *ratio)
        Console().print(table)


if __name__ == "__main__":
    main()
