"""The store's exceptions.  Results of ordinary operations (a rejected message, an offset out of
range) are statuses in `results`, not exceptions; these are for misuse and for disk state."""

from __future__ import annotations


class StoreError(Exception):
    """Base of the store's exceptions."""


class StoreUsageError(StoreError, ValueError):
    """The caller misused the store (wrong state, bad argument); nothing on disk is wrong."""


class StoreCorruptedError(StoreError):
    """Files on disk are damaged in a way recovery will not repair on its own (for instance a
    commit-log segment missing from the middle); an operator must look before data is cut."""
