"""Offline speech services for the built-in bots (Piper, espeak-ng, pocketsphinx, Silero)."""
