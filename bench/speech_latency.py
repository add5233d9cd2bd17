"""Benchmark: where the user->agent handoff time goes with the built-in bots. Prints each stage
(VAD stop, turn gap, ASR decode per model, built-in LLM decision, Piper time to first audio) and
the handoff p50/p95 and wall/speech ratio measured on one seed run end to end; what the stages do
not explain is the pipelines' and the bridge's waiting.

Run: nice -n 19 .venv/bin/python bench/speech_latency.py [--scenario eva_airline__voluntary_date_change]
About 2 minutes on 2 cores.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evasite.settings")

USER_LINES = [
    "Hi, I need to change my flight to March twenty-fifth.",
    "My confirmation number is Z, K, three, F, F, W and my last name is Rodriguez, R, O, D, R, I, G, U, E, Z.",
    "Yes, please go ahead.",
    "No, that's all. Thanks, goodbye.",
]
AGENT_FIRST_SENTENCES = [
    "Thank you for calling the airline.",
    "I can help with that.",
    "I can move you to flight S, K, seven, zero, three on March 25.",
    "All done on reservation Z, K, three, F, F, W.",
]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.0f} ms"


async def synthesize_all(lines: list[str]) -> list[tuple[bytes, int]]:
    from tests.voice.speech_helpers import synthesize
    from voice.speech.registry import make_tts

    return [await synthesize(make_tts("piper"), line) for line in lines]


async def vad_stop_delay(pcm16: bytes) -> float:
    """Audio seconds from the end of speech to Silero's QUIET (the speech is followed by silence)."""
    from pipecat.audio.vad.vad_analyzer import VADState

    from voice.speech.vad import make_vad_analyzer

    vad = make_vad_analyzer(16000)
    vad.set_sample_rate(16000)
    audio = pcm16 + bytes(16000 * 2 * 2)
    step = vad.num_frames_required() * 2
    speech_end = len(pcm16) / 32000
    was_speaking = False
    for offset in range(0, len(audio) - step, step):
        state = await vad.analyze_audio(audio[offset: offset + step])
        was_speaking = was_speaking or state == VADState.SPEAKING
        if was_speaking and state == VADState.QUIET and offset / 32000 > speech_end - 0.3:
            return (offset + step) / 32000 - speech_end
    return float("nan")


def decode_times(stt: str, clips: list[bytes]) -> tuple[float, float]:
    """(median decode seconds, real-time factor) of ``stt`` over ``clips``."""
    if stt == "pocketsphinx":
        from voice.speech.pocketsphinx_stt import decode_pcm, shared_decoder

        decode = lambda pcm: decode_pcm(shared_decoder(), pcm)  # noqa: E731
    else:
        from voice.speech.registry import WHISPER_MODELS
        from voice.speech.whisper_models import locate
        from voice.speech.whisper_stt import shared_model, transcribe_pcm

        model = shared_model(locate(WHISPER_MODELS[stt]))
        decode = lambda pcm: transcribe_pcm(model, pcm)  # noqa: E731
    decode(clips[0])  # warm-up
    times, audio = [], 0.0
    for pcm in clips:
        started = time.perf_counter()
        decode(pcm)
        times.append(time.perf_counter() - started)
        audio += len(pcm) / 32000
    return statistics.median(times), sum(times) / audio


