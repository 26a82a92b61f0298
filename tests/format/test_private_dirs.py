"""Private folders: what kinetoscope keeps across runs is read only from folders no one else can write."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kinetoscope.format.private_dirs import UnsafeDirectoryError, private_dir, private_file

NOBODY = 65534
as_root = pytest.mark.skipif(os.getuid() != 0, reason="only root can give a folder to another user")


def test_a_new_folder_is_made_0700(tmp_path: Path) -> None:
    made = private_dir(tmp_path / "a" / "cache")
    assert made == tmp_path / "a" / "cache" and made.stat().st_mode & 0o777 == 0o700


def test_an_own_folder_others_can_only_read_is_made_private(tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir(mode=0o755)
    os.chmod(tmp_path / "cache", 0o755)
    assert private_dir(tmp_path / "cache").stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o1777])
def test_an_own_folder_others_can_write_is_refused(tmp_path: Path, mode: int) -> None:
    (tmp_path / "cache").mkdir()
    os.chmod(tmp_path / "cache", mode)
    with pytest.raises(UnsafeDirectoryError, match="not a private folder"):
        private_dir(tmp_path / "cache")


def test_a_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir(mode=0o700)
    (tmp_path / "cache").symlink_to(tmp_path / "mine")
    with pytest.raises(UnsafeDirectoryError, match="not a private folder"):
        private_dir(tmp_path / "cache")


def test_a_parent_others_can_write_is_refused_unless_sticky(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(UnsafeDirectoryError, match=f"{shared} is writable by others"):
        private_dir(shared / "me" / "cache")
    os.chmod(shared, 0o1777)  # like /tmp: others cannot rename or remove what is ours
    assert private_dir(shared / "me" / "cache").is_dir()


@as_root
def test_a_folder_or_parent_of_another_user_is_refused(tmp_path: Path) -> None:
    (tmp_path / "theirs").mkdir(mode=0o700)
    os.chown(tmp_path / "theirs", NOBODY, NOBODY)
    with pytest.raises(UnsafeDirectoryError, match="not a private folder"):
        private_dir(tmp_path / "theirs")
    (tmp_path / "parent").mkdir(mode=0o755)
    (tmp_path / "parent" / "cache").mkdir(mode=0o700)
    os.chown(tmp_path / "parent", NOBODY, NOBODY)
    with pytest.raises(UnsafeDirectoryError, match="belongs to uid 65534"):
        private_dir(tmp_path / "parent" / "cache")


@as_root
def test_a_link_on_the_way_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "via").symlink_to(tmp_path / "real")
    os.lchown(tmp_path / "via", NOBODY, NOBODY)  # they could point it elsewhere at any time
    with pytest.raises(UnsafeDirectoryError, match="is a link owned by uid 65534"):
        private_dir(tmp_path / "via" / "cache")


def test_a_private_file_is_a_regular_file_of_this_user(tmp_path: Path) -> None:
    folder = private_dir(tmp_path / "cache")
    assert private_file(folder, "lib.so") is None
    (folder / "lib.so").write_bytes(b"x")
    assert private_file(folder, "lib.so") == folder / "lib.so"
    (folder / "link.so").symlink_to(folder / "lib.so")
    with pytest.raises(UnsafeDirectoryError, match="not a file of this user"):
        private_file(folder, "link.so")


def test_a_parent_writable_by_this_users_own_group_only_is_fine(tmp_path: Path) -> None:
    """A home folder of mode 0775 whose group is the user's private group (no other member)."""
    import grp

    if grp.getgrgid(os.getgid()).gr_mem:
        pytest.skip("this user's group has other members")
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, os.getuid(), os.getgid())
    os.chmod(home, 0o775)
    assert private_dir(home / ".cache" / "kinetoscope").is_dir()
