"""A small deterministic mutator over real seed files: byte-level damage for every format, and
token-level damage for JSON (the values real crashes came from: ``1e400``, 2^64, lone
surrogates, deep nesting, wrong types).

Every mutation is a function of ``(seed bytes, name, index)``: a failing input is rebuilt from
its name and index alone (``python -m tests.fuzz.replay``) and never needs to be stored.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

Mutation = Callable[[bytes, random.Random], bytes]

# Values that broke readers before, or sit on a limit of a type a reader converts to.
JSON_VALUES = (
    b"1e400", b"-1e400", b"NaN", b"-1", b"0", b"18446744073709551616", b"9223372036854775808",
    b"-9223372036854775809", b"3.5", b'"0x1f"', b'"7 "', b'"\\ud800"', b'"\\udfff\\ud800"', b"null", b"true",
    b"[]", b"{}", b'""', b'"' + b"A" * 4096 + b'"', b"[" * 5000 + b"]" * 5000, b'{"a":' * 3000 + b"1" + b"}" * 3000,
    b"\xff\xfe", b'"\xc3\x28"', b'"/../../etc/passwd"', b'"a\\u0000b"',
)  # fmt: skip
VARINTS = (b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", b"\x80\x80\x80\x80\x10", b"\xff\xff\xff\xff\x0f", b"\x00")
_NUMBER_RE = re.compile(rb"(?<=[:\[,\s])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_STRING_RE = re.compile(rb'"(?:[^"\\]|\\.){0,64}"')


def flip_bits(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if out:
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def set_bytes(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if out:
            out[rng.randrange(len(out))] = rng.choice((0x00, 0xFF, 0x7F, 0x80, 0x22, 0x5C, 0x7B, 0x5D))
    return bytes(out)


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def cut_range(data: bytes, rng: random.Random) -> bytes:
    start = rng.randrange(len(data) + 1)
    return data[:start] + data[start + rng.randint(1, 256) :]


def duplicate_range(data: bytes, rng: random.Random) -> bytes:
    start = rng.randrange(len(data) + 1)
    chunk = data[start : start + rng.randint(1, 512)]
    at = rng.randrange(len(data) + 1)
    return data[:at] + chunk * rng.randint(1, 4) + data[at:]


def insert_varint(data: bytes, rng: random.Random) -> bytes:
    """A length prefix or field value at a limit, where a packet reader reads sizes."""
    at = rng.randrange(len(data) + 1)
    return data[:at] + rng.choice(VARINTS) + data[at + rng.randint(0, 10) :]


def append_junk(data: bytes, rng: random.Random) -> bytes:
    return data + bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))


def _replace_match(data: bytes, rng: random.Random, pattern: re.Pattern[bytes]) -> bytes:
    matches = [m.span() for m in pattern.finditer(data, rng.randrange(max(len(data) - 4096, 1)), len(data))][:64]
    if not matches:
        return set_bytes(data, rng)
    start, end = rng.choice(matches)
    return data[:start] + rng.choice(JSON_VALUES) + data[end:]


def json_number(data: bytes, rng: random.Random) -> bytes:
    return _replace_match(data, rng, _NUMBER_RE)


def json_string(data: bytes, rng: random.Random) -> bytes:
    return _replace_match(data, rng, _STRING_RE)


BYTE_MUTATIONS: tuple[Mutation, ...] = (
    flip_bits, set_bytes, truncate, cut_range, duplicate_range, insert_varint, append_junk
)  # fmt: skip
JSON_MUTATIONS: tuple[Mutation, ...] = (json_number, json_number, json_string, json_string, *BYTE_MUTATIONS)


def mutate(data: bytes, name: str, index: int, *, json: bool = False) -> bytes:
    """Input ``index`` of the series ``name``: one to three mutations of ``data``."""
    rng = random.Random(f"{name}:{index}")
    chosen = JSON_MUTATIONS if json else BYTE_MUTATIONS
    for _ in range(rng.randint(1, 3)):
        data = rng.choice(chosen)(data, rng)
    return data
