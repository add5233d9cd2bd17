"""The 15 eva_airline tools plus ``end_conversation`` as pure functions over a dict DB (tools.md).

No Django and no network: the bridge, the runner and the tests all drive the same code.
"""
from __future__ import annotations

from .executor import TOOL_NAMES, WRITE_TOOL_NAMES, execute_tool, result_status
from .schemas import tool_schemas
from .session import ToolSession

__all__ = ["TOOL_NAMES", "WRITE_TOOL_NAMES", "ToolSession", "execute_tool", "result_status", "tool_schemas"]
