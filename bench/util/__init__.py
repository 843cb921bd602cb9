"""What every layer uses and that knows nothing of benchmarks: errors, the bench home and its ini file, file locks,
downloads, redaction of secrets, number formatting, YAML reading, the files bench ships (``bundled``) and the one-line
activity notices. Imports nothing else of bench."""
