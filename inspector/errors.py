"""The exceptions every part of the core raises and every front end catches (CLI exit codes, GUI messages).

    ModelError           a model or data file that cannot be read or does not fit: exit 1, one line naming it
      ExternalDataOutside  an ONNX file whose external data points outside its folder (never read: refused)
    UsageError           options that are wrong before anything runs: exit 2
    LoadCancelled        the user cancelled a load in a child process
RunnerError (runner.protocol) crosses the process boundary and is the runner's own.
USER_ERRORS are the ones whose message is meant for the user as it is (anything else is a bug of ours).
"""
from __future__ import annotations

from mnnscope.runner.protocol import RunnerError


class ModelError(Exception):
    """A model file that cannot be read or is not a model: the message names the file and the reason."""


class ExternalDataOutside(ModelError):
    """An ONNX tensor's external data points outside the model's folder: reading it could read any file."""


class UsageError(Exception):
    """Bad flags or arguments detected after parsing (exit 2)."""


class LoadCancelled(Exception):
    """A load in a child process was cancelled."""


USER_ERRORS = (ModelError, LoadCancelled, RunnerError)
