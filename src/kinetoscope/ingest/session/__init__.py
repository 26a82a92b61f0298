"""One session ingested: its tables written as parts (``session_ingest``), the rows of its small
tables (``session_rows``), and a session read and written where it lies (``staged``)."""
