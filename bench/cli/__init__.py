"""The ``bench`` command line, the composition root.

- ``table``: the command table (each command's parser and handler) and ``build_parser``;
- ``app``: ``main``, which dispatches through the table and turns every BenchError into one line;
- one module per command family: ``race`` (its flags declared in ``bench/race/flags.py``), ``loadgen``,
  ``tracks`` (info, render-track, list tracks), ``trials`` (list, show, delete, stop, store push); ``cloud``,
  ``compare``/``report``/``experiment``/``history`` and ``add`` register theirs from their own packages;
- ``common``: what several share (store and load-driver flags, parameters, secrets).
"""

from bench.cli.app import main
from bench.cli.table import build_parser

__all__ = ["build_parser", "main"]
