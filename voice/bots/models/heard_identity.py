"""Read a caller's confirmation number and last name out of an ASR transcript.

Pure module. Both recognisers are covered: pocketsphinx writes spelled codes as words ("see k
three eff eff double you"), Whisper as letters and numerals in its own formatting ("C, K, 3, F,
F, W", "SK-7-0-3", "1-A, 2-B"). A code spelled a word per letter ("Zurich, Kilo, three", the
caller's second, careful spelling) or with "Z as in Zebra" is read from the words, which survive
ASR far better than letter names; Whisper garbles the letter and connector around them ("He has an
echo", "and is a Nancy"), so those are dropped. Deterministic: no guessing from any booking data.
"""
from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass
from typing import Optional

from scenarios.voice_prompts import SPELLING_WORD_LETTERS
from voice.entities import LETTER_NAMES, UNITS

CODE_LENGTH = 6
"""eva_airline confirmation numbers are six characters."""

# Letter words an ASR writes for a spelled letter, beyond voice.entities.LETTER_NAMES; "oh" is
# the letter O here (the passenger says "zero" for the digit).
EXTRA_LETTERS = {
    "oh": "o", "o": "o", "owe": "o", "are": "r", "you": "u", "why": "y", "eh": "a", "hey": "a", "ye": "y",
    "sí": "c", "si": "c", "dee": "d", "gee": "g", "jay": "j", "kay": "k", "key": "k", "okay": "k", "eff": "f", "ef": "f",
    "ex": "x", "vee": "v", "zee": "z", "zed": "z", "tee": "t", "pee": "p", "bee": "b", "em": "m", "en": "n",
}
DIGITS = {word: str(value) for word, value in UNITS.items() if word != "oh"}
DIGITS.update({"free": "3", "tree": "3", "won": "1", "ate": "8", "niner": "9", "too": "2", "fine": "5"})
"""Digit words plus what Whisper writes for them inside a spelled code ("C, K, free, F")."""
RUN_DIGITS = {"to": "2", "for": "4", "fore": "4"}
"""Digits only inside a spelled run ("M6 to J"), where they cannot be the ordinary words."""
WORD_RUN_DIGITS = {**RUN_DIGITS, "a": "8", "sex": "6", "sits": "6", "sick": "6", "sax": "6"}
"""What Whisper writes for a digit among spelling words ("A" for eight, "sex" for six): there
every letter is a word, so a lone "A" cannot be the letter."""
NOT_SPELLING_WORDS = {"number", "numbers", "confirmation", "again", "spell", "letter", "name", "last", "thank",
                      "thanks", "please", "that", "this", "with", "words", "using", "booking", "code"}
"""Words spelled close to a spelling word ("number" ~ November) that never are one."""
AS_IN = {("as", "in"), ("is", "in"), ("as", "an"), ("as", "a"), ("as", "and"), ("for",), ("like",)}
"""Connectors of "Z as in zebra" / "Z for zebra" / "Z like zebra"."""
FILLER = {"is", "it", "its", "it's", "my", "the", "number", "code", "confirmation", "uh", "um", "that", "s",
          "letter", "digit", "again", "let", "me", "spell", "so", "yes", "okay", "ok", "sure", "thats", "of"}
CODE_END = {"and", "last", "name", "surname", "family", "for", "under", "thank", "thanks", "please"}
CONFIRMATION_CUE = re.compile(r"\b(?:confirmation|booking|reservation|record)\s*(?:number|code|locator)?\b", re.I)
NAME_CUE = re.compile(r"\b(?:last|family|sur)\s*name\b(?:\s+is)?|\bsurname\b(?:\s+is)?", re.I)


@dataclass(frozen=True)
class HeardIdentity:
    confirmation_number: Optional[str]
    last_name: Optional[str]

    @property
    def complete(self) -> bool:
        return bool(self.confirmation_number and self.last_name)


