"""A voice call in its own process, as a shell run_eval or a Celery worker would hold one: two
protocol doubles (agent tone 440 Hz, passenger 1000 Hz) under the real bridge, registered for
listening in under (run id, scenario). Run: python -m tests.voice.listen_remote_call RUN DIR SECONDS"""
from __future__ import annotations

import asyncio
import os
import sys


async def main(run_id: int, scenario: str, seconds: float) -> None:
    from scoring.core.canonical import db_hash
    from tests.voice.test_bridge_session import INPUTS, _config
    from voice.bridge.engine import run_session
    from voice.listen.tap import open_tap
    from voice.testing.double import DoubleOptions, ScriptedTurn, double_host
    from voice.testing.transports import hosted

    turns = tuple(ScriptedTurn(f"turn {i}") for i in range(40))
    config = _config("voice", inactivity_timeout=0, duration_seconds=seconds, grace=0.2)
    agent = double_host(DoubleOptions(role="agent", modality="voice", script=turns, tone_hz=440.0,
                                      chunks_per_turn=5), db_hasher=db_hash)
    user = double_host(DoubleOptions(role="user", modality="voice", script=turns, tone_hz=1000.0,
                                     chunks_per_turn=5), db_hasher=db_hash)
    async with hosted(agent, "inproc", label="agent") as agent_ep, hosted(user, "inproc", label="user") as user_ep:
        print("call started", flush=True)
        with open_tap((run_id, scenario), "voice") as tap:  # as the attempt opens it
            outcome = await run_session(scenario_inputs=INPUTS, agent=agent_ep, user=user_ep, config=config, tap=tap)
    print(f"call ended: {outcome.stop_reason}", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evasite.settings")
    import django

    django.setup()
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], float(sys.argv[3])))
