"""Which shard a document goes to, computed on the client exactly as Elasticsearch and OpenSearch route it.

Both engines hash the document's ``_routing`` (else its ``_id``) with Murmur3 (x86, 32 bit, seed 0) over the
string's UTF-16 code units in little-endian byte order, then map the hash onto the index's routing shards:
``floorMod(hash, routing_num_shards) // (routing_num_shards // number_of_shards)``. With
``index.routing_partition_size`` > 1 (a routed index spread over several shards) the id picks the shard inside the
routing value's partition: ``hash(routing) + floorMod(hash(id), partition_size)`` is hashed onto the shards instead.

Indices whose documents are routed by content (``index.mode: time_series`` by dimensions, ``index.routing_path``)
are not routed this way: :func:`routing_of` refuses them rather than predicting a wrong shard.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_MASK = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def murmur3_x86_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 x86 32-bit of ``data`` as a signed 32-bit int (Lucene's ``StringHelper.murmurhash3_x86_32``)."""
    h = seed & _MASK
    n = len(data)
    full = n - n % 4
    for i in range(0, full, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = _rotl((k * _C1) & _MASK, 15)
        h ^= (k * _C2) & _MASK
        h = (_rotl(h, 13) * 5 + 0xE6546B64) & _MASK
    tail = data[full:]
    if tail:
        k = int.from_bytes(tail, "little")
        k = _rotl((k * _C1) & _MASK, 15)
        h ^= (k * _C2) & _MASK
    h ^= n
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def routing_hash(value: str) -> int:
    """The engines' ``Murmur3HashFunction.hash(String)``: UTF-16 code units, low byte first."""
    return murmur3_x86_32(value.encode("utf-16-le"))


class IndexRouting(BaseModel):
    """What routing needs of an index (from the cluster state's index metadata)."""

    model_config = ConfigDict(frozen=True)

    index: str
    number_of_shards: int = Field(ge=1)
    routing_num_shards: int = Field(ge=1)
    routing_partition_size: int = Field(default=1, ge=1)

    @property
    def routing_factor(self) -> int:
        return self.routing_num_shards // self.number_of_shards

    def shard(self, doc_id: str, routing: str | None = None) -> int:
        """The shard number of a document with this ``_id`` (and ``_routing``, when given)."""
        if routing is None:
            h = routing_hash(doc_id)
        elif self.routing_partition_size > 1:
            h = routing_hash(routing) + routing_hash(doc_id) % self.routing_partition_size
            h = (h + (1 << 31)) % (1 << 32) - (1 << 31)  # Java int overflow of the sum
        else:
            h = routing_hash(routing)
        # Python's % is Java's Math.floorMod for a positive divisor.
        return (h % self.routing_num_shards) // self.routing_factor


def routing_of(index: str, metadata: dict[str, Any]) -> IndexRouting:
    """The routing of ``index`` from its entry in ``GET _cluster/state/metadata/<index>`` (``metadata.indices.<index>``).

    Raises ValueError for an index routed by content, naming the setting."""
    settings = metadata.get("settings", {}).get("index", {})
    mode = settings.get("mode")
    if mode == "time_series" or settings.get("routing_path"):
        raise ValueError(f"index {index} routes documents by their content (index.mode={mode}, "
                         f"index.routing_path={settings.get('routing_path')}): shards cannot be predicted from ids")
    shards = int(settings["number_of_shards"])
    return IndexRouting(index=index, number_of_shards=shards,
                        routing_num_shards=int(metadata.get("routing_num_shards", shards)),
                        routing_partition_size=int(settings.get("routing_partition_size", 1)))


class ShardTable(BaseModel):
    """Where each shard's primary of one index lives, read before a shard-aware bulk task starts."""

    model_config = ConfigDict(frozen=True)

    routing: IndexRouting
    primary_urls: dict[int, str]  # shard -> base URL of the node holding its primary
    id_prefix: str  # makes the client-side ids of this task unique across races into the same index


def _publish_url(address: str, scheme: str) -> str:
    # "host/127.0.0.1:9200" or "127.0.0.1:9200" (or "[::1]:9200")
    return f"{scheme}://{address.rsplit('/', 1)[-1]}"


def shard_table(index: str, state: dict[str, Any], nodes: dict[str, Any], scheme: str, id_prefix: str) -> ShardTable:
    """The table from ``GET _cluster/state/metadata,routing_table/<index>`` and ``GET _nodes/http``.

    Raises ValueError naming what is missing (an unassigned primary, a node without an HTTP address)."""
    meta = state.get("metadata", {}).get("indices", {}).get(index)
    table = state.get("routing_table", {}).get("indices", {}).get(index)
    if meta is None or table is None:
        raise ValueError(f"index {index} does not exist: create it before a shard-aware bulk")
    routing = routing_of(index, meta)
    urls: dict[int, str] = {}
    for shard, copies in table["shards"].items():
        # A relocating primary still is the primary, on its old node, until the new copy takes over.
        primary = next((c for c in copies if c.get("primary") and c.get("state") in ("STARTED", "RELOCATING")), None)
        if primary is None:
            raise ValueError(f"index {index}: shard {shard} has no started primary")
        node = nodes.get("nodes", {}).get(primary["node"], {})
        address = node.get("http", {}).get("publish_address")
        if not address:
            raise ValueError(f"index {index}: node {primary['node']} holding shard {shard} has no HTTP address")
        urls[int(shard)] = _publish_url(address, scheme)
    return ShardTable(routing=routing, primary_urls=urls, id_prefix=id_prefix)
