"""``osbenchmark.workload``: the loader's processor API and the parameter-source base class."""
