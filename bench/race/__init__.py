"""A race from start to end: ``options`` (what the user asked for), ``cluster_source`` (the clusters: provisioned or
given), ``pipeline`` (the stages of one race and the extension hooks around them), ``race`` (running it and recording
the trial) and ``experiment`` (a planned set of races, repeated and interleaved)."""
