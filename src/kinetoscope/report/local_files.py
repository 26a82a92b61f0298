"""pyarrow's object-store file systems left unloaded by a command that reads local files only.

``pyarrow.parquet`` and ``pyarrow.dataset`` import ``pyarrow.fs``, which loads every file system
pyarrow was built with: S3's (its own library, ``libarrow_s3``, and OpenSSL's), Google Cloud
Storage's, Azure's and HDFS's. A summary of local files uses none of them, yet their libraries'
pages stay resident from their import on: about 3.5 MiB, 2% of the one screen's peak on a raw
54 MB trace (docs/peers.md), and 0.03 s of CPU time. ``pyarrow.fs`` leaves out a file system
whose module does not import, as for a build without it: ``None`` in ``sys.modules`` makes it so.
"""

from __future__ import annotations

import sys

OBJECT_STORE_MODULES = ("pyarrow._s3fs", "pyarrow._gcsfs", "pyarrow._azurefs", "pyarrow._hdfs")


def local_files_only() -> bool:
    """Leave pyarrow's object-store file systems unloaded for the rest of this process, where
    ``pyarrow.fs`` is not loaded yet (True: done; False: it is, and nothing changes). Only for a
    process that reads local files to its end: a file system left out is missing afterwards
    (``pyarrow.fs`` says pyarrow was built without it)."""
    if "pyarrow.fs" in sys.modules:
        return False
    modules: dict[str, object] = sys.modules  # type: ignore[assignment]  # None is how imports are refused
    for name in OBJECT_STORE_MODULES:
        modules.setdefault(name, None)
    return True
