"""The identity parser on forms both recognisers really write (Whisper tiny.en and pocketsphinx
transcripts of the scripted passenger's Piper audio), and what it must refuse."""
from __future__ import annotations

import pytest

from voice.bots.models.heard_identity import confirmation_readings, parse_confirmation, parse_identity, parse_last_name


@pytest.mark.parametrize("heard, code", [
    # Whisper: letters and numerals, its own punctuation
    ("My confirmation number is Z, K, 3, F, F, W, and my last name is Rodriguez.", "ZK3FFW"),
    ("My confirmation number is 1-A, 2-B, C, 4, and my last name is Okafor.", "1A2BC4"),
    ("My confirmation number is said K3FFW.", None),  # "said" is not a letter: no guess
    ("I want flight SK-7-0, 3 on March 25th.", None),  # no confirmation cue, not six characters
    ("My confirmation numbers mk3ffw", "MK3FFW"),
    ("My confirmation number is C, K, free, F, F, W in my last name is Rodriguez.", "CK3FFW"),
    # pocketsphinx: letter names and digit words
    ("my confirmation number c k three f f w in my last name is rodriguez", "CK3FFW"),
    ("my confirmation number is zee kay three double eff double you", "ZK3FFW"),
    ("confirmation code see are oh four five six", "CRO456"),
    ("my confirmation number is f a r zero you m", "FAR0UM"),
    # the careful second spelling: the "as in" word wins over a misheard letter
    ("My confirmation number is C as in Zebra, K as in Kilo, 3, F as in Frank, F as in Frank, W as in William.", "ZK3FFW"),
    ("My confirmation number is CS and Zebra, K as in Kilo, Free, F as in Frank, F as in Frank, W as in William", "ZK3FFW"),
    ("My confirmation number is MSN Mike, K as in Kilo, 3. F as in Frank. F as in Frank. W as in William", "MK3FFW"),
    ("My confirmation number is 8. J as in Jule at. V as in Victor. S as in Sierra. D as in Delta. F as in Frank and my last name is Lewis.", "8JVSDF"),
    ("My confirmation number is BS in Bravo, CS in Zebra, I as an India, W as in William, 4, 8 in my last name is Barnes", "BZIW48"),
    ("My confirmation number is E as an echo, P as an Papa, X as an X-ray, Y as a yellow, E as an echo, K as an Kilo", "EPXYEK"),
    ("My confirmation number is AJD SDF.", "AJDSDF"),  # what was heard, even if "eight" became "A"
    # the careful spelling, a word per letter, as Whisper wrote it: garbled words still give their
    # letter, and a lone "A" or "sex" among the words is a digit
    ("My confirmation number is A, Japan, Violet, Sierra, Delta, Frank and my last name is Lewis.", "8JVSDF"),
    ("My confirmation number is x-ray, x-ray, frank, sex, Oscar, hotel, and my last name is Kim.", "XXF6OH"),
    ("My confirmation number is India. Mike, too. X-ray, uniform. For in my last name is Okonkwo.", "IM2XU4"),
    ("My confirmation number is Alpha A3 Queen Violet 2 and my last name is Baker", "A83QV2"),
    ("My confirmation number is William, one, nine, London, Alpha. Echoing my last name is Baker.", "W19LAE"),
    ("My confirmation number is Robert. Zero. Sierra. Delta. Romino. Uniform in my last name is Young.", "R0SDRU"),
    ("My confirmation number is Delta. X-ray. A. Willem. 4. India. And my last name is Howard.", "DX8W4I"),
    ("My confirmation number is 8. J is in jule-e. V is in viktor. S is in Sierra. D is in delta. F is in frank", "8JVSDF"),
    ("My confirmation number is F for Frank, K for Kilo, 3, 2, 1, 0", "FK3210"),
    ("My confirmation number is M6 to J, C, V and my last name is DeSilva", "M62JCV"),  # "to" inside a run
    ("My confirmation number is Zachary, Kilo, Frank, and my last name is Rodriguez.", None),  # 3 of 6: no guess
    ("My confirmation number is NDA, mic to x-ray uniform 4.", None),  # 8 characters: no guess
    ("Hi, I need to change my flight to March twenty-fifth.", None),
])
def test_confirmation_number_from_heard_forms(heard, code):
    assert parse_confirmation(heard) == code


def test_a_letter_s_before_and_is_not_taken_for_as_in():
    assert parse_confirmation("my confirmation number is eight, J, V, D, F, S and my last name is Lewis") == "8JVDFS"


