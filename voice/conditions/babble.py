"""Babble: several unrelated synthetic talkers speaking at once, like a café behind the caller.

Each talker is espeak-ng with its own voice variant, pitch and rate, saying small talk that has
nothing to do with airlines (no codes, names or dates that a parser could pick up). The tracks
are rendered once per machine and cached as ``.npy`` under ``$EVASITE_MODEL_CACHE/babble``
(keyed by espeak-ng's version and this table), then mixed at equal level. espeak-ng is what
setup installs for the fallback TTS, so babble needs nothing new and never downloads.
"""
from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import shutil
import subprocess
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voice.conditions.dsp import resample_once
from voice.conditions.levels import active_speech_level

ESPEAK_RATE = 22050
GAP_S = 0.35
"""Pause between one talker's sentences (each talker also starts at its own offset)."""


@dataclass(frozen=True)
class Talker:
    voice: str
    words_per_minute: int
    pitch: int
    sentences: tuple[str, ...]


TALKERS: tuple[Talker, ...] = (
    Talker("en-us+m3", 150, 35, (
        "I finally repainted the kitchen last weekend.",
        "It took three coats because the old colour kept showing through.",
        "Next time I will hire somebody, honestly.",
        "My brother says the trick is a good roller and patience.",
    )),
    Talker("en-gb+f2", 170, 65, (
        "Have you tried the new bakery on the corner?",
        "Their sourdough sells out before nine most mornings.",
        "I queued for ages on Saturday and it was worth it.",
        "They do a lovely lemon tart as well.",
    )),
    Talker("en-gb-scotland+m1", 140, 45, (
        "The football last night was a proper disappointment.",
        "We had all the chances in the first half and missed every one.",
        "The manager will be under pressure now.",
        "Still, there is always next season.",
    )),
    Talker("en-029+f4", 160, 75, (
        "My daughter started violin lessons in the autumn.",
        "The first few weeks were painful for the whole street.",
        "Now she can play a little waltz without stopping.",
        "Her teacher is very patient with her.",
    )),
    Talker("en-us+f3", 185, 55, (
        "We are thinking about getting a dog, maybe a small one.",
        "The landlord said it is fine as long as it does not bark all day.",
        "I grew up with two spaniels so I know the work.",
        "The shelter has a few puppies right now.",
    )),
    Talker("en-gb-x-rp+m5", 135, 30, (
        "The garden has gone completely wild this summer.",
        "Between the rain and the heat the hedges doubled in size.",
        "I spent the whole morning pulling up weeds.",
        "The tomatoes did well though, far too many of them.",
    )),
)


def _cache_dir() -> Path:
    explicit = os.environ.get("EVASITE_MODEL_CACHE")
    if explicit:
        root = Path(explicit)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = (Path(xdg) if xdg else Path.home() / ".cache") / "evasite"
    return root / "babble"


def _espeak() -> str:
    binary = shutil.which("espeak-ng")
    if binary is None:
        raise RuntimeError("babble noise needs espeak-ng (scripts/setup.sh installs it)")
    return binary


@functools.lru_cache(maxsize=1)
def _espeak_version() -> str:
    done = subprocess.run([_espeak(), "--version"], capture_output=True, text=True, timeout=30)
    return done.stdout.strip()


def _say(talker: Talker, text: str) -> np.ndarray:
    done = subprocess.run(
        [_espeak(), "-v", talker.voice, "-s", str(talker.words_per_minute), "-p", str(talker.pitch), "--stdout", text],
        capture_output=True, timeout=60, check=True,
    )
    with wave.open(io.BytesIO(done.stdout)) as clip:
        if clip.getframerate() != ESPEAK_RATE or clip.getnchannels() != 1:
            raise RuntimeError(f"espeak-ng wrote {clip.getframerate()} Hz x{clip.getnchannels()}, expected mono {ESPEAK_RATE}")
        return np.frombuffer(clip.readframes(clip.getnframes()), dtype="<i2").astype(np.float64) / 32768.0


def _render(talker: Talker) -> np.ndarray:
    gap = np.zeros(int(GAP_S * ESPEAK_RATE))
    parts: list[np.ndarray] = []
    for sentence in talker.sentences:
        parts += [_say(talker, sentence), gap]
    return np.concatenate(parts)


def _table_key() -> str:
    table = [(t.voice, t.words_per_minute, t.pitch, t.sentences) for t in TALKERS]
    return hashlib.sha256(json.dumps([_espeak_version(), table]).encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def talker_tracks() -> tuple[np.ndarray, ...]:
    """Each talker's speech at 22050 Hz, rendered once (disk cache, then this process's cache)."""
    directory = _cache_dir()
    path = directory / f"talkers-{_table_key()}.npz"
    if path.is_file():
        with np.load(path) as stored:
            return tuple(stored[f"t{index}"] for index in range(len(TALKERS)))
    tracks = tuple(_render(talker) for talker in TALKERS)
    directory.mkdir(parents=True, exist_ok=True)
    partial = directory / f".{path.name}.{os.getpid()}.partial.npz"
    np.savez(partial, **{f"t{index}": track for index, track in enumerate(tracks)})
    os.replace(partial, path)  # atomic: a concurrent reader sees none or all
    return tracks


def _evened(loop: np.ndarray, rate: int, window_s: float = 0.5) -> np.ndarray:
    """The loop with its slow level swings smoothed out (circularly), so any stretch of it has
    the same power and an SNR holds over a short turn, not only over the whole loop."""
    size = max(1, int(rate * window_s))
    power = loop * loop
    half = size // 2
    padded = np.concatenate([power[-half:], power, power[: size - half]])
    running = np.concatenate([[0.0], np.cumsum(padded)])
    local = (running[size:] - running[:-size])[: loop.size] / size  # centred moving mean
    return loop / np.sqrt(np.maximum(local, 1e-12) / np.mean(power))


@functools.lru_cache(maxsize=4)
def babble_loop(rate: int) -> np.ndarray:
    """A seamless loop of all talkers at equal active level, unit mean power, at ``rate``
    (cached on disk per rate beside the talkers: mixing and resampling take about a second)."""
    path = _cache_dir() / f"loop-{_table_key()}-{int(rate)}.npy"
    if path.is_file():
        loop = np.load(path).astype(np.float64)
    else:
        loop = _mixed(rate)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.parent / f".{path.name}.{os.getpid()}.partial.npy"
        np.save(partial, loop.astype(np.float32))
        os.replace(partial, path)
        loop = loop.astype(np.float32).astype(np.float64)  # the same samples as a cached read
    loop.setflags(write=False)  # shared between streams through the cache
    return loop


def _mixed(rate: int) -> np.ndarray:
    """All talkers mixed at ``rate``. Each track is padded with silence to the longest and
    circularly offset by a fixed fraction, so the loop wraps without a click and talkers start
    and stop at different moments."""
    tracks = talker_tracks()
    length = max(track.size for track in tracks)
    mix = np.zeros(length)
    for index, track in enumerate(tracks):
        padded = np.zeros(length)
        padded[: track.size] = track / np.sqrt(active_speech_level(track, ESPEAK_RATE))
        mix += np.roll(padded, int(length * index / len(tracks)))
    at_rate = resample_once(mix, ESPEAK_RATE, rate)
    at_rate = _evened(at_rate, rate)
    return at_rate / np.sqrt(np.mean(at_rate * at_rate))
