"""Benchmark: how often the agent's parser gets the caller's identity from one ASR pass.

For every eva_airline scenario the scripted passenger's identity answer (first spelling, then the
careful "as in" spelling) is spoken by Piper, recognised by Whisper (or pocketsphinx) in one
piece and parsed by the listening agent's parser; prints per scenario what was heard and parsed,
then the share of codes and names parsed exactly. It skips the VAD and the bridge, so it is an
upper bound for a real call, but it takes a minute or two instead of an hour: the quick loop for
parser and spelling changes. ``bench/speech_selftest.py`` is the real measure.

``--conditions clean,phone,noise:babble:snr=5`` puts each answer (padded with half a second of
silence) through each audio condition in 20 ms frames first, as the bridge would on its way to
the agent, and ends with one line per condition: what a degraded line costs the ASR and parser.
Speaker-side parts (``rate``, ``voice``) change the TTS: ``voice:espeak`` speaks with espeak-ng.

Run: nice -n 19 .venv/bin/python bench/speech_identity_probe.py [--stt whisper] [--quiet]
     [--conditions clean,phone] [NAME ...]
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


RATE = 16000


def speak(text: str, speaker=None) -> bytes:
    """The passenger's audio for ``text`` as 16 kHz s16le mono (what the agent's ASR gets, minus
    the VAD): Piper's joe, or what a speaker-side condition (``SpeakerSettings``) asks for."""
    from voice.audio.pcm import resample

    voice_name = speaker.voice if speaker is not None else None
    rate = speaker.rate if speaker is not None else 1.0
    if voice_name == "espeak":
        import io
        import subprocess
        import wave

        from voice.speech.espeak_tts import DEFAULT_WPM

        done = subprocess.run(["espeak-ng", "-s", str(round(DEFAULT_WPM * rate)), "--stdout", text],
                              capture_output=True, check=True, timeout=60)
        with wave.open(io.BytesIO(done.stdout)) as clip:
            return resample(clip.readframes(clip.getnframes()), clip.getframerate(), RATE)
    if voice_name == "hibari":
        from voice.speech.hibari_tts import HIBARI_RATE, synthesize

        return resample(synthesize(text, rate), HIBARI_RATE, RATE)
    from voice.speech import piper_tts

    voice = piper_tts._loaded_voice(str(piper_tts.bundled_voice_dir() / f"{piper_tts.JOE_VOICE}.onnx"))
    if rate != 1.0:
        voice = piper_tts.PacedVoice(voice, rate)
    pcm = b"".join(chunk.audio_int16_bytes for chunk in voice.synthesize(text))
    return resample(pcm, voice.config.sample_rate, RATE)


def degrade(pcm: bytes, condition, stream: str) -> bytes:
    """``pcm`` as the agent hears it under ``condition``, in the bridge's 20 ms frames."""
    silence = bytes(RATE)  # 0.5 s: the line's noise before the first word, and its delay after
    line = condition.audio_for("agent", stream=stream)
    padded = silence + pcm + silence
    frame = RATE // 50 * 2
    return b"".join(line.process(padded[i:i + frame], RATE) for i in range(0, len(padded), frame))


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
    parser.add_argument("--conditions", default="", help="audio conditions to compare (voice.conditions specs)")
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    _setup()
    from scenarios.registry import load_all, resolve_scenario, scenarios_in_domain
    from voice.bots.models.heard_identity import parse_confirmation, parse_last_name
    from voice.bots.models.scripted import _confirmation, _last_name, identity_from_prompt

    from voice.conditions import parse_conditions

    load_all()
    hear = recogniser(args.stt)
    names = args.names or list(scenarios_in_domain("eva_airline"))
    conditions = parse_conditions(args.conditions) if args.conditions else [None]
    totals = []
    for condition in conditions:
        label = condition.name if condition is not None else "as spoken"
        speaker = condition.speaker if condition is not None else None
        hits = {"first": [0, 0], "clear": [0, 0], "name": [0, 0]}
        for name in names:
            prompt = resolve_scenario(name).get_user_prompt()
            code, last = _confirmation(prompt), _last_name(prompt)
            if not code or not last:
                continue
            for kind, clearly in (("first", False), ("clear", True)):
                said = identity_from_prompt(prompt, clearly=clearly)
                audio = speak(said, speaker)
                if condition is not None:
                    audio = degrade(audio, condition, stream=f"{name}/{kind}")
                heard = hear(audio)
                got_code, got_name = parse_confirmation(heard), parse_last_name(heard)
                hits[kind][0] += got_code == code
                hits[kind][1] += 1
                hits["name"][0] += got_name == last
                hits["name"][1] += 1
                if not args.quiet or got_code != code or got_name != last:
                    mark = "ok " if got_code == code and got_name == last else "MISS"
                    print(f"{mark} {label:>24} {name.split('__')[-1]:>24} {kind:>5} {code} {last}: parsed {got_code} "
                          f"{got_name} | heard {heard!r}", flush=True)
        totals.append(f"{args.stt} {label}: code parsed exactly, first spelling {hits['first'][0]}/{hits['first'][1]}, "
                      f"careful spelling {hits['clear'][0]}/{hits['clear'][1]}; last name {hits['name'][0]}/{hits['name'][1]}")
    print("\n".join(totals))

if __name__ == "__main__":
    main()
