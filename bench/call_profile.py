"""Benchmark: where one voice call's CPU goes. Runs real voice scenarios in this process, one
after the other (listening agent, scripted passenger, Piper + Whisper tiny.en, Silero VAD, the
in-process bridge: what ``run_eval --modality voice`` runs per attempt), under a sampling
profiler that sees every thread, and prints CPU seconds and cores per call (CPU s / wall s), the
CPU per category (Whisper, Piper, VAD, resampling, pipecat, the bridge, ...), the top functions
by own CPU, the threads, and counters from light probes (resampling calls, Whisper segments and
their silence, Silero windows fed digital silence, Piper utterances, pipecat frame pushes).

How it measures (no extra package): every thread's CPU comes from its own CPU clock (Linux
per-thread clocks over ``/proc/self/task``, ns resolution), read every ``4 x --interval``. Where
a Python thread spent it comes from stack samples: those of the main thread (the event loop) by
a wall-clock signal every ``--interval`` whose handler runs on that thread at the bytecode it is
executing, those of the executor threads by the sampler thread (an in-process sampler only gets
the GIL when the running thread lets go of it, i.e. mostly when the loop goes idle, so it would
see the loop's short bursts of work as ``select``). A thread's CPU is spread over the samples
that caught it working (in ``select``, a lock or an empty queue it works for nobody). The
innermost frame is the "own" function; the innermost frame from a known module decides the
category (numpy, onnxruntime and asyncio defer to their caller; an executor thread's plumbing
belongs to the job it runs). Threads with no Python stack (CTranslate2's and onnxruntime's
workers) are charged to the engine a Python thread was waiting on while they burnt CPU, so
native work is not lost as it is with cProfile, which moreover sees one thread only. Models are
loaded and a short call warms the process up before the profile (reported apart).

Run: nice -n 19 .venv/bin/python bench/call_profile.py [--scenarios NAME ...] [--interval 0.005]
     [--duration SECONDS] [--top 15] [--no-probes] [--plain] [--warmup 6] [--external-agent]
``--external-agent`` serves the agent from a ``run_bot`` process, as an agent under test reached
with ``--agent-url`` would be, so the profile holds the harness alone (passenger and bridge).
About 1-1.5 minutes per scenario on an idle 2-core machine (one call is paced in real time).
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import resource
import signal
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

DEFAULT_SCENARIOS = ["eva_airline__voluntary_date_change"]

WHISPER = "Whisper (faster_whisper, ctranslate2)"
PIPER = "Piper (piper, onnxruntime)"
VAD = "VAD (Silero, pipecat VADProcessor)"
RESAMPLE = "resampling (soxr, pcm.resample)"
PIPECAT = "pipecat frame handling"
PIPECAT_METRICS = "pipecat metrics (enable_metrics)"
BOTS = "our bot processors/models (voice/bots)"
BRIDGE = "bridge engine (voice/bridge, listen)"
PROTOCOL = "protocol/channels (voice/protocol, websockets)"
CONDITIONS = "conditions (voice/conditions)"
LOOP = "asyncio event loop itself"
THREADS = "thread-pool plumbing (threading, futures)"
LOGGING = "logging (loguru, logging)"
SCORING = "scoring/artifacts (scoring, scenarios)"
NATIVE = "native threads, owner unknown"
UNSEEN = "Python threads never caught working"
OTHER = "other"
PROBES = "bench probes (excluded)"
CATEGORY_ORDER = [WHISPER, PIPER, VAD, RESAMPLE, PIPECAT, PIPECAT_METRICS, BOTS, BRIDGE, PROTOCOL, CONDITIONS,
                  LOOP, THREADS, LOGGING, SCORING, NATIVE, UNSEEN, OTHER, PROBES]
OWNERS = (WHISPER, PIPER, VAD)
"""Engines whose native worker threads burn CPU for a Python caller that waits on them."""

NEUTRAL = ("pipecat/audio/utils.py", "pipecat/audio/volume.py")
"""pipecat's audio helpers: their cost is their caller's (the VAD's volume, the TTS's metrics)."""
DECISIVE: list[tuple[str, str]] = [
    ("faster_whisper/", WHISPER), ("ctranslate2/", WHISPER), ("voice/speech/whisper", WHISPER),
    ("piper/", PIPER), ("pipecat/services/piper/", PIPER), ("voice/speech/piper_tts", PIPER),
    ("pipecat/audio/vad/", VAD), ("pipecat/processors/audio/vad_processor", VAD), ("voice/speech/vad", VAD),
    ("soxr/", RESAMPLE), ("pipecat/audio/resamplers/", RESAMPLE),
    ("voice/conditions/", CONDITIONS),
    ("voice/protocol/", PROTOCOL), ("websockets/", PROTOCOL),
    ("voice/bridge/", BRIDGE), ("voice/listen/", BRIDGE),
    ("voice/bots/", BOTS),
    ("pipecat/processors/metrics/", PIPECAT_METRICS), ("pipecat/metrics/", PIPECAT_METRICS),
    ("pipecat/", PIPECAT),
    ("loguru/", LOGGING), ("logging/", LOGGING),
    ("scoring/", SCORING), ("scenarios/", SCORING),
    ("bench/", PROBES),
]
"""Path prefix (relative to site-packages, the stdlib or the repository) -> category. The
innermost frame that matches one decides; anything else (numpy, onnxruntime, asyncio, ...)
defers to its caller."""
RESAMPLING_HELPERS = {"resample", "StreamResampler.resample"}
"""voice/audio/pcm.py functions that resample; its other helpers (rms, ...) belong to the caller."""
FALLBACK: list[tuple[str, str]] = [("asyncio/", LOOP), ("selectors", LOOP), ("threading", THREADS),
                                   ("concurrent/", THREADS), ("queue.py", THREADS)]
"""Category of a stack with no decisive frame, by its innermost frame."""
IDLE_FUNCTIONS: dict[str, set[str]] = {
    "selectors.py": {"EpollSelector.select", "PollSelector.select", "SelectSelector.select"},
    "threading.py": {"Condition.wait", "Event.wait", "Thread.join", "Thread._wait_for_tstate_lock",
                     "Semaphore.acquire", "Barrier.wait"},
    "concurrent/futures/thread.py": {"_worker"},  # innermost only while waiting for a work item
    "queue.py": {"Queue.get"},
}
"""Innermost frames of a blocked thread: such a sample shows no work (the thread sleeps)."""
MAX_DEPTH = 120
PROBE_FRAMES = ("Probes.", "_silent_share", "ThreadSampler.", "_Classifier.")
"""The bench's own frames that are overhead (wrappers, the signal handler), not its driver."""


