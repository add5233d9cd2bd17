"""``null`` agent: polite, never acts, ends the call on its third response (the do-nothing floor)."""
from __future__ import annotations

from typing import Any

from voice.bots.models.base import END_TOOL, GREETING, Decision, conversation, tool_calls_made

HOLDING = "I understand. I'm sorry, but I'm not able to make any changes to your booking today."
CLOSING = "I apologise that I could not help further. Thank you for calling. Goodbye."


class NullPolicy:
    model_name = "null"

    def decide(self, messages: list[dict[str, Any]]) -> Decision:
        convo = conversation(messages)
        if END_TOOL in tool_calls_made(convo):
            return Decision(hung_up=True)
        responses = sum(1 for m in convo if m.get("role") == "assistant" and m.get("content"))
        if responses == 0:
            return Decision(text=GREETING)
        if responses == 1:
            return Decision(text=HOLDING)
        return Decision(text=CLOSING, calls=[(END_TOOL, {})])
