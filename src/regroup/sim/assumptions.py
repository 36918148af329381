"""What a run assumed: the figures its verdict depends on, stated with the numbers.

The same scenario ranks the protocols differently under different
assumptions: without state to restore, eager's stop-the-world round costs
milliseconds and eager often comes out best; with a few seconds of restore per
newly assigned partition the order reverses. So every
result names them: the data rates, the processing cost, the restore, the
network, static or dynamic membership, and the Kafka configs that differ from
Kafka's defaults.

``assumptions(plan)`` is the JSON form (``simulate --json`` and ``compare
--json``, key ``assumptions``; docs/formats/simulate-json.md);
``assumption_lines`` the text form printed under a summary table, each line
within 80 columns.
"""

from __future__ import annotations

import textwrap
from typing import Any

from regroup.sim.settings import RunPlan

__all__ = ["assumption_lines", "assumptions"]


def assumptions(plan: RunPlan) -> dict[str, Any]:
    """The run's assumptions as one flat JSON object (see the module docstring)."""
    data = plan.scenario.data
    network = plan.scenario.network
    return {
        "members": plan.member_count,
        "topics": dict(plan.topics),
        "records_per_second": data.records_per_second,
        "produce_interval_ms": data.produce_interval_ms,
        "processing_us_per_record": data.processing_us_per_record,
        "max_poll_records": data.max_poll_records,
        "restore_ms": data.restore_ms,
        "idle_poll_ms": data.idle_poll_ms,
        "latency_ms": network.latency_ms,
        "jitter_ms": network.jitter_ms,
        "loss": network.loss,
        "static_membership": plan.static,
        "duration_ms": plan.duration_ms,
        "configs": {k: plan.stated_configs[k] for k in sorted(plan.stated_configs)},
    }


def _wrap(label: str, text: str, width: int) -> list[str]:
    indent = " " * 14
    return textwrap.wrap(
        text, width=width, initial_indent=f"  {label:<12}", subsequent_indent=indent
    ) or [f"  {label}"]


def assumption_lines(values: dict[str, Any], width: int = 80) -> list[str]:
    """``assumptions(...)`` as text lines of at most ``width`` columns."""
    rate = values["records_per_second"]
    data = (
        "no records (a group without a data plane)"
        if rate == 0
        else f"{rate} records/s per partition, produced every {values['produce_interval_ms']} ms"
    )
    processing = (
        f"{values['processing_us_per_record'] / 1000:g} ms per record, polls of up to "
        f"{values['max_poll_records']} records (max.poll.records)"
    )
    restore_ms = values["restore_ms"]
    restore = (
        "none: stateless consumers (so eager's one round costs little)"
        if restore_ms == 0
        else f"{restore_ms} ms per newly assigned partition batch before it is processed "
        "(charged even for a partition handed straight back: an upper bound)"
    )
    jitter, loss = values["jitter_ms"], values["loss"]
    network = f"{values['latency_ms']} ms one way" + (
        f" + up to {jitter} ms jitter" if jitter else ", no jitter"
    )
    network += f", {loss:.1%} loss" if loss else ", no loss"
    membership = (
        "static (KIP-345: group.instance.id per member)"
        if values["static_membership"]
        else "dynamic (no group.instance.id)"
    )
    configs = values["configs"]
    stated = ", ".join(f"{k}={v}" for k, v in configs.items()) if configs else "Kafka's defaults"
    lines = ["assumptions"]
    for label, text in (
        ("data", data),
        ("processing", processing),
        ("restore", restore),
        ("network", network),
        ("membership", membership),
        ("configs", stated),
    ):
        lines.extend(_wrap(label, text, width))
    return lines
