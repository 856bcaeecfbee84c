"""Errors a user can act on. The CLI turns an InputError into exit status 2 and no traceback."""

from __future__ import annotations


class InputError(Exception):
    """Bad input: the file, line or field at fault and what was expected."""

    def __init__(self, message: str, *, source: str | None = None) -> None:
        self.source = source
        super().__init__(f"{source}: {message}" if source else message)
