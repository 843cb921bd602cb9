"""``osbenchmark.worker_coordinator``: the runner API workload code builds on."""
