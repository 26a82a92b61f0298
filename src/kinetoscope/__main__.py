"""``python -m kinetoscope`` runs the command-line interface."""

from kinetoscope.cli import main

raise SystemExit(main())
