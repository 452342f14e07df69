"""Geometry for the analysis plots, drawn as inline SVG by the templates (no plotting library, no CDN).

Numbers in, coordinates out; no Django here. Every chart uses the same frame: a WIDTH x HEIGHT view box
with margins for the axes, y growing downwards as in SVG.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

WIDTH, HEIGHT = 480, 320
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 16, 44


@dataclass(frozen=True)
class Tick:
    position: float  # in view-box units along the axis
    label: str


@dataclass(frozen=True)
class Frame:
    x_label: str
    y_label: str
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right: int = WIDTH - RIGHT
    top: int = TOP
    bottom: int = HEIGHT - BOTTOM


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    title: str


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    title: str


@dataclass(frozen=True)
class Series:
    name: str
    points: str  # the SVG polyline "x,y x,y ..."
    css_class: str


@dataclass(frozen=True)
class Chart:
    frame: Frame
    points: list[Point] = field(default_factory=list)
    bars: list[Bar] = field(default_factory=list)
    series: list[Series] = field(default_factory=list)
    empty: str = ""


def _nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    if high <= low:
        return [low]
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(low / step - 1e-9) * step
    ticks = []
    value = first
    while value <= high + 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks


def _bounds(values: Sequence[float]) -> tuple[float, float]:
    low, high = min(values), max(values)
    if high == low:
        return low - 0.5, high + 0.5
    pad = (high - low) * 0.04
    return low - pad, high + pad


def _scale(value: float, low: float, high: float, start: float, end: float) -> float:
    return round(start + (value - low) / (high - low) * (end - start), 2)


def _frame(x_label: str, y_label: str, x_range: tuple[float, float], y_range: tuple[float, float]) -> Frame:
    base = Frame(x_label, y_label, [], [])
    x_ticks = [
        Tick(_scale(t, *x_range, base.left, base.right), f"{t:g}") for t in _nice_ticks(*x_range) if t >= x_range[0]
    ]
    y_ticks = [
        Tick(_scale(t, *y_range, base.bottom, base.top), f"{t:g}") for t in _nice_ticks(*y_range) if t >= y_range[0]
    ]
    return Frame(x_label, y_label, x_ticks, y_ticks)


def scatter(
    xs: Sequence[float | None], ys: Sequence[float | None], titles: Sequence[str], *, x_label: str, y_label: str
) -> Chart:
    """Metric (x) against human score (y), one point per summary with both scores."""
    pairs = [(x, y, t) for x, y, t in zip(xs, ys, titles, strict=True) if x is not None and y is not None]
    if not pairs:
        return Chart(Frame(x_label, y_label, [], []), empty="No summary has both scores.")
    x_range = _bounds([x for x, _, _ in pairs])
    y_range = _bounds([y for _, y, _ in pairs])
    frame = _frame(x_label, y_label, x_range, y_range)
    points = [
        Point(
            _scale(x, *x_range, frame.left, frame.right),
            _scale(y, *y_range, frame.bottom, frame.top),
            f"{title}: {x:.3f}, {y:.3f}",
        )
        for x, y, title in pairs
    ]
    return Chart(frame, points=points)


def histogram(values: Sequence[float], *, x_label: str, bins: int = 20) -> Chart:
    """Counts of `values` in equal-width bins (e.g. metric minus human score, thesis figure 5.8)."""
    if not values:
        return Chart(Frame(x_label, "summaries", [], []), empty="Nothing to count.")
    low, high = min(values), max(values)
    if high == low:
        low, high = low - 0.5, high + 0.5
    width = (high - low) / bins
    counts = [0] * bins
    for value in values:
        counts[min(int((value - low) / width), bins - 1)] += 1
    y_range = (0.0, float(max(counts)))
    frame = _frame(x_label, "summaries", (low, high), y_range)
    bars = []
    for index, count in enumerate(counts):
        start = low + index * width
        x0 = _scale(start, low, high, frame.left, frame.right)
        x1 = _scale(start + width, low, high, frame.left, frame.right)
        y = _scale(count, *y_range, frame.bottom, frame.top)
        bars.append(
            Bar(x0, y, round(x1 - x0, 2), round(frame.bottom - y, 2), f"{start:.2f} to {start + width:.2f}: {count}")
        )
    return Chart(frame, bars=bars)


def lines(
    xs: Sequence[float], named_series: Sequence[tuple[str, Sequence[float | None]]], *, x_label: str, y_label: str
) -> Chart:
    """Curves over a shared x axis (e.g. precision, recall, F1 and accuracy over thresholds, figure 6.1)."""
    present = [y for _, ys in named_series for y in ys if y is not None]
    if not xs or not present:
        return Chart(Frame(x_label, y_label, [], []), empty="Nothing to draw.")
    x_range = (min(xs), max(xs)) if max(xs) > min(xs) else _bounds(xs)
    y_range = (min(0.0, min(present)), max(1.0, max(present)))
    frame = _frame(x_label, y_label, x_range, y_range)
    series = []
    for number, (name, ys) in enumerate(named_series):
        coordinates = " ".join(
            f"{_scale(x, *x_range, frame.left, frame.right)},{_scale(y, *y_range, frame.bottom, frame.top)}"
            for x, y in zip(xs, ys, strict=True)
            if y is not None
        )
        series.append(Series(name, coordinates, f"series-{number}"))
    return Chart(frame, series=series)
