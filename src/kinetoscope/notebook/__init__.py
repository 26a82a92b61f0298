"""``kinetoscope.open(path)`` in Python and notebooks: a profile's tables and SQL, and its summary,
findings and diff as objects that show themselves in Jupyter and give every section as Arrow."""
