"""Labelled cases: one module per situation, each defining ``CASE`` (a ``tests.truth.harness.Case``)."""