def _thread_cpu(tid: int) -> float | None:
    """CPU seconds of thread ``tid`` of this process (Linux per-thread CPU clock), or None if gone."""
    try:
        return time.clock_gettime((~tid << 3) | 6)
    except OSError:
        return None


def _short_path(filename: str) -> str:
    path = filename.replace(os.sep, "/")
    for marker in ("site-packages/", "/python3.11/", f"{REPO.as_posix()}/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


@dataclass(frozen=True)
class _CodeInfo:
    label: str
    decisive: str | None
    fallback: str
    idle: bool
    """A function that, innermost, means the thread is blocked (select, a lock, an empty queue)."""


@dataclass(frozen=True)
class StackSample:
    """One thread's stack at one sample, reduced to what the report needs."""

    category: str
    own: str
    caller: str
    idle: bool


class _Classifier:
    """Category, own function and caller of a stack (results cached per code object)."""

    def __init__(self) -> None:
        self._cache: dict[CodeType, _CodeInfo] = {}

    def info(self, code: CodeType) -> _CodeInfo:
        found = self._cache.get(code)
        if found is None:
            path = _short_path(code.co_filename)
            name = getattr(code, "co_qualname", code.co_name)
            decisive = next((category for prefix, category in DECISIVE if path.startswith(prefix)), None)
            if path.startswith(NEUTRAL):
                decisive = None
            if path == "voice/audio/pcm.py" and name in RESAMPLING_HELPERS:
                decisive = RESAMPLE
            if path.startswith("bench/") and not name.startswith(PROBE_FRAMES):
                decisive = None  # the bench's driver frames sit under every stack of the main thread
            fallback = next((category for marker, category in FALLBACK if marker in path), OTHER)
            idle = name in IDLE_FUNCTIONS.get(path, ())
            found = self._cache[code] = _CodeInfo(f"{path}:{code.co_firstlineno} {name}", decisive, fallback, idle)
        return found

    def classify(self, frame: FrameType) -> StackSample:
        own = self.info(frame.f_code)
        caller = self.info(frame.f_back.f_code).label if frame.f_back is not None else ""
        current: FrameType | None = frame
        for _ in range(MAX_DEPTH):
            if current is None:
                break
            code = current.f_code
            category = self.info(code).decisive
            if category is None and code.co_name == "run" and code.co_filename.endswith("futures/thread.py"):
                category = self._job_category(current)
            if category is not None:
                return StackSample(category, own.label, caller, own.idle)
            current = current.f_back
        return StackSample(own.fallback, own.label, caller, own.idle)

    def _job_category(self, work_item_frame: FrameType) -> str | None:
        """The category of the job an executor thread runs (``_WorkItem.run``'s ``fn``): the
        hop back to the event loop (future callbacks, the self-pipe write) is that job's cost."""
        job = getattr(work_item_frame.f_locals.get("self"), "fn", None)
        if isinstance(job, functools.partial):  # asyncio.to_thread: partial(context.run, func, ...)
            job = job.args[0] if job.args and not hasattr(job.func, "__code__") else job.func
        job = getattr(job, "__func__", job)
        code = getattr(job, "__code__", None)
        return self.info(code).decisive if isinstance(code, CodeType) else None


@dataclass
class Profile:
    """What the sampler accumulated. Each Python thread's measured CPU is spread over the stacks
    it was seen *working* in (idle samples get none); each native thread's CPU goes to the
    engine it ran alongside."""

    cpu_by_thread: Counter = field(default_factory=Counter)
    thread_names: dict[int, str] = field(default_factory=dict)
    python_tids: set[int] = field(default_factory=set)
    working: dict[int, Counter] = field(default_factory=lambda: defaultdict(Counter))
    """Python thread -> StackSample -> samples in which it was not idle."""
    native_owners: dict[int, Counter] = field(default_factory=lambda: defaultdict(Counter))
    """Native thread -> owner engine running meanwhile ("" = none) -> CPU seconds."""
    native_work: Counter = field(default_factory=Counter)
    """(engine, function its Python thread was in) -> native CPU seconds meanwhile."""
    samples: int = 0
    """Thread-sampler passes."""
    main_samples: int = 0
    """Signal samples of the main thread."""
    sampler_cpu: float = 0.0
    handler_cpu: float = 0.0
    """CPU the signal handler took from the main thread (charged to the probes, not the call)."""
    main_tid: int = 0
    process_cpu: float = 0.0
    """The process's CPU (getrusage) over the sampled window, every thread included."""

    def native_tids(self) -> list[int]:
        return [tid for tid in self.cpu_by_thread if tid not in self.python_tids]

    def native_owner(self, tid: int) -> str:
        """The engine a native thread works for: the one it burnt the most CPU alongside."""
        engines = {owner: cpu for owner, cpu in self.native_owners[tid].items() if owner}
        return max(engines, key=engines.__getitem__) if engines else NATIVE

    def stacks(self) -> Counter:
        """CPU seconds per StackSample over all Python threads."""
        spread: Counter = Counter()
        for tid, seen in self.working.items():
            count = sum(seen.values())
            cpu = self.cpu_by_thread[tid] - (self.handler_cpu if tid == self.main_tid else 0.0)
            for stack, samples in seen.items():
                spread[stack] += cpu * samples / count
        return spread

    def unseen(self) -> dict[int, float]:
        """Python threads that used CPU but were never caught working (bursts shorter than a sample)."""
        return {tid: cpu for tid, cpu in self.cpu_by_thread.items()
                if tid in self.python_tids and not self.working.get(tid)}

    def categories(self) -> Counter:
        total: Counter = Counter()
        for stack, cpu in self.stacks().items():
            total[stack.category] += cpu
        for tid in self.native_tids():
            total[self.native_owner(tid)] += self.cpu_by_thread[tid]
        total[UNSEEN] += sum(self.unseen().values())
        total[PROBES] += self.handler_cpu
        return total

    def counted(self) -> float:
        """CPU seconds of the calls' threads, the bench's probes left out."""
        return sum(cpu for category, cpu in self.categories().items() if category != PROBES)


class ThreadSampler:
    """Samples the process while it runs (a context manager; enter it on the main thread).

    Why two samplers: a Python thread can only look at other threads' stacks when it holds the
    GIL, and it gets the GIL when the running thread lets go of it, i.e. mostly when that
    thread goes idle; so the event loop's short bursts of work would be seen as ``select``.
    The main thread (the event loop) is therefore sampled by a wall-clock signal, whose Python
    handler runs on the main thread itself, at the bytecode it is executing (or in ``select``
    when idle). A daemon thread reads every thread's CPU clock every ``4 x interval`` and the
    stacks of the other Python threads (executor threads with one job each: Silero, Whisper,
    Piper), whose mix of functions matters less than their CPU, which the clocks measure."""

    THREAD_PERIODS = 4

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.profile = Profile()
        self._classifier = _Classifier()
        self._stop = threading.Event()
        self._last: dict[int, float] = {}
        self._initial: set[int] = set()
        self._main = threading.get_native_id()
        self._process_cpu = 0.0
        self._previous_handler: Any = None
        self._thread = threading.Thread(target=self._run, name="call-profile-sampler", daemon=True)

    def __enter__(self) -> "ThreadSampler":
        for tid in self._tids():
            cpu = _thread_cpu(tid)
            if cpu is not None:
                self._last[tid] = cpu
                self._initial.add(tid)
        self._process_cpu = _process_cpu()
        self.profile.python_tids.add(self._main)
        self.profile.main_tid = self._main
        self.profile.thread_names[self._main] = threading.current_thread().name
        self._previous_handler = signal.signal(signal.SIGALRM, self._on_alarm)
        signal.setitimer(signal.ITIMER_REAL, self.interval, self.interval)
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, self._previous_handler)
        self._stop.set()
        self._thread.join()
        self.profile.process_cpu = _process_cpu() - self._process_cpu

    def _on_alarm(self, _signum: int, frame: FrameType | None) -> None:
        started = time.thread_time()
        if frame is not None:
            self.profile.main_samples += 1
            stack = self._classifier.classify(frame)
            if not stack.idle:
                self.profile.working[self._main][stack] += 1
        self.profile.handler_cpu += time.thread_time() - started

    @staticmethod
    def _tids() -> list[int]:
        return [int(name) for name in os.listdir("/proc/self/task")]

    def _run(self) -> None:
        me = threading.get_native_id()
        started = _thread_cpu(me) or 0.0
        while not self._stop.wait(self.interval * self.THREAD_PERIODS):
            self._sample(me)
        self._sample(me)
        self.profile.sampler_cpu = (_thread_cpu(me) or 0.0) - started

    def _sample(self, me: int) -> None:
        profile = self.profile
        profile.samples += 1
        by_ident = {thread.ident: thread for thread in threading.enumerate()}
        stacks: dict[int, StackSample] = {}
        frames = sys._current_frames()
        for ident, frame in frames.items():
            thread = by_ident.get(ident)
            if thread is None or thread.native_id in (None, me, self._main):
                continue
            stack = stacks[thread.native_id] = self._classifier.classify(frame)
            profile.thread_names[thread.native_id] = thread.name
            profile.python_tids.add(thread.native_id)
            if not stack.idle:
                profile.working[thread.native_id][stack] += 1
        del frames  # no reference to another thread's frames outlives the sample
        engine_calls = [stack for stack in stacks.values() if not stack.idle and stack.category in OWNERS]
        running = {stack.category for stack in engine_calls}
        for tid in self._tids():
            if tid == me:
                continue
            cpu = _thread_cpu(tid)
            if cpu is None:
                continue
            # A thread born after the baseline has spent all its CPU inside the window.
            delta = cpu - self._last.get(tid, 0.0 if tid not in self._initial else cpu)
            self._last[tid] = cpu
            if delta <= 0:
                continue
            profile.cpu_by_thread[tid] += delta
            if tid in stacks or tid == self._main:
                continue
            if tid not in profile.thread_names:
                profile.thread_names[tid] = _comm(tid)
            owners = profile.native_owners[tid]
            for owner in running or {""}:
                owners[owner] += delta / max(1, len(running))
            for stack in engine_calls:
                profile.native_work[(stack.category, stack.own)] += delta / len(engine_calls)


