"""The bot's tools as pipecat functions: schemas for the context, handlers for the LLM service.

Why here and not in the model: every backend (built-in or OpenAI-compatible) registers the same
handlers, so tool execution, action records and the exit tag behave identically whatever model
decides the calls.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Callable

from loguru import logger
from pipecat.adapters.llm.schemas.function_schema import FunctionSchema
from pipecat.adapters.llm.schemas.tools_schema import ToolsSchema
from pipecat.frames.frames import FunctionCallResultProperties
from pipecat.services.llm_service import FunctionCallParams, LLMService

from voice.bots.models.base import END_TOOL
from voice.bots.processors.sink import EmitSink
from voice.protocol import rtvi

DEFAULT_END_DESCRIPTION = "End the conversation with the user."


class RawToolArguments(str):
    """Argument text a model streamed that is not valid JSON, kept verbatim so the executor
    answers it with ``invalid_parameter`` (see ``voice.bots.openai_llm``)."""


def _tools_api():
    """The airline tool module, imported late (it reads the data root)."""
    from scenarios.domains.eva_airline import tools

    return tools


class Toolbox:
    """Tool map from update_system_prompt -> schemas + handlers over ``shared_state``.

    The ToolSession (ID counters) lives for one conversation; its ``db`` and ``actions`` are
    rebound to ``shared_state`` at every call because apply_initialization fills the state after
    the tools were configured.
    """

    def __init__(self, sink: EmitSink, shared_state: Callable[[], dict]) -> None:
        self._sink = sink
        self._shared_state = shared_state
        self._tool_map: dict[str, dict] = {}
        self._tool_domain = "default"
        self._schemas: list[FunctionSchema] = []
        self._session: Any = None

    # --- configuration -------------------------------------------------------------------
    def configure(self, tool_map: dict[str, dict], tool_domain: str) -> None:
        self._tool_map = dict(tool_map or {})
        self._tool_domain = tool_domain or "default"
        self._schemas = self._build_schemas()
        self.reset()

    def reset(self) -> None:
        self._session = None

    @property
    def names(self) -> list[str]:
        return [schema.name for schema in self._schemas]

    def tools_schema(self) -> ToolsSchema | None:
        return ToolsSchema(standard_tools=list(self._schemas)) if self._schemas else None

    def _build_schemas(self) -> list[FunctionSchema]:
        if not self._tool_map:
            return []
        end_kwargs = self._tool_map.get(END_TOOL) or {}
        description = str(end_kwargs.get("description") or DEFAULT_END_DESCRIPTION)
        available = {s["function"]["name"]: s["function"] for s in self._all_schemas(description)}
        schemas = []
        for name in self._tool_map:
            spec = available.get(name)
            if spec is None:
                raise ValueError(f"unknown tool {name!r} for tool domain {self._tool_domain!r}")
            params = spec.get("parameters") or {}
            schemas.append(
                FunctionSchema(
                    name=name,
                    description=spec.get("description", ""),
                    properties=dict(params.get("properties") or {}),
                    required=list(params.get("required") or []),
                )
            )
        return schemas

    def _all_schemas(self, end_description: str) -> list[dict]:
        only_end = set(self._tool_map) <= {END_TOOL}
        if only_end:
            # The passenger: the harness tool needs no airline data at all.
            return [
                {
                    "type": "function",
                    "function": {
                        "name": END_TOOL,
                        "description": end_description,
                        "parameters": {"type": "object", "properties": {}, "required": []},
                    },
                }
            ]
        return _tools_api().tool_schemas(
            include_end_conversation=True, end_conversation_description=end_description
        )

    def register(self, llm: LLMService) -> None:
        for name in self.names:
            llm.register_function(name, self._handle)
        if self.names:
            # Catch-all: a name the model made up gets the tools' own tool_not_found envelope
            # (and the model runs again) instead of pipecat's generic "not available" text.
            llm.register_function(None, self._handle)

    # --- execution -----------------------------------------------------------------------
    def _bound_session(self) -> Any:
        state = self._shared_state()
        if self._session is None:
            self._session = _tools_api().ToolSession({})
        db = state.get("db")
        self._session.db = db if isinstance(db, dict) else {}
        self._session.actions = state.setdefault("actions", [])
        return self._session

    async def _handle(self, params: FunctionCallParams) -> None:
        """Every call gets a result envelope in the context, whatever the model sent; an
        envelope is never empty, so pipecat runs the model again (unless the call ended it)."""
        from scenarios.domains.eva_airline.tools.errors import error_result

        name = params.function_name
        arguments = tool_arguments(params.arguments)
        try:
            if name in self.names:
                result, properties = self._execute(name, params.tool_call_id, arguments)
            else:  # only the tools this bot was given, even if the airline module has more
                self._sink.send(rtvi.llm_function_call(str(name), params.tool_call_id, _shown(arguments)))
                available = ", ".join(self.names)
                result, properties = error_result("tool_not_found", f"Tool '{name}' not found. Available tools: {available}"), None
        except Exception as exc:  # a bug here must not leave the call without a result
            logger.exception(f"tool {name} failed in the toolbox")
            result, properties = error_result("execution_error", f"Tool {name!r} failed: {exc}"), None
        await params.result_callback(result, properties=properties)

    def _execute(self, name: str, tool_call_id: str, arguments: Any) -> tuple[dict, Any]:
        self._sink.send(rtvi.llm_function_call(name, tool_call_id, _shown(arguments)))
        session = self._bound_session()
        before = len(session.actions)
        was_ending = session.end_requested
        session.end_requested = False
        result = _tools_api().execute_tool(session, name, arguments)
        for action in session.actions[before:]:
            self._sink.send(rtvi.action_applied(action, self._tool_domain))
        properties = None
        if session.end_requested:
            exit_message = rtvi.exit_message(session.end_message or rtvi.DEFAULT_EXIT_TEXT)

            async def deliver_exit() -> None:
                # Post-delivery hook: the tool result is in the LLM context by now, so a context
                # pull triggered by the exit tag sees the call and its result (harness.md §9.3).
                self._sink.send(exit_message)

            properties = FunctionCallResultProperties(run_llm=False, on_context_updated=deliver_exit)
        else:
            session.end_requested = was_ending
        logger.debug(f"tool {name}({arguments}) -> {result.get('status', result.get('success'))}")
        return result, properties


def _shown(arguments: Any) -> dict:
    """The ``args`` of the llm-function-call notice: always an object (§5.9)."""
    return dict(arguments) if isinstance(arguments, dict) else {"unparsed_arguments": str(arguments)}


def tool_arguments(value: Any) -> Any:
    """What the executor should parse: an object as a dict, unparseable text as that text, any
    other JSON value re-encoded, so a list (even of pairs) is refused, never turned into a dict."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, RawToolArguments):
        return str(value)
    if value is None:
        return {}
    return json.dumps(value)
