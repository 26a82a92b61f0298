"""How often `kinetoscope diff`'s verdict is right: known changes injected into generated
multi-step traces, and A/A pairs that differ by jitter only.

Each seed writes a base trace (``tests/kineto_gen.py``, 8 steps, per-step jitter), A/A copies
(the same program, other jitter; ``--aa`` of them) and, for each injection and size, a changed trace:

* ``slow_kernel``: the first forward GEMM of each step slower, every later event shifted by the
  added time (expected part: ``device_compute``, that GEMM first behind it);
* ``gemm_shape``: that GEMM's op at batch 128 instead of 64, the kernel slower, later events
  shifted (``device_compute``, the GEMM first);
* ``sync``: a ``cudaDeviceSynchronize`` after the forward pass of each step (``idle_sync``);
* ``stall``: a data-loader stall at the start of each step (``idle_host_bound``);

sized so that each costs 5, 10 or 20 % of the step. It prints, per injection and size, the
detection rate (verdict ``regression``), whether the culprit named first (the waterfall's first
part) is the injected one, and the false-alarm rate on A/A pairs (any verdict but ``neutral``).

    PYTHONPATH=src python benchmarks/diff_accuracy.py --seeds 10 --aa 5 [--jitter 0.05]

``--real TRACE|DIR ...`` injects into real traces instead (``tests/kineto_inject.py``): into a
one-rank trace a slower culprit, a reshaped GEMM, a stall, a sync; into a folder of one job's rank
traces (``gloo``: ``tests/data/gloo-steps``) the last rank late at each step's collective.
``--real ... --detectable`` prints, per input, its steps, their spread, and the smallest change the
rank test calls at 95 % in 95 % of the pairs this benchmark makes of it.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kinetoscope.analysis.compare import verdict
from tests.kineto_gen import TrainingSpec, write_dataset  # the fixture factory of the tests

SPEC = TrainingSpec(ranks=1, steps=8, layers=4, problems=False)
STEP_US = 605.0  # one step of SPEC without jitter
SIZES_PCT = (5, 10, 20)
INJECTIONS = {
    "slow_kernel": ("slow_kernel_us", "device_compute"),
    "gemm_shape": ("reshaped_gemm_us", "device_compute"),
    "sync": ("sync_us", "idle_sync"),
    "stall": ("stall_us", "idle_host_bound"),
}
GEMM = "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x32"


def digest_of(root: Path, name: str, spec: TrainingSpec) -> dict[str, Any]:
    from kinetoscope.cli.diff import load_run

    path = write_dataset(root / name, spec)
    return load_run(str(path), root / f"{name}-work").digest


def run(seeds: int, jitter: float, aa: int) -> dict[str, Any]:
    cases: dict[str, list[tuple[bool, bool]]] = {}
    false_alarms: list[bool] = []
    with tempfile.TemporaryDirectory(prefix="diff-accuracy-") as work:
        root = Path(work)
        for seed in range(seeds):
            spec = dataclasses.replace(SPEC, jitter=jitter, seed=1000 * seed)
            base = digest_of(root, f"base{seed}", spec)
            for copy in range(aa):
                again = digest_of(root, f"again{seed}-{copy}", dataclasses.replace(spec, seed=1000 * seed + 900 + copy))
                false_alarms.append(verdict.answer(base, again)["verdict"]["verdict"] != "neutral")
            for injection, (knob, part) in INJECTIONS.items():
                for size in SIZES_PCT:
                    changed_spec = dataclasses.replace(
                        spec, seed=1000 * seed + 2 + size, **{knob: size / 100 * STEP_US}
                    )
                    changed = digest_of(root, f"{injection}{size}-{seed}", changed_spec)
                    found = verdict.answer(base, changed)
                    detected = found["verdict"]["verdict"] == "regression"
                    first = found["waterfall"]["parts"][0] if found["waterfall"]["parts"] else {}
                    right = first.get("part") == part
                    if injection in ("slow_kernel", "gemm_shape") and right:
                        right = bool(first["behind"]) and first["behind"][0]["name"] == GEMM
                    cases.setdefault(f"{injection} {size}%", []).append((detected, right))
    return {"cases": cases, "false_alarms": false_alarms}


def first_steps(digest: dict[str, Any], steps: int) -> dict[str, Any]:
    """The digest of a profile of only the first ``steps`` steps of the same run (the step times and
    their parts; the evidence behind the parts stays the whole window's)."""
    kept = digest["steps"]
    cut = {
        **kept,
        "numbers": kept["numbers"][:steps],
        "step_ns": kept["step_ns"][:steps],
        "parts_ns": {part: values[:steps] for part, values in kept["parts_ns"].items()},
    }
    return {**digest, "steps": cut}


def judged(found: dict[str, Any], injection: str, part: str) -> tuple[bool, bool]:
    """(detected as a regression, with the injected culprit named first)."""
    detected = found["verdict"]["verdict"] == "regression"
    first = found["waterfall"]["parts"][0] if found["waterfall"]["parts"] else {}
    right = first.get("part") == part
    if injection in ("slow_kernel", "gemm_shape") and right:
        right = bool(first["behind"]) and first["behind"][0]["name"] == GEMM
    return detected, detected and right


def sweep(
    seeds: range, jitter: float, aa: int, step_counts: list[int], levels: list[float], *, size_pct: int = 5
) -> dict[tuple[int, float], dict[str, list[bool]]]:
    """Per (steps, confidence level): each injected change of ``size_pct`` % detected with the right
    culprit first, and each A/A pair's false alarm; traces of max(step_counts) steps, cut."""
    out: dict[tuple[int, float], dict[str, list[bool]]] = {}
    longest = max(step_counts)
    with tempfile.TemporaryDirectory(prefix="diff-sweep-") as work:
        root = Path(work)
        for seed in seeds:
            spec = dataclasses.replace(SPEC, steps=longest, jitter=jitter, seed=1000 * seed)
            base = digest_of(root, f"base{seed}", spec)
            copies = [
                digest_of(root, f"again{seed}-{c}", dataclasses.replace(spec, seed=1000 * seed + 900 + c))
                for c in range(aa)
            ]
            changed = {
                injection: (
                    digest_of(root, f"{injection}-{seed}", dataclasses.replace(
                        spec, seed=1000 * seed + 2 + size_pct, **{knob: size_pct / 100 * STEP_US})),
                    part,
                )
                for injection, (knob, part) in INJECTIONS.items()
            }
            for steps in step_counts:
                b = first_steps(base, steps)
                for level in levels:
                    slot = out.setdefault((steps, level), {"caught": [], "alarms": []})
                    for again in copies:
                        found = verdict.answer(b, first_steps(again, steps), level=level)
                        slot["alarms"].append(found["verdict"]["verdict"] != "neutral")
                    for injection, (digest, part) in changed.items():
                        found = verdict.answer(b, first_steps(digest, steps), level=level)
                        slot["caught"].append(judged(found, injection, part)[1])
    return out


def print_sweep(found: dict[tuple[int, float], dict[str, list[bool]]], size_pct: int) -> None:
    print(f"{'steps':>6}{'level':>7}{f'{size_pct}% caught, culprit first':>30}{'A/A false alarms':>20}")
    for (steps, level), slot in sorted(found.items()):
        caught, alarms = slot["caught"], slot["alarms"]
        print(
            f"{steps:>6}{level:>7.3f}{sum(caught):>17}/{len(caught)} ({100 * sum(caught) / len(caught):5.1f} %)"
            f"{sum(alarms):>9}/{len(alarms)} ({100 * sum(alarms) / len(alarms):4.1f} %)"
        )


PUBLIC = Path("/work/shared/datasets/public-traces")
PUBLIC_MULTI_STEP = (  # the public traces with at least 3 ProfilerStep#N
    "hta/tests/data/df_index_resolver/df_index_resolver.json.gz",
    "hta/tests/data/nccl_parser_config/nccl_data.json.gz",
    "hta/tests/data/negative_queue_length_values_check/rank0.json.gz",
    "hta/tests/data/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "hta/tests/data/trace_diff/control/control.json.gz",
    "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.pt.trace.json.gz",
)
REAL_KINDS = ("slow", "gemm_shape", "stall", "sync")
# a real two-rank gloo job (8 steps, an all_reduce each): benchmarks/gloo_steps_capture.py's
GLOO_JOB = Path(__file__).resolve().parents[1] / "tests" / "data" / "gloo-steps"


def own_cpu_capture(out: Path, steps: int = 8) -> Path:
    """A torch.profiler capture of ``steps`` CPU training steps (a small MLP; ProfilerStep#N marks)."""
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 256))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(128, 256)
    out.parent.mkdir(parents=True, exist_ok=True)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 schedule=schedule(wait=0, warmup=1, active=steps, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(out))) as prof:
        for _ in range(steps + 1):
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()
            prof.step()
    return out


