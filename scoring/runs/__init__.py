"""Run orchestration: options, the runner service, attempts, executors, progress."""
