"""What a Kineto event means, decided once.

Every consumer of a trace (the ``.pb`` writer used by capture and ``import``, the Parquet
dataset, ``verify``, the viewer, the exports and the analyses) reads events through the rules
here: category and name -> (layer, kind) (``kinds``), ids and times (``scalars``), collectives
(``collectives``), graph replays (``graphs``), launch calls (``launch_calls``), and, over whole
sessions, the nearest framework op and self time (``ops``), which rows of the ranks are one
collective instance (``matching``) and the device work launched before the profiling window
(``profiling_window``). ``ops``, ``tracks``, ``graphs``, ``matching`` and ``profiling_window`` need
numpy; the rest is stdlib, so the capture path can use it.
"""
