"""The command line's own process ends without the interpreter's teardown (``_process_end``): its
threads are joined, ``atexit`` runs, the streams are flushed and the status is kept."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ENDING = """
import atexit, sys, threading, time
from kinetoscope._process_end import end_process
atexit.register(lambda: print("atexit ran", flush=False))
def late():
    time.sleep(0.2)
    print("thread ended")
threading.Thread(target=late).start()
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()  # a daemon is not waited for
print("buffered", end=" ")
sys.stderr.write("to stderr")
end_process(3)
print("never")
"""


def test_threads_atexit_and_streams_are_done_and_the_status_kept() -> None:
    done = subprocess.run([sys.executable, "-c", ENDING], check=False, capture_output=True, text=True, timeout=30)
    assert done.returncode == 3
    assert done.stdout.split() == ["buffered", "thread", "ended", "atexit", "ran"]
    assert done.stderr == "to stderr"


def test_a_thread_pool_never_shut_down_does_not_hold_the_end() -> None:
    code = (
        "from concurrent.futures import ThreadPoolExecutor\nfrom kinetoscope._process_end import end_process\n"
        "pool = ThreadPoolExecutor(2)\nassert pool.submit(int, '7').result() == 7\nprint('done')\nend_process(0)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "done\n")


def test_the_command_ends_with_its_status_and_its_whole_output(tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here"
    failed = subprocess.run([sys.executable, "-m", "kinetoscope", "summary", str(missing)],
                            check=False, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert failed.returncode == 2 and "no such file or directory" in failed.stderr
    command = [sys.executable, "-m", "kinetoscope", "--version"]
    version = subprocess.run(command, check=False, capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("kinetoscope ")


def test_a_reader_that_goes_away_is_no_error() -> None:
    code = (
        "import sys\nfrom kinetoscope._process_end import end_process\n"
        "sys.stdout.write('x' * 1_000_000)\nend_process(0)\n"
    )
    reader = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.read(10)
    reader.stdout.close()  # the reader goes away before the writer flushes
    assert reader.wait(timeout=30) == 0 and b"Traceback" not in reader.stderr.read()
