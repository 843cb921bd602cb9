"""Load-time checks of the CCR operations' parameters (so a bad track fails when it is loaded)."""

from __future__ import annotations

from typing import Any

from bench.util.errors import TrackError

# type -> mandatory parameters (registered with each runner, see bench.ccr.runners.register)
REQUIRED: dict[str, tuple[str, ...]] = {
    "ccr-follow": (),
    "ccr-pause": (),
    "ccr-resume": (),
    "ccr-unfollow": (),
    "ccr-auto-follow": ("auto-follow-name", "leader-index-patterns"),
    "ccr-delete-auto-follow": ("auto-follow-name",),
    "wait-for-followers-to-sync": (),
    "ccr-bootstrap": (),
    "ccr-failover": ("index",),
}
# The drills (bench.ccr.bootstrap, bench.ccr.failover), registered beside the runners of bench.ccr.runners.
DRILL_TYPES = frozenset({"ccr-bootstrap", "ccr-failover"})


def check_ccr_operation(name: str, op_type: str, params: dict[str, Any], *, track_file: str) -> None:
    where = f"{track_file}: operation '{name}' ({op_type})"
    for key in ("timeout", "wait-timeout", "poll-interval", "request-timeout"):
        if key in params:
            v = params[key]
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v <= 0:
                raise TrackError(f"{where} has {key} {v!r}: use a positive number of seconds")
    fp = params.get("follow-parameters")
    if fp is not None and not isinstance(fp, dict):
        raise TrackError(f"{where} has follow-parameters {fp!r}: use an object such as "
                         f"{{\"max_read_request_operation_count\": 5120}}")
    for key in ("indices", "leader-index-patterns"):
        v = params.get(key)
        if v is not None and not (isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v))):
            raise TrackError(f"{where} has {key} {v!r}: use a name or a list of names")
    pattern = params.get("follow-index-pattern")
    if pattern is not None and "{{" in str(pattern) and "leader_index" not in str(pattern):
        raise TrackError(f"{where} has follow-index-pattern {pattern!r}: the only placeholder is {{{{leader_index}}}}")
