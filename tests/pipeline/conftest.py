"""One local[1] SparkSession for every pipeline test (starting a JVM is the slow part)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from regroup.pipeline.spark import build_session

    session = build_session("local[1]", app_name="regroup-tests", shuffle_partitions=1)
    yield session
    session.stop()
