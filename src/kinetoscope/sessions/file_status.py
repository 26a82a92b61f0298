"""The status of a file a session's manifest lists: present with its size, cut short, still partial,
missing, or outside the session (a name that is refused, never read).

Ingest records it in the ``files`` table and verify reports it; sizes are compared here, hashes are
verify's job.
"""

from __future__ import annotations

from pathlib import Path

from kinetoscope.format.files import inside, regular_file_inside
from kinetoscope.format.session_files import session_dir as layout

OUTSIDE = "outside"
OUTSIDE_MESSAGE = "listed in the manifest but not a regular file inside the session: refused, not read"


def file_status(session: Path, name: str, size_bytes: int) -> tuple[str, int]:
    """(status, size on disk) of a manifest entry: sizes are compared, hashes are verify's job.

    A name that leads outside the session (absolute, ``..``, a link out) or that no file can have (over
    the system's name length) is "outside", not looked at.
    """
    path = inside(session, name)
    if path is None:
        return OUTSIDE, -1
    try:
        found = path.stat().st_size
    except (FileNotFoundError, NotADirectoryError):
        partial = regular_file_inside(session, layout.partial_name(name))
        return ("partial", partial.stat().st_size) if partial is not None else ("missing", -1)
    except OSError:  # a name no file can have (ENAMETOOLONG), a loop: not read
        return OUTSIDE, -1
    if found < size_bytes:
        return "truncated", found
    return ("ok" if found == size_bytes else "corrupt"), found
