"""What each operation type does against a cluster: ``core`` (the core operation types), ``admin``, ``search``,
``snapshot``, ``ml_transform`` and ``composite`` (Rally's further operations), ``custom`` (a track's own runners),
``registry`` (the seam through which extensions add operation types), ``request_options`` (Rally's generic request
parameters) and ``support``/``track_defs``/``composite_context`` (what runners share)."""
