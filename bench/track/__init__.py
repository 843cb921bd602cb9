"""Rally-format tracks: models, loading (Jinja2 + JSON + validation), corpora."""
