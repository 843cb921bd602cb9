"""The load driver distributed on Ray (``bench[ray]``): worker actors on a Ray cluster's nodes behind the
coordinator's WorkerPool seam (``--load-driver=ray:ADDRESS``)."""
