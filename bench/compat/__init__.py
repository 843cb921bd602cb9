"""What Rally's and OpenSearch Benchmark's track code imports, when neither is installed: ``esrally`` (Rally 2.13's
modules a ``track.py`` may call) and ``osbenchmark`` (OSB 2.4's, for a ``workload.py``). ``names.install()`` makes
``import esrally…``/``import osbenchmark…`` resolve to them; an installed Rally or OSB always wins. They sit in the
track layer's family: they read bench's corpus handling and track plugins, and the loader imports them."""
