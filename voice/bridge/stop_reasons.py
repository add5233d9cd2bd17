"""The stop reasons a bridge session records (harness.md §9.1), in one place.

The bridge writes them and scoring reads them (clean exit, automatic retry, resume), so both
import these names; voice/ never imports scoring/, hence they live here.
"""
from __future__ import annotations

EXIT = "[EXIT]"
SIMULATOR_EXIT = "[SIMULATOR_EXIT]"
INACTIVITY_TIMEOUT = "[INACTIVITY_TIMEOUT]"
TIMEOUT = "[TIMEOUT]"
DISCONNECTED = "[DISCONNECTED]"
STOP_REASONS: tuple[str, ...] = (EXIT, SIMULATOR_EXIT, INACTIVITY_TIMEOUT, TIMEOUT, DISCONNECTED)
