"""``esrally.track.track``: the track's building blocks as Rally's track code constructs them.

A track processor's ``on_after_load_track`` may append a ``DocumentCorpus`` of ``Documents`` to ``track.corpora``
(Rally's elastic/logs generates its corpus so): bench takes it into the track it runs (``bench.track.plugins``).
Adding indices, templates or data streams there is refused at load time.
"""

from __future__ import annotations

from typing import Any


class _Named:
    name: str

    def matches(self, pattern: str | None) -> bool:
        return pattern in (None, "_all", "*") or self.name == pattern

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return ", ".join(f"{k} = [{v!r}]" for k, v in vars(self).items())

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)


class Index(_Named):
    def __init__(self, name: str, body: dict[str, Any] | None = None, types: list[Any] | None = None) -> None:
        self.name = name
        self.body = body if body is not None else {}
        self.types = types if types is not None else []


class DataStream(_Named):
    def __init__(self, name: str) -> None:
        self.name = name


class IndexTemplate(_Named):
    # pattern: None when the template's body names its index patterns itself (bench's TemplateSpec)
    def __init__(self, name: str, pattern: str | None, content: dict[str, Any],
                 delete_matching_indices: bool = False) -> None:
        self.name = name
        self.pattern = pattern
        self.content = content
        self.delete_matching_indices = delete_matching_indices


class ComponentTemplate(_Named):
    def __init__(self, name: str, content: dict[str, Any]) -> None:
        self.name = name
        self.content = content


class Documents:
    """A document set of a corpus, with Rally's constructor and properties (subclasses override the sizes and the
    count as properties, as elastic/logs' generated documents do)."""

    SOURCE_FORMAT_BULK = "bulk"

    def __init__(self, source_format: str, document_file: str | None = None, document_archive: str | None = None,
                 base_url: str | None = None, includes_action_and_meta_data: bool = False,
                 number_of_documents: int = 0, compressed_size_in_bytes: int | None = 0,
                 uncompressed_size_in_bytes: int | None = 0, target_index: str | None = None,
                 target_data_stream: str | None = None, meta_data: dict[str, Any] | None = None) -> None:
        self.source_format = source_format
        self.document_file = document_file
        self.document_archive = document_archive
        self.base_url = base_url
        self.includes_action_and_meta_data = includes_action_and_meta_data
        self._number_of_documents = number_of_documents
        self._compressed_size_in_bytes = compressed_size_in_bytes
        self._uncompressed_size_in_bytes = uncompressed_size_in_bytes
        self.target_index = target_index
        self.target_data_stream = target_data_stream
        self.meta_data = meta_data or {}

    def has_compressed_corpus(self) -> bool:
        return self.document_archive is not None

    def has_uncompressed_corpus(self) -> bool:
        return self.document_file is not None

    @property
    def number_of_documents(self) -> int:
        return self._number_of_documents

    @number_of_documents.setter
    def number_of_documents(self, value: int) -> None:
        self._number_of_documents = value

    @property
    def compressed_size_in_bytes(self) -> int | None:
        return self._compressed_size_in_bytes

    @compressed_size_in_bytes.setter
    def compressed_size_in_bytes(self, value: int | None) -> None:
        self._compressed_size_in_bytes = value

    @property
    def uncompressed_size_in_bytes(self) -> int | None:
        return self._uncompressed_size_in_bytes

    @uncompressed_size_in_bytes.setter
    def uncompressed_size_in_bytes(self, value: int | None) -> None:
        self._uncompressed_size_in_bytes = value

    @property
    def number_of_lines(self) -> int:
        return self.number_of_documents * (2 if self.includes_action_and_meta_data else 1)

    @property
    def is_bulk(self) -> bool:
        return self.source_format == Documents.SOURCE_FORMAT_BULK

    def __str__(self) -> str:
        return f"{self.source_format} documents from {self.document_file}"

    def __repr__(self) -> str:
        return ", ".join(f"{k} = [{v!r}]" for k, v in vars(self).items())


class DocumentCorpus(_Named):
    def __init__(self, name: str, documents: list[Documents] | None = None,
                 meta_data: dict[str, Any] | None = None) -> None:
        self.name = name
        self.documents = documents or []
        self.meta_data = meta_data or {}

    def number_of_documents(self, source_format: str) -> int:
        return sum(d.number_of_documents for d in self.documents if d.source_format == source_format)

    def compressed_size_in_bytes(self, source_format: str) -> int | None:
        sizes = [d.compressed_size_in_bytes for d in self.documents if d.source_format == source_format]
        return None if any(s is None for s in sizes) else sum(s or 0 for s in sizes)

    def uncompressed_size_in_bytes(self, source_format: str) -> int | None:
        sizes = [d.uncompressed_size_in_bytes for d in self.documents if d.source_format == source_format]
        return None if any(s is None for s in sizes) else sum(s or 0 for s in sizes)

    def filter(self, source_format: str | None = None, target_indices: list[str] | None = None,
               target_data_streams: list[str] | None = None) -> "DocumentCorpus":
        kept = [d for d in self.documents
                if (not source_format or d.source_format == source_format)
                and (not target_indices or d.target_index in target_indices)
                and (not target_data_streams or d.target_data_stream in target_data_streams)]
        return DocumentCorpus(self.name, kept, meta_data=dict(self.meta_data))

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DocumentCorpus) and (self.name, self.documents, self.meta_data) == (
            other.name, other.documents, other.meta_data)
