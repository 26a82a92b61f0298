"""``python -m kinetoscope`` runs the command-line interface."""

from kinetoscope.cli import command_line

command_line()