def _tokens(text: str) -> list[str]:
    """Words, numerals and single characters, lower-cased; separators (commas, dashes) dropped.

    Whisper writes a quick "Z as in zebra" as "CS and Zebra", "C, S and zebra", "CS in Zebra" or
    "CSN Zebra": those become "c as in zebra" again (not for A and I, whose "as"/"is" are words)."""
    text = text.lower().replace("\u2019", "'")
    text = re.sub(r"\b([b-hj-z])\W*s\W+and\b(?!\W+(?:my|the|last|i|your|it)\b)", r"\1 as in", text)
    text = re.sub(r"\bx\W?ray\b", "xray", text)
    text = re.sub(r"\b([a-z])ias\b", r"\1 as", text)  # "Bias and Bravo" for "B as in Bravo"
    text = re.sub(r"\b([a-z])sn\b(?=\W+[a-z]{3,})", r"\1 as in", text)  # "MSN Mike"
    text = re.sub(r"\b([b-hj-z])\W*s\W+in\b(?!\W+(?:my|the|last|i|your|it)\b)", r"\1 as in", text)  # "BS in Bravo"
    return re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text)


def _letter(token: str) -> Optional[str]:
    if len(token) == 1 and token.isalpha():
        return token
    return EXTRA_LETTERS.get(token) or LETTER_NAMES.get(token)


SHORT_WORDS = {"in", "on", "at", "to", "an", "am", "as", "or", "we", "me", "no", "so", "do", "go", "up", "us", "by",
               "and", "the", "for", "is", "it", "its", "my", "of", "i", "a", "was", "but", "not", "has", "had"}


def _stray(token: str) -> bool:
    return (token.isalpha() and len(token) > 1 and token not in CODE_END and token not in DIGITS
            and not _letter(token))


def _connector(tokens: list[str], i: int) -> int:
    """Length of an "as in" / "for" / "like" connector starting at ``i`` (0 when none)."""
    for words in AS_IN:
        if tuple(tokens[i : i + len(words)]) == words:
            return len(words)
    return 0


def _code_chars(tokens: list[str]) -> str:
    """Characters of a spelled code at the start of ``tokens`` (leading filler skipped)."""
    out: list[str] = []
    i = 0
    started = False
    while i < len(tokens):
        tok = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        connector = _connector(tokens, i) if out and out[-1].isalpha() else 0
        if connector and i + connector < len(tokens) and len(tokens[i + connector]) > 2:
            # "Z as in zebra": the word's letter replaces the (possibly misheard) letter.
            out[-1] = spelling_word_letter(tokens[i + connector]) or tokens[i + connector][0]
            i += connector + 1
            while i < len(tokens) and _stray(tokens[i]):
                i += 1  # the rest of a word heard as two ("Juliet" -> "Jule at")
            continue
        if tok in ("double", "triple") and nxt:
            repeat = 2 if tok == "double" else 3
            if nxt in ("you", "u") and tok == "double":
                out.append("w")  # "double you" is W, not UU
                i += 2
                started = True
                continue
            single = _letter(nxt) or DIGITS.get(nxt) or (nxt if nxt.isdigit() and len(nxt) == 1 else None)
            if single:
                out.extend([single] * repeat)
                i += 2
                started = True
                continue
        if started and tok == "and" and _letter(nxt) and nxt not in ("i", "a"):
            out.append("n")  # "Oh, okay. Oh, and okay" for O, K, O, N, K
            i += 1
            continue
        if started and tok in CODE_END:
            break
        if tok in DIGITS:
            out.append(DIGITS[tok])
        elif started and tok in RUN_DIGITS and (nxt.isdigit() or nxt in DIGITS or _letter(nxt)):
            out.append(RUN_DIGITS[tok])
        elif tok.isdigit():
            out.extend(tok)
        elif _letter(tok):
            out.append(_letter(tok))
        elif spelling_word_letter(tok) and (len(tok) > 3 or tok == "mic"):
            out.append(spelling_word_letter(tok))  # a spelling word among letters ("NDA, mic, to")
        elif re.fullmatch(r"[a-z0-9]{2,8}", tok) and any(c.isdigit() for c in tok):
            out.extend(tok)  # Whisper's "sk703", "1a"
        elif re.fullmatch(r"[a-z]{2,3}", tok) and tok not in FILLER | CODE_END | SHORT_WORDS:
            out.extend(tok)  # Whisper's "SK-7-0-3" -> "sk", "7", ..., or "AJD SDF"
        elif tok in FILLER and not started:
            i += 1
            continue
        elif started:
            break
        else:
            i += 1
            continue
        started = True
        i += 1
    return "".join(out).upper()


