"""Builds and loads the CPU allocator hook (``_alloc_hook.cpp``), once per torch version.

PyTorch records allocation history for CUDA only. For CPU memory, kinetoscope wraps c10's
CPU allocator with a small C++ extension. It is compiled on first use with the C++
compiler torch.compile uses on CPU (``$CXX``, else ``c++`` / ``g++`` / ``clang++``) and
cached under ``$KINETOSCOPE_CACHE_DIR`` (default ``~/.cache/kinetoscope``), keyed by the
source, torch and Python versions, in a folder `format.private_dirs` has checked (this user's,
mode 0700, no parent others can write): a library another user could have planted is never
loaded. Concurrent processes (the ranks of one job) build it once: the others wait on a file
lock and load the result.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from types import ModuleType

import torch

from kinetoscope._errors import SessionError
from kinetoscope.format.private_dirs import UnsafeDirectoryError, private_dir, private_file, user_cache_root

MODULE_NAME = "_kinetoscope_alloc_hook"
SOURCE = Path(__file__).with_name("_alloc_hook.cpp")
CACHE_ENV = "KINETOSCOPE_CACHE_DIR"
_BUILD_TIMEOUT_S = 600
_COMPILERS = ("c++", "g++", "clang++")


@cache
def load() -> ModuleType:
    """The hook module, built first if needed; raises SessionError naming what is missing."""
    path = built_library()
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path)
    if spec is None or spec.loader is None:
        raise SessionError(f"cannot load the CPU allocator hook from {path}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as exc:
        raise SessionError(f"cannot load the CPU allocator hook {path}: {exc}; delete it to rebuild") from exc
    sys.modules[MODULE_NAME] = module
    return module


def cache_root() -> Path:
    override = os.environ.get(CACHE_ENV)
    return Path(override) if override else user_cache_root()


def built_library() -> Path:
    """Path of the compiled hook for this torch and Python, building it under a lock if absent."""
    name = f"{MODULE_NAME}{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"
    try:
        folder = private_dir(cache_root() / "alloc-hook" / build_key())
        library = private_file(folder, name)
        if library is not None:
            return library
        with _locked(folder / "build.lock"):
            library = private_file(folder, name)
            if library is None:
                library = folder / name
                compile_library(library)
    except UnsafeDirectoryError as exc:
        raise SessionError(f"the CPU allocator hook is not loaded: {exc} (or set {CACHE_ENV} to "
                           "a folder of your own)") from exc
    return library


def build_key() -> str:
    digest = hashlib.sha256(SOURCE.read_bytes())
    for part in (torch.__version__, sys.version, sysconfig.get_config_var("EXT_SUFFIX"), str(_torch_dir())):
        digest.update(str(part).encode())
    return digest.hexdigest()[:16]


def compiler() -> str:
    """The C++ compiler to use: $CXX, else the first of c++, g++, clang++ on PATH."""
    chosen = os.environ.get("CXX") or next((c for c in _COMPILERS if shutil.which(c)), None)
    if chosen is None:
        raise SessionError(
            "recording CPU memory history needs a C++ compiler once, to build kinetoscope's CPU "
            "allocator hook (the same compiler torch.compile uses on CPU); install g++ or clang++, or set CXX"
        )
    return chosen


def compile_command(output: Path) -> list[str]:
    torch_dir = _torch_dir()
    abi = int(bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True)))
    return [
        compiler(), "-O2", "-shared", "-fPIC", "-std=c++20", f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
        f"-I{torch_dir / 'include'}", f"-I{torch_dir / 'include' / 'torch' / 'csrc' / 'api' / 'include'}",
        f"-I{sysconfig.get_paths()['include']}",
        str(SOURCE), "-o", str(output),
        f"-L{torch_dir / 'lib'}", "-lc10", "-ltorch_cpu", "-ltorch_python", f"-Wl,-rpath,{torch_dir / 'lib'}",
    ]


def compile_library(library: Path) -> None:
    tmp = library.with_name(f"{library.name}.{os.getpid()}.tmp")
    command = compile_command(tmp)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=_BUILD_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SessionError(f"building the CPU allocator hook with {command[0]} failed: {exc}") from exc
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-15:])
        raise SessionError(f"building the CPU allocator hook failed ({command[0]} exited {done.returncode}):\n{tail}")
    os.replace(tmp, library)


def _torch_dir() -> Path:
    return Path(torch.__file__).parent


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
