"""A leader/follower pair that answers like a CCR-capable pair, built from the recorded answers in
../shared/fixtures, for races that cannot run a real CCR pair here.

    with CcrPair("elasticsearch", lag_polls=3) as pair:
        bench race ... --target-hosts=pair.target_hosts

The leader accepts bulks and counts documents (its shard's max seq no = docs - 1). The follower answers the
recorded ``<index>/_ccr/stats`` (Elasticsearch) or ``_plugins/_replication/<index>/_status`` (OpenSearch)
shapes with the checkpoints of this race: after the leader changed, the follower lags for ``lag_polls`` polls,
then reports the leader's checkpoint (lagging -> caught up, like the recorded sequence). Everything else is the
recorded bodies as they are. Requests are kept in ``pair.requests`` as (cluster, method, path).
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, Self

from aiohttp import web

from tests.support.fixture_server import fixture_json

ES, OS = "elasticsearch-ccr", "opensearch-replication"


class _Index:
    def __init__(self) -> None:
        self.docs = 0  # distinct documents
        self.ops = 0  # operations (each takes a sequence number)
        self.ids: set[str] = set()

    @property
    def max_seq_no(self) -> int:
        return self.ops - 1


class CcrPair:
    def __init__(self, engine: str = "elasticsearch", *, lag_polls: int = 3, version: str | None = None) -> None:
        self.engine = engine
        self.version = version or ("8.19.21" if engine == "elasticsearch" else "2.19.1")
        self.lag_polls = lag_polls
        self.leader_indices: dict[str, _Index] = {}
        self.follower_indices: set[str] = set()
        self.following: dict[str, dict[str, Any]] = {}  # follower index -> {leader, checkpoint, polls, paused}
        self.remote_seeds: list[str] = []
        self.closed: set[str] = set()  # follower indices closed (Elasticsearch's promotion)
        self.promoted: dict[str, int] = {}  # unfollowed indices -> their documents
        # Searches fail on the stand-in (no fixture answers them) unless a test asks for the leader document a
        # failover drill copies as its probe.
        self.answer_leader_search = False
        self.requests: list[tuple[str, str, str]] = []
        self.ports: dict[str, int] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def target_hosts(self) -> str:
        return f"leader:127.0.0.1:{self.ports['leader']},follower:127.0.0.1:{self.ports['follower']}"

    # -- helpers --------------------------------------------------------------------------------------------
    @staticmethod
    def _json(body: Any, status: int = 200) -> web.Response:
        return web.Response(status=status, body=json.dumps(body).encode(), content_type="application/json")

    def _nodes(self, cluster: str) -> dict[str, Any]:
        node: dict[str, Any] = {"name": f"{cluster}-0", "version": self.version,
                                "transport_address": f"127.0.0.1:{self.ports[cluster] + 1}", "roles": ["data"],
                                "transport": {"publish_address": f"127.0.0.1:{self.ports[cluster] + 1}"}}
        if self.engine == "elasticsearch":
            node["build_flavor"] = "default"
        return {"cluster_name": cluster, "nodes": {f"{cluster}-node": node}}

    def _progress(self, index: str) -> dict[str, Any] | None:
        f = self.following.get(index)
        if f is None or f["paused"]:
            return None
        leader = self.leader_indices.get(f["leader"], _Index())
        target = leader.max_seq_no
        if f["checkpoint"] < target and self.engine == "elasticsearch" and not self._linked():
            pass  # the link is cut: the follower stays where it was
        elif f["checkpoint"] < target:
            f["polls"] += 1
            if f["polls"] > self.lag_polls:  # caught up after lag_polls polls
                f["checkpoint"], f["polls"] = target, 0
        return {"leader": f["leader"], "leader_gcp": target, "follower_gcp": f["checkpoint"]}

    # -- elasticsearch follower answers ------------------------------------------------------------------
    def _es_index_stats(self, index: str) -> dict[str, Any] | None:
        p = self._progress(index)
        if p is None:
            return None
        body = fixture_json(ES, "index_ccr_stats.json")["indices"][0]
        body["index"] = index
        shard = body["shards"][0]
        shard.update(remote_cluster="leader", leader_index=p["leader"], follower_index=index,
                     leader_global_checkpoint=p["leader_gcp"], leader_max_seq_no=p["leader_gcp"],
                     follower_global_checkpoint=p["follower_gcp"], follower_max_seq_no=p["follower_gcp"],
                     operations_read=p["follower_gcp"] + 1, operations_written=p["follower_gcp"] + 1)
        return body

    # -- request handling --------------------------------------------------------------------------------------
    async def _handle(self, request: web.Request, cluster: str) -> web.Response:
        body = await request.read()
        with self._lock:
            self.requests.append((cluster, request.method, request.path))
            return self._answer(cluster, request.method, request.path, dict(request.query), body)

    def _answer(self, cluster: str, method: str, path: str, query: dict[str, str], raw: bytes) -> web.Response:
        parts = [p for p in path.split("/") if p]
        if parts[:1] == ["_nodes"]:
            return self._json(self._nodes(cluster))
        if path == "/_license" and method == "GET":
            return self._json({"license": {"type": "trial", "status": "active"}})
        if path == "/_license/start_trial":
            return self._json(fixture_json(ES, "start_trial_recorded_8.19.21.json"))
        if path == "/_remote/info":
            if cluster == "follower" and self.remote_seeds:
                info = fixture_json(ES, "remote_info_recorded_8.19.21.json")
                info["leader"]["seeds"] = self.remote_seeds
                return self._json(info)
            return self._json({})
        if path == "/_cluster/settings" and method == "PUT":
            settings = json.loads(raw)["persistent"]
            if "cluster.remote.leader.seeds" in settings:
                self.remote_seeds = list(settings["cluster.remote.leader.seeds"] or [])
            return self._json(fixture_json(OS, "remote_settings.json"))
        if path == "/_cluster/settings" and method == "GET":  # flat, as bench asks for it
            seeds = {"cluster.remote.leader.seeds": self.remote_seeds} if self.remote_seeds else {}
            return self._json({"persistent": seeds, "transient": {}})
        if r := self._promotion(cluster, method, parts):
            return r
        if parts[:2] == ["_cluster", "health"]:
            return self._json({"status": "green", "number_of_nodes": 1, "timed_out": False})
        if path == "/_bulk" and cluster == "leader":
            lines = [ln for ln in raw.split(b"\n") if ln.strip()]
            for action in lines[0::2]:
                meta = next(iter(json.loads(action).values()))
                idx = self.leader_indices.setdefault(meta.get("_index", "logs"), _Index())
                idx.ops += 1
                doc_id = meta.get("_id")
                if doc_id is None or doc_id not in idx.ids:
                    idx.docs += 1
                if doc_id is not None:
                    idx.ids.add(doc_id)
            return self._json({"errors": False, "items": []})
        # elasticsearch CCR / opensearch replication
        if self.engine == "elasticsearch":
            r = self._es(cluster, method, parts, query, raw)
        else:
            r = self._os(cluster, method, parts, raw)
        if r is not None:
            return r
        # plain index calls
        if len(parts) == 1 and not parts[0].startswith("_"):
            name = parts[0]
            if method == "PUT":
                if cluster == "leader":
                    self.leader_indices[name] = _Index()
                return self._json({"acknowledged": True, "index": name})
            if method == "DELETE":
                existed = self.leader_indices.pop(name, None) if cluster == "leader" else \
                    (name in self.follower_indices and (self.follower_indices.discard(name) or True))
                if not existed:
                    return self._json({"error": {"type": "index_not_found_exception"}, "status": 404}, 404)
                return self._json({"acknowledged": True})
        if len(parts) == 2 and parts[1] == "_refresh":
            return self._json({"_shards": {"total": 1, "successful": 1, "failed": 0}})
        if len(parts) == 2 and parts[1] == "_count":
            return self._json({"count": self._count(cluster, parts[0])})
        if len(parts) == 2 and parts[1] == "_stats" and cluster == "leader" and parts[0] in self.leader_indices:
            idx = self.leader_indices[parts[0]]
            shard = {"routing": {"primary": True, "state": "STARTED"},
                     "seq_no": {"max_seq_no": idx.max_seq_no, "local_checkpoint": idx.max_seq_no,
                                "global_checkpoint": idx.max_seq_no}}
            return self._json({"indices": {parts[0]: {"shards": {"0": [shard]}}}})
        if len(parts) == 2 and parts[1] == "_stats" and cluster == "follower" and parts[0] in self.following:
            gcp = self.following[parts[0]]["checkpoint"]  # the follower's own checkpoint (reading it moves nothing)
            shard = {"routing": {"primary": True, "state": "STARTED"},
                     "seq_no": {"max_seq_no": gcp, "local_checkpoint": gcp, "global_checkpoint": gcp}}
            return self._json({"indices": {parts[0]: {"shards": {"0": [shard]}}}})
        return self._json({"error": f"no fixture for {method} {path}", "status": 404}, 404)

    def _linked(self) -> bool:
        """No seeds set on the follower pointing elsewhere than the leader's transport address (a link cut by
        pointing the seeds at another address replicates nothing)."""
        return not self.remote_seeds or self.remote_seeds == [f"127.0.0.1:{self.ports['leader'] + 1}"]

    def _promotion(self, cluster: str, method: str, parts: list[str]) -> web.Response | None:
        """Elasticsearch's promotion of a follower (close, unfollow, open) and writes to the promoted index; a
        leader document to copy (``_search``)."""
        if (self.answer_leader_search and cluster == "leader" and len(parts) == 2 and parts[1] == "_search"
                and parts[0] in self.leader_indices):
            return self._json({"hits": {"hits": [{"_id": "1", "_source": {"n": 1}}]}})
        if cluster != "follower" or len(parts) < 2:
            return None
        index, action = parts[0], parts[1]
        if action in ("_close", "_open"):
            self.closed.discard(index) if action == "_open" else self.closed.add(index)
            return self._json({"acknowledged": True})
        if parts[1:] == ["_ccr", "unfollow"]:
            f = self.following.get(index)
            if f is None or not f["paused"] or index not in self.closed:
                return self._json({"error": {"type": "illegal_argument_exception",
                                             "reason": "pause and close the follower first"}, "status": 400}, 400)
            self.promoted[index] = self._count("follower", index)
            del self.following[index]
            return self._json({"acknowledged": True})
        if action == "_doc" and len(parts) == 3:
            if index in self.following or index in self.closed or index not in self.promoted:
                return self._json({"error": {"type": "cluster_block_exception", "reason": "read-only follower"},
                                   "status": 403}, 403)
            self.promoted[index] += 1 if method == "PUT" else -1
            return self._json({"result": "created" if method == "PUT" else "deleted"}, 201 if method == "PUT" else 200)
        return None

    def _count(self, cluster: str, index: str) -> int:
        if cluster == "leader":
            return self.leader_indices.get(index, _Index()).docs
        if index in self.promoted:
            return self.promoted[index]
        f = self.following.get(index)
        if f is None:
            return 0
        leader = self.leader_indices.get(f["leader"], _Index())
        return leader.docs if f["checkpoint"] >= leader.max_seq_no else 0

    def _es(self, cluster: str, method: str, parts: list[str], query: dict[str, str], raw: bytes) -> web.Response | None:
        if parts == ["_ccr", "stats"]:
            body = fixture_json(ES, "ccr_stats_paused_follower_vanished.json")
            body["follow_stats"]["indices"] = [s for s in (self._es_index_stats(i) for i in sorted(self.following)) if s]
            return self._json(body)
        if len(parts) == 3 and parts[1] == "_ccr":
            index, action = parts[0], parts[2]
            if action == "follow" and method == "PUT":
                req = json.loads(raw)
                self.following[index] = {"leader": req["leader_index"], "checkpoint": -1, "polls": 0, "paused": False,
                                         "params": req}
                self.follower_indices.add(index)
                return self._json(fixture_json(ES, "put_follow.json"))
            if action == "stats":
                s = self._es_index_stats(index)
                return self._json({"indices": [s] if s else []})
            if action == "info" and index == "_all":
                return self._json({"follower_indices": [
                    {"follower_index": i, "remote_cluster": "leader", "leader_index": f["leader"],
                     "status": "paused" if f["paused"] else "active"} for i, f in sorted(self.following.items())]})
            if action == "info":
                f = self.following.get(index)
                status = "paused" if f and f["paused"] else "active"
                return self._json({"follower_indices": [{"follower_index": index, "remote_cluster": "leader",
                                                         "leader_index": f["leader"] if f else index,
                                                         "status": status}]})
            if action in ("pause_follow", "resume_follow") and index in self.following:
                self.following[index]["paused"] = action == "pause_follow"
                return self._json(fixture_json(ES, f"{action}.json"))
        return None

    def _os(self, cluster: str, method: str, parts: list[str], raw: bytes) -> web.Response | None:
        if parts[:2] != ["_plugins", "_replication"]:
            return None
        rest = parts[2:]
        if rest == ["follower_stats"]:
            body = fixture_json(OS, "follower_stats.json")
            template = body["index_stats"].pop("follower-01")
            for index, f in self.following.items():
                if not f["paused"]:
                    body["index_stats"][index] = {**template, "follower_checkpoint": f["checkpoint"]}
            return self._json(body)
        if rest == ["leader_stats"]:
            return self._json(fixture_json(OS, "leader_stats.json"))
        if rest == ["autofollow_stats"]:
            return self._json(fixture_json(OS, "autofollow_stats_empty.json"))
        if len(rest) == 2 and rest[1] == "_start":
            req = json.loads(raw)
            self.following[rest[0]] = {"leader": req["leader_index"], "checkpoint": -1, "polls": 0, "paused": False,
                                       "params": req}
            self.follower_indices.add(rest[0])
            return self._json(fixture_json(OS, "start.json"))
        if len(rest) == 2 and rest[1] == "_status":
            p = self._progress(rest[0])
            if p is None:
                return self._json(fixture_json(OS, "status_not_replicated.json"))
            body = fixture_json(OS, "status_lagging.json")
            body.update(leader_index=p["leader"], follower_index=rest[0])
            body["syncing_details"].update(leader_checkpoint=p["leader_gcp"], follower_checkpoint=p["follower_gcp"],
                                           seq_no=p["follower_gcp"] + 1)
            return self._json(body)
        return None

    # -- lifecycle ---------------------------------------------------------------------------------------------
    def __enter__(self) -> Self:
        ready = threading.Event()
        errors: list[BaseException] = []
        runners: list[web.AppRunner] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                for cluster in ("leader", "follower"):
                    app = web.Application(client_max_size=1 << 30)

                    async def handler(request: web.Request, c: str = cluster) -> web.Response:
                        return await self._handle(request, c)

                    app.router.add_route("*", "/{tail:.*}", handler)
                    runner = web.AppRunner(app, access_log=None)
                    loop.run_until_complete(runner.setup())
                    site = web.TCPSite(runner, "127.0.0.1", 0)
                    loop.run_until_complete(site.start())
                    self.ports[cluster] = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
                    runners.append(runner)
            except BaseException as e:  # noqa: BLE001
                errors.append(e)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            for r in runners:
                loop.run_until_complete(r.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name="ccr-pair", daemon=True)
        self._thread.start()
        if not ready.wait(10) or errors:
            raise RuntimeError(f"ccr pair did not start: {errors}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)


__all__ = ["CcrPair"]
