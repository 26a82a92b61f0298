"""``kinetoscope verify``: checks over session directories, from the model's reading of each trace."""

from kinetoscope.verify.report import VerifyReport, verify

__all__ = ["VerifyReport", "verify"]
