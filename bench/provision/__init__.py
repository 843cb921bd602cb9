"""Provisioning: distributions (``distribution.py``), car configs (``car.py``), ``--distribution``/``--plugin``
(``overrides.py``), official plugins by name (``plugin_names.py``, ``plugin_download.py``, ``plugin_install.py``)
and local Elasticsearch/OpenSearch nodes (``local.py``).

Import the modules themselves: the package imports nothing, so its modules can use each other without a cycle
through it."""
