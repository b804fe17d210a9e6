"""The exceptions every part of the core raises and every front end catches (CLI exit codes, GUI messages).

    ModelError    a model or data file that cannot be read or does not fit: exit 1, one line naming it
    UsageError    options that are wrong before anything runs: exit 2
    LoadCancelled the user cancelled a load in a child process
RunnerError (runner.protocol) crosses the process boundary and is the runner's own.
"""
from __future__ import annotations


class ModelError(Exception):
    """A model file that cannot be read or is not a model: the message names the file and the reason."""


class UsageError(Exception):
    """Bad flags or arguments detected after parsing (exit 2)."""


class LoadCancelled(Exception):
    """A load in a child process was cancelled."""
