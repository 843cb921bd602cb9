"""Stored trials: ``model`` (what a trial is, and the ``Trials`` store protocol), ``sqlite`` (the local store in the
bench home), ``recording`` (writing a running race into a store), ``summary`` (a stored trial's summary),
``listing`` (``bench list trials``), ``open`` (which store a command uses) and ``metrics_store`` (the mirror in an
Elasticsearch/OpenSearch metrics store)."""
