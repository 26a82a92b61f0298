"""Import memory: peak RSS stays flat whether the trace is 50 MB or 500 MB.

Generates both traces under /tmp, then imports each in a fresh subprocess and reads that
process's peak resident set size (``ru_maxrss``). For contrast, a subprocess loads the 50 MB
trace whole with the standard library, as tools that are not streaming do. Prints the peaks
and the ratio 500 MB / 50 MB (1.0 means memory does not grow with the trace).

Usage: python benchmarks/import_memory.py [--small-mb 50] [--large-mb 500]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from trace_gen import write_trace

IMPORT = """
import resource, sys
from pathlib import Path
from kinetoscope.importer import trace_import as imp
imp.import_trace(Path(sys.argv[1]), imp.ImportOptions(out_dir=Path(sys.argv[2])))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
LOAD_WHOLE = """
import json, resource, sys
document = json.load(open(sys.argv[1], "rb"))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
BASELINE = """
import resource
from kinetoscope.importer import trace_import
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def peak_rss_mb(code: str, *args: str) -> float:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)
    return int(done.stdout.split()[-1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small-mb", type=float, default=50)
    parser.add_argument("--large-mb", type=float, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        small, large = Path(tmp) / "small.json", Path(tmp) / "large.json"
        write_trace(small, int(args.small_mb * 1e6))
        write_trace(large, int(args.large_mb * 1e6))
        baseline = peak_rss_mb(BASELINE)
        small_peak = peak_rss_mb(IMPORT, str(small), str(Path(tmp) / "out-small"))
        large_peak = peak_rss_mb(IMPORT, str(large), str(Path(tmp) / "out-large"))
        whole = peak_rss_mb(LOAD_WHOLE, str(small))
        sizes = (small.stat().st_size / 1e6, large.stat().st_size / 1e6)
    print(f"interpreter with kinetoscope imported: {baseline:7.0f} MB peak RSS")
    print(f"import of {sizes[0]:6.0f} MB trace:           {small_peak:7.0f} MB peak RSS")
    print(f"import of {sizes[1]:6.0f} MB trace:           {large_peak:7.0f} MB peak RSS")
    print(f"ratio (large / small):                 {large_peak / small_peak:7.2f}")
    print(f"for contrast, json.load of {sizes[0]:.0f} MB:      {whole:7.0f} MB peak RSS")


if __name__ == "__main__":
    main()