@pytest.mark.parametrize("heard, name", [
    ("and my last name is Rodriguez.", "Rodriguez"),
    ("my last name is rodriguez", "Rodriguez"),
    ("my last name is Akhifer, O, K, A, F, O, R.", "Okafor"),  # the spelling beats a garbled word
    ("My last name is Rodriguez R-O-D-R-I-G-U-E-C.", "Rodriguez"),  # one letter off: the word wins
    ("my last name as Rodriguez, R, O, D, R, I, G, U, E, Z.", "Rodriguez"),
    ("my last name is R, I, V, E, R, A", "Rivera"),  # only the letters were heard
    ("my last name is Brown, D-R-L-W-N.", "Brown"),  # rhyming letter names misheard: the word wins
    ("my last name is Bennett. D. T. N. N. E. T. T.", "Bennett"),
    ("my last name as Anderson, A-N-D-E-R-S-E-N.", "Andersen"),  # a vowel spelled otherwise: the letters win
    ("my last name is Young. Why? Oh, you. And G.", "Young"),  # a spelling cut short
    ("My last name is a Conquale. Oh, okay. Oh, and okay. W. Oh", "Okonkwo"),  # "and" for N
    ("and my last name is De Silva, D, E, S, I, L, D, A.", "Desilva"),  # the lookup ignores case
    ("Hi, I need to change my flight.", None),
    ("my last name is", None),
])
def test_last_name_from_heard_forms(heard, name):
    assert parse_last_name(heard) == name


def test_identity_is_complete_only_with_both_parts():
    assert parse_identity("My confirmation number is Z, K, 3, F, F, W and my last name is Rodriguez.").complete
    assert not parse_identity("My confirmation number is Z, K, 3, F, F, W.").complete
    assert not parse_identity("My last name is Rodriguez.").complete


# eva_airline__5_1_3 (code Z5OROH): Whisper tiny.en wrote "Z, five, O" as "C-5-0" and the careful
# "Zurich, five, Oscar, ..." as "0.5, Oscar, ..." and as "Cyric 5, Oscar, ...".
def test_a_zurich_bent_to_cyric_is_still_z():
    assert parse_confirmation("My confirmation number is Cyric 5, Oscar, Romeo, Oscar, Hotel.") == "Z5OROH"
    # ... while the real C and S words keep their letters
    assert parse_confirmation("My confirmation number is Charlie, Sierra, 3, Frank, Frank, William.") == "CS3FFW"


@pytest.mark.parametrize("heard, readings", [
    ("My confirmation number is C-5-0, R, O, H.", ["C50ROH", "C5OROH"]),
    ("My confirmation number is C, 5, 0, R, O, H and my last name is Brooks.", ["C50ROH", "C5OROH"]),
    # "0.5": the 0 is the Zurich, lost; reading it as O is the only other reading there is.
    ("My confirmation number is 0.5, Oscar, Romeo, Oscar, Hotel.", ["05OROH", "O5OROH"]),
    ("My confirmation number is Cyric 5, Oscar, Romeo, Oscar, Hotel.", ["Z5OROH"]),
    # the spoken word "zero" is the digit: the caller says it for a 0 under the voice rule
    ("my confirmation number is f a r zero you m", ["FAR0UM"]),
    ("Hi, I need to change my flight.", []),
])
def test_numeral_zeros_may_be_read_as_the_letter_o(heard, readings):
    assert confirmation_readings(heard) == readings
    assert parse_confirmation(heard) == (readings[0] if readings else None)  # the plain reading comes first


def test_a_failed_lookup_is_not_repeated_when_another_reading_exists():
    """The third lookup of 5_1_3 repeated the second (05OROH); now it tries the O reading, and
    a "Cyric" spelling finds the booking."""
    from tests.voice.test_listening_models import FAILED, OPENING, _agent_policy, call, caller

    policy = _agent_policy()
    policy.decide([caller("Hello")])
    history = list(OPENING)
    spelled = "My confirmation number is 0.5, Oscar, Romeo, Oscar, Hotel and my last name is Brooks."
    first = policy.decide(history + [caller(spelled)])
    assert first.calls == [("get_reservation", {"confirmation_number": "05OROH", "last_name": "Brooks"})]
    history += [caller(spelled)] + call("get_reservation", first.calls[0][1], FAILED, "c1")
    history.append({"role": "assistant", "content": policy.decide(history).text})
    again = policy.decide(history + [caller(spelled)])
    assert again.calls == [("get_reservation", {"confirmation_number": "O5OROH", "last_name": "Brooks"})]
    careful = "My confirmation number is Cyric 5, Oscar, Romeo, Oscar, Hotel and my last name is Brooks."
    found = policy.decide(history + [caller(careful)])
    assert found.calls == [("get_reservation", {"confirmation_number": "Z5OROH", "last_name": "Brooks"})]
