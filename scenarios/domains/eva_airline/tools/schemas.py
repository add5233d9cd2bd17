"""OpenAI function-calling schemas built from ``airline_agent.yaml`` (tools.md §0: snake_case names,
yaml ``float`` emitted as JSON Schema ``number``, enums kept)."""
from __future__ import annotations

from typing import Any

from scenarios.data_root import agent_config

from .executor import END_CONVERSATION, TOOL_NAMES

_JSON_TYPES = {"string": "string", "integer": "integer", "float": "number", "number": "number", "boolean": "boolean",
               "bool": "boolean", "array": "array", "object": "object"}


def _property(declared: dict[str, Any]) -> dict[str, Any]:
    prop: dict[str, Any] = {"type": _JSON_TYPES[declared.get("type", "string")]}
    if declared.get("description"):
        prop["description"] = str(declared["description"])
    if declared.get("enum"):
        prop["enum"] = [str(value) for value in declared["enum"]]
    if prop["type"] == "array":
        prop["items"] = _property(declared.get("items") or {"type": "string"})
    return prop


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


def tool_schemas(
    include_end_conversation: bool = True, end_conversation_description: str = "End the conversation with the user."
) -> list[dict]:
    """The 15 airline tools in ``TOOL_NAMES`` order, then ``end_conversation`` (no parameters)."""
    declared = {tool["name"]: tool for tool in agent_config()["tools"]}
    schemas = []
    for name in TOOL_NAMES:
        if name == END_CONVERSATION:
            continue
        tool = declared[name]
        required = list(tool.get("required_parameters") or [])
        optional = list(tool.get("optional_parameters") or [])
        properties = {param["name"]: _property(param) for param in required + optional}
        schemas.append(_function(name, str(tool.get("description", "")), properties, [param["name"] for param in required]))
    if include_end_conversation:
        schemas.append(_function(END_CONVERSATION, end_conversation_description, {}, []))
    return schemas
