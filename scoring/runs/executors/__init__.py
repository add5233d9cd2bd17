"""Executors of scenario attempts (architecture.md, Process model): ``local`` asyncio tasks in
the coordinating process, or ``celery`` tasks on a Redis broker run by workers. Both deliver a
queued scenario through one plan (``plan``) and one delivery step (``delivery``); ``choice``
picks the executor. Nothing is imported here, so a worker importing its modules loads neither
the runner nor the coordinating side."""
