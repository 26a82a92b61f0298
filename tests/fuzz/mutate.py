"""A small deterministic mutator over real seed files: byte-level damage for every format, and
token-level damage for JSON (the values real crashes came from: ``1e400``, 2^64, lone
surrogates, deep nesting, wrong types).

Every mutation is a function of ``(seed bytes, name, index)``: a failing input is rebuilt from
its name and index alone (``python -m tests.fuzz.replay``) and never needs to be stored.
"""

from __future__ import annotations

import pickle
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


# --- snapshots: damage at the level of the unpickled structure ----------------------------------

# Values that broke snapshot readers: not integers, past 64 bits, not Unicode, containers.
SNAPSHOT_VALUES = (
    float("nan"), float("inf"), -float("inf"), 1e308, 2**64, -(2**63) - 1, 2**62, [1], [], {}, "x", "\ud800",
    "a\udfff", None, True, b"\xff", (1, 2), -1,
)  # fmt: skip


def _containers(root: object) -> list[object]:
    """Every dict and list below ``root`` (each once), in a fixed order."""
    found, seen, stack = [], set(), [root]
    while stack:
        obj = stack.pop()
        if isinstance(obj, dict | list) and id(obj) not in seen:
            seen.add(id(obj))
            found.append(obj)
            stack.extend(reversed(list(obj.values() if isinstance(obj, dict) else obj)))
    return found


def _set_value(snapshot: object, rng: random.Random) -> None:
    container = rng.choice(_containers(snapshot))
    value = rng.choice(SNAPSHOT_VALUES)
    if isinstance(container, dict) and container:
        container[rng.choice(sorted(container, key=repr))] = value
    elif isinstance(container, list) and container:
        container[rng.randrange(len(container))] = value


def _share(snapshot: object, rng: random.Random) -> None:
    """A list replaced by one of its items referenced ``width`` times (the pickle's memo keeps it small);
    done at several levels, the tree readers walk grows as a power of ``width``."""
    lists = [c for c in _containers(snapshot) if isinstance(c, list) and c]
    width = rng.choice((2, 50, 300, 2000))
    for target in rng.sample(lists, min(len(lists), rng.randint(1, 4))):
        target[:] = [target[0]] * width


def _loop(snapshot: object, rng: random.Random) -> None:
    container = rng.choice(_containers(snapshot))
    if isinstance(container, list):
        container.append(container)
    elif isinstance(container, dict):
        container["loop"] = container


def snapshot_fields(data: bytes, rng: random.Random) -> bytes:
    """Unpickle (plain data only), damage a field, share lists or make a loop, and pickle again; a
    seed that does not unpickle gets byte damage instead."""
    from kinetoscope._errors import FormatError
    from kinetoscope.format.session_files.snapshot import loads_plain

    try:
        snapshot = loads_plain(data, "seed")
    except FormatError:
        return set_bytes(data, rng)
    rng.choice((_set_value, _set_value, _set_value, _share, _loop))(snapshot, rng)
    return pickle.dumps(snapshot, protocol=4)


SNAPSHOT_MUTATIONS: tuple[Mutation, ...] = (snapshot_fields, snapshot_fields, snapshot_fields, *BYTE_MUTATIONS)


def mutate_snapshot(data: bytes, name: str, index: int) -> bytes:
    """Input ``index`` of the snapshot series ``name``: one or two structural or byte mutations."""
    rng = random.Random(f"{name}:{index}")
    for _ in range(rng.randint(1, 2)):
        data = rng.choice(SNAPSHOT_MUTATIONS)(data, rng)
    return data
