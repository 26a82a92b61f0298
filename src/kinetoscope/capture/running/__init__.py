"""Capture inside an unmodified program (``kinetoscope run``): settings from the environment, step
counting, on-demand requests and the flight recorder."""
