"""The KIP-429 consumer metrics, computed on the injected clock.

KIP-429, "Consumer Metrics": listener callback latency
(``partitions-{revoked,assigned,lost}-latency-{avg,max}``), rebalance rate and
latency (``rebalance-rate-per-hour``, ``rebalance-total``,
``rebalance-latency-{avg,max,total}``, ``failed-rebalance-rate-per-hour``,
``failed-rebalance-total``) and the gauge ``last-rebalance-seconds-ago``.

Kafka registers the callback latencies as ``partition-revoked-latency-avg``
(singular; ``RebalanceCallbackMetricsManager``); ``snapshot`` reports both
spellings. The statistics are Kafka's, window for window
(``org.apache.kafka.common.metrics.stats``): avg, max and rate are *sampled*
stats over ``metrics.num.samples`` windows of ``metrics.sample.window.ms``
(2 x 30 s by default), so they decay to NaN (avg, max) or 0 (rate) once no
rebalance happened for a minute; totals are cumulative. A rate divides by the
elapsed window, at least ``(samples - 1)`` full windows (Kafka's
``Rate.windowSize``), expressed in hours.

Where Kafka records (``AbstractCoordinator``): a rebalance starts when a
JoinGroup is initiated and no start is pending (retries after a failure keep
the first start); it succeeds when the SyncGroup response arrives (before the
``onJoinComplete`` callbacks); every failed JoinGroup/SyncGroup counts as a
failed rebalance. Callback latency is recorded only for a callback that
returned normally.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["MemberMetrics", "SampledStat"]

_MS_PER_HOUR = 3_600_000.0


@dataclass(slots=True)
class _Sample:
    value: float
    event_count: int
    last_window_ms: int


class SampledStat:
    """Kafka's ``SampledStat`` with ``Avg``, ``Max`` or ``WindowedCount`` combining."""

    __slots__ = ("_current", "_kind", "_num_samples", "_samples", "_window_ms")

    def __init__(self, kind: str, window_ms: int, num_samples: int) -> None:
        if kind not in ("avg", "max", "count"):
            raise ValueError(f"unknown sampled stat {kind!r}")
        self._kind = kind
        self._window_ms = window_ms
        self._num_samples = num_samples
        self._samples: list[_Sample] = []
        self._current = 0

    def _initial(self) -> float:
        return -math.inf if self._kind == "max" else 0.0

    def _new_sample(self, now_ms: int) -> _Sample:
        return _Sample(self._initial(), 0, now_ms)

    def record(self, value: float, now_ms: int) -> None:
        samples = self._samples
        if samples:
            sample = samples[self._current]
            if now_ms - sample.last_window_ms >= self._window_ms:
                sample = self._advance(now_ms)
        else:
            sample = self._new_sample(now_ms)
            samples.append(sample)
        kind = self._kind
        if kind == "avg":
            sample.value += value
        elif kind == "max":
            if value > sample.value:
                sample.value = value
        else:
            sample.value += 1.0
        sample.event_count += 1

    def _advance(self, now_ms: int) -> _Sample:
        """The current window has ended: move to the next sample (reused once all exist)."""
        self._current = (self._current + 1) % self._num_samples
        if self._current >= len(self._samples):
            sample = self._new_sample(now_ms)
            self._samples.append(sample)
        else:
            sample = self._samples[self._current]
            self._reset(sample, now_ms)
        return sample

    def _reset(self, sample: _Sample, now_ms: int) -> None:
        sample.value = self._initial()
        sample.event_count = 0
        sample.last_window_ms = now_ms

    def purge_obsolete(self, now_ms: int) -> None:
        expire_age = self._num_samples * self._window_ms
        for sample in self._samples:
            if now_ms - sample.last_window_ms >= expire_age:
                self._reset(sample, now_ms)

    def measure(self, now_ms: int) -> float:
        self.purge_obsolete(now_ms)
        count = sum(s.event_count for s in self._samples)
        if self._kind == "count":
            return sum(s.value for s in self._samples)
        if count == 0:
            return math.nan
        if self._kind == "max":
            return max(s.value for s in self._samples)
        return sum(s.value for s in self._samples) / count

    def window_size_ms(self, now_ms: int) -> int:
        """Kafka's ``Rate.windowSize``: the elapsed window, padded to ``samples - 1`` windows."""
        self.purge_obsolete(now_ms)
        oldest = min((s.last_window_ms for s in self._samples), default=now_ms)
        elapsed = now_ms - oldest
        full_windows = elapsed // self._window_ms
        min_full_windows = self._num_samples - 1
        if full_windows < min_full_windows:
            elapsed += (min_full_windows - full_windows) * self._window_ms
        return max(elapsed, 1)

    def rate_per_hour(self, now_ms: int) -> float:
        """Kafka's ``Rate(TimeUnit.HOURS, WindowedCount)``."""
        count = self.measure(now_ms)
        return count / (self.window_size_ms(now_ms) / _MS_PER_HOUR)