def _comm(tid: int) -> str:
    try:
        return Path(f"/proc/self/task/{tid}/comm").read_text().strip()
    except OSError:
        return "?"


# --- probes: counters that show *why* (wrappers installed in this process only) ----------------

def _silent_share(pcm: bytes, rate: int, threshold: float) -> float:
    """Share of 20 ms windows of ``pcm`` whose RMS is under ``threshold`` (harness.md §6.5)."""
    import numpy as np

    values = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype="<i2").astype(np.float64)
    window = rate // 50
    count = values.size // window
    if count == 0:
        return 1.0
    energy = np.sqrt((values[: count * window].reshape(count, window) ** 2).mean(axis=1))
    return float((energy < threshold).mean())


@dataclass
class Probes:
    """Counters filled by the wrappers ``install`` puts around the hot calls."""

    resample: dict[str, list[float]] = field(default_factory=lambda: defaultdict(lambda: [0, 0.0, 0.0]))
    """"kind from->to quality" -> [calls, seconds of input audio, CPU s of the calling thread]."""
    whisper: list[dict[str, Any]] = field(default_factory=list)
    fallback_temperatures: Counter = field(default_factory=Counter)
    whisper_encoded_s: float = 0.0
    silero: list[float] = field(default_factory=lambda: [0, 0, 0.0])
    """[windows, windows of digital silence (all zeros), CPU s in the calling thread]."""
    piper: list[tuple[str, float]] = field(default_factory=list)
    bot_audio: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    """role -> [16 ms chunks the bridge fed the bot, chunks of digital silence]."""
    pushes: Counter = field(default_factory=Counter)

    def install(self) -> None:
        self._wrap_soxr()
        self._wrap_whisper()
        self._wrap_silero()
        self._wrap_piper()
        self._wrap_bots()

    def _wrap_soxr(self) -> None:
        import soxr

        one_shot = soxr.resample

        def resample(x: Any, in_rate: float, out_rate: float, quality: str = "HQ") -> Any:
            started = time.thread_time()
            out = one_shot(x, in_rate, out_rate, quality)
            entry = self.resample[f"one-shot {in_rate:g}->{out_rate:g} {quality}"]
            entry[0] += 1
            entry[1] += len(x) / in_rate
            entry[2] += time.thread_time() - started
            return out

        soxr.resample = resample
        stream_init, stream_chunk = soxr.ResampleStream.__init__, soxr.ResampleStream.resample_chunk

        def init(stream: Any, in_rate: float, out_rate: float, num_channels: int, dtype: str = "float32",
                 quality: str = "HQ") -> None:
            stream_init(stream, in_rate, out_rate, num_channels, dtype, quality)
            stream._bench_key = (f"stream {in_rate:g}->{out_rate:g} {quality}", in_rate)

        def chunk(stream: Any, x: Any, last: bool = False) -> Any:
            started = time.thread_time()
            out = stream_chunk(stream, x, last)
            key, rate = getattr(stream, "_bench_key", ("stream ?", 1))
            entry = self.resample[key]
            entry[0] += 1
            entry[1] += len(x) / rate
            entry[2] += time.thread_time() - started
            return out

        soxr.ResampleStream.__init__, soxr.ResampleStream.resample_chunk = init, chunk

    def _wrap_whisper(self) -> None:
        from faster_whisper import WhisperModel

        from voice.speech import whisper_stt

        transcribe = whisper_stt.transcribe_pcm

        def transcribe_pcm(model: Any, pcm: bytes) -> str:
            started = time.perf_counter()
            text = transcribe(model, pcm)
            self.whisper.append({"seconds": len(pcm) / 2 / whisper_stt.WHISPER_RATE, "text": text,
                                 "wall": time.perf_counter() - started,
                                 "silent": _silent_share(pcm, whisper_stt.WHISPER_RATE, 200.0)})
            return text

        whisper_stt.transcribe_pcm = transcribe_pcm
        fallback = WhisperModel.generate_with_fallback

        def generate_with_fallback(model: Any, *args: Any, **kwargs: Any) -> Any:
            result = fallback(model, *args, **kwargs)
            self.fallback_temperatures[round(float(result[2]), 1)] += 1
            return result

        WhisperModel.generate_with_fallback = generate_with_fallback
        import faster_whisper.transcribe as fw_transcribe

        storage = fw_transcribe.get_ctranslate2_storage

        def encoder_input(features: Any) -> Any:
            self.whisper_encoded_s += features.shape[-1] / 100  # 10 ms feature frames
            return storage(features)

        fw_transcribe.get_ctranslate2_storage = encoder_input

    def _wrap_silero(self) -> None:
        from pipecat.audio.vad.silero import SileroOnnxModel

        call = SileroOnnxModel.__call__

        def window(model: Any, x: Any, sr: int) -> Any:
            started = time.thread_time()
            out = call(model, x, sr)
            self.silero[0] += 1
            self.silero[1] += 0 if x.any() else 1
            self.silero[2] += time.thread_time() - started
            return out

        SileroOnnxModel.__call__ = window

    def _wrap_piper(self) -> None:
        from piper.voice import PiperVoice

        synthesize = PiperVoice.synthesize

        def speak(voice: Any, text: str, syn_config: Any = None, **kwargs: Any) -> Any:
            seconds = 0.0
            for chunk in synthesize(voice, text, syn_config, **kwargs):
                seconds += len(chunk.audio_int16_bytes) / 2 / chunk.sample_rate
                yield chunk
            self.piper.append((text, seconds))

        PiperVoice.synthesize = speak

    def _wrap_bots(self) -> None:
        from pipecat.processors.frame_processor import FrameProcessor

        from voice.bots.pipeline import PipecatBrain

        handle_audio = PipecatBrain.handle_audio

        async def fed(brain: PipecatBrain, chunk: Any) -> None:
            entry = self.bot_audio[brain.role]
            entry[0] += 1
            entry[1] += chunk.pcm == bytes(len(chunk.pcm))
            await handle_audio(brain, chunk)

        PipecatBrain.handle_audio = fed
        push = FrameProcessor.push_frame

        async def push_frame(processor: Any, frame: Any, *args: Any, **kwargs: Any) -> None:
            self.pushes[type(frame).__name__] += 1
            await push(processor, frame, *args, **kwargs)

        FrameProcessor.push_frame = push_frame


