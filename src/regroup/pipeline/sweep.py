"""Sweeps: a grid of run specs becomes a DataFrame; every run is simulated inside a Spark task.

Grid file (TOML or JSON; every key optional except ``scenarios``)::

    scenarios = ["scale-out", "crash", "my-scenario.toml"]   # built-in names or files
    protocols = ["eager", "cooperative", "consumer"]         # default: the scenario's
    assignors = ["range", "cooperative-sticky", "uniform"]  # default: the protocol's
    members = [3, 6]                                        # default: the scenario's
    partitions = [12]                                       # per topic; default: the scenario's
    seeds = 3                                               # a count (0..n-1) or a list
    configs = [{}, {"session.timeout.ms" = "30000"}]        # Kafka configs, one set per run
    data = [{restore_ms = 5000}]                            # [data] overrides, one set per run

``data`` replaces keys of each scenario's ``[data]`` table (the processing
model: ``regroup.sim.scenario.DataConfig``'s fields), one set per run; with
more than one set, the run ids say which (``.d0``, ``.d1`` ...).

The grid is the cartesian product. A combination the simulator refuses (an
assignor that does not run that protocol, a scenario whose ``protocols`` leave
the protocol out) is skipped and reported, not run: ``expand`` builds each
``Simulation`` once on the driver, which validates it without running it.

Why ``mapInArrow``. The runs are independent and CPU-bound in Python, so the
unit of parallelism is one run per Spark task: the specs DataFrame is
repartitioned to (up to) one row per partition, and ``mapInArrow`` hands each
Python worker its spec rows as an Arrow batch and takes the event rows back as
Arrow batches of ``EVENT_SCHEMA``. A run's log is thousands of rows with
nested columns (the partition lists, the topic maps); Arrow moves them to the
JVM column-wise without pickling each row (``mapPartitions`` on an RDD would)
and without a pandas round trip that buys nothing here (``mapInPandas`` would
convert every batch to and from pandas). Scenario files are read on the driver
and shipped inside the spec as JSON, so a cluster's executors need only the
``regroup`` package, not the files.

Output (``run_sweep``): ``OUT/runs`` (the specs, Parquet) and ``OUT/events``
(partitioned by ``scenario`` and ``run_id``, see ``schema``).
"""

from __future__ import annotations

import itertools
import json
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import (
    BooleanType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from regroup.pipeline.schema import EVENT_SCHEMA, event_rows, rows_to_arrow_batches
from regroup.sim.scenario import (
    BUILTINS,
    PROTOCOLS,
    Scenario,
    ScenarioError,
    builtin_scenario,
    parse_scenario,
)
from regroup.sim.scenario import with_data as scenario_with_data
from regroup.sim.settings import SettingsError
from regroup.sim.simulation import Settings, Simulation, run_simulation

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "SPEC_SCHEMA",
    "Grid",
    "GridError",
    "RunSpec",
    "expand",
    "load_grid",
    "run_sweep",
    "simulate_batches",
    "sized",
    "specs_frame",
    "with_data",
]


class GridError(ValueError):
    """A grid that cannot be read or expanded (one-line message)."""


@dataclass(frozen=True, slots=True)
class Grid:
    """The axes of a sweep (``None`` in an axis: the scenario's own value)."""

    scenarios: tuple[str, ...]
    protocols: tuple[str | None, ...] = (None,)
    assignors: tuple[str | None, ...] = (None,)
    members: tuple[int | None, ...] = (None,)
    partitions: tuple[int | None, ...] = (None,)
    seeds: tuple[int, ...] = (0,)
    configs: tuple[Mapping[str, str], ...] = field(default_factory=lambda: ({},))
    data: tuple[Mapping[str, int], ...] = field(default_factory=lambda: ({},))