@functools.lru_cache(maxsize=512)
def spelling_word_letter(token: str) -> Optional[str]:
    """The letter a spelling word stands for, also as Whisper misspells it ("Willem" -> W, "Romino"
    -> R); None for any other word."""
    token = token.replace("-", "")
    if token in SPELLING_WORD_LETTERS:
        return SPELLING_WORD_LETTERS[token]
    if token == "mic":
        return "m"
    if len(token) < 4 or token in NOT_SPELLING_WORDS:
        return None
    match = difflib.get_close_matches(token, SPELLING_WORD_LETTERS, n=1, cutoff=0.72)
    if match:
        return SPELLING_WORD_LETTERS[match[0]]
    if token[0] in "cs":
        # Piper's Z reaches Whisper as C or S, in a word too: "Zurich" written "Cyric".
        match = difflib.get_close_matches("z" + token[1:], Z_WORDS, n=1, cutoff=0.72)
        if match:
            return "z"
    # A word run into the next one ("Echoing my" for "Echo, and my").
    stem = next((w for w in SPELLING_WORD_LETTERS if len(w) >= 4 and token.startswith(w)), None)
    return SPELLING_WORD_LETTERS[stem] if stem else None


Z_WORDS = [word for word, letter in SPELLING_WORD_LETTERS.items() if letter == "z"]


def _word_spelled_chars(tokens: list[str]) -> str:
    """The code when spelled a word per letter: each spelling word gives its letter, digits
    (numerals, digit words, "free") their digit; everything else (the letter names and "as in"
    that Whisper garbles around the words, filler) is dropped. '' unless two or more words were heard."""
    if sum(1 for t in tokens if spelling_word_letter(t)) < 2:
        return ""
    out: list[str] = []
    for i, tok in enumerate(tokens):
        letter = spelling_word_letter(tok)
        if letter:
            out.append(letter)
        elif tok.isdigit():
            out.extend(tok)
        elif tok in DIGITS:
            out.append(DIGITS[tok])
        elif tok in WORD_RUN_DIGITS and not _connects(tokens, i):
            out.append(WORD_RUN_DIGITS[tok])
        elif re.fullmatch(r"a\d+", tok):
            out.extend("8" + tok[1:])  # "Alpha A3" for "Alpha, eight, three"
    return "".join(out).upper()


def _connects(tokens: list[str], i: int) -> bool:
    """Whether tokens[i] joins a letter to its word ("F for Frank", Whisper's "N is a Nancy")
    rather than being a digit ("A" for eight in "number is A, Japan")."""
    tok, nxt = tokens[i], tokens[i + 1] if i + 1 < len(tokens) else ""
    if tok == "for":
        return bool(spelling_word_letter(nxt))
    if tok == "a":
        return bool(spelling_word_letter(nxt)) and i >= 2 and tokens[i - 1] in ("is", "as", "was")
    return False


def parse_confirmation(text: str, *, zero_as_o: bool = False) -> Optional[str]:
    """The spelled confirmation number, upper case; None when no six-character code was heard.

    ``zero_as_o`` reads every numeral 0 that Whisper wrote in the code as the letter O: the
    voice rule has digits spoken as words, so the caller said "zero" for a digit 0 and "O" for
    the letter, and Whisper writes both as "0" ("Z, five, O" came out as "C-5-0"). The spoken
    word "zero" stays a digit. Only worth trying once the plain reading failed a lookup."""
    cue = CONFIRMATION_CUE.search(text)
    region = text[cue.end():] if cue else text
    name_cue = NAME_CUE.search(region)
    if name_cue:
        region = region[: name_cue.start()]
    tokens = _tokens(region)
    if zero_as_o:
        tokens = [_zeros_as_o(token) for token in tokens]
    if cue:
        words = _word_spelled_chars(tokens)
        if len(words) == CODE_LENGTH:
            return words
    chars = _code_chars(tokens)
    return chars if len(chars) == CODE_LENGTH else None