# --- running the calls -------------------------------------------------------------------------

def _setup_django(tmp: Path) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evasite.settings")
    os.environ.setdefault("EVASITE_SQLITE_PATH", str(tmp / "db.sqlite3"))  # never the developer's database
    import django

    django.setup()


def _agent_url(stack: contextlib.ExitStack) -> str:
    """The built-in agent served by ``run_bot`` in a process of its own, until ``stack`` closes."""
    sys.path.insert(0, str(REPO / "bench"))
    from external_agent_cost import served_agent

    _pid, url = stack.enter_context(served_agent(dict(os.environ)))
    return url


def _load_models() -> None:
    """What a process loads once for all its calls (kept out of the per-call figures)."""
    from voice.speech import piper_tts, whisper_stt
    from voice.speech.whisper_models import locate

    whisper_stt.shared_model(locate(whisper_stt.DEFAULT_MODEL))
    piper_tts._loaded_voice(str(piper_tts.bundled_voice_dir() / f"{piper_tts.JOE_VOICE}.onnx"))
    import pipecat.audio.vad.silero  # noqa: F401  (imports only: each pipeline builds its own session)


@dataclass
class CallResult:
    scenario: str
    wall_s: float
    cpu_s: float
    passed: bool | None
    stop_reason: str
    turns: int


