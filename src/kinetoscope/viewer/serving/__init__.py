"""The viewer's web server: the ASGI app and its JSON API, sign-in, the page shown while a dataset
is prepared, and compare mode (two datasets side by side)."""