def _zeros_as_o(token: str) -> str:
    """A numeral token with its zeros read as O ("0" -> "o", "c50roh" -> "c5oroh")."""
    return token.replace("0", "o") if any(c.isdigit() for c in token) else token


def confirmation_readings(text: str) -> list[str]:
    """Every reading of the code in ``text``, most likely first: as heard, then with Whisper's
    numeral zeros as the letter O. Distinct; empty when no code was heard."""
    readings = []
    for zero_as_o in (False, True):
        code = parse_confirmation(text, zero_as_o=zero_as_o)
        if code and code not in readings:
            readings.append(code)
    return readings


def parse_last_name(text: str) -> Optional[str]:
    """The last name: its spelling when one follows ("Rivera, R, I, V, E, R, A"), else the word."""
    cue = NAME_CUE.search(text)
    if cue is None:
        return None
    tokens = _tokens(text[cue.end():])
    while tokens and (tokens[0] in ("is", "as", "its", "it's", "it", "uh", "um", "the", "was")
                      or (tokens[0] == "a" and len(tokens) > 1 and len(tokens[1]) > 2)):
        tokens = tokens[1:]  # "my last name is", Whisper's "my last name as", "is a Conquale"
    if not tokens or tokens[0].isdigit():
        return None
    if len(tokens[0]) == 1:
        # The name itself was not heard as a word, only its letters.
        letters = _code_chars(tokens)
        return letters.capitalize() if len(letters) >= 2 and letters.isalpha() else None
    if tokens[0] in NAME_PARTICLES and len(tokens) > 1 and len(tokens[1]) > 2:
        tokens = [tokens[0] + tokens[1]] + tokens[2:]  # "De Silva, D, E, S, I, L, V, A" is one name
    spelled = _code_chars(tokens[1:])
    word = tokens[0].capitalize()
    if len(spelled) >= 2 and spelled.isalpha() and spelled.lower() != word.lower():
        if len(spelled) < len(word) - 1 or _misheard_spelling(word.lower(), spelled.lower()):
            return word
        return spelled.capitalize()
    return word


NAME_PARTICLES = {"de", "da", "di", "del", "della", "van", "von", "le", "la", "mc", "mac", "st"}
"""First parts of names an ASR writes as a word of their own ("De Silva")."""
VOWELS = set("aeiou")
RHYMING_LETTERS = (set("bcdegptvz"), set("mn"), set("fsx"), set("ajk"), set("iy"), set("quw"))
"""Letter names that sound alike ("B", "D", "V", "Z" ...): what an ASR confuses in a spelling."""


def _misheard_spelling(word: str, spelled: str) -> bool:
    """Whether the spelling differs from the heard name only as misheard letter names do.

    Rhyming letter names (Z heard as "C", B as "D") cost nothing and up to a quarter of the
    letters may be otherwise off: then the word the ASR wrote is the name. A vowel spelled
    differently ("Anderson" heard, "A, N, D, E, R, S, E, N" spelled) is a real spelling of a
    name that sounds the same, so the letters decide."""
    if len(word) != len(spelled):
        return False
    pairs = [(a, b) for a, b in zip(word, spelled) if a != b]
    if any(a in VOWELS and b in VOWELS for a, b in pairs):
        return False
    odd = sum(1 for a, b in pairs if not any(a in group and b in group for group in RHYMING_LETTERS))
    return odd <= len(word) // 4


def parse_identity(text: str) -> HeardIdentity:
    return HeardIdentity(parse_confirmation(text), parse_last_name(text))
