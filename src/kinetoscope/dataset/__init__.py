"""The dataset's on-disk contract: what ingest writes and every reader (query, verify, the viewer) reads.

``schema`` declares the tables; ``directory`` places their Parquet parts and keeps the
``_dataset.json`` manifest with each part's size and BLAKE2b check; ``storage`` reaches a dataset on
a local disk or an object store; ``target`` is where an ingest writes (a local directory, or a
staging one uploaded to an object store); ``transaction`` is the ingest journal that makes an
interrupted ingest visible and repairable.
"""
