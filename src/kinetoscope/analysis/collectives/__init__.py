"""Collectives across ranks: each instance matched on every rank that ran it
(``matched_collectives``, reading Kineto's metadata with ``collective_meta``), the hosts' clock
offsets estimated from them (``clock_alignment``), and the analyses of latency, bandwidth,
arrivals and waits (``distributed``)."""
