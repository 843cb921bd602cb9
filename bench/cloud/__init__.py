"""Cloud (and local) provisioning from one topology file: ``bench cloud plan|up|down|ls`` and
``bench race --topology=FILE``. Providers differ only in how machines come to exist."""
