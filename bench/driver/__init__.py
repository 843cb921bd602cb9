"""The load driver: scheduling (schedule.py), request bodies (bodies.py), parameter sources
(params.py), runners per operation type (runners.py), one client's loop (client_loop.py), worker
processes (worker.py) and the coordinator that runs a challenge across them (coordinator.py)."""
