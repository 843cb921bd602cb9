"""Bulk request bodies: ``bodies`` (prepared as bytes before the clock starts), ``step_corpora`` (a step's document sets
on a remote worker) and the shard-aware path (``routed_bodies``, ``shard_routing``, ``shard_lookup``,
``routing_watch``)."""
