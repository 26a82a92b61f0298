"""Known changes injected into a real Kineto JSON trace, the trace kept consistent (the accuracy
benchmark's and the tests' fixture factory for real traces; ``kineto_gen.py`` makes generated ones).

Steps are the trace's ``ProfilerStep#N`` slices. Every injection costs ``delta_us`` per step:

* ``slow``: the culprit (on a GPU trace the compute kernel with most total time, its longest instance in
  each step; on a CPU trace the leaf op with most total time) lasts ``delta_us`` longer, and every
  event starting at or after its end, on every track, starts ``delta_us`` later; the slices of its
  own track and the host slices running across its end (its parents, the host waiting) last longer;
* ``reshape_gemm``: ``slow``, and the op that launched the culprit (its External id) on twice the
  rows of its first input (a GEMM at another batch);
* ``stall``: a data-loader stall (``STALL_OP``) at the start of each step on the step's thread,
  every later event shifted;
* ``sync``: a ``cudaDeviceSynchronize`` on the step's thread at the end of the kernel that ends
  first after the middle of each step (a CUDA graph replay's last node, not one inside it), the
  device idle meanwhile (every later event shifted);
* ``delay_collective`` (one job's rank traces, on one clock): one rank reaches each step's first
  collective ``delta_us`` later (every later event of that rank shifted); on every other rank the
  matching collective (its event that ends last: the NCCL kernel, gloo's ``gloo:all_reduce``)
  lasts ``delta_us`` longer, waiting for it, and every later event of that rank shifts;
* ``jitter``: each step's events (from its start to the next step's) stretched by its own factor
  1 + uniform(-j, j), later steps shifted: an A/A copy with step-to-step noise.

Times stay in microseconds as Kineto writes them. Pure stdlib.
"""

from __future__ import annotations

