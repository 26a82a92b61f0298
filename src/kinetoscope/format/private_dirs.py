"""Folders only this user can write: where kinetoscope keeps anything it reads back in a later run.

Compiled libraries (the CPU allocator hook), caches (imported traces, datasets of read-only
profiles, viewer indexes, previews) and runtime files (the on-demand sockets, the viewer's launch
page) live in folders that `private_dir` has checked: a real folder (not a link), owned by this
user, mode 0700, whose every parent is owned by this user or root and is not writable by others
unless sticky (``/tmp``; group write counts only for a group with members other than this user),
with no link on the way owned by anyone else. Anything else is refused
with `UnsafeDirectoryError`, so that a library or a cache another local user planted is never
loaded. A folder of this user that others can read but not write is made 0700 (what earlier
versions created); one others can write is refused, since its content may be theirs.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from kinetoscope._errors import KinetoscopeError

_WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH


class UnsafeDirectoryError(KinetoscopeError):
    """A folder kinetoscope keeps private is a link, or owned or writable by someone else."""


def user_cache_root() -> Path:
    """The per-user cache folder: ``$XDG_CACHE_HOME/kinetoscope`` or ``~/.cache/kinetoscope``
    (not checked: pass what is kept there through `private_dir`)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kinetoscope"


def user_runtime_root() -> Path:
    """``$XDG_RUNTIME_DIR/kinetoscope``, else ``$TMPDIR/kinetoscope-<uid>`` (not checked)."""
    base = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    if base:
        return Path(base) / "kinetoscope"
    import tempfile

    return Path(tempfile.gettempdir()) / f"kinetoscope-{os.getuid()}"


def private_dir(path: Path) -> Path:
    """``path`` (made absolute) as a folder only this user can write: created 0700 if missing,
    refused with UnsafeDirectoryError otherwise (see the module's rules)."""
    path = Path(os.path.abspath(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir(exist_ok=True, mode=0o700)
    except OSError as exc:
        raise UnsafeDirectoryError(f"cannot create {path}: {exc.strerror or exc}") from exc
    _check_own_folder(path)
    _check_parents(path)
    return path


def private_file(folder: Path, name: str) -> Path | None:
    """``folder / name`` when it is a regular file of this user (not a link), None when missing;
    refused when it is anything else. `folder` is checked by `private_dir`."""
    path = private_dir(folder) / name
    try:
        found = path.lstat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UnsafeDirectoryError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(found.st_mode) or found.st_uid != os.getuid() or found.st_mode & _WRITABLE_BY_OTHERS:
        raise UnsafeDirectoryError(f"{path} is not a file of this user (owner uid {found.st_uid}, mode "
                                   f"{stat.filemode(found.st_mode)}): remove it")
    return path


def _check_own_folder(path: Path) -> None:
    found = path.lstat()
    mine = stat.S_ISDIR(found.st_mode) and found.st_uid == os.getuid()
    if not mine or found.st_mode & _WRITABLE_BY_OTHERS:
        raise UnsafeDirectoryError(
            f"{path} is not a private folder of this user (owner uid {found.st_uid}, mode "
            f"{stat.filemode(found.st_mode)}): remove it, or `chmod 700` it if it is yours and you know its content"
        )
    if found.st_mode & 0o077:
        os.chmod(path, 0o700)


def _check_parents(path: Path) -> None:
    """Every folder above `path`, as written and with links resolved, is safe (`_unsafe_parent`)."""
    written = list(path.parents)
    resolved = list(Path(os.path.realpath(path.parent)).parents)
    for parent in [*written, Path(os.path.realpath(path.parent)), *resolved]:
        why = _unsafe_parent(parent)
        if why:
            raise UnsafeDirectoryError(f"{path} is not private: {parent} {why}; choose a folder of your own")


def _unsafe_parent(parent: Path) -> str | None:
    try:
        found = parent.lstat()
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    trusted = found.st_uid in (0, os.getuid())
    if stat.S_ISLNK(found.st_mode):
        return None if trusted else f"is a link owned by uid {found.st_uid}"
    if not trusted:
        return f"belongs to uid {found.st_uid}"
    writable = found.st_mode & (stat.S_IWOTH if _own_group(found.st_gid) else _WRITABLE_BY_OTHERS)
    if writable and not found.st_mode & stat.S_ISVTX:
        return f"is writable by others (mode {stat.filemode(found.st_mode)}) and not sticky"
    return None


def _own_group(gid: int) -> bool:
    """Whether `gid` is this user's own group (a user private group: no other member)."""
    import grp
    import pwd

    if gid != os.getgid():
        return False
    try:
        members = set(grp.getgrgid(gid).gr_mem)
        me = pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return False
    return members <= {me}