def _process_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _run_call(name: str, out: Path, duration: float | None, agent_url: str | None = None) -> CallResult:
    from scoring.runs.attempt import run_attempt
    from scoring.runs.executors.base import QueueItem
    from scoring.runs.executors.plan import plan_attempt
    from scoring.runs.options import options_from_mapping
    from scoring.runs.progress import NullProgress

    options = options_from_mapping({"modality": "voice", "scenarios": [name], "duration": duration,
                                    "output_dir": str(out), "agent_url": agent_url})
    plan = plan_attempt(options, QueueItem(0, name, 1, 1), run_id=0, session_dir=out, events=NullProgress())
    cpu, started = _process_cpu(), time.perf_counter()
    outcome = await run_attempt(plan.scenario, plan.scenario_dir, plan.settings, auto_retry_count=0,
                                auto_retry_reasons=[], trial=None)
    wall, cpu = time.perf_counter() - started, _process_cpu() - cpu
    metrics = outcome.metrics or {}
    stop = str(metrics.get("stop_reason") or (f"error: {outcome.error}" if outcome.error else "?"))
    return CallResult(name, wall, cpu, metrics.get("is_successful"), stop, int(metrics.get("total_turns") or 0))


# --- report ------------------------------------------------------------------------------------

def _print_calls(calls: list[CallResult], excluded_cpu: float) -> tuple[float, float]:
    print(f"{'scenario':<44} {'wall s':>7} {'cpu s':>7} {'cores':>6} {'turns':>5} {'pass':>5}  stop")
    for call in calls:
        passed = {True: "yes", False: "no"}.get(call.passed, "?")  # type: ignore[arg-type]
        print(f"{call.scenario:<44} {call.wall_s:>7.1f} {call.cpu_s:>7.1f} {call.cpu_s / call.wall_s:>6.3f}"
              f" {call.turns:>5} {passed:>5}  {call.stop_reason}")
    wall = sum(call.wall_s for call in calls)
    cpu = sum(call.cpu_s for call in calls) - excluded_cpu
    print(f"per call (any profiler and probes taken out): {cpu / len(calls):.1f} CPU s over {wall / len(calls):.1f} s"
          f" wall = {cpu / wall:.3f} cores per call")
    return cpu, wall


