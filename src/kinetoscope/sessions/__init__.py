"""The sessions of a profile tree, found once for ingest and verify alike.

``sources`` finds the session directories of a local tree, with the rank each claims; ``tree``
lists a tree on a local disk or an object store with each session's fingerprint and trace size;
``job_runs`` keeps the sessions of several jobs in one tree apart as runs; ``file_status`` tells
whether each file a session's manifest lists is there, whole.
"""
