"""``scripted`` passenger: listens to the agent and answers from its prompt (scenarios.md §10–§12).

Deterministic and prompt-derived, with no access to the gold data: the opening line (step 1's
quoted utterance), the identity in the spoken alphanumeric form when asked for it (spelled again
with a word per letter, "Zurich, Kilo, three", when the agent could not find the booking), the goal when
asked what it needs, and a yes to an offer only when what it heard matches its goal (dates,
flight numbers, refund vs credit); otherwise it says what it wants instead. It says goodbye and
hangs up when the agent closes; turn-capped so it always ends.
"""
from __future__ import annotations

import functools
import re
from typing import Any, Callable, Optional

from scenarios.voice_prompts import spell, spell_with_words
from voice.bots.models.base import (
    END_TOOL,
    Decision,
    conversation,
    heard_since_reply,
    looks_unfinished,
    message_text,
    tool_calls_made,
)
from voice.entities import dates_in, folded_tokens

DEFAULT_OPENER = "Hi, I need some help with my booking."
ACCEPT = "Yes, please go ahead."
GOODBYE = "No, that's all. Thanks, goodbye."
PARDON = "Sorry, could you say that again?"
CLOSING_CUES = ("anything else", "else i can", "goodbye", "good bye", "bye", "great day", "all set")
RESPELL_CUES = ("could not find", "couldn't find", "not find", "did not catch", "didn't catch", "again")
IDENTITY_CUES = ("confirmation number", "confirmation code", "last name", "booking reference")
OFFER_CUES = ("shall i", "should i", "would you like me", "do you want me", "go ahead?")
QUESTION_TAILS = ("please", "go ahead", "anything else", "again", "help you", "?")
"""Words the agent's turns end on: heard, the turn is complete even if punctuated as a statement."""
GOAL_CUES = ("how can i help", "how may i help", "what can i do", "what do you need")
MAX_TURNS = 10
PREFERENCE_REFUSALS = (
    "No, I want a full refund to my original payment method, not a travel credit.",
    "No, I would like a travel credit rather than a refund.",
)
def spell_clearly(code: str) -> str:
    """The careful second spelling: a word per letter ("Zurich, Kilo, three, Frank, ..."), which
    survives ASR far better than letter names or "Z as in ..." (whose letter and connector Whisper
    garbles into "He has an echo", "and is a Nancy")."""
    return spell_with_words(code)


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
    words = {"you": "I", "your": "my", "yours": "mine", "yourself": "myself", "you're": "I'm", "you\u2019re": "I'm"}
    out = re.sub(r"\b(you[\u2019']re|you|your|yours|yourself)\b", lambda m: words[m.group(1).lower()], text, flags=re.I)
    out = out.rstrip(" .") + "."
    return out


def _confirmation(prompt: str) -> Optional[str]:
    match = re.search(r"confirmation (?:number|code) (?:is\s+)?([A-Z0-9][A-Za-z0-9_\-#*@.]{4,9}?)[\s,.]", prompt)
    return match.group(1) if match else None


def _last_name(prompt: str) -> Optional[str]:
    name = re.search(r"last name is\s+([A-Z][A-Za-z'\-]+(?:\s+[A-Z][A-Za-z'\-]+)*)", prompt)
    if name:
        return name.group(1)
    name = re.search(r"Your name is\s+[A-Z][A-Za-z'\-]*\s+([A-Z][A-Za-z'\-]+)", prompt)
    return name.group(1) if name else None


def identity_from_prompt(prompt: str, *, clearly: bool = False, parts: tuple[str, ...] = ("code", "name"),
                         code_for_speech: Callable[[str], str] = lambda code: code) -> str:
    """The identity answer: the confirmation number spelled out, then the last name and its spelling.

    ``clearly`` spells the code with a word per letter (after the agent could not find the booking);
    ``code_for_speech`` lets a test make the passenger misspell its code."""
    say = spell_clearly if clearly else spell
    code, name = _confirmation(prompt), _last_name(prompt)
    spoken = []
    if "code" in parts:
        if code:
            spoken.append(f"my confirmation number is {say(code_for_speech(code))}")
        else:
            spoken.append("I don't have my confirmation number with me")
    if "name" in parts and name:
        spoken.append(f"my last name is {name}, {spell(name)}")
    if not spoken:
        return "Sorry, I don't have my booking details with me."
    # One sentence, no preamble: a pause between sentences can end the turn on the agent's side,
    # and Whisper tends to stop after a short first sentence such as "Let me spell it again."
    answer = " and ".join(spoken) + "."
    return answer[0].upper() + answer[1:]


def goal_from_prompt(prompt: str) -> str:
    """The goal's first sentence in the first person, codes in their spoken form."""
    match = re.search(r"Your goal is to:\s*(.+)", prompt)
    if not match:
        return "I need some help with my booking."
    goal = re.sub(r"\b[A-Z0-9]{2,8} \(spelled out as ([^)]*)\)", r"\1", match.group(1))
    first = re.split(r"(?<=[.!?])\s", goal, maxsplit=1)[0]
    first = re.sub(r"^You (?:want|need) to\s+", "", first)
    return "I want to " + _first_person(first[0].lower() + first[1:])


