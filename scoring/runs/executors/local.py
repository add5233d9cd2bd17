"""The ``local`` executor: every pending scenario is an asyncio task in the coordinating process
(the ``run_eval`` process or the web server), at most ``--concurrency`` at a time."""
from __future__ import annotations

import asyncio

from scenarios.registry import get_eval_scenario
from scoring.runs.attempt import run_attempt
from scoring.runs.executors.base import QueueItem, RunContext
from scoring.runs.executors.item import discard_attempt, record, retry_decision
from scoring.runs.options import RunOptions


class LocalExecutor:
    name = "local"

    def preflight(self, options: RunOptions, names: list[str]) -> None:
        return None  # embedded: nothing else has to be running

    def busy(self, run_id: int, dir_names: list[str]) -> set[str]:
        return set()  # only this process runs the run's scenarios

    async def run_items(self, run: RunContext, pending: list[QueueItem]) -> None:
        semaphore = asyncio.Semaphore(run.options.concurrency)

        async def worker(item: QueueItem) -> None:
            async with semaphore:
                await run_item(run, item)

        tasks = [asyncio.create_task(worker(item)) for item in pending]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise


async def run_item(run: RunContext, item: QueueItem) -> None:
    """§17.2: attempts with automatic retry until one is accepted, then its row and events."""
    options = run.options
    scenario = get_eval_scenario(item.scenario_name)
    settings = run.attempt_settings(item, scenario, run.progress)
    scenario_dir = run.session_dir / item.dir_name
    retries, reasons = 0, []
    run.progress.scenario_started(item.dir_name)
    run.log.write(f"{item.dir_name}: started")
    while True:
        attempt = await run_attempt(scenario, scenario_dir, settings, auto_retry_count=retries,
                                    auto_retry_reasons=reasons,
                                    trial=item.trial if item.trials > 1 else None,
                                    label=item.dir_name)
        try:
            reason = retry_decision(options, attempt, scenario_dir, retries)
        except BaseException as error:
            run.log.write(f"{item.dir_name}: attempt failed: {type(error).__name__}: {error}", "ERROR")
            raise
        if reason is None:
            break
        retries += 1
        reasons.append(reason)
        moved = discard_attempt(scenario_dir, retries)
        run.log.warning(f"{item.dir_name}: attempt discarded ({reason}); moved to {moved.name}; "
                        f"retrying in {options.auto_retry_backoff_secs}s")
        await asyncio.sleep(options.auto_retry_backoff_secs)
    metrics = attempt.metrics
    run.accept(item, metrics, scenario_dir)
    await record(run.run_id, item, metrics, attempt.final_db)
    run.log.write(f"{item.dir_name}: finished {metrics.get('stop_reason')} "
                  f"is_successful={metrics.get('is_successful')}")
    run.progress.scenario_finished(item.dir_name, metrics)
