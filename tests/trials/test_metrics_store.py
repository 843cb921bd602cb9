"""The shared metrics store, live: races against the session's Elasticsearch write Rally's documents into a separate
store cluster -- Elasticsearch 8.19.21 with security on, and OpenSearch 2.19.1 -- which is frozen mid-race (the
race spools, ``bench store push`` catches up); a trial pushed from SQLite is compared with one written directly,
from a machine (BENCH_HOME) that has neither locally."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from bench.cli import main
from bench.provision.model import ClusterInfo
from bench.trials.metrics_store import config as store_config
from bench.trials.metrics_store.http import StoreHttp, StoreUnavailable
from bench.trials.sqlite import TrialStore
from tests.support.checkout import ROOT
from tests.support.esnode import LocalEngines, default_cache


@pytest.fixture(autouse=True)
def _no_store_left_configured() -> Iterator[None]:
    store_config.reset()
    yield
    store_config.reset()


@pytest.fixture(scope="module")
def secure_es_store(tmp_path_factory: pytest.TempPathFactory, local_engines: LocalEngines) -> Iterator[ClusterInfo]:
    prov, info = local_engines.start_cluster(tmp_path_factory.mktemp("store-es"),
                                             car=["defaults", "512mheap", "security"],
                                             car_params={"security_tls": False})  # a store with basic auth over HTTP
    try:
        yield info
    finally:
        prov.stop_all()


@pytest.fixture(autouse=True)
def _no_store_left_frozen(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The session's OpenSearch store (tests/conftest.py) is frozen by one test here: resumed after it, whatever
    happened, as the other store tests share it (torn down before ``monkeypatch`` forgets the variable)."""
    yield
    if os.environ.get("BENCH_TEST_STORE_FROZEN"):
        os.kill(int(os.environ.pop("BENCH_TEST_STORE_FROZEN")), signal.SIGCONT)


def _http(url: str, **options: Any) -> StoreHttp:
    return StoreHttp(store_config.from_url(url, options))


def _docs(http: StoreHttp, index: str, query: dict[str, Any], size: int = 10_000) -> list[dict[str, Any]]:
    http.request("POST", f"/{index}/_refresh?ignore_unavailable=true&allow_no_indices=true")
    _, res = http.request("POST", f"/{index}/_search?ignore_unavailable=true&allow_no_indices=true",
                          {"query": query, "size": size})
    return [h["_source"] for h in res["hits"]["hits"]]


def _first_samples(http: StoreHttp) -> bool:
    """Whether the race's first samples reached the store. A store creating the race's indices may answer 503 for
    a moment (no shard active yet): that is "not yet", not a failure of the race."""
    try:
        return bool(_docs(http, "spool-metrics-*", {"match_all": {}}, size=1))
    except StoreUnavailable:
        return False


def _race(capsys: pytest.CaptureFixture[str], target: str, *extra: str) -> str:
    assert main(["race", "--track=nginx", "--test-mode", "--quiet", f"--target-hosts={target}", *extra]) == 0
    out = capsys.readouterr().out
    return re.search(r"Trial ([0-9a-f]{32}) stored", out).group(1)  # type: ignore[union-attr]


