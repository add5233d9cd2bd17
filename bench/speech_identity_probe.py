"""Benchmark: how often the agent's parser gets the caller's identity from one ASR pass.

For every eva_airline scenario the scripted passenger's identity answer (first spelling, then the
careful "as in" spelling) is spoken by Piper, recognised by Whisper (or pocketsphinx) in one
piece and parsed by the listening agent's parser; prints per scenario what was heard and parsed,
then the share of codes and names parsed exactly. It skips the VAD and the bridge, so it is an
upper bound for a real call, but it takes a minute or two instead of an hour: the quick loop for
parser and spelling changes. ``bench/speech_selftest.py`` is the real measure.

Run: nice -n 19 .venv/bin/python bench/speech_identity_probe.py [--stt whisper] [--quiet] [NAME ...]
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evasite.settings")
    import django

    django.setup()


def speak(text: str) -> bytes:
    """Piper's audio for ``text`` as 16 kHz s16le mono (what the agent's ASR gets, minus the VAD)."""
    from voice.audio.pcm import resample
    from voice.speech import piper_tts

    voice = piper_tts._loaded_voice(str(piper_tts.bundled_voice_dir() / f"{piper_tts.JOE_VOICE}.onnx"))
    pcm = b"".join(chunk.audio_int16_bytes for chunk in voice.synthesize(text))
    return resample(pcm, voice.config.sample_rate, 16000)


def recogniser(stt: str):
    if stt == "pocketsphinx":
        from voice.speech.pocketsphinx_stt import decode_pcm, shared_decoder

        return lambda pcm: decode_pcm(shared_decoder(), pcm)
    from voice.speech.registry import WHISPER_MODELS
    from voice.speech.whisper_models import locate
    from voice.speech.whisper_stt import shared_model, transcribe_pcm

    model = shared_model(locate(WHISPER_MODELS[stt]))
    return lambda pcm: transcribe_pcm(model, pcm)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stt", default="whisper")
    parser.add_argument("--quiet", action="store_true", help="print only the misses and the totals")
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    _setup()
    from scenarios.registry import load_all, resolve_scenario, scenarios_in_domain
    from voice.bots.models.heard_identity import parse_confirmation, parse_last_name
    from voice.bots.models.scripted import _confirmation, _last_name, identity_from_prompt

    load_all()
    hear = recogniser(args.stt)
    names = args.names or list(scenarios_in_domain("eva_airline"))
    hits = {"first": [0, 0], "clear": [0, 0], "name": [0, 0]}
    for name in names:
        prompt = resolve_scenario(name).get_user_prompt()
        code, last = _confirmation(prompt), _last_name(prompt)
        if not code or not last:
            continue
        for kind, clearly in (("first", False), ("clear", True)):
            said = identity_from_prompt(prompt, clearly=clearly)
            heard = hear(speak(said))
            got_code, got_name = parse_confirmation(heard), parse_last_name(heard)
            hits[kind][0] += got_code == code
            hits[kind][1] += 1
            hits["name"][0] += got_name == last
            hits["name"][1] += 1
            if not args.quiet or got_code != code or got_name != last:
                mark = "ok " if got_code == code and got_name == last else "MISS"
                print(f"{mark} {name.split('__')[-1]:>24} {kind:>5} {code} {last}: parsed {got_code} {got_name}"
                      f" | heard {heard!r}", flush=True)
    print(f"{args.stt}: code parsed exactly, first spelling {hits['first'][0]}/{hits['first'][1]}, "
          f"careful spelling {hits['clear'][0]}/{hits['clear'][1]}; last name {hits['name'][0]}/{hits['name'][1]}")


if __name__ == "__main__":
    main()
