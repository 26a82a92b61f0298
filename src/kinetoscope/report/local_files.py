"""pyarrow's modules for remote data and for datasets left unloaded by a command that reads local files only.

``pyarrow.parquet`` imports ``pyarrow.fs``, which loads every file system pyarrow was built with:
S3's (its own library, ``libarrow_s3``, and OpenSSL's), Google Cloud Storage's, Azure's and HDFS's.
``Table.group_by`` imports ``pyarrow.acero``, which imports ``pyarrow.dataset`` (with Parquet's
encryption and the CSV and JSON formats) to join and filter datasets. A summary of local files
uses none of them, and reads its dataset's parts without an Arrow dataset where their paths are
plain (``query.part_files.plain_parts``); yet their libraries' pages and objects stay resident from
their import on: about 3.5 and 4 MiB, 2% and 2.5% of the one screen's peak on a raw 54 MB trace
(docs/peers.md). Both modules expect a pyarrow built without those parts: ``pyarrow.fs`` leaves out
a file system whose module does not import, ``pyarrow.acero`` stubs the dataset module when it does
not import, and ``None`` in ``sys.modules`` makes an import fail.
"""

from __future__ import annotations

import importlib
import sys

OBJECT_STORE_MODULES = ("pyarrow._s3fs", "pyarrow._gcsfs", "pyarrow._azurefs", "pyarrow._hdfs")
DATASET_MODULE = "pyarrow.dataset"
ACERO_MODULE = "pyarrow.acero"


def local_files_only() -> bool:
    """Leave pyarrow's object-store file systems unloaded for the rest of this process, and load
    ``pyarrow.acero`` without ``pyarrow.dataset``, where ``pyarrow.fs`` is not loaded yet (True:
    done; False: it is, and nothing changes). Only for a process that reads local files to its end:
    a file system left out is missing afterwards (``pyarrow.fs`` says pyarrow was built without it),
    and acero joins and filters no Arrow dataset. ``pyarrow.dataset`` itself stays importable."""
    if "pyarrow.fs" in sys.modules:
        return False
    modules: dict[str, object] = sys.modules  # type: ignore[assignment]  # None is how imports are refused
    for name in OBJECT_STORE_MODULES:
        modules.setdefault(name, None)
    if ACERO_MODULE not in modules and DATASET_MODULE not in modules:
        modules[DATASET_MODULE] = None
        try:
            importlib.import_module(ACERO_MODULE)
        except ImportError:  # no acero, or one that needs the dataset module: it is imported later, as usual
            modules.pop(ACERO_MODULE, None)
        finally:
            del modules[DATASET_MODULE]
    return True
