"""Ids and times as Kineto writes them, read one way.

Ids arrive as ints, floats (``3.0``), or strings (``"25738"``, ``"stream 7"``, ``"0x1f"``,
``"7 "``); timestamps and durations are microseconds, as ints or floats, and timestamps are
either epoch microseconds (2^50 and more: beyond float64's exact fractions) or offsets from
``baseTimeNanoseconds``. The scalar and the column forms here give the same nanoseconds.
"""

from __future__ import annotations

import math
from typing import Any

NO_ID = -1


def as_int(value: Any) -> int | None:
    """An integer id from an int, an integral float, or a string whose last word is a number
    (decimal, or hexadecimal with ``0x``); None for anything else."""
    if type(value) is int:
        return value
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value.is_integer() else None
    return _int_of_text(value) if isinstance(value, str) else None


def _int_of_text(value: str) -> int | None:
    words = value.split()
    if not words:
        return None
    last = words[-1]
    try:
        return int(last, 16) if last[:2].lower() == "0x" else int(last, 10)
    except ValueError:
        return None


def to_int(value: Any, default: int = NO_ID) -> int:
    """``as_int`` with ``default`` where there is no id."""
    number = as_int(value)
    return default if number is None else number


# Timestamps in microseconds whose nanoseconds, plus a trace's base time, fit in an int64 (146 years
# either side of the base): a value beyond is damage, not a time (``ts: 1e308``).
TS_US_LIMIT = (1 << 62) // 1000
# Base times (nanoseconds since the epoch) a trace may hold: 0 to about 2116.
BASE_NS_LIMIT = 1 << 62
INT32_LIMIT = 1 << 31
UINT32_LIMIT = 1 << 32


def is_timestamp_us(value: Any) -> bool:
    """Whether ``value`` is a timestamp in microseconds: a finite number within ``TS_US_LIMIT``."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and -TS_US_LIMIT < value < TS_US_LIMIT


def in_range(value: int | None, limit: int) -> int | None:
    """``value`` when it is in ``[0, limit)``, else None (a rank, a pid, a base time out of range)."""
    return value if value is not None and 0 <= value < limit else None


def wrap_int64(value: int) -> int:
    """A Kineto id above 2^63 as its two's complement int64 (the dataset's id columns)."""
    return ((value + (1 << 63)) % (1 << 64)) - (1 << 63)


def us_to_ns(ts_us: int | float, base_ns: int = 0) -> int:
    """Microseconds (int or finite float) as integer nanoseconds after ``base_ns``.

    Whole microseconds and their fraction are converted apart, so epoch timestamps keep their
    nanosecond digits (``round(ts * 1000)`` would not: the product passes 2^53).
    """
    if type(ts_us) is int:
        return ts_us * 1000 + base_ns
    whole = int(ts_us)  # toward zero: the fraction keeps the sign, as floor's would not
    return whole * 1000 + round((ts_us - whole) * 1000.0) + base_ns


def duration_ns(dur_us: int | float) -> int:
    """A duration in microseconds as integer nanoseconds (short: exact in float64)."""
    return dur_us * 1000 if type(dur_us) is int else round(dur_us * 1000.0)
