"""Local web viewer: a small ASGI server over the dataset and its static front end."""
