"""Protobuf wire encoding by hand, for the few messages written per event.

Building each event as a protobuf message object costs several microseconds per field in
Python; the system and device traces write one to three packets per event, so their
packets are assembled from these helpers instead. Every file written this way is read back
with the real Perfetto protos in the tests, which keeps the encoding honest.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import cache

VARINT = 0
FIXED64 = 1
LENGTH = 2

_INT64_RANGE = (-(1 << 63), (1 << 63) - 1)
_UINT64_MAX = (1 << 64) - 1
_pack_double = struct.Struct("<d").pack


def slow_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL_BITS = 14
_SMALL_LIMIT = 1 << _SMALL_BITS
_SMALL_MASK = _SMALL_LIMIT - 1
_MID_LIMIT = 1 << (2 * _SMALL_BITS)
_HIGH_BITS = 2 * _SMALL_BITS
_MAX_HIGH_CACHE = 4096
# Varints of 0 .. 2**14-1, and the 14 low bits of a larger value as two bytes that both continue.
_SMALL = tuple(slow_varint(value) for value in range(_SMALL_LIMIT))
_LOW_PAIRS = tuple(bytes(((value & 0x7F) | 0x80, (value >> 7) | 0x80)) for value in range(_SMALL_LIMIT))
_high_cache: dict[int, bytes] = {}


def varint(value: int) -> bytes:
    """Base-128 varint of a non-negative integer below 2**64.

    Values come from tables in 14-bit pieces; the bits above 28 of large values (timestamps,
    addresses, ids) repeat from event to event and are cached.
    """
    if value < _SMALL_LIMIT:
        return _SMALL[value]
    if value < _MID_LIMIT:
        return _LOW_PAIRS[value & _SMALL_MASK] + _SMALL[value >> _SMALL_BITS]
    return _LOW_PAIRS[value & _SMALL_MASK] + _LOW_PAIRS[(value >> _SMALL_BITS) & _SMALL_MASK] + _high(value)


def _high(value: int) -> bytes:
    high = value >> _HIGH_BITS
    found = _high_cache.get(high)
    if found is None:
        if len(_high_cache) >= _MAX_HIGH_CACHE:
            _high_cache.clear()
        found = _high_cache[high] = slow_varint(high)
    return found


def length_prefix(size: int) -> bytes:
    """The varint length of a length-delimited field (a table lookup for sizes below 16 KiB)."""
    return _SMALL[size] if size < _SMALL_LIMIT else varint(size)


def field_encoder(field: int) -> Callable[[int], bytes]:
    """A function writing ``field`` as a varint field: key and value in one piece, from tables.

    For fields written per event (a packet's timestamp): the key is folded into the table
    of the low 14 bits, so a 64-bit value costs three lookups and two joins.
    """
    field_key = key(field, VARINT)
    heads = tuple(field_key + pair for pair in _LOW_PAIRS)
    small = tuple(field_key + encoded for encoded in _SMALL)
    # Bits above the low 14 -> their varint: timestamps a few microseconds apart share them.
    uppers: dict[int, bytes] = {}

    def encode(value: int) -> bytes:
        if value < _SMALL_LIMIT:
            return small[value]
        upper = uppers.get(value >> _SMALL_BITS)
        if upper is None:
            if len(uppers) >= _MAX_HIGH_CACHE:
                uppers.clear()
            upper = uppers[value >> _SMALL_BITS] = varint(value >> _SMALL_BITS)
        return heads[value & _SMALL_MASK] + upper

    return encode


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
