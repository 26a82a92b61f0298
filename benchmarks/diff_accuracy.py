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
"""

from __future__ import annotations

import argparse
import dataclasses
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3, help="base traces (each with its A/A pair and injections)")
    parser.add_argument("--aa", type=int, default=3, help="A/A pairs per base trace (default 3)")
    parser.add_argument("--jitter", type=float, default=0.02, help="per-step jitter (default 0.02: +-2 %%)")
    args = parser.parse_args(argv)
    found = run(args.seeds, args.jitter, args.aa)
    print(f"{'injection':<18}{'pairs':>6}{'detected':>10}{'culprit first':>15}")
    hits = rights = total = 0
    for name, results in found["cases"].items():
        d = sum(r[0] for r in results)
        c = sum(r[0] and r[1] for r in results)
        hits, rights, total = hits + d, rights + c, total + len(results)
        print(f"{name:<18}{len(results):>6}{100 * d / len(results):>9.0f}%{100 * c / len(results):>14.0f}%")
    alarms = found["false_alarms"]
    print(
        f"all injected: {hits}/{total} detected ({100 * hits / total:.1f} %), "
        f"{rights}/{total} detected with the right culprit first ({100 * rights / total:.1f} %)"
    )
    print(f"A/A pairs: {sum(alarms)}/{len(alarms)} false alarms ({100 * sum(alarms) / len(alarms):.1f} %)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
