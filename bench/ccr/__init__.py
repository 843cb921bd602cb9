"""Cross-cluster replication: one small engine interface over Elasticsearch CCR and the OpenSearch
replication plugin, the operations that use it, the race wiring and the CCR section of the report.

- ``engine.py``   ``CcrEngine`` (follow, pause, resume, unfollow, auto-follow, delete-auto-follow, stats,
  checkpoints) with ``ElasticsearchCcr`` and ``OpenSearchReplication``; the no-CCR-support detection
- ``sync.py``     wait-for-followers-to-sync: leader per-shard targets, follower progress, the wait loop
- ``runners.py``  the operation runners (``ccr-follow`` ... ``wait-for-followers-to-sync``)
- ``bootstrap.py`` ``ccr-bootstrap``: follow an existing leader index and measure its remote recovery
- ``failover.py`` the failover drill (``ccr-failover``): cut the leader off, promote the follower, RTO and RPO
- ``drill_figures.py`` the drills' pure figures and models; ``drill_section.py`` their summary section and rows;
  ``drills.py`` their registration
- ``remote.py``   remote-cluster wiring and checks (``_remote/info``)
- ``license.py``  Elasticsearch's CCR licence: the trial started (and said so) where a cluster has less, also in
  races that use CCR only through ccr-stats or a wired leader/follower pair
- ``prepare.py``  what a race does before its schedule starts (clusters named by the challenge, remote
  connection, licenses, CCR support, car variants) and after it (final doc counts)
- ``report.py``   the CCR section of the summary
- ``operations.py`` load-time checks of the CCR operations' parameters
- ``race_hook.py`` CCR's race hook: soft-deletes refusal before provisioning, wiring, final doc counts, the section
- ``ccr_extension.py`` what the ccr extension registers with bench's seams

``--distribution=engine:version`` and ``--plugin`` (the engine and plugins a CCR pair runs) are
``bench.provision.overrides``.
"""
