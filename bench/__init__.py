"""bench: benchmark orchestration for Elasticsearch and OpenSearch."""

__version__ = "0.1.0"