def load_job(path: Path) -> list[dict[str, Any]]:
    """A trace, or a folder of one job's rank traces (``*.json``, ``*.json.gz``, in rank order)."""
    from tests import kineto_inject

    if not path.is_dir():
        return [kineto_inject.load(path)]
    traces = [kineto_inject.load(p) for p in sorted(path.iterdir()) if p.name.endswith((".json", ".json.gz"))]
    return sorted(traces, key=lambda t: int((t.get("distributedInfo") or {}).get("rank", 0)))


def real_digest(root: Path, name: str, traces: list[dict[str, Any]]) -> dict[str, Any]:
    from kinetoscope.cli.diff import load_run
    from tests import kineto_inject

    for rank, trace in enumerate(traces):
        kineto_inject.save(trace, root / name / f"worker{rank}.pt.trace.json")
    return load_run(str(root / name), root / f"{name}-work").digest


def step_times_us(traces: list[dict[str, Any]]) -> list[float]:
    """Each step's time, its slowest rank's (as the verdict reads a whole run), in step order."""
    from tests import kineto_inject

    by_number: dict[int, float] = {}
    for trace in traces:
        for s in kineto_inject.steps(trace):
            by_number[s.number] = max(by_number.get(s.number, 0.0), s.end_us - s.start_us)
    return [by_number[n] for n in sorted(by_number)]