def test_race_into_a_secured_elasticsearch_store_with_rallys_documents(
        es_target: str, secure_es_store: ClusterInfo, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    user, pw = secure_es_store.username, secure_es_store.password.get_secret_value()  # type: ignore[union-attr]
    host = secure_es_store.hosts[0].removeprefix("http://")
    # The password through the environment, the user in the URL: as a nightly job's secret store would pass it.
    monkeypatch.setenv(store_config.ENV_PASSWORD, pw)
    store_flags = [f"--metrics-store=http://{user}@{host}", "--metrics-store-options=index_prefix:sec,environment:ci"]
    trial_id = _race(capsys, es_target, *store_flags, "--user-tag=variant:baseline,night:n1",
                     "--telemetry=node-stats", "--telemetry-params=node-stats-sample-interval:0.5")

    http = _http(f"http://{host}", basic_auth_user=user, basic_auth_password=pw)
    with TrialStore() as local:
        samples = local.samples(trial_id)
        telemetry = local.telemetry(trial_id)
        summary = local.summary(trial_id)
    assert summary is not None and len(samples) > 0 and len(telemetry) > 0
    race = _docs(http, "sec-races-*", {"term": {"race-id": trial_id}})
    assert len(race) == 1
    r = race[0]
    assert (r["track"], r["challenge"], r["environment"], r["status"]) == ("nginx", "append-no-conflicts", "ci", "complete")
    assert r["user-tags"] == {"variant": "baseline", "night": "n1"} and re.fullmatch(r"\d{8}T\d{6}Z", r["race-timestamp"])
    assert r["cluster"]["distribution-version"] == "8.19.21"
    metrics = _docs(http, "sec-metrics-*", {"bool": {"filter": [{"term": {"race-id": trial_id}},
                                                                {"term": {"bench-record": "request"}}]}})
    # Rally's two documents per request: latency and service time, the same numbers as the local store's.
    assert sorted(d["name"] for d in metrics) == sorted(["latency", "service_time"] * len(samples))
    lat = sorted(d["value"] for d in metrics if d["name"] == "latency")
    assert lat == pytest.approx(sorted(samples["latency"] * 1000.0))
    one = next(d for d in metrics if d["name"] == "service_time" and d["sample-type"] == "normal")
    for field in ("@timestamp", "relative-time", "race-id", "race-timestamp", "environment", "track", "challenge",
                  "car", "name", "value", "unit", "task", "operation", "operation-type", "sample-type", "meta"):
        assert field in one, field
    assert one["meta"]["tag_variant"] == "baseline" and one["meta"]["success"] is True and one["unit"] == "ms"
    node_stats = _docs(http, "sec-metrics-*", {"bool": {"filter": [{"term": {"race-id": trial_id}},
                                                                   {"term": {"meta.device": "node-stats"}}]}})
    assert len(node_stats) == int((telemetry["device"] == "node-stats").sum()) and all(d["bench-record"] == "telemetry" for d in node_stats)
    results = _docs(http, "sec-results-*", {"term": {"race-id": trial_id}})
    tp = next(d for d in results if d["name"] == "throughput" and d["task"] == "index-append")
    assert tp["value"]["median"] == pytest.approx(summary.task("index-append").throughput.median)  # type: ignore[union-attr]
    assert {"latency", "service_time", "error_rate"} <= {d["name"] for d in results}
    # The telemetry section's report rows (CPU, GC, ...) as Rally-style single values.
    assert any((d.get("meta") or {}).get("section") == "telemetry" and "single" in d["value"] for d in results)

    # Another machine (an empty BENCH_HOME) lists, shows and reads the trial from the store alone.
    monkeypatch.setenv("BENCH_HOME", str(tmp_path / "other-machine"))
    assert main(["list", "trials", *store_flags]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith(trial_id[:12]))
    assert "[store]" in row
    assert main(["show", trial_id[:10], *store_flags]) == 0
    assert "index-append" in capsys.readouterr().out
    store_config.configure(store_config.from_cli(store_flags[0].split("=", 1)[1], "index_prefix:sec"))
    from bench.trials.open import open_store

    with open_store() as remote:
        pd.testing.assert_frame_equal(remote.samples(trial_id), samples)
        pd.testing.assert_frame_equal(remote.telemetry(trial_id), telemetry)
        assert remote.summary(trial_id) == summary

    # The password is nowhere: not in the store's documents, the local files or the output.
    everything = json.dumps(_docs(http, "sec-*", {"match_all": {}}))
    files = [p for p in (tmp_path / "bench-home").rglob("*") if p.is_file()]
    assert pw not in everything and pw not in capsys.readouterr().out
    for f in files:
        assert pw.encode() not in f.read_bytes(), f"the store's password leaked into {f}"


def _bench(home: Path, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "BENCH_HOME": str(home), "BENCH_CACHE": default_cache()}
    return subprocess.Popen([sys.executable, "-m", "bench", *args], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)


def test_store_frozen_mid_race_spools_then_push_and_a_migrated_trial_compares(
        es_target: str, os_cluster: ClusterInfo, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        bench_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store_url = os_cluster.hosts[0]
    flags = [f"--metrics-store={store_url}", "--metrics-store-options=index_prefix:spool"]
    http = _http(store_url)
    # 1. A trial stored locally only, before any metrics store (to be migrated).
    migrated = _race(capsys, es_target, "--challenge=index-only", "--user-tag=variant:base")

    # 2. A race whose store freezes (SIGSTOP: it takes connections and answers nothing) once samples flow.
    race = _bench(bench_home, "race", "--quiet", "--track=nginx", f"--target-hosts={es_target}", *flags,
                  "--challenge=index-only",
                  "--track-params=doc_count:30000,bulk_size:50,warmup_time_period:0", "--user-tag=variant:cand")
    deadline = time.monotonic() + 90
    pid = os_cluster.nodes[0].pid
    assert pid is not None
    frozen = False
    try:
        while race.poll() is None and time.monotonic() < deadline:
            if not frozen and _first_samples(http):
                os.kill(pid, signal.SIGSTOP)
                monkeypatch.setenv("BENCH_TEST_STORE_FROZEN", str(pid))
                frozen = True
            time.sleep(0.2)
        out, err = race.communicate(timeout=120)
    finally:  # a race left running would index into the next test's cluster
        if race.poll() is None:
            race.kill()
            race.wait(30)
    os.kill(pid, signal.SIGCONT)
    monkeypatch.delenv("BENCH_TEST_STORE_FROZEN")
    assert race.returncode == 0, err.decode()[-2000:]
    assert frozen, "the race ended before any sample reached the store"
    spooled = re.search(r"Trial ([0-9a-f]{32}) stored", out.decode()).group(1)  # type: ignore[union-attr]
    with TrialStore() as local:
        n_spooled = len(local.samples(spooled))
        assert local.get_trial(spooled).status == "complete"  # the frozen store did not fail the race

    assert main(["list", "trials", *flags]) == 0
    listing = capsys.readouterr().out
    row = next(line for line in listing.splitlines() if line.startswith(spooled[:12]))
    assert "rows not pushed" in row, listing
    assert "[local]" in next(line for line in listing.splitlines() if line.startswith(migrated[:12]))

    # 3. The store is back: push what it lacks, and migrate the SQLite-only trial.
    assert main(["store", "push", *flags]) == 0
    pushed = capsys.readouterr().out
    assert f"{spooled[:12]}: pushed ({n_spooled} samples" in pushed and f"{migrated[:12]}: pushed" in pushed
    latencies = _docs(http, "spool-metrics-*", {"bool": {"filter": [{"term": {"race-id": spooled}},
                                                                     {"term": {"name": "latency"}}]}}, size=10_000)
    assert len(latencies) == n_spooled  # every sample once: re-sent batches overwrite, never double
    assert main(["list", "trials", *flags]) == 0
    assert "[local+store]" in next(line for line in capsys.readouterr().out.splitlines()
                                   if line.startswith(spooled[:12]))

    # 4. From another machine: the migrated trial against one written directly, by id and by tag.
    monkeypatch.setenv("BENCH_HOME", str(tmp_path / "other-machine"))
    assert main(["compare", migrated, spooled, "--format", "json", *flags]) == 0
    cmp = json.loads(capsys.readouterr().out)
    assert json.dumps(cmp).count("index-append") > 0
    assert main(["compare", "--baseline", "tag:variant=base", "--candidate", "tag:variant=cand", *flags]) == 0
    assert "index-append" in capsys.readouterr().out


def test_downsampling_keeps_every_nth_sample_and_the_full_summary(
        es_target: str, os_cluster: ClusterInfo, capsys: pytest.CaptureFixture[str]) -> None:
    trial_id = _race(capsys, es_target, "--track-params=bulk_size:10")
    url = os_cluster.hosts[0]
    assert main(["store", "push", f"--metrics-store={url}",
                 "--metrics-store-options=index_prefix:ds,downsample_factor:10"]) == 0
    with TrialStore() as local:
        n, summary = len(local.samples(trial_id)), local.summary(trial_id)
    docs = _docs(_http(url), "ds-metrics-*", {"bool": {"filter": [{"term": {"race-id": trial_id}},
                                                                   {"term": {"name": "latency"}}]}})
    assert n >= 100 and len(docs) == (n + 9) // 10
    race = _docs(_http(url), "ds-races-*", {"term": {"race-id": trial_id}})[0]
    assert race["bench"]["summary"]["tasks"] == summary.model_dump(mode="json")["tasks"]  # type: ignore[union-attr]


def test_a_mapping_conflict_is_one_line(es_target: str, os_cluster: ClusterInfo,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    trial_id = _race(capsys, es_target)
    url = os_cluster.hosts[0]
    month = time.strftime("%Y-%m", time.gmtime())
    http = _http(url)
    http.request("PUT", f"/clash-metrics-{month}", {"mappings": {"properties": {"task": {"type": "long"}}}})
    assert main(["store", "push", trial_id, f"--metrics-store={url}", "--metrics-store-options=index_prefix:clash"]) == 1
    out = capsys.readouterr().out.strip()
    assert len(out.splitlines()) == 1 and "not pushed" in out and f"clash-metrics-{month}" in out
    assert "mapping conflict" in out and "Traceback" not in out


def test_bad_store_configuration_is_one_line(capsys: pytest.CaptureFixture[str], bench_home: Path) -> None:
    assert main(["list", "trials", "--metrics-store=ftp://x"]) == 2
    assert capsys.readouterr().err.strip().startswith("error: --metrics-store: 'ftp://x' is not http(s)")
    bench_home.mkdir(parents=True, exist_ok=True)
    (bench_home / "bench.ini").write_text("[reporting]\ndatastore.type = elasticsearch\n")
    assert main(["list", "trials"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "datastore.host is missing" in err
    (bench_home / "bench.ini").write_text("[reporting]\ndatastore.type = elasticsearch\ndatastore.host = 127.0.0.1\n"
                                          "datastore.port = 1\ndatastore.user = u\ndatastore.password = s3cr3t-pw\n")
    assert main(["list", "trials"]) == 0  # an unreachable store: local trials, and a note saying why
    captured = capsys.readouterr()
    assert "cannot be reached" in captured.out and "s3cr3t-pw" not in captured.out + captured.err


def test_rallys_ini_keys_and_the_flag_before_the_subcommand(bench_home: Path, capsys: pytest.CaptureFixture[str],
                                                            tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    bench_home.mkdir(parents=True, exist_ok=True)
    (bench_home / "bench.ini").write_text(
        "[system]\nenv.name = nightly\n[reporting]\ndatastore.type = elasticsearch\ndatastore.host = metrics.example\n"
        "datastore.port = 9243\ndatastore.secure = true\ndatastore.user = racer\ndatastore.password = pw-from-ini\n"
        f"datastore.ssl.verification_mode = none\ndatastore.ssl.certificate_authorities = {ca}\n"
        "metrics.request.downsample.factor = 5\n")
    cfg = store_config.configured_store()
    assert cfg is not None and cfg.url == "https://metrics.example:9243" and cfg.environment == "nightly"
    assert cfg.downsample == 5 and cfg.prefix == "rally" and cfg.options.basic_auth_user == "racer"
    assert cfg.options.verify_certs is False and cfg.options.ca_certs == ca
    assert "pw-from-ini" not in cfg.key + store_config.describe(cfg)
    # The flag wins over the ini file, also written before the subcommand.
    assert main(["--metrics-store=http://127.0.0.1:1", "list", "trials"]) == 0
    out = capsys.readouterr().out
    assert "note: metrics store http://127.0.0.1:1 (rally-*) cannot be reached" in out


@contextlib.contextmanager
def _tls_proxy(tmp_path: Path, upstream_port: int) -> Iterator[tuple[int, Path]]:
    """HTTPS on 127.0.0.1 (a self-signed certificate) in front of the plain-HTTP store: (port, CA file)."""
    from tests.support.tls_server import self_signed_cert

    cert, key = self_signed_cert(tmp_path / "tls")
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    loop = asyncio.new_event_loop()

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = loop.run_until_complete(asyncio.start_server(handle, "127.0.0.1", 0, ssl=ctx))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield server.sockets[0].getsockname()[1], cert
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


def test_a_tls_store_needs_its_ca(os_cluster: ClusterInfo, es_target: str, capsys: pytest.CaptureFixture[str],
                                  tmp_path: Path) -> None:
    trial_id = _race(capsys, es_target)
    with _tls_proxy(tmp_path, os_cluster.nodes[0].http_port) as (port, ca):
        url = f"--metrics-store=https://127.0.0.1:{port}"
        assert main(["store", "push", trial_id, url, "--metrics-store-options=index_prefix:tls"]) == 1
        out = capsys.readouterr().out.strip()
        assert len(out.splitlines()) == 1 and "TLS verification failed" in out and "ca_certs:" in out
        assert "template" not in out
        assert main(["store", "push", trial_id, url, f"--metrics-store-options=index_prefix:tls,ca_certs:{ca}"]) == 0
        assert f"{trial_id[:12]}: pushed" in capsys.readouterr().out
    assert _docs(_http(os_cluster.hosts[0]), "tls-races-*", {"term": {"race-id": trial_id}})


def test_a_wrong_store_password_names_the_401_and_fails_the_race_before_it_runs(
        es_target: str, secure_es_store: ClusterInfo, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    user = secure_es_store.username
    host = secure_es_store.hosts[0].removeprefix("http://")
    monkeypatch.setenv(store_config.ENV_PASSWORD, "not-the-password")
    rc = main(["race", "--track=nginx", "--test-mode", "--quiet", f"--target-hosts={es_target}",
               f"--metrics-store=http://{user}@{host}", "--metrics-store-options=index_prefix:wrongpw"])
    out, err = capsys.readouterr()
    # Retrying cannot cure a refused password: checked at the start, as a cluster's credentials are, the race says
    # so in one line and exits non-zero before it measures anything.
    assert rc != 0
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "HTTP 401" in lines[0] and store_config.ENV_PASSWORD in lines[0] and "nothing was started" in lines[0]
    assert "not-the-password" not in err + out
    assert "Trial " not in out
    with TrialStore() as local:
        assert local.list_trials() == []
