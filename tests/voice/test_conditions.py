"""Audio conditions checked on real signals: espeak-ng speech, tones and noise, cut into the
20 ms chunks the bridge relays. Each test measures the property the condition promises."""
from __future__ import annotations

import io
import math
import shutil
import subprocess
import wave

import numpy as np
import pytest

from voice.conditions import (
    Chain, ConditionSpecError, Noise, Passthrough, PhoneLine, SpeakerSettings, parse_condition, parse_conditions,
)
from voice.conditions import g711
from voice.conditions.babble import babble_loop
from voice.conditions.base import float_to_pcm, pcm_to_float
from voice.conditions.dsp import RationalResampler, resample_once
from voice.conditions.levels import active_speech_level, db
from voice.conditions.noise import colored_loop

RATE = 16000
FRAME_BYTES = 640  # 20 ms at 16 kHz


def run(condition, pcm: bytes, rate: int = RATE, chunk: int = FRAME_BYTES) -> bytes:
    """Feed ``pcm`` through a condition chunk by chunk, checking the length contract each time."""
    out = []
    for start in range(0, len(pcm), chunk):
        piece = pcm[start:start + chunk]
        processed = condition.process(piece, rate)
        assert len(processed) == len(piece)
        out.append(processed)
    return b"".join(out)


def tone(freq: float, seconds: float, rate: int = RATE, amplitude: float = 0.3) -> np.ndarray:
    return amplitude * np.sin(2 * np.pi * freq * np.arange(int(seconds * rate)) / rate)


def band_power(samples: np.ndarray, rate: int, low: float, high: float) -> float:
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(samples.size))) ** 2
    freqs = np.fft.rfftfreq(samples.size, 1.0 / rate)
    return float(spectrum[(freqs >= low) & (freqs < high)].sum())