def jittered(traces: list[dict[str, Any]], amplitude: float, seed: int) -> list[dict[str, Any]]:
    """Each rank's copy stretched step by step with the same factors (the job's steps move together)."""
    from tests import kineto_inject

    return [kineto_inject.jitter(t, amplitude, seed) for t in traces]


def expected(kind: str, gpu: bool, name: str) -> tuple[str, str]:
    """The part an injection should lead the waterfall with, and the name first behind it."""
    from tests import kineto_inject

    if kind == "collective":  # the collective the other ranks waited in
        return ("exposed_communication" if gpu else "host_only"), name
    if not gpu:
        return "host_only", kineto_inject.STALL_OP if kind == "stall" else name
    return {
        "slow": ("device_compute", name),
        "gemm_shape": ("device_compute", name),
        "stall": ("idle_host_bound", kineto_inject.STALL_OP),
        "sync": ("idle_sync", kineto_inject.SYNC_CALL),
    }[kind]


def injected(traces: list[dict[str, Any]], kind: str, delta_us: float) -> tuple[list[dict[str, Any]], str]:
    """The job's traces with ``kind`` injected at ``delta_us`` a step, and the name it should be
    found by ("" for the stall and the sync, whose names are fixed); one trace but ``collective``."""
    from tests import kineto_inject

    if kind == "collective":
        return kineto_inject.delay_collective(traces, len(traces) - 1, delta_us)
    trace = traces[0]
    if kind == "slow":
        changed, name = kineto_inject.slow(trace, delta_us)
    elif kind == "gemm_shape":
        changed, name = kineto_inject.reshape_gemm(trace, delta_us)
    else:
        changed, name = getattr(kineto_inject, kind)(trace, delta_us), ""
    return [changed], name


def run_real(
    paths: list[Path], jitter: float, aa: int, *, sizes: tuple[int, ...] = SIZES_PCT, repeats: int = 1,
    chosen: tuple[str, ...] = REAL_KINDS,
) -> dict[str, Any]:
    """Each real trace (or folder of one job's rank traces): A/A pairs (two jittered copies), each
    injection at each size (a jittered copy against a jittered injected copy), and a one-step window
    against itself (must be inconclusive). A one-rank trace gets ``REAL_KINDS``; a job of several
    ranks the collective delay (its last rank late). ``repeats``: injected copies of each size, each
    jittered with its own seed; ``chosen``: the one-rank kinds to inject."""
    import statistics

    from tests import kineto_inject

    cases: dict[str, list[tuple[bool, bool, bool, bool]]] = {}
    alarms: list[bool] = []
    one_step: list[bool] = []
    with tempfile.TemporaryDirectory(prefix="diff-real-") as work:
        root = Path(work)
        for t, path in enumerate(paths):
            traces = load_job(path)
            step_us = statistics.median(step_times_us(traces))
            gpu = kineto_inject.is_gpu(traces[0])
            base = real_digest(root, f"t{t}-base", jittered(traces, jitter, 1))
            for c in range(aa):
                again = real_digest(root, f"t{t}-aa{c}", jittered(traces, jitter, 100 + c))
                alarms.append(verdict.answer(base, again)["verdict"]["verdict"] != "neutral")
            one = [kineto_inject.first_steps(trace, 1) for trace in traces]
            single = verdict.answer(real_digest(root, f"t{t}-one", one), real_digest(root, f"t{t}-one2", one))
            one_step.append(single["verdict"]["verdict"] == "inconclusive")
            kinds = ("collective",) if len(traces) > 1 else tuple(k for k in REAL_KINDS if k in chosen)
            for kind in kinds:
                if kind in ("sync", "gemm_shape") and not gpu:
                    continue
                for size, repeat in itertools.product(sizes, range(repeats)):
                    try:
                        changed, name = injected(traces, kind, size / 100 * step_us)
                    except ValueError as why:  # nothing to inject it into (a GEMM's shape without shapes)
                        print(f"{path}: no {kind}: {why}")
                        break
                    seed = 7 + size + 1000 * repeat
                    digest = real_digest(root, f"t{t}-{kind}{size}-{repeat}", jittered(changed, jitter, seed))
                    answer = verdict.answer(base, digest)
                    part, first = expected(kind, gpu, name)
                    lead = answer["waterfall"]["parts"][0] if answer["waterfall"]["parts"] else {}
                    shown = str(lead["behind"][0]["name"]) if lead.get("behind") else "\0"
                    named = first.startswith(shown) or shown.startswith(first)  # a name may be shown cut
                    detected = answer["verdict"]["verdict"] == "regression"
                    label = f"{'gpu' if gpu else 'cpu'} {kind} {size}%"
                    in_part = named and lead.get("part") == part
                    cases.setdefault(label, []).append((detected, detected and named, detected and in_part, in_part))
    return {"cases": cases, "false_alarms": alarms, "one_step_inconclusive": one_step}


