"""``build_brain``: the one place that turns a model slot's configuration into a bot brain."""
from __future__ import annotations

import ipaddress
import os
from typing import Optional
from urllib.parse import urlparse

from voice.bots.brain import Brain
from voice.bots.models.catalogue import builtin_model, builtin_names
from voice.bots.pipeline import PipecatBrain, SpeechFactories
from voice.conditions.speaker import BargeInSettings, SpeakerSettings
from voice.modality import check_modality


def build_brain(
    role: str,
    *,
    model: str,
    llm_url: Optional[str] = None,
    api_key_name: Optional[str] = None,
    modality: str = "text",
    tts: Optional[str] = None,
    stt: Optional[str] = None,
    pace_audio: Optional[bool] = None,
    turn_gap_secs: Optional[float] = None,
    speaker: Optional[SpeakerSettings] = None,
    barge_in: Optional[BargeInSettings] = None,
) -> Brain:
    """A ``PipecatBrain`` for ``role`` ("agent" | "user").

    ``model`` names a built-in model (``voice.bots.models.catalogue``) or, together with
    ``llm_url``, the model served by an OpenAI-compatible endpoint.
    The API key is read from the environment variable ``api_key_name`` when the pipeline is
    built and never stored; without one, only a loopback endpoint is accepted (key
    "not-needed"). ``pace_audio`` (default: on in voice) sends TTS audio in real time;
    ``turn_gap_secs`` is the quiet time that ends a heard turn in voice modality; ``speaker``
    (a ``rate``/``voice`` condition) picks the TTS's voice and pace instead of ``tts``;
    ``barge-in`` makes a voice passenger cut into the agent's long turns.
    """
    options: dict = {"pace_audio": pace_audio, "barge_in": barge_in}
    if turn_gap_secs is not None:
        options["turn_gap_secs"] = turn_gap_secs  # else the collector's TURN_GAP_SECS
    if role not in ("agent", "user"):
        raise ValueError(f"role must be 'agent' or 'user', not {role!r}")
    check_modality(modality)

    speech = _speech(tts, stt, speaker) if modality == "voice" else None
    if llm_url:
        api_key_for(llm_url, api_key_name)

        def openai_llm(brain: PipecatBrain):
            from voice.bots.openai_llm import GuardedOpenAILLMService

            return GuardedOpenAILLMService(
                api_key=api_key_for(llm_url, api_key_name),
                base_url=llm_url,
                settings=GuardedOpenAILLMService.Settings(model=model),
            )

        return PipecatBrain(role=role, llm_factory=openai_llm, modality=modality, speech=speech, **options)

    from voice.bots.models.base import BuiltinLLMService

    owner: list[PipecatBrain] = []  # the policy reads prompt / shared_state of its brain
    policy = _builtin_policy(role, model, owner)

    def builtin_llm(brain: PipecatBrain):
        return BuiltinLLMService(policy)

    brain = PipecatBrain(
        role=role, llm_factory=builtin_llm, modality=modality, speech=speech, policy=policy, **options
    )
    owner.append(brain)
    return brain


def check_model_slot(role: str, *, model: str, llm_url: Optional[str], api_key_name: Optional[str]) -> None:
    """Raise ValueError now for a configuration ``build_brain`` would refuse later (used to turn
    a typo into a usage error before any scenario runs)."""
    if llm_url:
        api_key_for(llm_url, api_key_name)
        return
    known = builtin_names(role)
    if model not in known:
        raise ValueError(
            f"unknown {role} model {model!r}: built-in {role} models are {', '.join(known)}; "
            "any other model name needs an OpenAI-compatible llm_url"
        )


def _builtin_policy(role: str, model: str, owner: list[PipecatBrain]):
    check_model_slot(role, model=model, llm_url=None, api_key_name=None)
    entry = builtin_model(role, model)
    assert entry is not None  # checked just above
    return entry.build(lambda: owner[0])  # the brain exists by the time the policy reads it


def api_key_for(llm_url: str, api_key_name: Optional[str]) -> str:
    """The key from the environment; "not-needed" only for a loopback endpoint (ValueError otherwise)."""
    value = os.environ.get(api_key_name) if api_key_name else None
    if value:
        return value
    if _is_loopback(llm_url):
        return "not-needed"
    where = f"environment variable {api_key_name!r} is unset" if api_key_name else "no api_key_name given"
    raise ValueError(f"LLM endpoint {llm_url} is not on loopback and {where}")


def _is_loopback(url: str) -> bool:
    return is_loopback_host(urlparse(url).hostname or "")


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (a name or address) stays on this machine."""
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _speech(tts: Optional[str], stt: Optional[str], speaker: Optional[SpeakerSettings] = None) -> SpeechFactories:
    from voice.speech.registry import make_passenger_tts, make_stt, make_tts, make_vad

    def voice() -> object:
        return make_passenger_tts(speaker) if speaker is not None and not speaker.is_default else make_tts(tts)

    return SpeechFactories(tts=voice, stt=lambda: make_stt(stt), vad=make_vad)