@pytest.fixture(scope="module")
def speech() -> np.ndarray:
    """Two espeak-ng sentences with pauses around and between them, at 16 kHz, as s16le-exact floats."""
    binary = shutil.which("espeak-ng")
    assert binary, "espeak-ng is required (scripts/setup.sh installs it)"
    clips = []
    for text in ("My confirmation number is Z K three F F W, and my last name is Rodriguez.",
                 "I would like to move my flight to the twenty fifth of March, in the morning please."):
        done = subprocess.run([binary, "-v", "en-us", "--stdout", text], capture_output=True, check=True, timeout=60)
        with wave.open(io.BytesIO(done.stdout)) as clip:
            raw = np.frombuffer(clip.readframes(clip.getnframes()), dtype="<i2") / 32768.0
            clips.append(resample_once(raw, clip.getframerate(), RATE))
    gap = np.zeros(RATE // 2)
    joined = np.concatenate([gap, clips[0], gap, gap, clips[1], gap])
    return pcm_to_float(float_to_pcm(joined))


# --- levels -------------------------------------------------------------------------------

def test_active_level_ignores_silence_and_mean_power_does_not() -> None:
    burst = tone(440, 1.0, amplitude=0.25)
    clip = np.concatenate([burst, np.zeros(RATE), burst, np.zeros(RATE)])
    # Active: each 1 s burst plus P.56's 200 ms hangover after it, so 2 s of tone over 2.4 s.
    expected = db(0.25 ** 2 / 2 * 2.0 / 2.4)
    assert abs(db(active_speech_level(clip, RATE)) - expected) < 0.1
    assert db(float(np.mean(clip ** 2))) < expected - 2.1  # over all 4 s: half silence


# --- noise --------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["white", "pink", "babble"])
@pytest.mark.parametrize("snr", [20, 10, 5, 0, 7.5])
def test_noise_hits_the_requested_snr_on_the_speech(speech: np.ndarray, kind: str, snr: float) -> None:
    pcm = float_to_pcm(speech)
    noisy = pcm_to_float(run(Noise(kind=kind, snr_db=snr, seed=3), pcm))
    added = noisy - speech
    measured = db(active_speech_level(speech, RATE)) - db(float(np.mean(added ** 2)))
    assert abs(measured - snr) <= 0.5, f"{kind} at snr {snr}: measured {measured:.2f} dB"


def test_noise_is_present_before_the_first_word(speech: np.ndarray) -> None:
    noisy = pcm_to_float(run(Noise(kind="pink", snr_db=10, seed=1), float_to_pcm(speech)))
    lead_in = noisy[: RATE // 4]  # the first 250 ms are silence in the clean clip
    assert np.all(speech[: RATE // 4] == 0)
    assert db(float(np.mean(lead_in ** 2))) > -45  # nominal -26 dBov speech, 10 dB under it


def test_pink_noise_has_equal_power_per_octave_and_white_does_not() -> None:
    pink, white = colored_loop("pink", RATE, seed=0), colored_loop("white", RATE, seed=0)
    octaves = [(250, 500), (500, 1000), (1000, 2000), (2000, 4000)]
    pink_db = [db(band_power(pink, RATE, lo, hi)) for lo, hi in octaves]
    white_db = [db(band_power(white, RATE, lo, hi)) for lo, hi in octaves]
    assert max(pink_db) - min(pink_db) < 1.0
    assert all(2.0 < b - a < 4.0 for a, b in zip(white_db, white_db[1:]))  # +3 dB per octave


def test_babble_is_many_talkers_at_once() -> None:
    """A single talker pauses between words; six at once almost never fall silent together."""
    loop = babble_loop(RATE)
    blocks = loop[: loop.size // 160 * 160].reshape(-1, 160)
    quiet = np.mean(np.mean(blocks ** 2, axis=1) < 10 ** (-20 / 10))  # 20 dB under the mean
    assert quiet < 0.02
    envelope = np.sqrt(np.mean(blocks ** 2, axis=1))
    assert np.std(envelope) / np.mean(envelope) < 0.6  # steady, unlike one voice (> 0.8)
    # It is speech, not hiss: most of its power sits under 1 kHz, as voices' does.
    assert band_power(loop, RATE, 80, 1000) > band_power(loop, RATE, 1000, 8000)


@pytest.mark.parametrize("kind", ["white", "pink", "babble"])
def test_noise_is_deterministic_for_a_seed_and_differs_across_seeds(speech: np.ndarray, kind: str) -> None:
    pcm = float_to_pcm(speech[: RATE * 2])
    first = run(Noise(kind=kind, snr_db=5, seed=11), pcm)
    assert run(Noise(kind=kind, snr_db=5, seed=11), pcm) == first
    other = pcm_to_float(run(Noise(kind=kind, snr_db=5, seed=12), pcm))
    difference = other - pcm_to_float(first)
    assert db(float(np.mean(difference ** 2))) > db(float(np.mean((pcm_to_float(first) - speech[: RATE * 2]) ** 2)))


# --- G.711 μ-law --------------------------------------------------------------------------

def test_mu_law_matches_the_reference_code_points() -> None:
    assert g711.encode(np.array([0, 32767, -32768, 1000, -1000])).tolist() == [0xFF, 0x80, 0x00, 0xCE, 0x4E]
    assert g711.decode(np.array([0xFF, 0x7F, 0x80, 0x00, 0xCE])).tolist() == [0, 0, 32124, -32124, 988]
    everything = np.arange(-32768, 32768)
    assert np.array_equal(g711.encode(everything), g711.encode_formula(everything))
    # 8 bits per sample: 256 codes, and the error grows with the level (companding).
    decoded = g711.decode(g711.encode(everything)).astype(int)
    error = np.abs(decoded - everything)
    assert error[np.abs(everything) < 100].max() <= 4 and error.max() <= 1024


# --- phone --------------------------------------------------------------------------------

@pytest.mark.parametrize("rate", [16000, 48000, 44100])
def test_phone_leaves_no_energy_above_4_khz(rate: int) -> None:
    rng = np.random.default_rng(5)
    broadband = 0.2 * rng.standard_normal(rate * 3)
    out = pcm_to_float(run(PhoneLine(), float_to_pcm(broadband), rate=rate, chunk=rate // 50 * 2))
    steady = out[rate // 2:]
    assert db(band_power(steady, rate, 4000, rate / 2) / band_power(steady, rate, 0, rate / 2)) < -60
    assert db(band_power(broadband, rate, 4000, rate / 2) / band_power(broadband, rate, 0, rate / 2)) > -3


@pytest.mark.parametrize(("freq", "low_db", "high_db"), [
    (60, -math.inf, -60), (100, -math.inf, -60), (150, -math.inf, -35),
    (300, -1.0, 0.5), (1000, -0.5, 0.5), (3400, -1.0, 0.5),
    (3700, -math.inf, -40), (6000, -math.inf, -60),
])
def test_phone_passes_300_to_3400_hz_only(freq: float, low_db: float, high_db: float) -> None:
    clean = tone(freq, 2.0)
    out = pcm_to_float(run(PhoneLine(), float_to_pcm(clean)))
    gain = db(float(np.mean(out[RATE // 2:] ** 2)) / float(np.mean(clean ** 2)))
    assert low_db <= gain <= high_db, f"{freq} Hz came through at {gain:.1f} dB"


def test_phone_output_does_not_depend_on_how_the_stream_is_chunked(speech: np.ndarray) -> None:
    pcm = float_to_pcm(speech)
    in_frames = run(PhoneLine(loss_pct=5, seed=2), pcm)
    assert run(PhoneLine(loss_pct=5, seed=2), pcm, chunk=246) == in_frames
    assert run(PhoneLine(loss_pct=5, seed=2), pcm, chunk=len(pcm)) == in_frames


def _silent_share(out: np.ndarray, rate: int) -> float:
    """Share of 1 ms blocks at least 40 dB under a steady tone's level."""
    size = rate // 1000
    blocks = out[: out.size // size * size].reshape(-1, size)
    return float(np.mean(np.mean(blocks ** 2, axis=1) < np.mean(out ** 2) * 1e-4))


@pytest.mark.parametrize("loss", [5.0, 2.5, 10.0])
def test_phone_loses_exactly_the_requested_share_of_packets(loss: float) -> None:
    line = PhoneLine(loss_pct=loss, seed=9)
    seconds = 30
    out = pcm_to_float(run(line, float_to_pcm(tone(1000, seconds))))
    assert line.packets == seconds * 50
    assert line.packets_lost == math.floor(loss * line.packets / 100)
    # On the signal: the tone is missing for that share of the time (less the filters' ringing
    # into each gap, about 3 ms of a lost 20 ms packet).
    settled = out[int(line.delay_s * RATE) + RATE // 10:]
    share = _silent_share(settled, RATE)
    assert loss / 100 * 0.7 <= share <= loss / 100 * 1.02, share


def test_phone_without_loss_loses_nothing_and_concealment_fills_gaps() -> None:
    clean = float_to_pcm(tone(1000, 10))
    intact = PhoneLine(seed=1)
    assert _silent_share(pcm_to_float(run(intact, clean))[RATE // 10:], RATE) == 0.0
    repeated = PhoneLine(loss_pct=5, plc="repeat", seed=1)
    out = pcm_to_float(run(repeated, clean))
    assert repeated.packets_lost == 25
    assert _silent_share(out[RATE // 10:], RATE) < 0.005  # isolated losses are concealed


def test_phone_jitter_delays_the_stream_by_its_buffer_and_drops_late_packets() -> None:
    onset = np.concatenate([np.zeros(RATE), tone(1000, 9.0)])
    plain, jittery = PhoneLine(seed=4), PhoneLine(jitter_ms=20, buffer_ms=60, seed=4)
    out_plain = pcm_to_float(run(plain, float_to_pcm(onset)))
    out_jitter = pcm_to_float(run(jittery, float_to_pcm(onset)))

    def heard_at(out: np.ndarray) -> float:
        return float(np.flatnonzero(np.abs(out) > 0.05)[0]) / RATE

    assert abs(heard_at(out_plain) - 1.0 - plain.delay_s) < 0.003
    assert abs(heard_at(out_jitter) - heard_at(out_plain) - 0.060) < 0.002
    # Exponential delays with a 20 ms mean exceed a 60 ms buffer e^-3 = 5% of the time.
    assert 0.02 <= jittery.packets_late / jittery.packets <= 0.08
    assert plain.packets_late == 0


def test_phone_is_deterministic_for_a_seed_and_differs_across_seeds(speech: np.ndarray) -> None:
    pcm = float_to_pcm(speech)
    first = run(PhoneLine(loss_pct=10, jitter_ms=15, seed=21), pcm)
    assert run(PhoneLine(loss_pct=10, jitter_ms=15, seed=21), pcm) == first
    assert run(PhoneLine(loss_pct=10, jitter_ms=15, seed=22), pcm) != first


def test_phone_survives_a_rate_change_mid_stream() -> None:
    line = PhoneLine()
    assert len(line.process(float_to_pcm(tone(500, 0.1)), 16000)) == 3200
    assert len(line.process(float_to_pcm(tone(500, 0.1, rate=24000)), 24000)) == 4800


def test_streaming_resampler_matches_one_pass_and_keeps_a_tone() -> None:
    signal = tone(1000, 1.0, rate=22050)
    whole = RationalResampler(22050, 16000)(signal)
    pieces = RationalResampler(22050, 16000)
    chunked = np.concatenate([pieces(signal[i:i + 441]) for i in range(0, signal.size, 441)])
    assert np.allclose(whole, chunked, atol=1e-12)
    assert abs(db(float(np.mean(resample_once(signal, 22050, 16000)[800:-800] ** 2)) / 0.045)) < 0.05


# --- specs --------------------------------------------------------------------------------

def test_conditions_list_parses_into_named_conditions() -> None:
    conditions = parse_conditions("clean,phone,noise:snr=5,phone:loss=5%,noise:babble:snr=0:to=user,rate:1.3,voice:espeak")
    assert [c.name for c in conditions] == [
        "clean", "phone", "noise-pink-snr5", "phone-loss5", "noise-babble-snr0-touser", "rate-1.3", "voice-espeak"]
    for condition in conditions:
        assert parse_condition(condition.spec) == condition  # the canonical spec reads back
    assert conditions[3].parts[0]["loss"] == 5.0 and conditions[4].parts[0]["to"] == "user"


def test_equal_meanings_share_one_name_and_are_refused_twice() -> None:
    assert parse_condition("noise:snr=5").name == parse_condition("noise:type=pink:snr=5.0:seed=0:to=agent").name
    assert parse_condition("phone:loss=5").name == parse_condition("phone:loss=5%").name
    with pytest.raises(ConditionSpecError, match="are the same"):
        parse_conditions("noise:snr=5,noise:pink:snr=5")


@pytest.mark.parametrize(("spec", "message"), [
    ("nosie:snr=5", "unknown kind 'nosie'"),
    ("noise:snr=loud", "snr must be a number of dB, got 'loud'"),
    ("phone:los=5%", "phone has no parameter 'los'"),
    ("phone:loss=80%", "loss must be between 0% and 50%, got 80%"),
    ("rate", "rate needs factor"),
    ("rate:3", "factor must be between 0.5 and 2"),
    ("voice:festival", "name must be one of espeak, hibari"),
    ("clean+phone", "clean cannot be combined"),
    ("noise:snr=5:snr=6", "snr given twice"),
    ("phone:to=both", "to must be one of agent, user"),
    ("phone,,noise", "empty entry"),
    ("", "no conditions given"),
])
def test_bad_specs_are_refused_with_one_line(spec: str, message: str) -> None:
    with pytest.raises(ConditionSpecError) as caught:
        parse_conditions(spec)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_names_are_filesystem_safe() -> None:
    for spec in ("noise:snr=-5:seed=7", "phone:loss=2.5:jitter=20ms:plc=repeat+noise:white:snr=7.5:to=user",
                 "rate:0.8+voice:hibari+barge-in:after=3s"):
        name = parse_condition(spec).name
        assert all(ch.isalnum() or ch in ".+-" for ch in name) and "/" not in name and name == name.lower()


def test_audio_reaches_only_the_side_named_by_to(speech: np.ndarray) -> None:
    to_agent = parse_condition("noise:snr=5")
    to_user = parse_condition("noise:snr=5:to=user")
    assert isinstance(to_agent.audio_for("agent"), Noise) and isinstance(to_agent.audio_for("user"), Passthrough)
    assert isinstance(to_user.audio_for("user"), Noise) and isinstance(to_user.audio_for("agent"), Passthrough)
    chain = parse_condition("noise:snr=10+phone").audio_for("agent")
    assert isinstance(chain, Chain) and [type(c) for c in chain.conditions] == [Noise, PhoneLine]
    assert isinstance(parse_condition("rate:1.3").audio_for("agent"), Passthrough)


def test_streams_get_their_own_reproducible_seeds(speech: np.ndarray) -> None:
    condition = parse_condition("phone:loss=10%")
    pcm = float_to_pcm(speech)
    a1 = run(condition.audio_for("agent", stream="scenario-a/trial-1"), pcm)
    assert run(condition.audio_for("agent", stream="scenario-a/trial-1"), pcm) == a1
    assert run(condition.audio_for("agent", stream="scenario-b/trial-1"), pcm) != a1


def test_speaker_side_conditions_say_how_to_build_the_passenger_tts() -> None:
    assert parse_condition("clean").speaker == SpeakerSettings()
    assert parse_condition("rate:1.3+voice:espeak").speaker == SpeakerSettings(voice="espeak", rate=1.3)
    barge = parse_condition("barge-in:after=3s").barge_in
    assert barge is not None and barge.after_s == 3.0
    assert parse_condition("phone").barge_in is None


def test_prepare_builds_ahead_so_the_first_frame_is_cheap() -> None:
    from voice.conditions import prepare

    condition = parse_condition("noise:babble:snr=5+phone:loss=5%").audio_for("agent", stream="x")
    prepare(condition, RATE)
    assert all(part._rate == RATE for part in condition.conditions)
    prepare(Passthrough(), RATE)  # a no-op, never an error
    frame = float_to_pcm(tone(300, 0.02))
    assert len(condition.process(frame, RATE)) == len(frame)


def test_an_odd_trailing_byte_keeps_the_length() -> None:
    chunk = float_to_pcm(tone(500, 0.02)) + b"\x01"
    for condition in (Noise(seed=1), PhoneLine(seed=1)):
        assert len(condition.process(chunk, RATE)) == len(chunk)


def test_audio_conditions_map_each_hearing_side_for_the_engine() -> None:
    assert parse_condition("clean").audio_conditions() == {}
    assert parse_condition("rate:1.3").audio_conditions() == {}
    both = parse_condition("phone+noise:snr=5:to=user").audio_conditions(stream="s")
    assert isinstance(both["agent"], PhoneLine) and isinstance(both["user"], Noise)


@pytest.mark.parametrize(("spec", "key", "value"), [
    ("phone:jitter=0.02s", "jitter", 20.0), ("phone:jitter=20", "jitter", 20.0),
    ("barge-in:after=1500ms", "after", 1.5), ("noise:snr=5dB", "snr", 5.0), ("phone:loss=2.5%", "loss", 2.5),
])
def test_units_are_read_with_their_suffixes(spec: str, key: str, value: float) -> None:
    assert parse_condition(spec).parts[0][key] == pytest.approx(value)


def test_conditions_import_no_django_and_no_pipecat() -> None:
    """Pure transforms: the engine, benches and the scoring side can load them anywhere."""
    import pkgutil
    import sys
    from pathlib import Path

    import voice.conditions

    names = sorted(f"voice.conditions.{info.name}" for info in pkgutil.iter_modules(voice.conditions.__path__))
    assert "voice.conditions.phone" in names and "voice.conditions.spec" in names
    probe = ("import importlib, sys\n"
             f"for name in {names!r}:\n"
             "    importlib.import_module(name)\n"
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'django', 'pipecat', 'scipy'}))\n")
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", probe], cwd=repo, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(repo)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
