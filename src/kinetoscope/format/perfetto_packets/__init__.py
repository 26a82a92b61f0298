"""Perfetto packet files, the system and device traces of a session: protobuf wire encoding
(``wire``), packet framing (``packets``), the shared building blocks (``perfetto``), TrackEvent
packets written and read (``events``), where the files go (``packet_files``), the per-device cap
(``event_caps``) and the reader ``dump``, ``verify`` and ingest share (``reader``)."""