def _print_categories(profile: Profile, calls: int, wall: float) -> None:
    categories = profile.categories()
    counted = profile.counted()
    print(f"\n{'category':<48} {'cpu s/call':>10} {'share':>6} {'cores':>6}")
    for category in CATEGORY_ORDER:
        cpu = categories.get(category, 0.0)
        if cpu <= 0:
            continue
        share = f"{100 * cpu / counted:5.1f}%" if category != PROBES else "  -"
        print(f"{category:<48} {cpu / calls:>10.2f} {share:>6} {cpu / wall:>6.3f}")
    total = "total (sampled threads, probes left out)"
    print(f"{total:<48} {counted / calls:>10.2f} {'100%':>6} {counted / wall:>6.3f}")


def _print_functions(profile: Profile, top: int, calls: int) -> None:
    counted = profile.counted()
    own: Counter = Counter()
    category_of: dict[str, Counter] = defaultdict(Counter)
    callers: dict[str, Counter] = defaultdict(Counter)
    for stack, cpu in profile.stacks().items():
        own[stack.own] += cpu
        category_of[stack.own][stack.category] += cpu
        callers[stack.own][stack.caller] += cpu
    print(f"\ntop {top} functions by own CPU (Python threads; C code counts for the Python function that called it;"
          " native worker threads are in the thread list)")
    print(f"{'cpu s/call':>10} {'share':>6}  {'category':<14} function  <- main caller")
    for label, cpu in own.most_common(top):
        category = category_of[label].most_common(1)[0][0]
        caller = callers[label].most_common(1)[0][0]
        print(f"{cpu / calls:>10.2f} {100 * cpu / counted:>5.1f}%  {category.split(' (')[0][:14]:<14} {label}"
              f"  <- {caller}")
    print("\ntop 4 functions per category (checks the mapping)")
    by_category: dict[str, Counter] = defaultdict(Counter)
    for label, categories in category_of.items():
        for category, cpu in categories.items():
            by_category[category][label] += cpu
    for category in CATEGORY_ORDER:
        if by_category.get(category):
            names = "; ".join(f"{label} {cpu / calls:.2f}" for label, cpu in by_category[category].most_common(4))
            print(f"  {category.split(' (')[0]}: {names}")


