"""Inline SVG charts for the dashboard: no script, no external asset, readable without CSS.

A chart is a daily series (None where a day has no data) drawn as a polyline with a dot per day (each dot
has a <title>, the browser's own tooltip), plus optional horizontal reference segments (a baseline over its
window, the trailing value over its window).
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Callable, Sequence

WIDTH, HEIGHT = 640, 180
LEFT, RIGHT, TOP, BOTTOM = 52, 12, 14, 26
COLORS = ("#1f5fa8", "#c2410c", "#15803d", "#7c3aed")


@dataclass(frozen=True)
class Series:
    name: str
    values: Sequence[float | None]


@dataclass(frozen=True)
class Reference:
    """A horizontal segment from index `start` to `end` (inclusive) at `value`."""

    name: str
    value: float
    start: int
    end: int
    dashed: bool = True


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    for step in (0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000,
                 10000, 30000, 60000):
        if value <= step:
            return step
    return value


def line_chart(title: str, labels: Sequence[str], series: Sequence[Series], references: Sequence[Reference] = (),
               fmt: Callable[[float], str] = lambda v: f"{v:.3g}", chart_id: str = "") -> str:
    """An SVG line chart of daily values; `labels` name the x positions (days)."""
    n = max(1, len(labels))
    values = [v for s in series for v in s.values if v is not None] + [r.value for r in references]
    top = _nice_max(max(values, default=0.0))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(i: int) -> float:
        return LEFT + (plot_w * i / (n - 1) if n > 1 else plot_w / 2)

    def y(v: float) -> float:
        return TOP + plot_h * (1 - min(v, top) / top)

    parts = [f'<svg class="chart" id="{escape(chart_id)}" role="img" aria-label="{escape(title)}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" xmlns="http://www.w3.org/2000/svg">',
             f"<title>{escape(title)}</title>",
             f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="#fafafa" stroke="#ddd"/>']
    for fraction in (0.0, 0.5, 1.0):
        value = top * fraction
        parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(value):.1f}" y2="{y(value):.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{LEFT - 4}" y="{y(value) + 4:.1f}" text-anchor="end" font-size="10">'
                     f"{escape(fmt(value))}</text>")
    if labels:
        # The first label starts at the axis and the last ends at it: centred, both would be cut by the edges.
        for i in sorted({0, n // 2, n - 1}):
            anchor = "start" if i == 0 and n > 1 else "end" if i == n - 1 and n > 1 else "middle"
            parts.append(f'<text class="x-label" x="{x(i):.1f}" y="{HEIGHT - 8}" text-anchor="{anchor}" '
                         f'font-size="10">{escape(labels[i])}</text>')
    for ref in references:
        dash = ' stroke-dasharray="5 3"' if ref.dashed else ""
        parts.append(f'<line class="reference" x1="{x(ref.start):.1f}" x2="{x(ref.end):.1f}" y1="{y(ref.value):.1f}" '
                     f'y2="{y(ref.value):.1f}" stroke="#555" stroke-width="1.5"{dash}>'
                     f"<title>{escape(ref.name)}: {escape(fmt(ref.value))}</title></line>")
    for k, s in enumerate(series):
        color = COLORS[k % len(COLORS)]
        points = [(i, v) for i, v in enumerate(s.values) if v is not None]
        if len(points) > 1:
            coords = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in points)
            parts.append(f'<polyline class="series" points="{coords}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        for i, v in points:
            label = labels[i] if i < len(labels) else str(i)
            parts.append(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="2.2" fill="{color}">'
                         f"<title>{escape(s.name)} {escape(label)}: {escape(fmt(v))}</title></circle>")
    if len(series) > 1 or references:
        legend = [(s.name, COLORS[k % len(COLORS)], False) for k, s in enumerate(series)]
        legend += [(r.name, "#555", r.dashed) for r in references]
        offset = LEFT + 6
        for name, color, dashed in legend:
            dash = ' stroke-dasharray="5 3"' if dashed else ""
            parts.append(f'<line x1="{offset}" x2="{offset + 14}" y1="{TOP + 8}" y2="{TOP + 8}" stroke="{color}" '
                         f'stroke-width="2"{dash}/>')
            parts.append(f'<text x="{offset + 18}" y="{TOP + 11}" font-size="10">{escape(name)}</text>')
            offset += 26 + 6 * len(name)
    parts.append("</svg>")
    return "".join(parts)
