"""Offline speech services for the built-in bots (Piper, espeak-ng, faster-whisper, pocketsphinx, Silero)."""
