"""The console's overview page: the service at a glance, in charts drawn on the server.

Over the last hour, from the metrics history (memexdb.console.history): requests,
latency p50/p99, stores and searches, the embed queue. Over the last OVERVIEW_DAYS days,
from memex.overview_stats: the largest tenants and their growth, consolidation runs and
the memories they condensed. Operator keys only (the figures span every tenant).
"""

from __future__ import annotations

import time
from datetime import UTC, date, datetime, timedelta
from typing import Any

from markupsafe import Markup

from memexdb.client import AsyncMemex
from memexdb.console import charts
from memexdb.console.charts import Bars, Line
from memexdb.console.history import (
    WINDOW,
    History,
    Point,
    Sample,
    gauge,
    latency_ms,
    per_minute,
)
from memexdb.health import operations as health
from memexdb.health.models import OverviewFigure as Figure

OVERVIEW_DAYS = 14
OVERVIEW_TENANTS = 8  # the largest tenants ranked
GROWTH_TENANTS = 6  # of which the largest drawn growing (stacked per day)
MIN_SPAN_SAMPLES = 12  # the time axis spans the samples kept, and at least this many


def _line(name: str, points: list[Point]) -> Line:
    return Line(name, [(p.at, p.value) for p in points])


def _tenant(figure: Figure) -> str:
    return f"{figure.agent_id} / {figure.user_id}"


def _days(today: date) -> list[date]:
    return [today - timedelta(days=n) for n in range(OVERVIEW_DAYS - 1, -1, -1)]


def _latest(points: list[Point]) -> float | None:
    return next((p.value for p in reversed(points) if p.value is not None), None)


Chart = tuple[str, Markup]  # (title, svg)


def time_charts(samples: list[Sample], now: float, interval: float) -> list[Chart]:
    """The charts of the metrics history, on one time axis."""
    start = min(now - interval * MIN_SPAN_SAMPLES, samples[0].at if samples else now)
    axis: dict[str, Any] = {"start": start, "end": now}

    def chart(
        title: str, chart_id: str, lines: list[Line], unit: str = "", whole: bool = False
    ) -> Chart:
        return (title, charts.line_chart(chart_id, title, lines, unit=unit, whole=whole, **axis))

    return [
        chart(
            "Requests per minute",
            "chart-requests",
            [
                _line("all", per_minute(samples, lambda s: s.requests)),
                _line("4xx", per_minute(samples, lambda s: s.client_errors)),
                _line("5xx", per_minute(samples, lambda s: s.server_errors)),
            ],
        ),
        chart(
            "Request latency",
            "chart-latency",
            [_line("p50", latency_ms(samples, 0.5)), _line("p99", latency_ms(samples, 0.99))],
            unit=" ms",
        ),
        chart(
            "Stores and searches per minute",
            "chart-stores-searches",
            [
                _line("memories stored", per_minute(samples, lambda s: s.stores)),
                _line("searches", per_minute(samples, lambda s: s.searches)),
            ],
        ),
        chart(
            "Embed queue depth",
            "chart-embed-queue",
            [_line("memories waiting", gauge(samples, lambda s: s.queue_depth))],
            whole=True,
        ),
    ]


def day_charts(figures: list[Figure], today: date) -> list[Chart]:
    """The charts of memex.overview_stats."""
    days = _days(today)
    largest = [f for f in figures if f.metric == "tenant_memories"]
    growth: dict[str, dict[date, float]] = {_tenant(f): {} for f in largest[:GROWTH_TENANTS]}
    runs: dict[str, dict[date, float]] = {}
    condensed: dict[date, float] = {}
    for f in figures:
        if f.day is None:
            continue
        if f.metric == "memories_created" and _tenant(f) in growth:
            growth[_tenant(f)][f.day] = f.value
        elif f.metric == "consolidation_runs":
            runs.setdefault(f.kind or "", {})[f.day] = f.value
        elif f.metric == "memories_condensed":
            condensed[f.day] = f.value
    titles = (
        "Memories per tenant",
        "Memories created per day, largest tenants",
        "Consolidation runs per day",
        "Memories condensed per day",
    )
    return [
        (
            titles[0],
            charts.ranking("chart-tenants", titles[0], [(_tenant(f), f.value) for f in largest]),
        ),
        (
            titles[1],
            charts.day_bars(
                "chart-growth", titles[1], days, [Bars(n, v) for n, v in growth.items()]
            ),
        ),
        (
            titles[2],
            charts.day_bars(
                "chart-runs", titles[2], days, [Bars(k, v) for k, v in sorted(runs.items())]
            ),
        ),
        (
            titles[3],
            charts.day_bars("chart-condensed", titles[3], days, [Bars("condensed", condensed)]),
        ),
    ]


def headline(samples: list[Sample], figures: list[Figure]) -> list[tuple[str, str, str]]:
    """The figures above the charts: (id, label, value)."""
    totals = {f.metric: f.value for f in figures if f.agent_id is None and f.day is None}
    requests = _latest(per_minute(samples, lambda s: s.requests))
    p99 = _latest(latency_ms(samples, 0.99))
    depth = samples[-1].queue_depth if samples else None

    def shown(value: float | None, unit: str = "") -> str:
        return "none" if value is None else f"{charts.number(value)}{unit}"

    return [
        ("stat-requests", "requests / min", shown(requests)),
        ("stat-p99", "p99 latency", shown(p99, " ms")),
        ("stat-memories", "memories", shown(totals.get("memories"))),
        ("stat-tenants", "tenants", shown(totals.get("tenants"))),
        ("stat-queue", "embed queue", shown(depth)),
    ]


async def overview_figures(memex: AsyncMemex) -> list[Figure]:
    """memex.overview_stats as the caller (operator keys only)."""
    return await memex.call(health.OVERVIEW_STATS, days=OVERVIEW_DAYS, tenants=OVERVIEW_TENANTS)


async def overview_values(
    caller: AsyncMemex, service: AsyncMemex, history: History
) -> dict[str, Any]:
    """What overview.html shows: `caller` (the cookie's key) reads the database's figures
    (so a key that may not is refused first), then the history gets a fresh sample."""
    figures = await overview_figures(caller)
    samples = await history.fresh(service)
    now = time.time()
    today = datetime.fromtimestamp(now, UTC).date()
    return {
        "stats": headline(samples, figures),
        "now_charts": time_charts(samples, now, history.interval),
        "day_charts": day_charts(figures, today),
        "interval": history.interval,
        "window": history.interval * WINDOW,
        "kept_minutes": history.interval * (history.samples.maxlen or 0) / 60,
        "days": OVERVIEW_DAYS,
    }
