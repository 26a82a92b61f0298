"""The directory ``kinetoscope run`` puts first on ``PYTHONPATH``: its ``sitecustomize`` starts the capture."""
