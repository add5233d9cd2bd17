"""Benchmark: Whisper's short windows against its 30 s window, on the same audio.

Every eva_airline passenger's identity answer (first and careful spelling) is spoken by Piper once;
then each clip is recognised twice, by ``transcribe_pcm`` (windows just longer than the utterance,
falling back to the full window when a decode is not trusted) and by the 30 s window alone
(faster-whisper as it comes), and parsed by the listening agent's parser. Prints the CPU seconds
each path spent recognising, how often the short path fell back, and the share of codes and last
names each parsed exactly. The clips are the same for both, so the accuracy figures are paired
(Piper's synthesis varies from run to run; the comparison within a run does not).

Run: nice -n 19 .venv/bin/python bench/whisper_window.py [--stt whisper] [NAME ...]
About 4 minutes on 2 cores for the 50 scenarios.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speech_identity_probe import _setup, speak  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stt", default="whisper", help="whisper (tiny.en) or whisper-base")
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    _setup()
    import numpy as np

    from scenarios.registry import load_all, resolve_scenario, scenarios_in_domain
    from voice.bots.models.heard_identity import parse_confirmation, parse_last_name
    from voice.bots.models.scripted import _confirmation, _last_name, identity_from_prompt
    from voice.speech import whisper_stt
    from voice.speech.registry import WHISPER_MODELS
    from voice.speech.whisper_models import locate

    load_all()
    model = whisper_stt.shared_model(locate(WHISPER_MODELS[args.stt]))
    clips = []
    for name in args.names or list(scenarios_in_domain("eva_airline")):
        prompt = resolve_scenario(name).get_user_prompt()
        code, last = _confirmation(prompt), _last_name(prompt)
        if code and last:
            clips += [(name, code, last, speak(identity_from_prompt(prompt, clearly=clearly))) for clearly in (False, True)]
    whisper_stt.transcribe_pcm(model, clips[0][3])  # warm up: the first decode allocates

    fallbacks = 0
    full_window = whisper_stt._transcribe_full_window

    def counted_full(*call):
        nonlocal fallbacks
        fallbacks += 1
        return full_window(*call)

    paths = {
        "short windows": lambda pcm: whisper_stt.transcribe_pcm(model, pcm),
        "30 s window": lambda pcm: full_window(model, np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768.0),
    }
    whisper_stt._transcribe_full_window = counted_full
    speech_secs = sum(len(pcm) for *_, pcm in clips) / 2 / 16000
    print(f"{len(clips)} clips, {speech_secs:.0f} s of speech, {args.stt}")
    for label, hear in paths.items():
        fallbacks, codes, names, cpu = 0, 0, 0, 0.0
        for name, code, last, pcm in clips:
            started = time.process_time()  # CTranslate2's threads included
            heard = hear(pcm)
            cpu += time.process_time() - started
            codes += parse_confirmation(heard) == code
            names += parse_last_name(heard) == last
        print(f"{label:>14}: {cpu:6.1f} CPU s ({cpu / speech_secs:.3f} per s of speech), fell back {fallbacks}x; "
              f"codes {codes}/{len(clips)}, last names {names}/{len(clips)}", flush=True)


if __name__ == "__main__":
    main()
