"""``bench history site``: a static history site of every run of one or more experiments (``build.py``)."""
