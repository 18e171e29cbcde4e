"""Errors every layer raises; they name the input and the defect."""

from __future__ import annotations


class DatasetError(ValueError):
    """A dataset cannot be read, downloaded, generated or used; the message says which and why."""


class DatasetWarning(UserWarning):
    """Something in a dataset was repaired while loading it (merged duplicate entries...)."""


class AnswerError(ValueError):
    """An outside program's answer cannot be read; the message names where it came from,
    the line and what is wrong with it."""


class ExternalProgramError(RuntimeError):
    """An outside program could not be run, or exited with a failure status; the message
    names the program, the status and the tail of its standard error."""


class ExternalTimeout(TimeoutError):
    """An outside program ran past its time limit and was killed (a ``timeout`` row).

    ``limit_s``: the limit it was killed at, the row's ``time_limit_s``.
    """

    def __init__(self, message: str, limit_s: float) -> None:
        super().__init__(message)
        self.limit_s = float(limit_s)
