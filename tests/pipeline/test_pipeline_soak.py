"""``regroup soak --spark``: seeds run in Spark tasks give the summary a local loop gives."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from regroup.pipeline.soak import soak_on_spark
from regroup.sim.soak.check import run_scenario
from regroup.sim.soak.schedule import Limits, draw_scenario

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# One worker runs the Spark tests and the real-client interop tests, one after another.
pytestmark = pytest.mark.xdist_group("heavy")


def test_soak_on_spark_matches_the_local_loop(spark: SparkSession) -> None:
    limits = Limits(max_members=3, max_partitions=4)
    protocols, seeds = ("eager", "consumer"), range(3)
    summary = soak_on_spark(spark, protocols, seeds, limits)
    assert summary.total.seeds == 6 and summary.violations == 0
    assert set(summary.protocols) == set(protocols)
    for protocol in protocols:
        local = [run_scenario(draw_scenario(protocol, s, limits), protocol, s) for s in seeds]
        totals = summary.protocols[protocol]
        assert totals.steps == sum(o.steps for o in local)
        assert totals.virtual_ms == sum(o.virtual_ms for o in local)
        assert totals.faults == sum((o.faults for o in local), start=type(local[0].faults)())