@dataclass(frozen=True, slots=True)
class RunSpec:
    """One run of a sweep: everything a Spark task needs to simulate it."""

    run_id: str
    scenario: str
    #: The scenario file's content as JSON (``None``: ``scenario`` is a built-in).
    scenario_json: str | None
    protocol: str | None
    assignor: str | None
    members: int | None
    partitions: int | None
    seed: int
    config_index: int
    configs: Mapping[str, str]
    #: Overrides of the scenario's ``[data]`` table (``DataConfig`` fields).
    data: Mapping[str, int] = field(default_factory=dict)
    #: Static membership (KIP-345) for every member; ``None``: the scenario's own setting.
    static: bool | None = None
    #: The name the run's scenario goes by in the event log and the tables (``None``: its
    #: own). A variant of a scenario (other data, static members) that is compared with
    #: it is a scenario of its own there, so the summaries never average the two.
    name: str | None = None

    def settings(self) -> Settings:
        scenario = (
            builtin_scenario(self.scenario)
            if self.scenario_json is None
            else parse_scenario(json.loads(self.scenario_json))
        )
        scenario = sized(with_data(scenario, self.data), self.members)
        if self.name is not None:
            scenario = replace(scenario, name=self.name)
        return Settings(
            scenario=scenario,
            protocol=self.protocol,
            assignor=self.assignor,
            members=self.members,
            partitions=self.partitions,
            seed=self.seed,
            static=self.static,
            configs=dict(self.configs),
        )


SPEC_SCHEMA = StructType(
    [
        StructField("run_id", StringType(), False),
        StructField("scenario", StringType(), False),
        StructField("scenario_json", StringType(), True),
        StructField("protocol", StringType(), True),
        StructField("assignor", StringType(), True),
        StructField("members", IntegerType(), True),
        StructField("partitions", IntegerType(), True),
        StructField("seed", LongType(), False),
        StructField("config_index", IntegerType(), False),
        StructField("configs", MapType(StringType(), StringType(), False), False),
        StructField("data", MapType(StringType(), LongType(), False), False),
        StructField("static", BooleanType(), True),
        StructField("name", StringType(), True),
    ]
)


# -- the grid ------------------------------------------------------------------------------


def sized(scenario: Scenario, members: int | None) -> Scenario:
    """``scenario`` with ``members`` as its group size (``None``: unchanged).

    ``Settings.members`` alone starts that many consumers, but a scenario
    without ``duration_ms`` ends ``settle_ms`` after its last action as timed
    for ``Scenario.members`` (``total_duration_ms``): a rolling bounce of 16
    members would be cut off after the third. Setting the scenario's own size
    times the actions for the group that runs.
    """
    if members is None or members == scenario.members:
        return scenario
    return replace(scenario, members=members)


def with_data(scenario: Scenario, data: Mapping[str, int]) -> Scenario:
    """``scenario`` with keys of its ``[data]`` table replaced; ``GridError`` if one is wrong."""
    try:
        return scenario_with_data(scenario, data)
    except ScenarioError as error:
        raise GridError(str(error)) from None


def _axis(
    data: Mapping[str, Any], key: str, kind: type, default: tuple[Any, ...]
) -> tuple[Any, ...]:
    value = data.get(key)
    if value is None:
        return default
    if not isinstance(value, list) or not value:
        raise GridError(f"{key} must be a non-empty list")
    for item in value:
        if not isinstance(item, kind) or isinstance(item, bool):
            raise GridError(f"{key}: {item!r} is not a {kind.__name__}")
    return tuple(value)


