"""The CCR drills' operations (``ccr-bootstrap``, ``ccr-failover``) registered with the driver, as
``bench.ccr.runners.register`` does for the others."""

from __future__ import annotations

from bench.ccr.bootstrap import ccr_bootstrap
from bench.ccr.failover import OPERATION, check_failover, outside_a_drill
from bench.ccr.operations import REQUIRED, check_ccr_operation
from bench.driver.runners.registry import register_runner


def register() -> None:
    register_runner("ccr-bootstrap", ccr_bootstrap, required=REQUIRED["ccr-bootstrap"], check=check_ccr_operation)
    register_runner(OPERATION, outside_a_drill, required=REQUIRED[OPERATION], check=check_failover)
