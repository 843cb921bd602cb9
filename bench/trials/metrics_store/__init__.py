"""A shared Elasticsearch/OpenSearch metrics store with Rally's document layout, mirrored from the local SQLite
store: ``config`` (which store), ``http`` (its client), ``documents`` and ``templates`` (Rally's layout),
``pusher`` (local rows to the store, behind a watermark), ``reader`` (trials back from it), ``mirrored`` (the
composite ``Trials``)."""
