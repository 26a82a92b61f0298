"""What the API asks the index: events in a time window, search, area selections, neighbours,
collective links and the read-only SQL console."""
