"""Talking to a cluster: ``client`` (RawHttp, which carries every request bench sends, and the elasticsearch-py client
for track code), ``http1`` (the HTTP/1.1 keep-alive client of the bulk hot path), ``request_scope`` (the options of
the request being sent), ``cluster_stats`` and ``cluster_plugins`` (what a cluster reports about itself)."""
