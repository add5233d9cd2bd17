"""Audio conditions (issue 19): pure PCM transforms applied where the bridge relays audio to
the side that hears it, plus the passenger-side settings (rate, voice, barge-in) and the spec
parser. No Django and no pipecat in this package; see base.py for the contract."""
from voice.conditions.base import AudioCondition, Chain, Passthrough, derive_seed, prepare
from voice.conditions.noise import Noise
from voice.conditions.phone import PhoneLine
from voice.conditions.speaker import BargeInSettings, SpeakerSettings
from voice.conditions.spec import (
    CLEAN,
    Condition,
    ConditionPart,
    ConditionSpecError,
    parse_condition,
    parse_conditions,
)

__all__ = [
    "AudioCondition", "BargeInSettings", "CLEAN", "Chain", "Condition", "ConditionPart", "ConditionSpecError",
    "Noise", "Passthrough", "PhoneLine", "SpeakerSettings", "derive_seed", "parse_condition", "parse_conditions",
    "prepare",
]
