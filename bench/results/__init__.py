"""What a race's samples mean: ``summary`` (per-task statistics of a trial), ``stats`` (the pure statistics),
``sections`` (extension-contributed summary sections), ``headline`` (the few rows a reader looks at first),
``report`` and ``fit_table`` (rendering a summary as text tables)."""