def caught_rate(step_us: list[float], jitter: float, pct: float, *, level: float = 0.95, draws: int = 200,
                seed: int = 0) -> float:
    """The share of the pairs this benchmark makes of a trace with these step times (each side the
    same steps, each stretched by its own 1 + U(-jitter, jitter)), ``pct`` % of the median step
    added to every step of one side, that the verdict's rank test calls at ``level``."""
    import random
    import statistics

    from kinetoscope.model import significance

    median = statistics.median(step_us)
    draw = random.Random(seed)
    hits = 0
    for _ in range(draws):
        base = [s * (1 + draw.uniform(-jitter, jitter)) for s in step_us]
        new = [(s + pct / 100 * median) * (1 + draw.uniform(-jitter, jitter)) for s in step_us]
        hits += bool(significance.per_step_change(base, new, level).significant)
    return hits / draws


def detectable_pct(step_us: list[float], jitter: float, *, level: float = 0.95, rate: float = 0.95) -> float | None:
    """The smallest change (percent of the median step, to 0.25) that ``caught_rate`` puts at ``rate``
    or more; None when these step counts cannot reach ``level`` at all."""
    from kinetoscope.model import significance

    huge = [s + 1e9 * max(step_us) for s in step_us]
    if significance.per_step_change(step_us, huge, level).significant is not True:
        return None
    low, high = 0.0, 1.0
    while caught_rate(step_us, jitter, high, level=level) < rate:
        low, high = high, 2 * high
    while high - low > 0.25:
        middle = (low + high) / 2
        low, high = (middle, high) if caught_rate(step_us, jitter, middle, level=level) < rate else (low, middle)
    return high


