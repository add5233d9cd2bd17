"""The human tester: a person in the browser takes the passenger's seat (harness.md §3.3)."""
