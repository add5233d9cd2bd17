"""Voice-specific prompt text shared by both sides of a call (scenarios.md §6.2–§10.4).

Pure module: no Django. Everything the simulated passenger and the agent are told about *speaking*
(as opposed to airline policy) lives here, so one wording serves every scenario.
"""
from __future__ import annotations

DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")

# §6.2 — given to both sides. The TTS voices every character it receives, so the rules are mostly
# about what *not* to write.
GENERAL_VOICE_PROMPT = """\
This is a live phone call. Everything you write is turned into speech by a text-to-speech engine that \
reads out every single character, formatting included, so keep each reply brief and conversational.
Write plain spoken sentences only and never use Markdown. That means no asterisks or underscores to \
emphasise words, no backticks, no pound-sign headings, no bullets such as a dash or an asterisk at the \
start of a line, no numbered prefixes like "1.", and no square or angle brackets around links or tags. \
The voice would otherwise say things like "asterisk", "pound" or "one period" out loud.
When you list things, do it the way people talk. Put a short list inline, for example "there are three \
options: blue, red, and black". For a longer list use spoken ordinals ("First, ... Second, ...") or \
labelled numbers ("Option one: ... Option two: ...").
Those characters are only acceptable when they belong to an identifier value, such as an order id that \
starts with a pound sign, a phone extension like star one two three, or an e-mail address. In that case \
follow the rule for spelling identifiers and pronounce each character.
If you are talking about a symbol itself rather than reading an identifier, say its name, such as \
"the pound key", "the star key" or "percent sign", and never write the bare character.
Use ordinary sentence punctuation and no emojis.
Do not make up facts or results. If something is unknown or you did not actually see it happen, say so \
honestly."""

# §7 — first user guideline of every eva scenario, and item 6 of the agent prompt.
ALPHANUMERIC_RULE = """\
How to say identifiers out loud: this applies to confirmation numbers, flight numbers, airport codes, \
user ids, phone numbers, order ids, e-mail addresses and any other code made of letters, digits or both \
(zip codes, reservation ids, account numbers and the like). Spell such a code one character at a time: \
say each letter as the letter and each digit as its word. Say punctuation inside the code by its name: \
"_" is "underscore", "-" is "dash", "@" is "at", "." is "dot", "#" is "hash" and "*" is "star". Never \
drop a punctuation character silently and never pronounce a code as if it were an ordinary word. Most \
important: say ONLY the spelled-out form. Do not also say the code in its written form in the same \
breath. Wherever you see the notation CODE (spelled out as ...), in this rule or anywhere else in your \
instructions, it is a note showing you how the code is pronounced; it is not a phrase to read out. \
Pronunciation reference (a lookup table, not sentences to copy): 1A2BC4 (spelled out as one, A, two, B, \
C, four); SK123 (spelled out as S, K, one, two, three); LAX (spelled out as L, A, X); AUS (spelled out \
as A, U, S); #W2378156 (spelled out as hash, W, two, three, seven, eight, one, five, six); *123 (spelled \
out as star, one, two, three); daiki_muller_1116 (spelled out as D, A, I, K, I, underscore, M, U, L, L, \
E, R, underscore, one, one, one, six); 555-123-4567 (spelled out as five, five, five, dash, one, two, \
three, dash, four, five, six, seven). Right: "seven, eight, seven, one, two". Wrong: "78712, spoken as \
seven, eight, seven, one, two". Right: "X, E, H, M, four, B". Wrong: "XEHM4B, spelled X, E, H, M, four, \
B". Right: "D, A, I, K, I, underscore, M, U, L, L, E, R, underscore, one, one, one, six". Wrong: \
"daiki_muller_1116, spelled as D, A, I, K, I, ...". Right: "E, P, X, Y, E, K". Wrong: "EPXYEK, spelled \
E, P, X, Y, E, K". One exception: people's names such as "Johnson" or "Fatima" are real words, not \
codes, so you may say the name normally and then spell it, for example "Johnson, J, O, H, N, S, O, N"; \
the voice pronounces names correctly."""

# §8 — agent only.
JOURNEY_ID_RULE = (
    "Journey identifiers such as FL_SK621_20260320 are internal database keys: never read them aloud; "
    "refer to a flight by its flight number and date instead."
)

