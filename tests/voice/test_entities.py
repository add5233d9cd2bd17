"""Key-entity transcription accuracy on fixed strings."""
from __future__ import annotations

from voice.entities import entity_in, key_entity_accuracy, normalise, scenario_entities, spoken_date


def test_normalise_spelled_forms():
    assert normalise("Z, K, three, F, F, W") == "zk3ffw"
    assert normalise("s k seven oh three") == "sk703"
    assert normalise("March twenty fifth") == "march25"
    assert normalise("one hundred twenty dollars") == "120dollars"
    assert normalise("five five five dash one two three") == "555123"
    assert normalise("D, A, I, K, I, underscore, M") == "daikim"
    assert normalise("double you") == "w"


def test_entity_in_heard_text():
    assert entity_in("ZK3FFW", "my confirmation code is z k three f f w")
    assert not entity_in("ZK3FFW", "my confirmation code the c k three f f w")
    assert entity_in("SK703", "flight ess kay seven zero three")
    assert entity_in("March 25", "i need to change my flight to march twenty five")
    assert entity_in("$120", "no more than one hundred twenty dollars")
    assert entity_in("Rodriguez", "my last name is rodriguez")
    assert not entity_in("Rodriguez", "in my last name is rick reduce")


def test_key_entity_accuracy_per_direction():
    turns = [
        {"role": "user", "said": "Hi, I need to change my flight to March 25.", "heard": "hi i need to change my flight to march twenty five"},
        {"role": "user", "said": "My confirmation number is Z, K, three, F, F, W and my last name is Rodriguez.", "heard": "my confirmation number the c k three f f w in my last name is rick reduce"},
        {"role": "agent", "said": "I moved you to flight S K seven zero three.", "heard": "i moved you to flight s k seven zero three"},
        {"role": "agent", "said": "Goodbye.", "heard": None},
    ]
    result = key_entity_accuracy(turns, ["ZK3FFW", "Rodriguez", "SK703", "March 25"])
    assert result["user_to_agent"] == {"spoken": 3, "intact": 1, "rate": 1 / 3}
    assert result["agent_to_user"] == {"spoken": 1, "intact": 1, "rate": 1.0}
    empty = key_entity_accuracy([], ["ZK3FFW"])
    assert empty["user_to_agent"]["rate"] is None


def test_scenario_entities_from_db_and_information():
    db = {
        "reservations": {
            "ZK3FFW": {
                "passengers": [{"first_name": "Samantha", "last_name": "Rodriguez"}],
                "bookings": [{"segments": [{"flight_number": "SK621", "date": "2026-03-20"}]}],
            }
        }
    }
    info = {"Booking confirmation number": "ZK3FFW", "Desired new departure date": "2026-03-25", "Maximum total rebooking cost": "$120"}
    entities = scenario_entities(db, info)
    for expected in ("ZK3FFW", "Samantha", "Rodriguez", "SK621", "March 20", "March 25", "120"):
        assert expected in entities
    assert spoken_date("2026-03-05") == "March 5"


def test_matches_need_token_boundaries():
    assert not entity_in("March 5", "i fly out march fifty")
    assert not entity_in("SK703", "ask seven oh three")
    assert not entity_in("March 25", "on march two hundred fifty")
    assert not entity_in("Lee", "i fell asleep")
    assert not entity_in("120", "it was 1200 dollars")
    assert entity_in("March 5", "on march fifth, please")


def test_whisper_formatting_and_spelled_forms_agree():
    for heard in ("on March 25th", "on march twenty fifth", "on March twenty-five", "March 25."):
        assert entity_in("March 25", heard), heard
    for heard in ("flight SK-7-0-3", "flight S K 7 0 3", "Flight SK70-3", "flight s k seven oh three"):
        assert entity_in("SK703", heard), heard
    assert entity_in("ZK3FFW", "Z, K, 3, F, F, W")
    assert not entity_in("ZK3FFW", "C, K, 3, F, F, W")


def test_boundaries_apply_to_accuracy_counts():
    turns = [{"role": "agent", "said": "You are on flight S, K, seven, zero, three.", "heard": "you are on flight ask seven oh three"}]
    result = key_entity_accuracy(turns, ["SK703"])
    assert result["agent_to_user"] == {"spoken": 1, "intact": 0, "rate": 0.0}


def test_dates_in_heard_text():
    from voice.entities import dates_in

    assert dates_in("Move your March 20 flight to March twenty fifth") == {(3, 20), (3, 25)}
    assert dates_in("May I have your number") == set()


def test_a_code_spelled_a_word_per_letter_is_that_code():
    assert entity_in("ZK3FFW", "My confirmation number is Zurich, Kilo, three, Frank, Frank, William.")
    assert entity_in("ZK3FFW", "my confirmation number is zurich kilo 3 frank frank william and my last name")
    assert not entity_in("ZK3FFW", "Sacri, Kilo, 3, Frank, Frank, William")  # a misheard word is not intact
    # Outside such a run a spelling word stays a word.
    assert entity_in("Frank", "my first name is Frank")
    assert not entity_in("H", "a hotel voucher")
