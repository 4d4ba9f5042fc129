"""How two quantities compare: whether they measure the same thing, and whether their values agree (ranges,
bounds, rounding and conversions within their tolerances)."""

from __future__ import annotations

from stream_guard.text.quantities.quantity import Quantity

_APPROX_TOLERANCE = 0.10


_CONVERSION_TOLERANCE = 0.02  # 10 lb vs 4.5 kg: conversions are rounded when written


def comparable(a: Quantity, b: Quantity) -> bool:
    """Same dimension, and for bare counts the same counted noun (both empty counts as the same)."""
    if a.dimension != b.dimension:
        return False
    if a.unit is None:
        return (not a.counted and not b.counted) or bool(a.counted & b.counted)
    return True


def _bounds(q: Quantity, widen: bool, bound_qualifier: bool = True) -> tuple[float, float]:
    low, high = q.low, q.high
    if not widen:
        return low, high
    pad = max(q.precision, abs(high) * 1e-9)
    if q.unit in ("kg", "m", "l") or (q.unit is not None and "/" in q.unit):
        pad = max(pad, abs(high) * _CONVERSION_TOLERANCE)
    low, high = low - pad, high + pad
    if q.qualifier == "approx":
        low, high = low * (1 - _APPROX_TOLERANCE), high * (1 + _APPROX_TOLERANCE)
    elif q.qualifier == "at_least" and bound_qualifier:
        high = float("inf")
    elif q.qualifier == "at_most" and bound_qualifier:
        low = float("-inf") if q.unit is None or q.unit == "percent" else min(low, 0.0)
    return low, high


def values_agree(a: Quantity, b: Quantity) -> bool:
    """Whether two comparable quantities can both be true: one's stated bounds fit inside the other's
    bounds widened by rounding and qualifiers ("about", "more than", "up to")."""
    # Two bounds of the same kind ("up to 30 days" vs "up to 14 days") state different limits.
    bounded = not (a.qualifier == b.qualifier and a.qualifier in ("at_least", "at_most"))
    a_low, a_high = _bounds(a, widen=False)
    b_low, b_high = _bounds(b, widen=False)
    wa_low, wa_high = _bounds(a, widen=True, bound_qualifier=bounded)
    wb_low, wb_high = _bounds(b, widen=True, bound_qualifier=bounded)
    return (wa_low <= b_low and b_high <= wa_high) or (wb_low <= a_low and a_high <= wb_high)


def written_in(text: str, value: float) -> bool:
    """Whether `value` occurs in `text` in digits, with or without thousands separators. A plain substring
    test (so "131" is also found inside "1310"): it only ever makes the checks more conservative."""
    if value != value or value in (float("inf"), float("-inf")):
        return False
    if value == int(value) and abs(value) < 1e15:
        whole = int(value)
        return str(whole) in text or (abs(whole) >= 1000 and f"{whole:,}" in text)
    return f"{value:g}" in text