def _print_threads(profile: Profile, calls: int) -> None:
    print("\nthreads over 0.01 CPU s per call (native = no Python stack: charged to the engine it ran alongside)")
    unseen = profile.unseen()
    for tid, cpu in profile.cpu_by_thread.most_common():
        if cpu / calls < 0.01:
            continue
        if tid in profile.python_tids:
            working = sum(profile.working[tid].values())
            samples = profile.main_samples if tid == threading.get_native_id() else profile.samples
            kind = f"python, working in {100 * working / max(1, samples):.1f}% of samples"
            if tid in unseen:
                kind += " (never caught working: not attributed)"
        else:
            alone = profile.native_owners[tid].get("", 0.0)
            kind = (f"native -> {profile.native_owner(tid).split(' (')[0]},"
                    f" {100 * alone / cpu:.0f}% of it while no engine call was running")
        print(f"  {profile.thread_names.get(tid, '?'):<24} {cpu / calls:>6.2f}  {kind}")
    if profile.native_work:
        print("native threads' CPU by the engine function a Python thread was waiting in meanwhile (cpu s per call)")
        for (category, own), cpu in profile.native_work.most_common(6):
            print(f"  {cpu / calls:>6.2f}  {category.split(' (')[0]}: {own}")


def _print_probes(probes: Probes, categories: Counter, calls: int, wall: float) -> None:
    print("\nprobes (per call)")
    for key, (count, seconds, cpu) in sorted(probes.resample.items(), key=lambda item: -item[1][2]):
        print(f"  resample {key:<30} {count / calls:>8.0f} calls  {seconds / calls:>7.1f} s of audio"
              f"  {cpu / calls:>6.2f} CPU s")
    if probes.whisper:
        audio = sum(item["seconds"] for item in probes.whisper)
        silent = sum(item["seconds"] * item["silent"] for item in probes.whisper)
        empty = sum(1 for item in probes.whisper if not item["text"].strip())
        mostly_silent = sum(1 for item in probes.whisper if item["silent"] > 0.8)
        print(f"  whisper: {len(probes.whisper) / calls:.1f} segments decoded, {audio / calls:.1f} s of audio, "
              f"{100 * silent / audio:.0f}% of it silence (20 ms windows under RMS 200); "
              f"{empty / calls:.1f} gave no text, {mostly_silent / calls:.1f} were >80% silence; "
              f"decode wall {sum(i['wall'] for i in probes.whisper) / calls:.1f} s; "
              f"median segment {sorted(i['seconds'] for i in probes.whisper)[len(probes.whisper) // 2]:.1f} s")
        windows = probes.whisper_encoded_s
        print(f"  whisper: {categories.get(WHISPER, 0.0) / len(probes.whisper):.2f} CPU s per segment; the encoder "
              f"saw {windows / calls:.0f} s of windows for {audio / calls:.1f} s of audio "
              f"({100 * max(0.0, 1 - audio / windows) if windows else 0:.0f}% of it padding)")
        temps = ", ".join(f"T={t:g}: {n}" for t, n in sorted(probes.fallback_temperatures.items()))
        print(f"  whisper windows by the temperature that was kept (T>0: fallback re-decodes): {temps}")
    windows, zeros, cpu = probes.silero
    if windows:
        print(f"  silero: {windows / calls:.0f} windows of 32 ms ({windows * 0.032 / wall:.1f} s of audio per s "
              f"of call, both bots), {100 * zeros / windows:.0f}% of them all zeros; "
              f"{cpu / calls:.2f} CPU s in the model calls themselves")
    for role, (chunks, silent) in sorted(probes.bot_audio.items()):
        print(f"  {role} bot fed {chunks / calls:.0f} chunks by the bridge ({chunks / wall:.1f}/s), "
              f"{100 * silent / max(1, chunks):.0f}% of them digital silence")
    if probes.piper:
        texts = [text for text, _ in probes.piper]
        print(f"  piper: {len(texts) / calls:.1f} syntheses, {len(set(texts)) / calls:.1f} distinct texts, "
              f"{sum(s for _, s in probes.piper) / calls:.1f} s of speech")
    if probes.pushes:
        total = sum(probes.pushes.values())
        top = ", ".join(f"{name} {count / wall:.0f}/s" for name, count in probes.pushes.most_common(5))
        print(f"  pipecat push_frame: {total / wall:.0f} per second of call ({top})")