def print_detectable(paths: list[Path], jitter: float) -> None:
    """Per trace: steps, their spread, the best confidence those steps allow and the change the
    benchmark's pairs can show at 95 %."""
    import statistics

    from kinetoscope.model import significance

    print(f"{'input':<48}{'steps':>6}{'median ms':>10}{'CV':>7}{'range':>8}{'best conf':>10}{'5 % caught':>11}"
          f"{'95 % needs':>11}")
    for path in paths:
        steps = step_times_us(load_job(path))
        median = statistics.median(steps)
        cv = statistics.stdev(steps) / statistics.mean(steps) if len(steps) > 1 else 0.0
        best = significance.per_step_change(steps, [s + 1e9 for s in steps]).best_confidence
        needed = detectable_pct(steps, jitter)
        print(f"{str(path)[-48:]:<48}{len(steps):>6}{median / 1000:>10.2f}{100 * cv:>6.1f}%"
              f"{100 * (max(steps) - min(steps)) / median:>7.0f}%{100 * (best or 0):>9.2f}%"
              f"{100 * caught_rate(steps, jitter, 5.0):>10.0f}%{'never' if needed is None else f'{needed:.2f} %':>11}")
        print(f"{'':<8}step times (ms): {', '.join(f'{s / 1000:.1f}' for s in steps)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3, help="base traces (each with its A/A pair and injections)")
    parser.add_argument("--aa", type=int, default=3, help="A/A pairs per base trace (default 3)")
    parser.add_argument("--jitter", type=float, default=0.02, help="per-step jitter (default 0.02: +-2 %%)")
    parser.add_argument("--first-seed", type=int, default=0, help="seeds from this one (a held-out set: another range)")
    parser.add_argument("--sweep-steps", type=str, default="",
                        help="comma-separated step counts: instead of the table, the rate of 5%% changes caught with "
                             "the culprit first and of A/A false alarms per step count and --levels")
    parser.add_argument("--levels", type=str, default="0.95", help="comma-separated levels for --sweep-steps")
    parser.add_argument("--real", nargs="*", type=Path, default=None,
                        help="inject into these real traces or folders of one job's rank traces instead ('public': "
                             "the public ones with >= 3 steps; 'gloo': tests/data/gloo-steps, a two-rank gloo job)")
    parser.add_argument("--own-cpu", action="store_true", help="with --real: also an 8-step CPU capture made here")
    parser.add_argument("--sizes", type=str, default=",".join(str(v) for v in SIZES_PCT),
                        help="with --real: the injected changes, percent of the median step (default 5,10,20)")
    parser.add_argument("--kinds", type=str, default=",".join(REAL_KINDS),
                        help=f"with --real: the one-rank injections (default {','.join(REAL_KINDS)})")
    parser.add_argument("--repeats", type=int, default=1, help="with --real: injected copies of each size (default 1)")
    parser.add_argument("--detectable", action="store_true",
                        help="with --real: instead of injecting, each input's steps, their spread and the smallest "
                             "change the rank test calls at 95 %% in 95 %% of this benchmark's pairs")
    args = parser.parse_args(argv)
    if args.real is not None:
        aliases = {Path("public"): [PUBLIC / p for p in PUBLIC_MULTI_STEP], Path("gloo"): [GLOO_JOB]}
        traces = [t for given in args.real for t in aliases.get(given, [given])]
        if args.own_cpu:
            traces.append(own_cpu_capture(Path(tempfile.mkdtemp(prefix="diff-own-")) / "cpu.pt.trace.json"))
        if args.detectable:
            print_detectable(traces, args.jitter)
            return 0
        sizes = tuple(int(v) for v in args.sizes.split(","))
        found = run_real(traces, args.jitter, args.aa, sizes=sizes, repeats=args.repeats,
                         chosen=tuple(args.kinds.split(",")))
        print_table(found)
        inconclusive = found["one_step_inconclusive"]
        print(f"one-step windows: {sum(inconclusive)}/{len(inconclusive)} inconclusive")
        return 0
    if args.sweep_steps:
        counts = [int(v) for v in args.sweep_steps.split(",")]
        levels = [float(v) for v in args.levels.split(",")]
        seeds = range(args.first_seed, args.first_seed + args.seeds)
        print_sweep(sweep(seeds, args.jitter, args.aa, counts, levels), 5)
        return 0
    print_table(run(args.seeds, args.jitter, args.aa))
    return 0


def print_table(found: dict[str, Any]) -> None:
    """Per injection: detected, detected with the culprit named first, and (real traces) with it
    under the expected part of the waterfall too, and that culprit and part named first whatever
    the verdict (the waterfall reads the mean step, significant or not)."""
    parted = any(len(r) > 2 for results in found["cases"].values() for r in results)
    head = f"{'injection':<22}{'pairs':>6}{'detected':>10}{'culprit first':>15}"
    print(head + (f"{'in its part':>13}{'named, any verdict':>20}" if parted else ""))
    hits = rights = total = 0
    for name, results in found["cases"].items():
        d = sum(r[0] for r in results)
        c = sum(r[0] and r[1] for r in results)
        hits, rights, total = hits + d, rights + c, total + len(results)
        line = f"{name:<22}{len(results):>6}{100 * d / len(results):>9.0f}%{100 * c / len(results):>14.0f}%"
        if parted:
            line += f"{100 * sum(r[2] for r in results) / len(results):>12.0f}%"
            line += f"{100 * sum(r[3] for r in results) / len(results):>19.0f}%"
        print(line)
    alarms = found["false_alarms"]
    print(
        f"all injected: {hits}/{total} detected ({100 * hits / total:.1f} %), "
        f"{rights}/{total} detected with the right culprit first ({100 * rights / total:.1f} %)"
    )
    print(f"A/A pairs: {sum(alarms)}/{len(alarms)} false alarms ({100 * sum(alarms) / len(alarms):.1f} %)")


if __name__ == "__main__":
    raise SystemExit(main())
