"""Whether a process still runs: for files and sockets named after the process that made them."""

from __future__ import annotations

import os


def process_alive(pid: int) -> bool:
    """True while ``pid`` runs (a process of another user counts as running: it is not ours to clean up)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
