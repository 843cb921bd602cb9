"""Templated documents generated per second on one core (bench.loadgen), printed, never asserted.

Renders bulk bodies from Loadgen templates exactly as the driver does per request (RequestTemplate.render:
columns of variable values + a compiled f-string per line + UTF-8 encode), optionally gzipped, single
threaded, so the number is per core. Compare it with the driver's ceiling (benchmarks/driver_ceiling.py)
and with what a cluster indexes: the generator must not be the limit.

    python benchmarks/template_generation.py [--seconds 5] [--repeat 5000]
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.loadgen.template import RequestTemplate
from bench.loadgen.variables import Variables, VariableSpec
from bench.track.loader import find_track, load_track

# The gateway documentation's runtime-variables example (3 uuids, a range, 2 clock values per document).
GATEWAY_VARIABLES = [
    {"name": "id", "type": "sequence"}, {"name": "uuid", "type": "uuid"}, {"name": "now_local", "type": "now_local"},
    {"name": "now_unix", "type": "now_unix"}, {"name": "suffix", "type": "range", "from": 10, "to": 15},
]
GATEWAY_BODY = (
    '{ "create" : { "_index" : "test-$[[suffix]]","_type":"doc", "_id" : "$[[uuid]]" , "routing" : "$[[routing_no]]" } }\n'
    '{ "id" : "$[[uuid]]","routing_no" : "$[[routing_no]]","batch_number" : "$[[batch_no]]", '
    '"random_no" : "$[[suffix]]","ip" : "$[[ip]]","now_local" : "$[[now_local]]","now_unix" : "$[[now_unix]]" }\n'
)


def gateway_template(repeat: int) -> RequestTemplate:
    v = Variables([VariableSpec.model_validate(s) for s in GATEWAY_VARIABLES], base_dir=Path("."))
    return RequestTemplate(method="POST", url="/_bulk", body=GATEWAY_BODY, headers={}, repeat=repeat,
                           runtime={"batch_no": "id"}, line={"routing_no": "uuid"}, variables=v, where="bench")


def nginx_template(repeat: int) -> RequestTemplate:
    """The nginx track's loadgen-bulk template (12 variables, a combined log line per document)."""
    from bench.loadgen.source import track_template

    track = load_track(find_track("nginx", None), {"bulk_size": repeat}, ignore_unused=False, test_mode=False)
    task = next(t for t in track.challenge("loadgen-bulk").tasks() if t.operation.name == "loadgen-bulk")
    return track_template(task, client=0, default_index=None)


def measure(name: str, tpl: RequestTemplate, seconds: float, compress: bool) -> None:
    tpl.render()  # warm caches
    docs = size = wire = 0
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    while time.perf_counter() - t0 < seconds:
        r = tpl.render()
        gzip.compress(r.body, compresslevel=1) if compress else r.body
        docs += r.docs
        size += len(r.body)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    print(f"{name:<34} {'gzip' if compress else 'plain':<5} {docs / cpu:>12,.0f} docs/s per core "
          f"({docs / wall:,.0f}/s wall)  {size / docs:6.0f} B/doc  {size / cpu / 1e6:7.1f} MB/s per core "
          f"({wire / size:.0%} on the wire)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--repeat", type=int, default=5000, help="documents per bulk body (body_repeat_times)")
    a = ap.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, "
          f"{a.repeat} documents per body, {a.seconds:g} s each")
    for name, tpl in (("gateway docs example (3 uuids/doc)", gateway_template(a.repeat)),
                      ("nginx loadgen-bulk (12 variables)", nginx_template(a.repeat))):
        for compress in (False, True):
            measure(name, tpl, a.seconds, compress)


if __name__ == "__main__":
    main()
