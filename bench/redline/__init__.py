"""Redline: the highest throughput a task sustains within a latency and error objective, found by open-model
steps at target throughputs chosen by exponential then binary search (``--redline``)."""