import copy
import gzip
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STEP_PREFIX = "ProfilerStep#"
STALL_OP = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
SYNC_CALL = "cudaDeviceSynchronize"
GRAPH_LAUNCHES = ("cudaGraphLaunch", "hipGraphLaunch")
KERNEL_CATS = ("kernel", "Kernel")  # today's and the legacy category
OP_CATS = ("cpu_op", "operator", "Operator")
DEVICE_CATS = (*KERNEL_CATS, "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "Memcpy", "Memset")
COLLECTIVE_WORDS = ("nccl", "rccl", "allreduce", "all_reduce", "allgather", "reducescatter")  # not compute kernels


@dataclass(frozen=True)
class Step:
    number: int
    start_us: float
    end_us: float
    pid: Any
    tid: Any


def load(path: Path) -> dict[str, Any]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        found = json.load(f)
    return found if isinstance(found, dict) else {"traceEvents": found}


def save(trace: dict[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(trace), encoding="utf-8")
    return path


def timed(trace: dict[str, Any]) -> list[dict[str, Any]]:
    """The events that sit at a time (not metadata)."""
    return [e for e in trace["traceEvents"] if isinstance(e, dict) and "ts" in e and e.get("ph") != "M"]


def _ts(e: dict[str, Any]) -> float:
    return float(e["ts"])


def _dur(e: dict[str, Any]) -> float:
    return float(e.get("dur", 0) or 0)


def steps(trace: dict[str, Any]) -> list[Step]:
    """The ``ProfilerStep#N`` slices, in time order."""
    found = [e for e in timed(trace) if e.get("ph") == "X" and str(e.get("name", "")).startswith(STEP_PREFIX)]
    out = [Step(int(str(e["name"])[len(STEP_PREFIX):]), _ts(e), _ts(e) + _dur(e), e.get("pid"), e.get("tid"))
           for e in found if str(e["name"])[len(STEP_PREFIX):].isdigit()]
    return sorted(out, key=lambda s: s.start_us)


def is_gpu(trace: dict[str, Any]) -> bool:
    return any(e.get("cat") in KERNEL_CATS for e in timed(trace))


def make_room(trace: dict[str, Any], at_us: float, delta_us: float, pid: Any, tid: Any, *,
              skip: dict[str, Any] | None = None) -> None:
    """``delta_us`` of time at ``at_us``: every event starting there or later starts later; the
    slices running across it on (pid, tid) and on every host thread last longer (the host waits
    for the device, which is the critical path); device work running across it elsewhere is left
    as it is."""
    for e in timed(trace):
        if e is skip:
            continue
        ts = _ts(e)
        if ts >= at_us:
            e["ts"] = round(ts + delta_us, 3)
        elif e.get("ph") == "X" and ts + _dur(e) > at_us and (
            (e.get("pid") == pid and e.get("tid") == tid) or e.get("cat") not in DEVICE_CATS
        ):
            e["dur"] = round(_dur(e) + delta_us, 3)


def _in_step(events: list[dict[str, Any]], step: Step) -> list[dict[str, Any]]:
    return [e for e in events if step.start_us <= _ts(e) < step.end_us]


def is_collective(name: str) -> bool:
    return any(word in name.lower() for word in COLLECTIVE_WORDS)


def culprit_name(trace: dict[str, Any], launched_by: set[Any] | None = None) -> str:
    """What ``slow`` makes slower: the compute kernel with most total time, else the leaf op with
    most; with ``launched_by``, the kernel with most among those whose External id is in it (a
    ValueError when there is none)."""
    events = [e for e in timed(trace) if e.get("ph") == "X"]
    kernels = [e for e in events if e.get("cat") in KERNEL_CATS and not is_collective(str(e.get("name", "")))
               and (launched_by is None or (e.get("args") or {}).get("External id") in launched_by)]
    if launched_by is not None and not kernels:
        raise ValueError("no compute kernel was launched by the ops asked for (a trace without input shapes?)")
    pool = kernels or _leaf_ops([e for e in events if e.get("cat") in OP_CATS])
    totals: dict[str, float] = {}
    for e in pool:
        totals[str(e["name"])] = totals.get(str(e["name"]), 0.0) + _dur(e)
    return max(sorted(totals), key=lambda n: totals[n])


def _leaf_ops(ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ops with no op inside them on their thread."""
    leaves = []
    by_thread: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for e in ops:
        by_thread.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    for rows in by_thread.values():
        rows.sort(key=lambda e: (_ts(e), -_dur(e)))
        for i, e in enumerate(rows):
            nxt = rows[i + 1] if i + 1 < len(rows) else None
            if nxt is None or _ts(nxt) >= _ts(e) + _dur(e):
                leaves.append(e)
    return leaves


def slow(trace: dict[str, Any], delta_us: float, name: str | None = None) -> tuple[dict[str, Any], str]:
    """A copy with ``name`` (default ``culprit_name``) slower by ``delta_us`` once a step; and that name."""
    out = copy.deepcopy(trace)
    name = name or culprit_name(out)
    for step in reversed(steps(out)):  # last step first: earlier insertions move later steps
        mine = [e for e in _in_step(timed(out), step) if e.get("ph") == "X" and e.get("name") == name]
        if not mine:
            continue
        victim = max(mine, key=_dur)
        end = _ts(victim) + _dur(victim)
        make_room(out, end, delta_us, victim.get("pid"), victim.get("tid"), skip=victim)
        victim["dur"] = round(_dur(victim) + delta_us, 3)
    return out, name


def reshape_gemm(trace: dict[str, Any], delta_us: float) -> tuple[dict[str, Any], str]:
    """A copy where the kernel with most time among those launched by an op with input shapes ran
    ``delta_us`` slower (``slow``) and its launching op (the same External id) on twice the rows of
    its first input; the kernel's name. A ValueError when no op with input shapes launched a
    kernel (a trace recorded without ``record_shapes``)."""
    shaped = {(e.get("args") or {}).get("External id") for e in timed(trace)
              if e.get("cat") in OP_CATS and (e.get("args") or {}).get("Input Dims")}
    out, name = slow(trace, delta_us, culprit_name(trace, shaped))
    events = timed(out)
    ids = {(e.get("args") or {}).get("External id") for e in events
           if e.get("cat") in KERNEL_CATS and e.get("name") == name}
    for e in events:
        args = e.get("args") or {}
        dims = args.get("Input Dims")
        if e.get("cat") in OP_CATS and args.get("External id") in ids and dims and dims[0]:
            args["Input Dims"] = [[2 * dims[0][0], *dims[0][1:]], *dims[1:]]
    return out, name


def stall(trace: dict[str, Any], delta_us: float) -> dict[str, Any]:
    """A copy with a data-loader stall of ``delta_us`` at the start of each step."""
    out = copy.deepcopy(trace)
    for step in reversed(steps(out)):
        at = step.start_us + 1.0
        make_room(out, at, delta_us, step.pid, step.tid)
        out["traceEvents"].append({"ph": "X", "cat": "user_annotation", "name": STALL_OP, "pid": step.pid,
                                   "tid": step.tid, "ts": at, "dur": delta_us})
    return out


def sync(trace: dict[str, Any], delta_us: float) -> dict[str, Any]:
    """A copy with a ``cudaDeviceSynchronize`` of ``delta_us`` in each step, the device idle meanwhile."""
    out = copy.deepcopy(trace)
    inside_replay = _replay_nodes_but_last(out)
    for step in reversed(steps(out)):
        middle = (step.start_us + step.end_us) / 2
        ends = sorted(_ts(e) + _dur(e) for e in timed(out) if e.get("cat") in KERNEL_CATS and id(e) not in inside_replay
                      and middle <= _ts(e) + _dur(e) < step.end_us)
        at = ends[0] if ends else middle
        make_room(out, at, delta_us, step.pid, step.tid)
        out["traceEvents"].append({"ph": "X", "cat": "cuda_runtime", "name": SYNC_CALL, "pid": step.pid,
                                   "tid": step.tid, "ts": at, "dur": delta_us, "args": {}})
    return out


def _collective_events(trace: dict[str, Any], step: Step) -> list[dict[str, Any]]:
    """The events of ``step``'s first collective, by start: its first collective-named slice (the
    call that issues it) and the collective-named slices starting before the next such call on
    that thread (the work it queued: a kernel, gloo's thread)."""
    named = sorted((e for e in _in_step(timed(trace), step)
                    if e.get("ph") == "X" and is_collective(str(e.get("name", "")))), key=_ts)
    if not named:
        return []
    first = named[0]
    later_calls = [_ts(e) for e in named[1:] if (e.get("pid"), e.get("tid")) == (first.get("pid"), first.get("tid"))
                   and _ts(e) >= _ts(first) + _dur(first)]
    until = later_calls[0] if later_calls else step.end_us
    return [e for e in named if _ts(e) < until]


def delay_collective(traces: list[dict[str, Any]], late: int, delta_us: float) -> tuple[list[dict[str, Any]], str]:
    """Copies of one job's rank traces (``traces[r]``: rank r, all on one clock) where rank ``late``
    reaches each step's first collective ``delta_us`` later and the other ranks wait for it there;
    and the name of the collective event the others waited in."""
    out = [copy.deepcopy(t) for t in traces]
    numbers = set.intersection(*({s.number for s in steps(t)} for t in out))
    waited = ""
    for number in sorted(numbers, reverse=True):  # last step first: earlier insertions move later steps
        for rank, trace in enumerate(out):
            step = next(s for s in steps(trace) if s.number == number)
            found = _collective_events(trace, step)
            if not found:
                continue
            if rank == late:
                first = found[0]
                make_room(trace, _ts(first), delta_us, first.get("pid"), first.get("tid"))
                continue
            body = max(found, key=lambda e: _ts(e) + _dur(e))
            make_room(trace, _ts(body) + _dur(body), delta_us, body.get("pid"), body.get("tid"), skip=body)
            body["dur"] = round(_dur(body) + delta_us, 3)
            waited = str(body["name"])
    return out, waited


def _replay_nodes_but_last(trace: dict[str, Any]) -> set[int]:
    """The ids (``id()``) of the kernels a graph launch queued, all but the last to end of each
    launch: the device runs a replay's nodes back to back, so no host call can idle it between them."""
    events = timed(trace)
    launches = {(e.get("args") or {}).get("correlation") for e in events
                if e.get("cat") not in DEVICE_CATS and e.get("name") in GRAPH_LAUNCHES}
    nodes: dict[Any, list[dict[str, Any]]] = {}
    for e in events:
        key = (e.get("args") or {}).get("correlation")
        if e.get("cat") in KERNEL_CATS and key in launches:
            nodes.setdefault(key, []).append(e)
    return {id(e) for found in nodes.values() for e in sorted(found, key=lambda e: _ts(e) + _dur(e))[:-1]}


def jitter(trace: dict[str, Any], amplitude: float, seed: int) -> dict[str, Any]:
    """A copy whose every step is stretched by its own 1 + uniform(-amplitude, amplitude)."""
    out = copy.deepcopy(trace)
    found = steps(out)
    if not found:
        return out
    draw = random.Random(seed)
    bounds = [s.start_us for s in found] + [max(s.end_us for s in found)]
    factors = [1.0 + draw.uniform(-amplitude, amplitude) for _ in found]
    shifts = [0.0]
    for i, f in enumerate(factors):
        shifts.append(shifts[-1] + (bounds[i + 1] - bounds[i]) * (f - 1.0))
    for e in timed(out):
        ts = _ts(e)
        if ts < bounds[0]:
            continue
        i = next((k for k in range(len(found)) if ts < bounds[k + 1]), None)
        if i is None:  # after the last step
            e["ts"] = round(ts + shifts[-1], 3)
            continue
        e["ts"] = round(bounds[i] + shifts[i] + (ts - bounds[i]) * factors[i], 3)
        if "dur" in e:
            e["dur"] = round(_dur(e) * factors[i], 3)
    return out


def first_steps(trace: dict[str, Any], count: int) -> dict[str, Any]:
    """A copy keeping the events up to the end of step ``count`` (a shorter window of the same run)."""
    out = copy.deepcopy(trace)
    found = steps(out)
    if len(found) <= count:
        return out
    cut = found[count].start_us
    out["traceEvents"] = [e for e in out["traceEvents"]
                          if not (isinstance(e, dict) and "ts" in e and e.get("ph") != "M" and _ts(e) >= cut)]
    return out
