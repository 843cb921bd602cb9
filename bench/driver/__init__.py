"""The load driver: scheduling (schedule.py, custom_schedule.py), request bodies and corpora per step (bulk/),
parameter sources (param_sources.py, custom_sources.py), runners per operation type and the registry extensions add
theirs to (runners/), one client's loop (client_loop.py), worker processes (worker.py, worker_extensions.py; a
worker on another machine prepares its step's corpora with bulk/step_corpora.py), the WorkerPool interface
(pool.py) with its multiprocessing implementation (mp_pool.py), and the coordinator that runs a challenge across
the workers (coordinator.py)."""