def _report(calls: list[CallResult], profile: Profile, probes: Probes | None, top: int) -> None:
    probes_cpu = profile.categories().get(PROBES, 0.0)  # the signal handler's CPU included
    print(f"profiler: {profile.main_samples} main-thread and {profile.samples} all-thread samples; sampler thread "
          f"{profile.sampler_cpu:.2f} CPU s, probes {probes_cpu:.2f} CPU s (both taken out below); the threads' "
          f"clocks hold {sum(profile.cpu_by_thread.values()):.1f} of the process's "
          f"{profile.process_cpu - profile.sampler_cpu:.1f} CPU s (the rest: threads that ended between two samples)\n")
    _, wall = _print_calls(calls, profile.sampler_cpu + probes_cpu)
    _print_categories(profile, len(calls), wall)
    _print_functions(profile, top, len(calls))
    _print_threads(profile, len(calls))
    if probes is not None:
        _print_probes(probes, profile.categories(), len(calls), wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", nargs="+", default=DEFAULT_SCENARIOS)
    parser.add_argument("--interval", type=float, default=0.005,
                        help="sampling period of the main thread in seconds (other threads: 4 times it)")
    parser.add_argument("--duration", type=float, default=None, help="cap each call (seconds)")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--no-probes", action="store_true", help="profile without the counting wrappers")
    parser.add_argument("--plain", action="store_true",
                        help="no profiler and no probes: CPU and cores per call as run_eval spends them")
    parser.add_argument("--external-agent", action="store_true",
                        help="serve the agent from its own process (run_bot, as --agent-url): profile the harness only")
    parser.add_argument("--warmup", type=float, default=6.0,
                        help="seconds of an unprofiled first call that does the process's lazy imports (0: none)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        _setup_django(Path(tmp))
        url = _agent_url(stack) if args.external_agent else None
        cpu, started = _process_cpu(), time.perf_counter()
        _load_models()
        if args.warmup > 0:
            asyncio.run(_run_call(args.scenarios[0], Path(tmp) / "warmup", args.warmup, url))
        print(f"one-off per process (not per call): imports, model loads and a {args.warmup:g} s warm-up call "
              f"{_process_cpu() - cpu:.1f} CPU s, {time.perf_counter() - started:.1f} s wall")
        probes = None if args.no_probes or args.plain else Probes()
        if probes is not None:
            probes.install()
        how = "no profiler" if args.plain else f"sampling the main thread every {args.interval * 1000:g} ms"
        agent = "listening agent in its own process (not profiled)" if url else "listening"
        print(f"{len(args.scenarios)} call(s) in sequence, voice, {agent} + scripted, Piper + whisper-tiny.en, "
              f"{os.cpu_count()} CPUs, {how}", flush=True)

        def run_all() -> list[CallResult]:
            return [asyncio.run(_run_call(name, Path(tmp) / f"call{index}", args.duration, url))
                    for index, name in enumerate(args.scenarios)]

        if args.plain:
            _print_calls(run_all(), 0.0)
            return
        with ThreadSampler(args.interval) as sampler:
            calls = run_all()
    _report(calls, sampler.profile, probes, args.top)


if __name__ == "__main__":
    main()