class _Latency:
    __slots__ = ("avg", "max")

    def __init__(self, window_ms: int, samples: int) -> None:
        self.avg = SampledStat("avg", window_ms, samples)
        self.max = SampledStat("max", window_ms, samples)

    def record(self, value: float, now_ms: int) -> None:
        self.avg.record(value, now_ms)
        self.max.record(value, now_ms)


#: Callback names as the listener invoker reports them.
CALLBACKS = ("revoked", "assigned", "lost")


class MemberMetrics:
    """One member's KIP-429 metrics."""

    def __init__(self, window_ms: int = 30000, num_samples: int = 2) -> None:
        self._callbacks = {name: _Latency(window_ms, num_samples) for name in CALLBACKS}
        self._rebalance_latency = _Latency(window_ms, num_samples)
        self._rebalance_rate = SampledStat("count", window_ms, num_samples)
        self._failed_rate = SampledStat("count", window_ms, num_samples)
        self.rebalance_total = 0
        self.rebalance_latency_total = 0.0
        self.failed_rebalance_total = 0
        #: Kafka: ``lastRebalanceStartMs`` (-1: none pending) and ``lastRebalanceEndMs``.
        self.last_rebalance_start_ms = -1
        self.last_rebalance_end_ms = -1

    # -- recording (Kafka's call sites are named in the module docstring) -------------

    def rebalance_started(self, now_ms: int) -> None:
        if self.last_rebalance_start_ms == -1:
            self.last_rebalance_start_ms = now_ms

    def rebalance_succeeded(self, now_ms: int) -> None:
        start = self.last_rebalance_start_ms if self.last_rebalance_start_ms != -1 else now_ms
        latency = float(now_ms - start)
        self.last_rebalance_end_ms = now_ms
        self.last_rebalance_start_ms = -1
        self._rebalance_latency.record(latency, now_ms)
        self._rebalance_rate.record(1.0, now_ms)
        self.rebalance_total += 1
        self.rebalance_latency_total += latency

    def rebalance_failed(self, now_ms: int) -> None:
        self._failed_rate.record(1.0, now_ms)
        self.failed_rebalance_total += 1

    def callback_completed(self, callback: str, latency_ms: int, now_ms: int) -> None:
        self._callbacks[callback].record(float(latency_ms), now_ms)

    # -- reading ----------------------------------------------------------------------

    def last_rebalance_seconds_ago(self, now_ms: int) -> float:
        if self.last_rebalance_end_ms == -1:
            return -1.0
        return float((now_ms - self.last_rebalance_end_ms) // 1000)

    def snapshot(self, now_ms: int) -> dict[str, float]:
        """Every metric by name, measured at ``now_ms``."""
        out: dict[str, float] = {
            "rebalance-latency-avg": self._rebalance_latency.avg.measure(now_ms),
            "rebalance-latency-max": self._rebalance_latency.max.measure(now_ms),
            "rebalance-latency-total": self.rebalance_latency_total,
            "rebalance-total": float(self.rebalance_total),
            "rebalance-rate-per-hour": self._rebalance_rate.rate_per_hour(now_ms),
            "failed-rebalance-total": float(self.failed_rebalance_total),
            "failed-rebalance-rate-per-hour": self._failed_rate.rate_per_hour(now_ms),
            "last-rebalance-seconds-ago": self.last_rebalance_seconds_ago(now_ms),
        }
        for name, latency in self._callbacks.items():
            avg = latency.avg.measure(now_ms)
            peak = latency.max.measure(now_ms)
            for prefix in (f"partitions-{name}", f"partition-{name}"):
                out[f"{prefix}-latency-avg"] = avg
                out[f"{prefix}-latency-max"] = peak
        return out
