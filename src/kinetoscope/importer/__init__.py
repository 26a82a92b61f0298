"""``kinetoscope import``: traces recorded elsewhere -> session directories."""
