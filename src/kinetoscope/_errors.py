"""The one error hierarchy: every error kinetoscope raises on purpose is a KinetoscopeError."""

from __future__ import annotations


class KinetoscopeError(Exception):
    """Base class of every error kinetoscope raises on purpose."""


class ConfigError(KinetoscopeError, ValueError):
    """A configuration value is invalid; the message names the parameter and the accepted form."""


class FormatError(KinetoscopeError):
    """A file is not in a format kinetoscope can read; the message names the file and the place."""


class SessionError(KinetoscopeError):
    """A profiling session cannot be created, written or exported."""


class CommandError(KinetoscopeError):
    """A command-line failure that maps to a process exit code."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code
