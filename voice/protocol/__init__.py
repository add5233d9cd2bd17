"""The bridge <-> bot protocol (harness.md §2.2, §5): channels, wire codec, RTVI envelopes."""
