"""``kinetoscope run`` and ``trigger`` on unmodified programs, run for real (one process, two torchrun ranks)."""

from __future__ import annotations

import collections
import os
import shlex
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from kinetoscope.format.session_files import trace_info as ti

from ...conftest import PYTHON, python_env, requires_cxx
from ...torchrun import job_failed, sessions_by_rank, torchrun_command
from ..helpers import check_complete_session, load_trace

pytestmark = pytest.mark.slow

# A training script that knows nothing of kinetoscope. argv: steps (or "until" a stop file
# appears), a directory for per-rank ready markers written after the first step, exit status.
TRAIN = textwrap.dedent(
    """
    import atexit, os, sys, threading, time
    import torch
    import torch.distributed as dist

    def main():
        steps, ready, status = sys.argv[1], sys.argv[2], int(sys.argv[3])
        distributed = "RANK" in os.environ
        if distributed:
            dist.init_process_group("gloo")
        torch.manual_seed(0)
        model = torch.nn.Linear(32, 4)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = torch.randn(16, 32), torch.randn(16, 4)
        step, deadline = 0, time.monotonic() + 60
        while steps == "until" or step < int(steps):
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            if distributed:
                dist.all_reduce(model.weight.grad)
            opt.step()
            step += 1
            if step == 1 and ready != "-":
                with open(os.path.join(ready, f"rank{os.environ.get('RANK', '0')}"), "w") as marker:
                    marker.write(str(os.getpid()))
            if steps == "until":
                # every rank stops after the same step: one leaving alone would fail the other's all_reduce
                done = os.path.exists(os.path.join(ready, "stop")) or time.monotonic() > deadline
                flag = torch.tensor([float(done)])
                if distributed:
                    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
                if flag.item():
                    break
                time.sleep(0.02)
        if distributed:
            dist.barrier()  # neither rank tears gloo down while the other still talks to it (else: SIGABRT at exit)
            dist.destroy_process_group()
            # Even so, torch's own teardown at interpreter exit aborts now and then on a loaded machine
            # ("terminate called without an active exception", rank 0, SIGABRT; 1 run in 12 of this script
            # under plain torchrun, without kinetoscope). What Python runs at exit (kinetoscope's exports
            # included) runs; the C++ teardown after it is skipped.
            for thread in threading.enumerate():
                if thread is not threading.main_thread() and not thread.daemon:
                    thread.join()
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)
        sys.exit(status)

    if __name__ == "__main__":
        main()
    """
)


def kinetoscope(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
                timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYTHON, "-m", "kinetoscope", *args], env=env or job_env(), cwd=cwd,
                          capture_output=True, text=True, timeout=timeout_s, check=False)


def job_env(**extra: str) -> dict[str, str]:
    return python_env() | {"OMP_NUM_THREADS": "1"} | extra


def write_train(directory: Path, name: str = "train.py") -> Path:
    script = directory / name
    script.write_text(TRAIN)
    return script


def trace_steps(session: Path) -> tuple[list[int], collections.Counter[str]]:
    """The ``ProfilerStep#N`` numbers in a session's trace.json, and a count of its ops by name."""
    events = [e for e in load_trace(session)["traceEvents"] if e.get("ph") == "X"]
    steps = sorted(int(e["name"].split("#")[1]) for e in events if e["name"].startswith("ProfilerStep#"))
    return steps, collections.Counter(e["name"] for e in events)


def test_run_profiles_the_chosen_steps_of_an_unmodified_script(tmp_path: Path) -> None:
    out = tmp_path / "out"
    script = write_train(tmp_path)
    done = kinetoscope("run", "--steps", "4-6", "--modes", "RUNTIME,CPU_UTIL", "--record-shapes",
                       "--out", str(out), "--", PYTHON, str(script), "10", "-", "0")
    assert done.returncode == 0, job_failed(done)
    (session,) = out.glob("*_pid_*/*")
    info = check_complete_session(session)
    assert {"trace.json", "ntrace.pb", "cpu_util.pb"} <= {f.name for f in info.files}
    assert info.profiler_options.record_shapes and not info.profiler_options.with_stack
    steps, ops = trace_steps(session)
    assert steps == [4, 5, 6]
    assert ops["aten::linear"] == 3 and ops["aten::mse_loss"] == 3  # one forward per recorded step, no more
    assert str(session) in done.stderr and f"kinetoscope verify {out}" in done.stderr


