"""The error envelope shared by every tool (tools.md §1.2).

Tools raise ``ToolError`` at the first failing step; the executor turns it into the envelope, so a
failure can never slip past a half-done mutation.
"""
from __future__ import annotations


class ToolError(Exception):
    """A tool-level failure carrying its exact ``error_type`` and a guidance message."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message

    def as_result(self) -> dict:
        """The §1.2 error object."""
        return error_result(self.error_type, self.message)


def error_result(error_type: str, message: str) -> dict:
    """Build ``{"status": "error", "error_type", "message"}``."""
    return {"status": "error", "error_type": error_type, "message": message}
