"""The scoring core: hashing, diffing, signals, latency, aggregation, the run files' formats,
resume rules and the judge. Plain Python over plain data: no Django, so the bridge, the
commands, the workers and the pages all reuse it and its tests need no database."""
