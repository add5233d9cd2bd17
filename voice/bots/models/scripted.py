"""``scripted`` passenger: deterministic behaviour read from its prompt (scenarios.md §10–§12).

Opening line (step 1's quoted utterance), identity answers in the spoken alphanumeric form,
"Yes, please go ahead." to offers, and goodbye plus the hang-up tool once the agent wraps up;
turn-capped so it always ends. Advances by its own turn count; content is only used to spot
the agent's closing question, so a garbled transcript costs at most one extra turn.
"""
from __future__ import annotations

import re
from typing import Any, Callable

from voice.bots.models.base import END_TOOL, Decision, conversation, message_text, tool_calls_made

DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
PUNCT_WORDS = {"-": "dash", "_": "underscore", "@": "at", ".": "dot", "#": "hash", "*": "star"}
DEFAULT_OPENER = "Hi, I need some help with my booking."
ACCEPT = "Yes, please go ahead."
GOODBYE = "No, that's all. Thanks, goodbye."
CLOSING_CUES = ("anything else", "else i can", "goodbye", "good bye", "bye", "great day", "all set")
MAX_TURNS = 6


def spell(code: str) -> str:
    """Spoken form of an identifier: letters as letters, digits as words, punctuation named."""
    items = []
    for ch in code:
        if ch.isdigit():
            items.append(DIGIT_WORDS[int(ch)])
        elif ch.isalpha():
            items.append(ch.upper())
        elif ch in PUNCT_WORDS:
            items.append(PUNCT_WORDS[ch])
    return ", ".join(items)


def opener_from_prompt(prompt: str) -> str:
    """Step 1's quoted utterance (single or double quotes), else a generic opener."""
    for line in prompt.splitlines():
        if re.match(r"\s*Step 1\s*:", line):
            for quote in ("'", '"', "\u201c"):
                closing = "\u201d" if quote == "\u201c" else quote
                start, end = line.find(quote), line.rfind(closing)
                if start != -1 and end > start + 1:
                    # Quotes inside the utterance mark codes in the prompt; they are not spoken.
                    return line[start + 1 : end].replace('"', "").strip()
            said = re.search(r"\bsay (?:that )?(.+)", line)
            if said:
                return "Hi, " + _first_person(said.group(1).strip())
    return DEFAULT_OPENER


def _first_person(text: str) -> str:
    """'you need to change your flight' -> 'I need to change my flight' (seed step wording)."""
    words = {"you": "I", "your": "my", "yours": "mine", "yourself": "myself"}
    out = re.sub(r"\b(you|your|yours|yourself)\b", lambda m: words[m.group(1).lower()], text, flags=re.I)
    out = out.rstrip(" .") + "."
    return out


def identity_from_prompt(prompt: str) -> str:
    """The identity answer: confirmation number spelled out, then the last name."""
    parts = []
    match = re.search(
        r"confirmation (?:number|code) is\s+([A-Za-z0-9_\-#*@.]+?)\s*\(spelled out as ([^)]*)\)",
        prompt,
        re.IGNORECASE,
    )
    if match:
        parts.append(f"My confirmation number is {match.group(2).strip().rstrip('.')}")
    else:
        match = re.search(r"confirmation (?:number|code) is\s+([A-Z0-9]{5,8})\b", prompt)
        if match:
            parts.append(f"My confirmation number is {spell(match.group(1))}")
    name = re.search(r"last name is\s+([A-Z][A-Za-z'\-]+(?:\s+[A-Z][A-Za-z'\-]+)*)", prompt)
    if name:
        parts.append(f"my last name is {name.group(1)}")
    if not parts:
        return "Sorry, I don't have my booking details with me."
    answer = " and ".join(parts) + "."
    return answer[0].upper() + answer[1:]


class ScriptedPassengerPolicy:
    model_name = "scripted"

    def __init__(self, prompt: Callable[[], str], *, max_turns: int = MAX_TURNS) -> None:
        self._prompt = prompt
        self._max_turns = max_turns

    def decide(self, messages: list[dict[str, Any]]) -> Decision:
        convo = conversation(messages)
        if END_TOOL in tool_calls_made(convo):
            return Decision(hung_up=True)
        said = sum(1 for m in convo if m.get("role") == "assistant" and message_text(m).strip())
        heard = message_text(convo[-1]).lower() if convo else ""
        if said == 0:
            return Decision(text=opener_from_prompt(self._prompt()))
        if said == 1:
            return Decision(text=identity_from_prompt(self._prompt()))
        if said + 1 >= self._max_turns or any(cue in heard for cue in CLOSING_CUES):
            return Decision(text=GOODBYE, calls=[(END_TOOL, {})])
        return Decision(text=ACCEPT)
