"""Registers the 50 eva_airline scenarios in registry order (scenarios.md §4.1).

Seeds first (their module registers them in eva-id order), then the 45 scaffolds ascending. The
scaffold classes are also bound here by class name (e.g. ``EvaAirline113``) for introspection.
"""
from __future__ import annotations

from scenarios.domains.eva_airline import seeds
from scenarios.domains.eva_airline.scaffolds import register_scaffolds

SEED_CLASSES = (
    seeds.VoluntaryDateChange,
    seeds.IrropsCancellation,
    seeds.MissedFlightStandby,
    seeds.CancellationRefund,
    seeds.FabricatedDisruption,
)
SCAFFOLD_CLASSES = tuple(register_scaffolds())
globals().update({cls.__name__: cls for cls in SCAFFOLD_CLASSES})