# §6.3 — agent only.
END_CONVERSATION_GUIDELINE = """\
Ending the call: use the end_conversation tool (EndConversationTool) to end the call, but only after the \
caller has told you they need nothing more and you have both said goodbye. Never end the call before \
the caller has clearly confirmed they are done; hanging up early counts as a failure. Follow this order: \
first confirm that every action is complete, then ask whether there is anything else you can help with, \
then wait for the answer, and if the caller says goodbye or needs nothing else, say goodbye and only \
then call the tool. Also call it after a successful transfer to a human agent."""

# §6.4 — agent only; never given to the simulated user.
EXECUTION_HONESTY_GUIDELINE = """\
Reporting what was done: keep what you discussed apart from what you did. A step is complete only when \
a tool call that performs it has succeeded. Any summary, total or status update you give must include \
only actions actually carried out through tools, never actions that were only planned, attempted \
without success, or not yet confirmed by the caller."""

# §10.4 — the user's hang-up tool and the last guideline of every eva user prompt.
USER_HANGUP_DESCRIPTION = (
    "Hang up the phone call. Use it only after you have said goodbye: when your task is complete, when "
    "you have followed your failure path, or when you refuse a transfer and must hang up."
)
USER_HANGUP_RULE = (
    "Hanging up: as soon as you have said your final goodbye, call the end_conversation tool to hang up. "
    "Never call it before you have said goodbye or in the middle of the conversation. Any instruction "
    "telling you to \"end the call\" or to \"hang up using end_call\" means: say goodbye, then call "
    "end_conversation."
)


PUNCTUATION_NAMES = {"_": "underscore", "-": "dash", "@": "at", ".": "dot", "#": "hash", "*": "star"}
"""How the alphanumeric rule (§7) names punctuation inside a code."""


def spell(code: str) -> str:
    """Spoken form of an identifier (§7, §9): letters upper-cased, digits as words, the rule's
    punctuation by name; anything else (spaces, say) is not pronounced. The one home of this
    rule: prompts, the scripted passenger and the listening agent all spell through it."""
    items = []
    for char in code:
        if char.isascii() and char.isdigit():
            items.append(DIGIT_WORDS[int(char)])
        elif char.isalpha():
            items.append(char.upper())
        elif char in PUNCTUATION_NAMES:
            items.append(PUNCTUATION_NAMES[char])
    return ", ".join(items)


def fmt(code: str) -> str:
    """``CODE (spelled out as …)`` — the instructional notation used throughout scenario prose."""
    return f"{code} (spelled out as {spell(code)})"


SPELLING_ALPHABET = {w[0].lower(): w for w in (
    "Alpha", "Bravo", "Charlie", "Delta", "Echo", "Frank", "George", "Hotel", "India", "Japan", "Kilo",
    "London", "Mike", "Nancy", "Oscar", "Papa", "Queen", "Robert", "Sierra", "Tango", "Uniform", "Violet",
    "William", "X-ray", "Yellow", "Zurich")}
"""One word per letter for spelling a code a second time ("Zurich, Kilo, three, ..."). Picked for
how reliably Whisper tiny.en hears each on its own in Piper's voice: Zebra, Zulu and Zachary came
out as "CBER", "Sulu" and "Sacri", Victor as "Baker", Lima as "Lena", Romeo as "Romino"."""

SPELLING_WORD_LETTERS = {
    **{word.lower().replace("-", ""): letter for letter, word in SPELLING_ALPHABET.items()},
    **{word: word[0] for word in (
        "alfa", "foxtrot", "golf", "juliet", "juliett", "lima", "november", "quebec", "romeo", "victor",
        "whiskey", "xray", "yankee", "zulu", "zebra", "queenie", "peter", "david", "edward", "henry", "jack",
        "king", "mary", "mexico", "zachary", "ocean", "sugar", "tommy", "boston", "apple", "italy", "washington",
        "venus", "valley", "video", "zone", "john", "larry", "lincoln", "roger", "victoria")},
}
"""Words callers (and the scripted passenger) spell letters with, each with its letter: the
NATO alphabet, SPELLING_ALPHABET and common telephone-alphabet words."""


def spell_with_words(code: str) -> str:
    """The careful second spelling: each letter as its SPELLING_ALPHABET word, digits as words."""
    return ", ".join(SPELLING_ALPHABET[c.lower()] if c.isalpha() else spell(c) for c in code if spell(c))
