"""Charts drawn on the server as inline SVG: no script, no chart library, nothing but
the page itself (the console's CSP allows no inline style, so colours are CSS classes
`s0`..`s5` of console.css and sizes are SVG attributes).

Three kinds: lines over time (`line_chart`), bars per day (`day_bars`, stacked) and
horizontal bars per label (`ranking`). Each takes plain numbers and returns markup.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime

from markupsafe import Markup, escape

WIDTH = 560
HEIGHT = 220
SERIES_CLASSES = 6  # s0..s5 in console.css
_LEFT, _RIGHT, _BOTTOM = 46, 14, 24
_LEGEND_ROW = 17
_CHAR_WIDTH = 6.8  # of the legend's 11.5px font, to wrap its rows


@dataclass(frozen=True, slots=True)
class Line:
    """One series of a line chart: (unix time, value or None for a gap)."""

    name: str
    points: Sequence[tuple[float, float | None]]


@dataclass(frozen=True, slots=True)
class Bars:
    """One series of a bar chart: a value per day (missing days: 0)."""

    name: str
    values: dict[date, float]


def number(value: float) -> str:
    """A short label: 0, 7, 12.5, 0.25, 1.2k, 3.4M."""
    size = abs(value)
    if size >= 1e6:
        return f"{value / 1e6:.1f}M".replace(".0M", "M")
    if size >= 1e4:
        return f"{value / 1e3:.0f}k"
    if size >= 1e3:
        return f"{value / 1e3:.1f}k".replace(".0k", "k")
    if size >= 10 or value == int(value):
        return f"{value:.0f}"
    if size >= 1:
        return f"{value:.1f}"
    return f"{value:.2g}"


def y_scale(largest: float, *, whole: bool = False) -> tuple[float, int]:
    """(step, gridlines) of a y axis from 0 that holds `largest`: a step of 1, 2, 2.5 or
    5 times a power of ten (`whole`: at least 1, for counts), 2 to 5 of them."""
    if largest <= 0:
        return 1.0, 1
    rough = largest / 4
    power = 10.0 ** math.floor(math.log10(rough))
    step = next(s * power for s in (1, 2, 2.5, 5, 10) if rough <= s * power * (1 + 1e-9))
    if whole:
        step = max(1.0, 2.0 if step == 2.5 else step)
    return step, max(2, math.ceil(largest / step - 1e-9))


class _Plot:
    """An SVG of `width` x `height`: the legend's rows on top, then the plot area."""

    def __init__(
        self, chart_id: str, title: str, legend: Sequence[str], width: int, height: int
    ) -> None:
        self.width, self.height = width, height
        self.parts = [
            f'<svg class="chart" id="{escape(chart_id)}" viewBox="0 0 {width} {height}"'
            f' width="{width}" height="{height}" role="img" aria-label="{escape(title)}"'
            ' xmlns="http://www.w3.org/2000/svg">',
            f"<title>{escape(title)}</title>",
        ]
        rows = self._legend(legend)
        self.top = 8 + rows * _LEGEND_ROW + 8
        self.bottom = height - _BOTTOM
        self.left, self.right = _LEFT, width - _RIGHT

    def _legend(self, labels: Sequence[str]) -> int:
        """Draw the legend, wrapped into rows; the number of rows."""
        x, row = float(_LEFT), 0
        for i, label in enumerate(labels):
            needed = 14 + _CHAR_WIDTH * len(label)
            if x > _LEFT and x + needed > self.width - _RIGHT:
                x, row = float(_LEFT), row + 1
            y = 8 + row * _LEGEND_ROW
            self.parts.append(
                f'<rect class="s{i % SERIES_CLASSES} key" x="{x:.1f}" y="{y + 1}" width="10"'
                ' height="10" rx="2"/>'
            )
            self.parts.append(
                f'<text class="legend" x="{x + 14:.1f}" y="{y + 10}">{escape(label)}</text>'
            )
            x += needed + 14
        return row + 1 if labels else 0

    def y_axis(self, largest: float, *, whole: bool = False) -> float:
        """Gridlines labelled on the left; the value at the top of the plot."""
        step, lines = y_scale(largest, whole=whole)
        for k in range(lines + 1):
            y = self.bottom - (self.bottom - self.top) * k / lines
            self.parts.append(
                f'<line class="grid" x1="{self.left}" x2="{self.right}" y1="{y:.1f}" y2="{y:.1f}"/>'
            )
            self.parts.append(
                f'<text class="tick" x="{self.left - 6}" y="{y + 4:.1f}" text-anchor="end">'
                f"{number(step * k)}</text>"
            )
        return step * lines

    def x_label(self, x: float, text: str) -> None:
        self.parts.append(
            f'<text class="tick" x="{x:.1f}" y="{self.height - 6}" text-anchor="middle">'
            f"{escape(text)}</text>"
        )

    def empty(self, message: str) -> None:
        self.parts.append(
            f'<text class="empty" x="{(self.left + self.right) / 2:.0f}"'
            f' y="{(self.top + self.bottom) / 2 + 4:.0f}" text-anchor="middle">'
            f"{escape(message)}</text>"
        )

    def markup(self) -> Markup:
        return Markup("".join([*self.parts, "</svg>"]))  # noqa: S704 (its texts are escaped)


def _latest(line: Line, unit: str) -> str:
    last = next((v for _, v in reversed(line.points) if v is not None), None)
    return line.name if last is None else f"{line.name} {number(last)}{unit}"