async def tts_first_audio() -> float:
    from pipecat.frames.frames import EndFrame, TTSAudioRawFrame, TTSSpeakFrame
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker
    from pipecat.processors.frame_processor import FrameProcessor
    from pipecat.workers.runner import WorkerRunner

    from voice.speech.registry import make_tts

    firsts: list[float] = []
    for sentence in AGENT_FIRST_SENTENCES:
        seen: list[float] = []

        class First(FrameProcessor):
            async def process_frame(self, frame, direction):
                await super().process_frame(frame, direction)
                if isinstance(frame, TTSAudioRawFrame) and not seen:
                    seen.append(time.perf_counter())
                await self.push_frame(frame, direction)

        worker = PipelineWorker(Pipeline([make_tts("piper"), First()]), params=PipelineParams(audio_out_sample_rate=24000),
                                enable_rtvi=False, idle_timeout_secs=None, check_dangling_tasks=False)
        runner = WorkerRunner(handle_sigint=False, check_dangling_tasks=False)
        await runner.add_workers(worker)
        task = asyncio.create_task(runner.run())
        await asyncio.sleep(1.0)  # model loaded before timing
        started = time.perf_counter()
        await worker.queue_frames([TTSSpeakFrame(sentence), EndFrame()])
        await asyncio.wait_for(task, 60)
        firsts.append(seen[0] - started)
    return statistics.median(firsts)


def llm_decision() -> float:
    from scenarios.data_root import initial_db
    from voice.bots.models.listening import ListeningAgentPolicy

    policy = ListeningAgentPolicy(lambda: {"db": initial_db("1.1.2")})
    messages = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi"},
                {"role": "user", "content": "I need to change my flight."},
                {"role": "assistant", "content": "May I have your confirmation number and the last name on the booking?"},
                {"role": "user", "content": USER_LINES[1]}]
    policy.decide(messages[:1])
    started = time.perf_counter()
    for _ in range(100):
        policy.decide(messages)
    return (time.perf_counter() - started) / 100


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenario", default="eva_airline__voluntary_date_change")
    parser.add_argument("--stt", nargs="+", default=["whisper", "whisper-base", "pocketsphinx"])
    args = parser.parse_args()
    import django

    django.setup()
    from speech_runs import median, percentile, run_voice
    from voice.bots.processors.transcript_input import TURN_GAP_SECS
    from voice.audio.pcm import resample
    from voice.speech.vad import STOP_SECS

    clips = [resample(pcm, rate, 16000) for pcm, rate in asyncio.run(synthesize_all(USER_LINES))]
    vad = statistics.median([asyncio.run(vad_stop_delay(clip)) for clip in clips])
    print("user->agent handoff, stage by stage (2 cores, idle machine assumed)")
    print(f"  VAD stop after last speech (Silero, stop_secs {STOP_SECS}) {ms(vad)}  (audio time)")
    print(f"  turn gap after the VAD stop (collector)          {ms(TURN_GAP_SECS)}  (audio time; ASR decodes meanwhile)")
    decodes = {}
    for stt in args.stt:
        decodes[stt], rtf = decode_times(stt, clips)
        print(f"  ASR decode of a user turn, {stt:<13}        {ms(decodes[stt])}  (median, RTF {rtf:.2f})")
    llm = llm_decision()
    tts = asyncio.run(tts_first_audio())
    print(f"  built-in LLM decision (listening)                {ms(llm)}")
    print(f"  Piper time to first audio of an agent sentence   {ms(tts)}  (median)")
    stages = vad + max(TURN_GAP_SECS, decodes.get("whisper", 0.0)) + llm + tts
    run = run_voice([args.scenario], concurrency=1)
    latencies = run.latencies_ms()
    metrics = run.metrics[0]
    speech = run.speech_s.get(metrics["scenario_name"]) or float("nan")
    print(f"end to end on {args.scenario} (whisper tiny.en, paced audio, one call):")
    print(f"  handoff p50 {median(latencies):.0f} ms, p95 {percentile(latencies, 0.95):.0f} ms over {len(latencies)} turns; "
          f"passed {run.passed}/1")
    print(f"  wall {metrics['scenario_duration']:.1f} s for {speech:.1f} s of speech: ratio {metrics['scenario_duration'] / speech:.2f}")
    print(f"  stages explain {stages * 1000:.0f} ms (VAD stop + max(gap, decode) + LLM + TTS first audio); "
          f"pipeline and bridge waits (relay jitter buffer, pacing, resampling) {median(latencies) - stages * 1000:.0f} ms")


if __name__ == "__main__":
    main()
