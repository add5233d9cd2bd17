"""Deterministic built-in models (pipecat LLM services that replace only the model's decision)."""
