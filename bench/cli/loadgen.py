"""``bench loadgen``: an INFINI Loadgen YAML config run as it is, measured and stored as a trial."""

from __future__ import annotations

import argparse
from typing import Any

from pydantic import ValidationError
from rich.console import Console

from bench.cli.common import client_options, load_driver, load_driver_flags, validation_line
from bench.race.flags import kv_list


def add_parser(sub: Any) -> None:
    lg = sub.add_parser("loadgen", help="run an INFINI Loadgen YAML config as it is (measured, stored as a trial)")
    lg.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress display")
    lg.add_argument("--config", default="loadgen.yml", help="the Loadgen YAML file (default loadgen.yml)")
    lg.add_argument("-c", type=int, default=1, dest="concurrency", help="concurrent clients (default 1)")
    lg.add_argument("-d", type=float, default=5, dest="duration", help="duration in seconds (default 5)")
    lg.add_argument("-r", type=float, default=None, dest="rate", help="max requests per second, all clients")
    lg.add_argument("-l", type=int, default=None, dest="limit", help="total request limit")
    lg.add_argument("--compress", action="store_true", help="gzip request bodies")
    lg.add_argument("--target-hosts", help="send every request to these hosts instead of the URLs' own")
    lg.add_argument("--client-options", help="k:v,... as for race (use_ssl, verify_certs, ca_certs, timeout ...)")
    lg.add_argument("--user-tag", action="append", help="k:v (repeatable or comma-separated)")
    lg.add_argument("--report-format", choices=["table", "markdown", "csv", "json"], default="table")
    lg.add_argument("--worker-processes", type=int, default=None,
                    help="load-driver processes (default 1, with --load-driver=ray:... one per CPU of each Ray node; "
                         "sequences then count per process)")
    load_driver_flags(lg)


def run(a: argparse.Namespace, console: Console) -> int:
    from bench.loadgen.run import LoadgenOptions, run_loadgen

    backend, driver_hosts = load_driver(a)
    try:
        opts = LoadgenOptions(config=a.config, concurrency=a.concurrency, duration=a.duration, rate=a.rate,
                              limit=a.limit, compress=a.compress, target_hosts=a.target_hosts,
                              client_options=client_options(a.client_options),
                              user_tags=kv_list(a.user_tag, "--user-tag"), report_format=a.report_format,
                              worker_processes=a.worker_processes, load_driver=backend,
                              load_driver_hosts=driver_hosts, progress=not a.quiet)
    except ValidationError as e:
        raise validation_line(dict(e.errors()[0]), {"concurrency": "-c", "duration": "-d", "rate": "-r",
                                                    "limit": "-l"}) from None
    result = run_loadgen(opts, console=console)
    console.print()
    console.print(result.loadgen_report, highlight=False, markup=False, soft_wrap=True)
    console.print(result.report, highlight=False, markup=False, soft_wrap=True)
    console.print(f"\nTrial [bold]{result.trial_id}[/bold] stored ({result.status}).", highlight=False)
    return 0
