"""Charts drawn with block characters: a one-line sparkline (the header) and bar charts with a
scale (the Stats screen). Bars start at zero, so a quiet minute reads as nothing and a flat line of
traffic as traffic; a minute with no value at all (no forward to time) is left blank."""

from __future__ import annotations

import math
from collections.abc import Sequence

BARS = "▁▂▃▄▅▆▇█"
QUIET = "·"  # a minute with nothing in it, in a sparkline


def resample(values: Sequence[float | None], width: int) -> list[float | None]:
    """``values`` (oldest first) spread over ``width`` cells: each cell the mean of the values it
    covers (None where all are None), a value repeated when there are more cells than values."""
    n = len(values)
    if width <= 0 or n == 0:
        return []
    cells: list[float | None] = []
    for i in range(width):
        start = i * n // width
        end = max(start + 1, (i + 1) * n // width)
        known = [v for v in values[start:end] if v is not None]
        cells.append(sum(known) / len(known) if known else None)
    return cells


def spark(values: Sequence[float | None], width: int) -> str:
    """One line of ``width`` bars, the tallest the largest value; ``·`` for zero."""
    cells = resample(values, width)
    top = max((v for v in cells if v is not None), default=0.0)
    out = []
    for v in cells:
        if v is None:
            out.append(" ")
        elif v <= 0 or top <= 0:
            out.append(QUIET)
        else:
            out.append(BARS[min(7, max(0, math.ceil(v / top * 8) - 1))])
    return "".join(out)


def nice_top(value: float) -> float:
    """The top of a scale for ``value``: 1, 2 or 5 times a power of ten, at least ``value``."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if value <= step * power:
            return float(step * power)
    return float(10 * power)


def bars(values: Sequence[float | None], width: int, height: int, top: float) -> list[str]:
    """``height`` lines of bars (the top line first) over ``width`` cells, ``top`` at full
    height; a value above zero shows at least the lowest bar."""
    cells = resample(values, width)
    levels = []
    for v in cells:
        if v is None or v <= 0 or top <= 0:
            levels.append(0)
        else:
            levels.append(max(1, min(height * 8, round(v / top * height * 8))))
    rows = []
    for row in range(height - 1, -1, -1):
        line = []
        for level in levels:
            fill = level - row * 8
            line.append("█" if fill >= 8 else " " if fill <= 0 else BARS[fill - 1])
        rows.append("".join(line))
    return rows


def scale_label(value: float) -> str:
    """A scale's number, short: ``52``, ``1.2k``, ``250``, ``0.5``."""
    if value >= 10_000:
        return f"{value / 1000:.0f}k"
    if value >= 1000:
        return f"{value / 1000:.1f}k".replace(".0k", "k")
    if value == int(value):
        return str(int(value))
    return f"{value:.1f}"


def time_axis(width: int, minutes: int = 60) -> str:
    """The labels under a chart of the last ``minutes``: ``-60 min`` at the left, ``now`` at the
    right, a label every quarter between when they fit."""
    line = [" "] * width
    marks = [(0, f"-{minutes} min")]
    for quarter in (1, 2, 3):
        marks.append((width * quarter // 4, f"-{minutes - minutes * quarter // 4}"))
    marks.append((width - 3, "now"))
    placed_to = -1
    for at, label in marks:
        at = max(0, min(at, width - len(label)))
        if at <= placed_to:
            continue
        line[at : at + len(label)] = label
        placed_to = at + len(label)
    return "".join(line)[:width]