def parse_grid(data: Mapping[str, Any]) -> Grid:
    """A grid from its parsed TOML/JSON form; ``GridError`` on any mistake."""
    known = set(Grid.__dataclass_fields__)
    unknown = sorted(set(data) - known)
    if unknown:
        raise GridError(f"unknown grid key {unknown[0]!r}")
    scenarios = _axis(data, "scenarios", str, ())
    if not scenarios:
        raise GridError("a grid needs scenarios = [...]")
    seeds_value = data.get("seeds", [0])
    if isinstance(seeds_value, int) and not isinstance(seeds_value, bool):
        if seeds_value < 1:
            raise GridError("seeds must be a count >= 1 or a list of seeds")
        seeds = tuple(range(seeds_value))
    else:
        seeds = _axis(data, "seeds", int, (0,))
    configs = data.get("configs", [{}])
    if not isinstance(configs, list) or not all(isinstance(c, Mapping) for c in configs):
        raise GridError("configs must be a list of tables of Kafka configs")
    data_sets = data.get("data", [{}])
    if not isinstance(data_sets, list) or not all(isinstance(d, Mapping) for d in data_sets):
        raise GridError("data must be a list of tables of [data] keys")
    for data_set in data_sets:
        for key, value in data_set.items():
            if not isinstance(value, int) or isinstance(value, bool):
                raise GridError(f"data: {key} = {value!r} is not an integer")
    protocols = _axis(data, "protocols", str, (None,))
    bad = [p for p in protocols if p is not None and p not in PROTOCOLS]
    if bad:
        raise GridError(f"protocol {bad[0]!r} is not one of {', '.join(PROTOCOLS)}")
    members = _axis(data, "members", int, (None,))
    partitions = _axis(data, "partitions", int, (None,))
    for key, values in (("members", members), ("partitions", partitions)):
        small = [v for v in values if v is not None and v < 1]
        if small:
            raise GridError(f"{key}: {small[0]} is not a group size >= 1")
    return Grid(
        scenarios=scenarios,
        protocols=protocols,
        assignors=_axis(data, "assignors", str, (None,)),
        members=members,
        partitions=partitions,
        seeds=seeds,
        configs=tuple({str(k): str(v) for k, v in c.items()} for c in configs) or ({},),
        data=tuple({str(k): int(v) for k, v in d.items()} for d in data_sets) or ({},),
    )


