"""The DataLoader's batches, by name: what a host inside one is doing.

torch's DataLoader records each batch it hands out as an annotation on the thread that asked
for it, ``enumerate(DataLoader)#<iterator>.__next__``: ``_SingleProcessDataLoaderIter``
(``num_workers=0``: the batch is loaded in that thread) or ``_MultiProcessingDataLoaderIter``
(the thread waits for a worker's batch). While a host thread is inside one it queues no device
work, so device idle time under it is host-bound: the device waits for data loading.
"""

from __future__ import annotations

LOADER_PREFIX = "enumerate(DataLoader)"  # what torch names every DataLoader annotation with
LOADER_NEXT = r"^enumerate\(DataLoader\)#.*\.__next__$"  # an op or annotation: a batch handed out
SINGLE_PROCESS = "_SingleProcessDataLoaderIter"
