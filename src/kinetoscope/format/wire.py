"""Protobuf wire encoding by hand, for the few messages written per event.

Building each event as a protobuf message object costs several microseconds per field in
Python; the system and device traces write one to three packets per event, so their
packets are assembled from these helpers instead. Every file written this way is read back
with the real Perfetto protos in the tests, which keeps the encoding honest.
"""

from __future__ import annotations

import struct
from functools import cache

VARINT = 0
FIXED64 = 1
LENGTH = 2

_INT64_RANGE = (-(1 << 63), (1 << 63) - 1)
_UINT64_MAX = (1 << 64) - 1
_pack_double = struct.Struct("<d").pack


def _slow_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL_LIMIT = 1 << 14
_SMALL = tuple(_slow_varint(value) for value in range(_SMALL_LIMIT))
_LOW_BITS = 28
_LOW_MASK = (1 << _LOW_BITS) - 1
_high_cache: dict[int, bytes] = {}


def varint(value: int) -> bytes:
    """Base-128 varint of a non-negative integer below 2**64.

    Small values come from a table; large ones (timestamps, ids) are split into their low 28
    bits, encoded in one call, and their high bits, which repeat from event to event.
    """
    if value < _SMALL_LIMIT:
        return _SMALL[value]
    high = value >> _LOW_BITS
    if not high:
        return _slow_varint(value)
    low = value & _LOW_MASK
    head = bytes(((low & 0x7F) | 0x80, ((low >> 7) & 0x7F) | 0x80, ((low >> 14) & 0x7F) | 0x80, (low >> 21) | 0x80))
    tail = _high_cache.get(high)
    if tail is None:
        if len(_high_cache) > 4096:
            _high_cache.clear()
        tail = _high_cache[high] = _slow_varint(high)
    return head + tail


@cache
def key(field: int, wire_type: int) -> bytes:
    return varint((field << 3) | wire_type)


def uint_field(field: int, value: int) -> bytes:
    return key(field, VARINT) + varint(value)


def int_field(field: int, value: int) -> bytes:
    """An ``int64`` field: negative values take ten bytes (two's complement), as protobuf writes them."""
    return key(field, VARINT) + varint(value & _UINT64_MAX if value < 0 else value)


def bool_field(field: int, value: bool) -> bytes:
    return key(field, VARINT) + (b"\x01" if value else b"\x00")


def double_field(field: int, value: float) -> bytes:
    return key(field, FIXED64) + _pack_double(value)


def bytes_field(field: int, payload: bytes) -> bytes:
    return key(field, LENGTH) + varint(len(payload)) + payload


def string_field(field: int, text: str) -> bytes:
    return bytes_field(field, text.encode("utf-8", "replace"))


def fits_int64(value: int) -> bool:
    return _INT64_RANGE[0] <= value <= _INT64_RANGE[1]


def fits_uint64(value: int) -> bool:
    return 0 <= value <= _UINT64_MAX