def load_grid(path: str | Path) -> Grid:
    """A grid file (``.toml`` or ``.json``)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise GridError(f"cannot read {path}: {error.strerror}") from None
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as error:
        raise GridError(f"{path}: {error}") from None
    if not isinstance(data, dict):
        raise GridError(f"{path}: a grid is a table / JSON object")
    return parse_grid(data)


def _scenario(name_or_path: str) -> tuple[Scenario, str | None]:
    """The scenario and, for a file, its content as JSON for the executors."""
    if name_or_path in BUILTINS:
        return builtin_scenario(name_or_path), None
    path = Path(name_or_path)
    if path.suffix not in (".toml", ".json"):
        raise GridError(
            f"unknown scenario {name_or_path!r}: not a built-in "
            f"({', '.join(BUILTINS)}) nor a .toml/.json file"
        )
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
        scenario = parse_scenario(data)
    except OSError as error:
        raise GridError(f"cannot read {path}: {error.strerror}") from None
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, ScenarioError) as error:
        raise GridError(f"{path}: {error}") from None
    return scenario, json.dumps(data, sort_keys=True)


def expand(grid: Grid) -> tuple[list[RunSpec], list[str]]:
    """The runs of a grid, and one line per combination skipped (with the simulator's reason)."""
    specs: list[RunSpec] = []
    skipped: list[str] = []
    seen: set[str] = set()
    for name in grid.scenarios:
        scenario, scenario_json = _scenario(name)
        combos = itertools.product(
            enumerate(grid.data),
            grid.protocols,
            grid.assignors,
            grid.members,
            grid.partitions,
            enumerate(grid.configs),
        )
        for (data_index, data), protocol, assignor, members, partitions, (
            config_index,
            configs,
        ) in combos:
            settings = Settings(
                scenario=sized(with_data(scenario, data), members),
                protocol=protocol,
                assignor=assignor,
                members=members,
                partitions=partitions,
                configs=dict(configs),
            )
            label = (
                f"{scenario.name} {protocol or scenario.protocol} {assignor or 'default'} "
                f"members={members or scenario.members} configs#{config_index}"
            )
            if (protocol or scenario.protocol) not in scenario.protocols:
                skipped.append(f"{label}: the scenario is not for this protocol")
                continue
            try:
                simulation = Simulation(settings, keep_events=False)
            except SettingsError as error:
                # A request that contradicts itself is refused, as ``simulate`` refuses it.
                raise GridError(f"{label}: {error}") from None
            except (ScenarioError, ValueError) as error:
                skipped.append(f"{label}: {error}")
                continue
            parts = "d" if partitions is None else str(partitions)
            data_tag = f".d{data_index}" if len(grid.data) > 1 else ""
            for seed in grid.seeds:
                run_id = (
                    f"{scenario.name}.{simulation.protocol}.{simulation.assignor}"
                    f".m{simulation.member_count}.p{parts}.c{config_index}{data_tag}.s{seed}"
                )
                if run_id in seen:
                    continue
                seen.add(run_id)
                specs.append(
                    RunSpec(
                        run_id=run_id,
                        scenario=scenario.name if scenario_json is None else name,
                        scenario_json=scenario_json,
                        protocol=protocol,
                        assignor=assignor,
                        members=members,
                        partitions=partitions,
                        seed=seed,
                        config_index=config_index,
                        configs=dict(configs),
                        data=dict(data),
                    )
                )
    return specs, skipped


# -- running ---------------------------------------------------------------------------------


def specs_frame(spark: SparkSession, specs: Sequence[RunSpec]) -> DataFrame:
    """The run specs as a DataFrame of ``SPEC_SCHEMA``, one run per partition (up to a cap)."""
    rows = [
        (
            s.run_id,
            s.scenario,
            s.scenario_json,
            s.protocol,
            s.assignor,
            s.members,
            s.partitions,
            s.seed,
            s.config_index,
            dict(s.configs),
            dict(s.data),
            s.static,
            s.name,
        )
        for s in specs
    ]
    frame = spark.createDataFrame(rows, SPEC_SCHEMA)
    slots = max(1, spark.sparkContext.defaultParallelism) * 8
    return frame.repartition(max(1, min(len(rows), slots)))


def _spec(row: Mapping[str, Any]) -> RunSpec:
    configs = row["configs"]
    return RunSpec(
        run_id=row["run_id"],
        scenario=row["scenario"],
        scenario_json=row["scenario_json"],
        protocol=row["protocol"],
        assignor=row["assignor"],
        members=row["members"],
        partitions=row["partitions"],
        seed=int(row["seed"]),
        config_index=int(row["config_index"]),
        configs=dict(configs) if isinstance(configs, Mapping) else dict(configs or ()),
        data=_mapping(row.get("data")),
        static=row.get("static"),
        name=row.get("name"),
    )


def _mapping(value: Any) -> dict[str, Any]:
    """An Arrow map value (a mapping, or Arrow's list of key/value pairs) as a dict."""
    if value is None:
        return {}
    return dict(value)


def simulate_batches(batches: Iterator[Any]) -> Iterator[Any]:
    """The ``mapInArrow`` function: spec batches in, event-row batches (``EVENT_SCHEMA``) out.

    It runs in the Python worker: each spec is simulated there, with the real
    protocol code, and its log leaves as Arrow batches.
    """
    for batch in batches:
        for row in batch.to_pylist():
            spec = _spec(row)
            settings = spec.settings()
            result = run_simulation(settings, keep_events=True)
            scenario_dir = settings.scenario.name
            yield from rows_to_arrow_batches(
                event_rows(result.events, scenario=scenario_dir, run_id=spec.run_id)
            )


def simulate(specs: DataFrame, done: Any = None) -> DataFrame:
    """The event rows of every run of ``specs`` (lazy; each run in a Spark task).

    ``done``: an optional Spark accumulator counting finished runs (the
    driver sees each task's count when the task ends: a progress bar).
    """
    if done is None:
        return specs.mapInArrow(simulate_batches, EVENT_SCHEMA)
    counter = done

    def counted(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            yield from simulate_batches(iter([batch]))
            counter.add(batch.num_rows)

    return specs.mapInArrow(counted, EVENT_SCHEMA)


def run_sweep(
    spark: SparkSession, specs: Sequence[RunSpec], out_dir: str | Path, *, done: Any = None
) -> dict[str, str]:
    """Simulate ``specs`` on Spark: ``OUT/runs`` and ``OUT/events`` (Parquet); name -> path.

    ``out_dir`` is a local directory or any URI Spark writes (``regroup.pipeline.output``).
    """
    from regroup.pipeline.output import Output

    out = Output(out_dir)
    frame = specs_frame(spark, specs)
    runs_path = out.join("runs")
    events_path = out.join("events")
    frame.drop("scenario_json").coalesce(1).write.mode("overwrite").parquet(runs_path)
    simulate(frame, done).write.partitionBy("scenario", "run_id").mode("overwrite").parquet(
        events_path
    )
    return {"runs": runs_path, "events": events_path}
