"""The load driver: scheduling (schedule.py), request bodies (bodies.py), parameter sources
(params.py), runners per core operation type (runners.py) and the registry extensions add theirs to
(registry.py), one client's loop (client_loop.py), worker processes (worker.py, worker_extensions.py; a
worker on another machine prepares its step's corpora with step_corpora.py), the
WorkerPool interface (pool.py) with its multiprocessing implementation (mp_pool.py), and the coordinator that
runs a challenge across the workers (coordinator.py)."""
