"""The labelled truth harness: traces whose numbers, findings and verify problems are known."""