def _flight_numbers(text: str) -> set[str]:
    """Flight numbers said after the word "flight" ("flight S, K, seven, zero, three" -> SK703)."""
    tokens = folded_tokens(text)
    found = set()
    for index, token in enumerate(tokens):
        if token in ("flight", "flights"):
            code = ""
            for nxt in tokens[index + 1 : index + 8]:
                if len(nxt) == 1 or nxt.isdigit() or re.fullmatch(r"[a-z]{2}\d+", nxt):
                    code += nxt
                else:
                    break
            if re.fullmatch(r"[a-z]{2}\d{3,4}", code):
                found.add(code.upper())
    return found


def _preference(goal: str) -> Optional[str]:
    """'refund' or 'credit', whichever the goal names first; None when it names neither."""
    lowered = goal.lower()
    spots = {kind: lowered.find(word) for kind, word in (("refund", "refund"), ("credit", "travel credit"))}
    named = {k: v for k, v in spots.items() if v != -1}
    return min(named, key=named.get) if named else None


def offer_verdict(goal: str, offer: str, *, insisted: bool = False) -> Optional[str]:
    """None when the offer fits the goal, else what to say instead (accept/refuse rule, §12).

    A wrong date or flight is refused every time (it is what a mishearing looks like); a refund
    offered as credit (or the reverse) is pushed back on once, as the eva prompts ask, and then
    accepted (``insisted``): policy, not the passenger, decides what is refundable."""
    wanted_dates, offered_dates = dates_in(goal), dates_in(offer)
    if wanted_dates and offered_dates and not offered_dates <= wanted_dates:
        month, day = sorted(wanted_dates)[-1]
        from voice.entities import MONTHS

        return f"No, that is not the date I need. I want to travel on {MONTHS[month - 1].capitalize()} {day}."
    wanted_flights = set(re.findall(r"\b[A-Z]{2}\d{3,4}\b", goal))
    offered_flights = _flight_numbers(offer)
    if wanted_flights and offered_flights and not offered_flights & wanted_flights:
        return f"No, I want flight {spell(sorted(wanted_flights)[0])}."
    preference, lowered = _preference(goal), offer.lower()
    if insisted:
        return None
    if preference == "refund" and "credit" in lowered and "refund" not in lowered:
        return PREFERENCE_REFUSALS[0]
    if preference == "credit" and "refund" in lowered and "credit" not in lowered:
        return PREFERENCE_REFUSALS[1]
    return None


class ScriptedPassengerPolicy:
    model_name = "scripted"

    def __init__(self, prompt: Callable[[], str], *, max_turns: int = MAX_TURNS,
                 code_for_speech: Callable[[str], str] = lambda code: code) -> None:
        self._prompt = prompt
        self._max_turns = max_turns
        self._code_for_speech = code_for_speech

    @staticmethod
    def _gave_identity(convo: list[dict[str, Any]]) -> bool:
        return any(m.get("role") == "assistant" and "confirmation number is" in message_text(m) for m in convo)

    def decide(self, messages: list[dict[str, Any]], *, waited: bool = False) -> Decision:
        convo = conversation(messages)
        if END_TOOL in tool_calls_made(convo):
            return Decision(hung_up=True)
        said = sum(1 for m in convo if m.get("role") == "assistant" and message_text(m).strip())
        parts = heard_since_reply(convo)
        heard = " ".join(parts).lower()
        prompt = self._prompt()
        if said == 0:
            return Decision(text=opener_from_prompt(prompt))
        if said + 1 >= self._max_turns or any(cue in heard for cue in CLOSING_CUES):
            return Decision(text=GOODBYE, calls=[(END_TOOL, {})])
        # The agent ends its turns on a question: a last part that stops on a statement (a pause
        # between sentences, however many came before it) means its next sentence is on its way.
        if not waited and looks_unfinished(parts[-1:], question_expected=True) and not any(
                t in parts[-1].lower() for t in QUESTION_TAILS):
            return Decision(wait=True)
        identity = functools.partial(identity_from_prompt, prompt, code_for_speech=self._code_for_speech)
        if any(cue in heard for cue in RESPELL_CUES) and any(cue in heard for cue in IDENTITY_CUES):
            return Decision(text=identity(clearly=True))
        if any(cue in heard for cue in IDENTITY_CUES):
            # Asked again: the first spelling did not get through, so spell it clearly.
            identity = functools.partial(identity, clearly=self._gave_identity(convo))
            asks_code = "confirmation" in heard or "booking reference" in heard
            asks_name = "last name" in heard
            parts = tuple(p for p, asked in (("code", asks_code), ("name", asks_name)) if asked)
            return Decision(text=identity(parts=parts or ("code", "name")))
        if any(cue in heard for cue in OFFER_CUES):
            insisted = any(message_text(m).startswith(PREFERENCE_REFUSALS) for m in convo if m.get("role") == "assistant")
            refusal = offer_verdict(goal_from_prompt(prompt), heard, insisted=insisted)
            return Decision(text=refusal or ACCEPT)
        if any(cue in heard for cue in GOAL_CUES):
            return Decision(text=goal_from_prompt(prompt))
        return Decision(text=PARDON)
