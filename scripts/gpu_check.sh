#!/usr/bin/env bash
# On a CUDA machine, with the machine's own torch: the examples, the demo with all four modes, the GPU
# tests and `kinetoscope run` on a small training script; then a small CUDA session and the log into DEST.
#
#   scripts/gpu_check.sh [DEST]        DEST defaults to $OUT, else ./gpu_check_out
#
# Runs within 8 minutes: every step gets what is left of that budget at most, and a step that fails or
# runs out of time is reported and the next one runs. Nothing is downloaded: kinetoscope is installed
# with `pip install --no-deps` and a package the capture path needs that is missing comes from ./.whl
# (wheels carried to the machine; see the device tool's README), else the script says which are missing.
# Exit status: 0 when every step passed, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
python="${PYTHON:-python3}"
dest="${1:-${OUT:-$repo/gpu_check_out}}"
mkdir -p "$dest"
work="$(mktemp -d "${TMPDIR:-/tmp}/kinetoscope-gpu-check.XXXXXX")"
log="$dest/gpu_check.log"
exec > >(tee "$log") 2>&1
deadline=$(( $(date +%s) + ${GPU_CHECK_BUDGET_S:-480} ))
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 PYTHONPATH="$repo/src${PYTHONPATH:+:$PYTHONPATH}"
passed=() failed=()

# step NAME SECONDS COMMAND...: run COMMAND for at most SECONDS, and never past the deadline (a shell
# function of this script runs untimed: `timeout` runs programs only).
step() {
  local name="$1" limit="$2"; shift 2
  local left=$(( deadline - $(date +%s) ))
  (( left < limit )) && limit=$left
  echo; echo "=== $name (at most ${limit}s)"
  if (( limit <= 5 )); then echo "--- $name: SKIPPED, the 8-minute budget is spent"; failed+=("$name"); return; fi
  local start=$SECONDS runner=(timeout --kill-after=10 "$limit")
  declare -F "$1" >/dev/null && runner=()
  if "${runner[@]}" "$@"; then
    echo "--- $name: PASSED in $(( SECONDS - start ))s"; passed+=("$name")
  else
    echo "--- $name: FAILED (exit $?) after $(( SECONDS - start ))s"; failed+=("$name")
  fi
}

echo "=== machine"
nvidia-smi -L || echo "nvidia-smi: not found"
"$python" - <<'EOF'
import sys, torch
print(f"python {sys.version.split()[0]}, torch {torch.__version__}, CUDA {torch.version.cuda}, "
      f"GPUs {torch.cuda.device_count()}, available {torch.cuda.is_available()}")
if not torch.cuda.is_available():
    sys.exit("no CUDA device: this script checks the CUDA path only")
EOF
(( $? == 0 )) || exit 1
gpus="$("$python" -c 'import torch; print(torch.cuda.device_count())')"
nproc=$(( gpus < 2 ? gpus : 2 ))  # one rank per GPU (the examples pick cuda:LOCAL_RANK), two at most

# Packages the capture path and the tests import, by import name and by the name a wheel carries.
install() {
  local missing=() module
  declare -A wheel=([google.protobuf]=protobuf [psutil]=psutil [perfetto]=perfetto [pytest]=pytest)
  for module in google.protobuf psutil perfetto pytest; do
    "$python" -c "import $module" 2>/dev/null || missing+=("${wheel[$module]}")
  done
  if (( ${#missing[@]} )); then
    echo "missing here: ${missing[*]}"
    if compgen -G ".whl/*.whl" >/dev/null; then
      echo "installing them from .whl/ into $work/site (no index): $(ls .whl)"
      "$python" -m pip install -q --no-index --no-deps --no-compile --target "$work/site" --find-links .whl \
        "${missing[@]}" || return 1
      export PYTHONPATH="$work/site:$PYTHONPATH"
    else
      echo "no .whl/ folder: carry wheels for ${missing[*]} (python3 -m pip download --no-deps --only-binary=:all: \\"
      echo "  --python-version 3.12 --platform manylinux2014_x86_64 -d .whl NAME==VERSION; see pyproject.toml)"
      return 1
    fi
  else
    echo "torch, protobuf, psutil, perfetto and pytest are all here; nothing to install but kinetoscope"
  fi
  "$python" -m pip install -q --no-deps --no-build-isolation -e . \
    || echo "pip install -e . failed; using PYTHONPATH=$repo/src instead"
  "$python" -c "import kinetoscope.capture.profiler, kinetoscope.format.session_files.trace_info; print('kinetoscope imports')" \
    || { echo "kinetoscope does not import: an older protobuf than its generated code needs? carry a" \
              "protobuf wheel (pyproject.toml's version) in .whl/"; return 1; }
}
step "install kinetoscope (pip --no-deps)" 90 install || true

cat > "$work/train.py" <<'EOF'
import torch
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(64, 512, device="cuda"), torch.randint(0, 10, (64,), device="cuda")
for _ in range(8):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
torch.cuda.synchronize()
print("trained")
EOF

torchrun=("$python" -m torch.distributed.run --standalone --nproc_per_node "$nproc")
step "examples/basic.py" 60 "$python" examples/basic.py "$work/basic"
step "demo: the basic workload with all four modes" 90 "$python" -m kinetoscope demo --out "$work/demo"
step "examples/multi_rank.py under torchrun ($nproc ranks)" 90 "${torchrun[@]}" examples/multi_rank.py "$work/multi_rank"
step "examples/memory_snapshot.py under torchrun ($nproc ranks)" 90 "${torchrun[@]}" examples/memory_snapshot.py "$work/memory"
step "GPU tests (tests/gpu)" 150 "$python" -m pytest -q -p no:cacheprovider tests/gpu
step "kinetoscope run on a training script" 90 "$python" -m kinetoscope run --steps 3-5 \
  --modes DEVICE,RUNTIME,CPU_UTIL,HOST_MEMORY --record-shapes --out "$work/run" -- "$python" "$work/train.py"
step "kinetoscope verify of the run's session" 60 "$python" -m kinetoscope verify "$work/run"

# Kernels and launch flows in trace.json beside the device files, for the report.
cat > "$work/compare.py" <<'EOF'
import json, sys
from pathlib import Path
from kinetoscope.format.perfetto_packets.reader import read_packet_file
for session in sorted(Path(sys.argv[1]).glob("*_pid_*/*")):
    events = json.loads((session / "trace.json").read_text())["traceEvents"]
    kernels = sum(1 for e in events if e.get("cat") == "kernel")
    flows = sum(1 for e in events if e.get("cat") == "ac2g")
    print(f"{session}: trace.json kernels {kernels}, launch flows {flows}")
    for device in sorted(session.glob("device_*.pb")):
        result = read_packet_file(device)
        print(f"  {device.name}: {len(result.packets)} packets, {device.stat().st_size:,} bytes")
EOF
step "kernel counts" 30 "$python" "$work/compare.py" "$work/run"

session="$(find "$work/run" -mindepth 2 -maxdepth 2 -type d | head -n 1)"
if [[ -n "$session" ]]; then
  tar -czf "$dest/cuda_session.tar.gz" -C "$(dirname "$session")" "$(basename "$session")"
  echo "copied $(du -h "$dest/cuda_session.tar.gz" | cut -f1) session archive to $dest/cuda_session.tar.gz"
fi
echo; echo "=== passed: ${#passed[@]}, failed: ${#failed[@]}"
for name in "${failed[@]}"; do echo "FAILED: $name"; done
rm -rf "$work"
(( ${#failed[@]} == 0 ))
