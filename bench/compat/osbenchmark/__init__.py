"""The part of OpenSearch Benchmark's own Python package (``osbenchmark``) that workloads' ``workload.py`` files import.

The workloads of opensearch-project/opensearch-benchmark-workloads import OSB's exceptions, the ``ParamSource`` base
class (``osbenchmark.workload.params``), ``Downloader``/``Decompressor``/``DefaultWorkloadPreparator`` of
``osbenchmark.workload.loader``, ``Runner``/``Retry`` of ``osbenchmark.worker_coordinator.runner``,
``RequestContextHolder`` (``osbenchmark.client``) and the ``parse_*_parameter`` helpers of
``osbenchmark.utils.parse``. When OSB itself is not installed, ``import osbenchmark...`` from workload code resolves
to these modules (``bench.compat.names``), which behave as OSB 2.4's do for what a workload can call. A name
not here fails the import, and the load, in one line naming it.
"""
