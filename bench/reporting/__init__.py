"""Reports (markdown and self-contained HTML from Jinja2 templates in ``reports/``), plots, and the
``compare`` / ``report`` / ``experiment`` commands.

- ``context``: what templates see (environment of each trial, tables split into sections).
- ``plots``: plotly figures and PNG export.
- ``render``: ``trial_report``, ``compare_report``, ``render_template``.
- ``commands``: argparse parsers and handlers hooked into ``bench.cli``.
"""
