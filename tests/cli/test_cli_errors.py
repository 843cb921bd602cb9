"""Bad input and unreachable clusters through the real CLI (``bench.cli.main``): every case must end in
ONE clear line on stderr naming the culprit, a non-zero exit code, no traceback, and — once a trial was
created — a trial stored as failed."""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

import psutil
import pytest

from bench.cli import main
from bench.trials.sqlite import TrialInfo, TrialStore
from tests.support.http_serving import serving

pytestmark = pytest.mark.timeout(180)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["race", "--quiet", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(err: str, *needles: str) -> str:
    """The single stderr line; fails unless it is exactly one 'error: ...' line holding every needle."""
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got: {err!r}"
    line = lines[0]
    assert line.startswith("error: "), line
    for n in needles:
        assert n in line, f"{n!r} not in {line!r}"
    return line


def only_trial() -> TrialInfo:
    with TrialStore() as store:
        trials = store.list_trials()
    assert len(trials) == 1, trials
    return trials[0]


def no_trial() -> None:
    with TrialStore() as store:
        assert store.list_trials() == []


def sample_count(trial_id: str) -> int:
    with TrialStore() as store:
        return len(store.samples(trial_id))


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket is closed


def write_track(folder: Path, text: str, extra: dict[str, str] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "track.json").write_text(text)
    for name, body in (extra or {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(body)
    return folder


# -- track files --------------------------------------------------------------------------------------------


def test_malformed_track_json_names_file_line_and_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    track = write_track(tmp_path / "bad-json", '{\n  "version": 2,\n  "schedule": [\n    {"operation": '
                                                '{"operation-type": "sleep" "duration": 1}}\n  ]\n}\n')
    rc, _, err = run(capsys, f"--track-path={track}", f"--target-hosts=127.0.0.1:{closed_port()}")
    assert rc != 0
    line = one_line_error(err, str(track / "track.json"))
    assert "line 4 column 46" in line or "4:46" in line, line
    no_trial()  # a track that cannot be read never starts a trial


def test_malformed_jinja_names_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    track = write_track(tmp_path / "bad-jinja", '{% import "rally.helpers" as rally with context %}\n'
                        '{"version": 2, "operations": [{{ rally.collect(parts="operations/*.json") }}],\n'
                        ' "schedule": [{"operation": "search-all"}]}\n',
                        {"operations/search.json": '{\n  "name": "search-all",\n  "operation-type": "search",\n'
                                                   '  "index": "{{ index_name | default(\'x\') }"\n}\n'})
    rc, _, err = run(capsys, f"--track-path={track}", f"--target-hosts=127.0.0.1:{closed_port()}")
    assert rc != 0
    one_line_error(err, f"{track / 'operations' / 'search.json'}:4:", "Jinja2")
    no_trial()


def test_unknown_operation_type_names_type_and_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    track = write_track(tmp_path / "unknown-op", json.dumps({
        "version": 2, "operations": [{"name": "stats", "operation-type": "reindex"}],
        "schedule": [{"operation": "stats", "iterations": 3}]}))
    rc, _, err = run(capsys, f"--track-path={track}", f"--target-hosts=127.0.0.1:{closed_port()}")
    assert rc != 0
    one_line_error(err, "reindex", str(track / "track.json"), "search")  # and what exists instead
    no_trial()


@pytest.mark.parametrize("args, needles", [
    (["--track=no-such-track"], ["no-such-track", "nginx", "http_logs"]),
    (["--track=nginx", "--challenge=no-such-challenge"], ["no-such-challenge", "append-no-conflicts",
                                                         "index-only"]),
    (["--track=nginx", "--car=defaults,no-such-car"], ["no-such-car", "defaults", "4gheap", "security"]),
], ids=["track", "challenge", "car"])
def test_unknown_names_list_what_exists(args: list[str], needles: list[str],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(capsys, *args)
    assert rc != 0
    one_line_error(err, *needles)
    no_trial()


def test_missing_corpus_file_fails_the_trial(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    track = write_track(tmp_path / "missing-corpus", json.dumps({
        "version": 2, "indices": [{"name": "docs"}],
        "corpora": [{"name": "gone", "documents": [{"source-file": "documents.json.bz2", "document-count": 10}]}],
        "schedule": [{"operation": {"operation-type": "bulk", "bulk-size": 5}}]}))
    rc, _, err = run(capsys, f"--track-path={track}", f"--target-hosts=127.0.0.1:{closed_port()}")
    assert rc != 0
    line = one_line_error(err, "documents.json.bz2", "base-url")
    trial = only_trial()
    assert trial.status == "failed"
    assert trial.error and "documents.json.bz2" in trial.error and trial.error in line


# -- options ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("arg, needles", [
    ("--client-options=verfy_certs:false", ["--client-options", "verfy_certs"]),
    ("--client-options=ca_certs:/no/such/ca.pem", ["ca_certs", "/no/such/ca.pem"]),
    ("--client-options=timeout:soon", ["timeout", "number"]),
    ("--target-hosts=a:b:c:d", ["--target-hosts", "'a:b:c:d'"]),  # also: no rich emoji for ':b:'
    ("--track-params=bulk_sizee:10", ["bulk_sizee", "bulk_size"]),
    ("--track-params=/no/such/params.json", ["--track-params", "/no/such/params.json"]),
    ("--nodes=0", ["--nodes"]),
    ("--user-tag=novalue", ["--user-tag", "novalue"]),
], ids=["client-option-typo", "ca-certs-missing", "timeout-type", "target-hosts", "unused-track-param",
        "track-params-file", "nodes", "user-tag"])
def test_bad_options_are_one_line(arg: str, needles: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(capsys, "--track=nginx", "--test-mode", f"--target-hosts=127.0.0.1:{closed_port()}", arg)
    assert rc == 2
    one_line_error(err, *needles)
    no_trial()


def test_unwritable_report_file_fails_before_the_race(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for report, needles in ((blocker / "report.md", ["cannot write report", "a-file", "--report-file"]),
                            (tmp_path, ["--report-file", "is a folder"])):
        rc, _, err = run(capsys, "--track=nginx", "--test-mode", f"--target-hosts=127.0.0.1:{closed_port()}",
                         f"--report-file={report}")
        assert rc == 2
        one_line_error(err, *needles)
        no_trial()


def test_soft_deletes_off_on_elasticsearch_8_fails_before_provisioning(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(capsys, "--track=nginx", "--test-mode", "--car=defaults,soft-deletes-off")
    assert rc == 2
    one_line_error(err, "soft-deletes-off", "Elasticsearch 8.19.21 refuses", "Elasticsearch < 8 or OpenSearch < 2")
    no_trial()


# -- clusters that cannot be used ---------------------------------------------------------------------------


def test_unreachable_target_hosts(capsys: pytest.CaptureFixture[str]) -> None:
    port = closed_port()
    rc, out, err = run(capsys, "--track=nginx", "--test-mode", f"--target-hosts=127.0.0.1:{port}")
    assert rc != 0
    one_line_error(err, "cannot connect", f"127.0.0.1:{port}", "--target-hosts")
    trial = only_trial()
    assert trial.id in out
    assert trial.status == "failed" and "cannot connect" in (trial.error or "")


def test_tls_verification_failure_then_ca_certs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.tls_server import tls_es_server

    track = write_track(tmp_path / "health", json.dumps({
        "version": 2, "schedule": [{"operation": {"name": "health", "operation-type": "cluster-health"}}]}))
    with tls_es_server(tmp_path / "tls") as (host_port, cert):
        rc, _, err = run(capsys, f"--track-path={track}", f"--target-hosts={host_port}",
                         "--client-options=use_ssl:true")
        assert rc != 0
        one_line_error(err, "TLS certificate verification failed", f"https://{host_port}", "ca_certs")
        assert only_trial().status == "failed"

        # Plain HTTP to an HTTPS-only server: a hint at use_ssl rather than a bare "Server disconnected".
        rc, _, err = run(capsys, f"--track-path={track}", f"--target-hosts={host_port}")
        assert rc != 0
        one_line_error(err, f"http://{host_port}", "use_ssl:true")

        # With the certificate as CA the connection check passes (this server answers like ES).
        rc, out, err = run(capsys, f"--track-path={track}", f"--target-hosts={host_port}",
                           f"--client-options=use_ssl:true,ca_certs:{cert}")
        assert "TLS" not in err and "Traceback" not in err
        assert f"elasticsearch 8.19.21, 1 node(s) at https://{host_port}" in out
        assert rc == 0, err


def test_on_error_abort_stops_at_first_failure(es_target: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    track = write_track(tmp_path / "search-missing", json.dumps({
        "version": 2,
        "operations": [{"name": "search-missing", "operation-type": "search", "index": "bench-no-such-index",
                        "body": {"query": {"match_all": {}}}}],
        "schedule": [{"operation": "search-missing", "clients": 2, "iterations": 500}]}))
    rc, _, err = run(capsys, f"--track-path={track}", f"--target-hosts={es_target}", "--on-error=abort")
    assert rc != 0
    one_line_error(err, "search-missing", "404", "bench-no-such-index", "--on-error=abort")
    trial = only_trial()
    assert trial.status == "failed" and "404" in (trial.error or "")
    taken = sample_count(trial.id)
    assert 0 < taken < 1000  # stopped early, with what was measured

    # The same race with the default --on-error=continue runs to the end and records the errors.
    rc, out, err = run(capsys, f"--track-path={track}", f"--target-hosts={es_target}")
    assert rc == 4, err  # every request of its only task failed: nothing was measured (docs: exit codes)
    # The headline's line of the task: no throughput, every request failed.
    line = next(x for x in out.splitlines() if x.startswith("search-missing "))
    assert "none: all failed" in line and "100% (1,000)" in line, out


# -- provisioning failures ----------------------------------------------------------------------------------


def _java_of(trial_id: str) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if "java" in cmd and trial_id in cmd:
            out.append(p)
    return out


@pytest.mark.usefixtures("local_engines")  # a local race: the provisioner finds the port taken
def test_http_port_in_use(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        rc, _, err = run(capsys, "--track=nginx", "--test-mode", "--car=defaults,512mheap", f"--http-port={port}")
    assert rc != 0
    one_line_error(err, f"port {port}", "already in use", "--http-port")
    trial = only_trial()
    assert trial.status == "failed" and str(port) in (trial.error or "")
    assert _java_of(trial.id) == []


@pytest.fixture
def bad_checksum_repo(tmp_path: Path) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 serving es-8.19.21.zip with a .sha1 that does not match it."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "es-8.19.21.zip").write_bytes(b"PK\x05\x06" + b"\0" * 18)  # an empty zip
    wrong = hashlib.sha1(b"something else").hexdigest()
    (root / "es-8.19.21.zip.sha1").write_text(wrong + "\n")
    with serving(partial(_QuietFiles, directory=str(root))) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}/es-{{version}}.zip"


class _QuietFiles(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.usefixtures("local_engines")  # a local race: the provisioner refuses the download
def test_distribution_checksum_mismatch(bad_checksum_repo: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))  # this bad download must not touch the real cache
    url = bad_checksum_repo.replace("{version}", "8.19.21")
    rc, _, err = run(capsys, "--track=nginx", "--test-mode", "--car=defaults,512mheap",
                     f"--distribution-repository={bad_checksum_repo}")
    assert rc != 0
    one_line_error(err, "checksum", url, hashlib.sha1(b"something else").hexdigest())
    trial = only_trial()
    assert trial.status == "failed" and "checksum" in (trial.error or "")
    assert _java_of(trial.id) == []
    # Nothing unverified is left where a later race would pick it up.
    assert not [p for p in (tmp_path / "cache").rglob("es-8.19.21.zip") if p.is_file()]


@pytest.mark.usefixtures("local_engines")  # a local race: the provisioner finds no distribution
def test_missing_distribution_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no-such-elasticsearch.zip"
    rc, _, err = run(capsys, "--track=nginx", "--test-mode", "--car=defaults,512mheap",
                     f"--distribution-path={missing}")
    assert rc != 0
    one_line_error(err, str(missing), "does not exist")
    trial = only_trial()
    assert trial.status == "failed"
    assert _java_of(trial.id) == []


def test_target_that_is_not_elasticsearch(bad_checksum_repo: str, capsys: pytest.CaptureFixture[str]) -> None:
    # A plain file server: GET _nodes answers 404 with an HTML page.
    host_port = bad_checksum_repo.removeprefix("http://").split("/")[0]
    rc, _, err = run(capsys, "--track=nginx", "--test-mode", f"--target-hosts={host_port}")
    assert rc != 0
    one_line_error(err, f"http://{host_port}", "404", "_nodes")
    assert only_trial().status == "failed"


def test_https_target_host_verifies_the_certificate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An https:// host means TLS with verification, with or without use_ssl."""
    from tests.support.tls_server import tls_es_server

    track = write_track(tmp_path / "health", json.dumps({
        "version": 2, "schedule": [{"operation": {"name": "health", "operation-type": "cluster-health"}}]}))
    with tls_es_server(tmp_path / "tls") as (host_port, cert):
        url = f"https://{host_port}"
        rc, _, err = run(capsys, f"--track-path={track}", f"--target-hosts={url}")
        assert rc != 0
        one_line_error(err, "TLS certificate verification failed", url, "ca_certs")

        for options in (f"ca_certs:{cert}", "verify_certs:false"):
            rc, out, err = run(capsys, f"--track-path={track}", f"--target-hosts={url}", f"--client-options={options}")
            assert "Traceback" not in err and "TLS" not in err
            assert f"elasticsearch 8.19.21, 1 node(s) at {url}" in out
            assert rc == 0, err

        # An explicit http:// host with use_ssl:true is a contradiction, refused before anything is sent.
        rc, _, err = run(capsys, f"--track-path={track}", f"--target-hosts=http://{host_port}",
                         "--client-options=use_ssl:true")
        assert rc != 0
        one_line_error(err, f"http://{host_port}", "use_ssl:true", "https://")


def test_https_target_host_bulk_path_verifies_the_certificate(tmp_path: Path) -> None:
    """The bulk HTTP/1.1 pools (not aiohttp) take the same verifying TLS context for an https:// host."""
    import ssl

    from bench.http.client import ClusterTarget, RawHttp, parse_client_options
    from tests.support.tls_server import tls_es_server

    async def bulk(target: ClusterTarget) -> tuple[int, bytes]:
        async with RawHttp(target, connections=1) as http:
            return await http.post("/_bulk", b'{"index":{}}\n{"a":1}\n')

    with tls_es_server(tmp_path / "tls") as (host_port, cert):
        hosts = [f"https://{host_port}"]
        with pytest.raises(ssl.SSLCertVerificationError):
            asyncio.run(asyncio.wait_for(bulk(ClusterTarget(hosts=hosts)), 20))
        status, _ = asyncio.run(asyncio.wait_for(
            bulk(ClusterTarget(hosts=hosts, options=parse_client_options({"ca_certs": str(cert)}))), 20))
        assert status == 200
