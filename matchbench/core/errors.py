"""Errors every layer raises; they name the input and the defect."""

from __future__ import annotations


class DatasetError(ValueError):
    """A dataset cannot be read, downloaded, generated or used; the message says which and why."""


class DatasetWarning(UserWarning):
    """Something in a dataset was repaired while loading it (merged duplicate entries...)."""
