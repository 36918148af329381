"""What kio reserves for a request's arrays, per byte of the request (defect 1).

kio's native reader reserves one 8-byte slot per array element from the count it
reads, before reading an element. ``regroup.server.wire.frame_check`` walks every
request first and refuses a count whose elements, at the least size the schema
allows each, would not fit in the bytes left; so kio reads only counts that the
body backs. This prints, for every API version the server accepts:

* ``least``: the smallest least element size among its arrays (frame_check's
  bound: count x least <= bytes left), and the bound on the reservation ratio it
  implies, ``8 / least`` slot bytes per body byte;
* ``packed``: the ratio measured on the request whose arrays hold N smallest
  elements (empty strings, empty nested arrays), the densest a client can write;
* ``count<=left``: the bound of a check of Kafka's kind (count <= bytes left, one
  byte an element, as Kafka's generated ``read`` code checks
  ``Readable.remaining()``), which regroup's first fix of defect 1 used: 8 slot
  bytes per body byte for every array;

then the worst of each column, and the peak memory (RSS) of decoding the packed
request of the worst version at about 1 MB, in a child process.

Run: ``PYTHONPATH=src python benchmarks/frame_reservation.py [--copies N]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import tempfile
from typing import Any

from kio.index import load_request_schema
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
)

from regroup.server.clients.wire_client import RequestEncoder
from regroup.server.control.fuzz import minimal_request
from regroup.server.wire import codec, frame_check
from regroup.server.wire.versions import ADVERTISED

SLOT = 8


def array_leasts(cls: Any) -> list[int]:
    """frame_check's least element size of every array reachable in ``cls``."""
    out: list[int] = []
    flexible = bool(cls.__flexible__)
    for field in frame_check._fields(cls):
        if field.is_array:
            element = dataclasses.replace(field, is_array=False)
            out.append(max(frame_check._least(element, flexible), 1))
        if field.entity is not None:
            out.extend(array_leasts(field.entity))
    return out


def reserved(cls: Any, entity: Any) -> int:
    """8 bytes for each array element in the decoded entity (what kio reserved for it)."""
    total = 0
    for f in dataclasses.fields(cls):
        kind = classify_field(f)
        value = getattr(entity, f.name)
        if isinstance(kind, EntityTupleField) and value is not None:
            total += SLOT * len(value) + sum(reserved(kind.type_, v) for v in value)
        elif isinstance(kind, PrimitiveTupleField) and value is not None:
            total += SLOT * len(value)
        elif isinstance(kind, EntityField) and value is not None:
            total += reserved(kind.type_, value)
    return total


def body_of(api_key: int, version: int, copies: int) -> tuple[Any, bytes]:
    cls: Any = load_request_schema(api_key, version)
    return cls, RequestEncoder("x").encode(api_key, version, minimal_request(cls, copies))[1][4:]


def _rss_kib(name: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {name} in /proc/self/status")


def _peak_child(path: str) -> None:
    with open(path, "rb") as handle:
        body = handle.read()
    with open("/proc/self/clear_refs", "w") as refs:  # Linux: reset the peak RSS to now
        refs.write("5")
    before = _rss_kib("VmRSS")
    decoded = codec.decode_request(body)
    after = _rss_kib("VmHWM")
    print(json.dumps({"body": len(body), "peak_kib": after - before, "ok": decoded is not None}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=2000)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _peak_child(args.child)
        return
    rows = []
    for key, (low, high) in sorted(ADVERTISED.items()):
        for version in range(low, high + 1):
            cls, body = body_of(key, version, args.copies)
            leasts = array_leasts(cls)
            if not leasts:
                continue
            frame_check.check_request(cls, body)
            request = codec.decode_request(body).body
            ratio = reserved(cls, request) / len(body)
            rows.append((key, version, min(leasts), SLOT / min(leasts), ratio, max(leasts)))
    print(f"{'api':>4} {'ver':>3} {'least':>5} {'8/least':>7} {'packed':>7} {'count<=left':>11}")
    for key, version, least, bound, ratio, _ in rows:
        print(f"{key:>4} {version:>3} {least:>5} {bound:>7.2f} {ratio:>7.2f} {SLOT:>11.2f}")
    worst = max(rows, key=lambda r: r[4])
    best = min(SLOT / r[5] for r in rows)
    print(
        f"worst: frame_check bound {max(r[3] for r in rows):.2f}, packed {worst[4]:.2f} "
        f"(api {worst[0]} v{worst[1]}), count<=left {SLOT:.2f} slot bytes per body byte; "
        f"arrays of the largest elements: {best:.2f} under frame_check; "
        f"{len(rows)} versions with arrays"
    )
    _, small = body_of(worst[0], worst[1], 1000)
    per_copy = (len(body_of(worst[0], worst[1], 2000)[1]) - len(small)) / 1000
    copies = int(1_000_000 / max(per_copy, 1))
    with tempfile.NamedTemporaryFile(suffix=".bin") as handle:
        handle.write(body_of(worst[0], worst[1], copies)[1])
        handle.flush()
        child = subprocess.run(
            [sys.executable, __file__, "--child", handle.name],
            capture_output=True,
            text=True,
            check=True,
        )
    peak = json.loads(child.stdout)
    print(
        f"decoding api {worst[0]} v{worst[1]} of {peak['body']:,} bytes: peak RSS grew "
        f"{peak['peak_kib']:,} KiB ({peak['peak_kib'] * 1024 / peak['body']:.1f}x the body)"
    )


if __name__ == "__main__":
    main()