@requires_cxx
def test_run_memory_writes_history_and_a_snapshot_into_the_session(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = kinetoscope("run", "--steps", "3-4", "--memory", "--with-stack", "--out", str(out), "--",
                       PYTHON, str(write_train(tmp_path)), "6", "-", "0")
    assert done.returncode == 0, job_failed(done)
    (session,) = out.glob("*_pid_*/*")
    (snapshot,) = check_complete_session(session).memory_snapshots
    assert snapshot.file == "memory_snapshot_rank0.pickle" and snapshot.entries > 0 and snapshot.stacks == "python"
    assert (session / snapshot.file).is_file()


def test_run_python_dash_m_with_a_step_function_and_the_exit_status(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (tmp_path / "trainmod.py").write_text(
        "import steplib\nfor i in range(8):\n    steplib.work(i)\nraise SystemExit(3)\n"
    )
    (tmp_path / "steplib.py").write_text("import torch\n\ndef work(i):\n    return torch.ones(4, 4).mul(i).sum()\n")
    done = kinetoscope("run", "--steps", "3-4", "--step-fn", "steplib:work", "--out", str(out),
                       "--", PYTHON, "-m", "trainmod", cwd=tmp_path)
    assert done.returncode == 3, job_failed(done)  # the program's own exit status
    (session,) = out.glob("*_pid_*/*")
    steps, ops = trace_steps(session)
    assert steps == [3, 4] and ops["aten::mul"] == 2


def test_run_says_so_when_the_steps_are_never_reached(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = kinetoscope("run", "--steps", "50-52", "--out", str(out), "--",
                       PYTHON, str(write_train(tmp_path)), "5", "-", "0")
    assert done.returncode == 0, job_failed(done)
    assert not list(out.glob("*_pid_*/*"))
    assert "ran 5 steps and ended before step 50" in done.stderr
    assert "no session was written" in done.stderr and "--steps" in done.stderr


def test_a_capture_still_recording_at_exit_is_exported(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = kinetoscope("run", "--steps", "3-20", "--out", str(out), "--",
                       PYTHON, str(write_train(tmp_path)), "6", "-", "0")
    assert done.returncode == 0, job_failed(done)
    (session,) = out.glob("*_pid_*/*")
    check_complete_session(session)
    steps, ops = trace_steps(session)
    # steps 3-5 ran; step 6 is what followed the last optimizer step, until the program ended
    assert steps == [3, 4, 5, 6] and ops["aten::linear"] == 3


def test_sigterm_to_run_reaches_the_program_which_seals_its_session(tmp_path: Path) -> None:
    out, ready = tmp_path / "out", tmp_path / "ready"
    ready.mkdir()
    job = subprocess.Popen([PYTHON, "-m", "kinetoscope", "run", "--steps", "2-100000", "--out", str(out), "--",
                            PYTHON, str(write_train(tmp_path)), "until", str(ready), "0"],
                           env=job_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: bool(list(out.glob("*_pid_*/*"))), job)  # recording
    job.send_signal(signal.SIGTERM)
    _, stderr = job.communicate(timeout=60)
    assert job.returncode == 143, stderr[-3000:]
    (session,) = out.glob("*_pid_*/*")
    check_complete_session(session)
    assert str(session) in stderr


def test_variables_alone_configure_a_program_started_without_the_wrapper(tmp_path: Path) -> None:
    out = tmp_path / "out"
    printed = kinetoscope("run", "--print-env", "--skip-first", "2", "--warmup", "1", "--active", "2",
                          "--repeat", "2", "--out", str(out))
    assert printed.returncode == 0, job_failed(printed)
    variables = dict(shlex.split(line)[1].split("=", 1) for line in printed.stdout.splitlines())
    assert variables["KINETOSCOPE_RUN"] == "1" and variables["KINETOSCOPE_ACTIVE"] == "2"
    done = subprocess.run([PYTHON, str(write_train(tmp_path)), "12", "-", "0"], env=job_env(**variables),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, job_failed(done)
    sessions = sorted(out.glob("*_pid_*/*"))
    assert [trace_steps(s)[0] for s in sessions] == [[3, 4], [6, 7]]  # two cycles, as torch.profiler.schedule


def test_the_shadowed_sitecustomize_runs_and_a_bad_variable_leaves_the_program_alone(tmp_path: Path) -> None:
    from kinetoscope.cli.run import INJECT_DIR

    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text(f"open({str(tmp_path / 'chained')!r}, 'w').close()\n")
    env = job_env(KINETOSCOPE_RUN="1", KINETOSCOPE_MODES="DEVICE,GPU")
    env["PYTHONPATH"] = os.pathsep.join([str(INJECT_DIR), str(other), env["PYTHONPATH"]])
    done = subprocess.run([PYTHON, "-c", "print('ran')"], env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert (done.returncode, done.stdout) == (0, "ran\n"), done.stderr
    assert (tmp_path / "chained").exists()
    assert "kinetoscope: not profiling: KINETOSCOPE_MODES (--modes): unknown mode 'GPU'" in done.stderr


def test_the_injected_start_up_imports_no_torch_protobuf_or_psutil(tmp_path: Path) -> None:
    from kinetoscope.cli.run import INJECT_DIR

    env = job_env(KINETOSCOPE_RUN="1", KINETOSCOPE_STEPS="3-4", KINETOSCOPE_OUT=str(tmp_path))
    env["PYTHONPATH"] = os.pathsep.join([str(INJECT_DIR), env["PYTHONPATH"]])
    names = ("torch", "google.protobuf", "psutil", "kinetoscope.capture.running.autorun")
    probe = f"import sys; print([m for m in {names!r} if m in sys.modules])"
    done = subprocess.run([PYTHON, "-c", probe], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout.strip() == "['kinetoscope.capture.running.autorun']", done.stderr


def test_run_profiles_every_rank_of_an_unmodified_torchrun_job(tmp_path: Path) -> None:
    out = tmp_path / "out"
    job = torchrun_command(write_train(tmp_path), 2, "8", "-", "0")
    done = kinetoscope("run", "--steps", "3-4", "--out", str(out), "--", *job)
    assert done.returncode == 0, job_failed(done)
    sessions = sessions_by_rank(out)
    assert sorted(sessions) == [0, 1]
    for rank, (session, info) in sessions.items():
        check_complete_session(session)
        assert (info.identity.rank, info.identity.world_size, info.identity.rank_known) == (rank, 2, True)
        steps, ops = trace_steps(session)
        assert steps == [3, 4] and ops["gloo:all_reduce"] == 2
        assert f"rank {rank}  {session}" in done.stderr


def test_trigger_captures_steps_of_a_running_two_rank_job(tmp_path: Path) -> None:
    out, ready, runtime = tmp_path / "out", tmp_path / "ready", tmp_path / "runtime"
    ready.mkdir()
    runtime.mkdir(mode=0o700)
    env = job_env(XDG_RUNTIME_DIR=str(runtime))  # this test's own sockets, none of other jobs of this user
    job = subprocess.Popen([PYTHON, "-m", "kinetoscope", "run", "--on-demand", "--out", str(out), "--",
                            *torchrun_command(write_train(tmp_path), 2, "until", str(ready), "0")],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: len(list(ready.glob("rank*"))) == 2, job)
        triggered = kinetoscope("trigger", "--all", "--steps", "3", "--timeout", "60", env=env)
        assert triggered.returncode == 0, job_failed(triggered)
        assert job.poll() is None  # the job goes on after the capture
    finally:
        (ready / "stop").write_text("")
        stdout, stderr = job.communicate(timeout=60)
    assert job.returncode == 0, f"{stdout[-2000:]}\n{stderr[-4000:]}"
    sessions = sessions_by_rank(out)
    assert sorted(sessions) == [0, 1]
    for rank, (session, info) in sessions.items():
        assert ti.state_name(info.state) == "COMPLETE"
        steps, _ = trace_steps(session)
        assert len(steps) == 3 and steps == list(range(steps[0], steps[0] + 3)) and steps[0] >= 2
        assert f"(rank {rank}): session {session}" in triggered.stdout
    assert not list(runtime.glob("kinetoscope/*.sock"))  # each rank removed its socket at exit


def wait_for(condition: object, job: subprocess.Popen[str], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        assert job.poll() is None, job.communicate()[1][-4000:]
        assert time.monotonic() < deadline, "the job did not start in time"
        time.sleep(0.1)


IN_CODE = textwrap.dedent(
    """
    import os, sys, time, torch
    import kinetoscope

    print(kinetoscope.on_demand(), flush=True)
    model = torch.nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    deadline = time.monotonic() + 60
    while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
        model(torch.randn(4, 8)).sum().backward()
        opt.step()
        time.sleep(0.02)
    """
)


def test_trigger_by_pid_a_program_that_calls_on_demand_itself(tmp_path: Path) -> None:
    out, stop, runtime = tmp_path / "out", tmp_path / "stop", tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    script = tmp_path / "serve.py"
    script.write_text(IN_CODE)
    env = job_env(XDG_RUNTIME_DIR=str(runtime))
    job = subprocess.Popen([PYTHON, str(script), str(stop)], env=env, cwd=tmp_path,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        socket_path = Path(job.stdout.readline().strip())  # type: ignore[union-attr]
        assert socket_path == runtime / "kinetoscope" / f"{job.pid}.sock" and socket_path.is_socket()
        triggered = kinetoscope("trigger", str(job.pid), "--steps", "2", "--modes", "RUNTIME,HOST_MEMORY",
                                "--with-stack", "--out", str(out), env=env)
        assert triggered.returncode == 0, job_failed(triggered)
    finally:
        stop.write_text("")
        job.communicate(timeout=60)
    assert job.returncode == 0
    (session,) = out.glob("*_pid_*/*")
    info = check_complete_session(session)
    assert "host_mem.pb" in {f.name for f in info.files} and info.profiler_options.with_stack
    assert len(trace_steps(session)[0]) == 2 and f"pid {job.pid}: session {session}" in triggered.stdout


def test_trigger_without_listeners_fails_clearly(tmp_path: Path) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    done = kinetoscope("trigger", "--all", "--steps", "2", env=job_env(XDG_RUNTIME_DIR=str(runtime)))
    assert done.returncode == 2 and "no process of this user is listening" in done.stderr