def _time_step(span: float) -> float:
    """Seconds between time labels: at most seven along the axis."""
    for step in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600):
        if span / step <= 7:
            return float(step)
    return 7200.0


def line_chart(
    chart_id: str,
    title: str,
    lines: Sequence[Line],
    *,
    start: float,
    end: float,
    unit: str = "",
    whole: bool = False,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> Markup:
    """Lines over the time from `start` to `end` (unix times; labels in UTC), the first
    one shaded below; the legend shows each line's latest value. `whole`: the values are
    counts (no fractions on the axis)."""
    plot = _Plot(chart_id, title, [_latest(line, unit) for line in lines], width, height)
    values = [v for line in lines for _, v in line.points if v is not None]
    top = plot.y_axis(max(values, default=0.0), whole=whole)
    span = max(end - start, 1.0)

    def x(at: float) -> float:
        return plot.left + (plot.right - plot.left) * (at - start) / span

    def y(value: float) -> float:
        return plot.bottom - (plot.bottom - plot.top) * min(max(value, 0.0), top) / top

    step = _time_step(span)
    tick = math.ceil(start / step) * step
    while tick <= end:
        fmt = "%H:%M" if step >= 60 else "%H:%M:%S"
        plot.x_label(x(tick), datetime.fromtimestamp(tick, UTC).strftime(fmt))
        tick += step
    for i, line in enumerate(lines):
        css = f"s{i % SERIES_CLASSES}"
        runs: list[list[tuple[float, float]]] = [[]]
        for at, value in line.points:
            if value is None:
                runs.append([])
            elif start <= at <= end:
                runs[-1].append((x(at), y(value)))
        for run in (r for r in runs if r):
            path = " ".join(
                f"{'L' if j else 'M'}{px:.1f},{py:.1f}" for j, (px, py) in enumerate(run)
            )
            if i == 0 and len(run) > 1:
                area = f"{path} L{run[-1][0]:.1f},{plot.bottom} L{run[0][0]:.1f},{plot.bottom} Z"
                plot.parts.append(f'<path class="{css} area" d="{area}"/>')
            plot.parts.append(f'<path class="{css} line" d="{path}"/>')
            if len(run) == 1:
                px, py = run[0]
                plot.parts.append(
                    f'<circle class="{css} dot" cx="{px:.1f}" cy="{py:.1f}" r="2.5"/>'
                )
    if not values:
        plot.empty("no data yet")
    return plot.markup()


def day_bars(
    chart_id: str,
    title: str,
    days: Sequence[date],
    series: Sequence[Bars],
    *,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> Markup:
    """A bar per day (counts), the series stacked in it; the legend shows each series'
    total."""
    legend = [f"{s.name} {number(sum(s.values.get(d, 0.0) for d in days))}" for s in series]
    plot = _Plot(chart_id, title, legend, width, height)
    totals = [sum(s.values.get(d, 0.0) for s in series) for d in days]
    top = plot.y_axis(max(totals, default=0.0), whole=True)
    slot = (plot.right - plot.left) / max(len(days), 1)
    bar = max(slot * 0.7, 1.0)
    every = max(1, math.ceil(len(days) / 7))
    for i, day in enumerate(days):
        left = plot.left + slot * i + (slot - bar) / 2
        base = float(plot.bottom)
        for k, s in enumerate(series):
            value = s.values.get(day, 0.0)
            if value <= 0:
                continue
            h = (plot.bottom - plot.top) * value / top
            base -= h
            plot.parts.append(
                f'<rect class="s{k % SERIES_CLASSES} bar" x="{left:.1f}" y="{base:.1f}"'
                f' width="{bar:.1f}" height="{h:.1f}"><title>{escape(s.name)}, {day}:'
                f" {number(value)}</title></rect>"
            )
        if (len(days) - 1 - i) % every == 0:  # the newest day always labelled
            plot.x_label(left + bar / 2, f"{day:%m-%d}")
    if not any(totals):
        plot.empty("nothing in these days")
    return plot.markup()


def ranking(
    chart_id: str,
    title: str,
    rows: Sequence[tuple[str, float]],
    *,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> Markup:
    """A horizontal bar per (label, value), in the order given (largest first)."""
    plot = _Plot(chart_id, title, [], width, height)
    label_w, row_h = 190, min(26.0, (height - 16) / max(len(rows), 1))
    largest = max((v for _, v in rows), default=0.0) or 1.0
    inner = width - label_w - 60
    for i, (label, value) in enumerate(rows):
        y = 8 + i * row_h
        short = label if len(label) <= 28 else label[:27] + "…"
        w = max(inner * value / largest, 1.0)
        plot.parts.append(
            f'<text class="label" x="{label_w - 8}" y="{y + row_h / 2 + 4:.1f}"'
            f' text-anchor="end">{escape(short)}<title>{escape(label)}</title></text>'
        )
        plot.parts.append(
            f'<rect class="s{i % SERIES_CLASSES} bar" x="{label_w}" y="{y + 3:.1f}"'
            f' width="{w:.1f}" height="{row_h - 7:.1f}" rx="2"/>'
        )
        plot.parts.append(
            f'<text class="value" x="{label_w + w + 6:.1f}" y="{y + row_h / 2 + 4:.1f}">'
            f"{number(value)}</text>"
        )
    if not rows:
        plot.empty("no memories yet")
    return plot.markup()
