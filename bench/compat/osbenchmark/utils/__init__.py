"""``osbenchmark.utils``: the helpers workload code imports."""
