"""A topology's links between clusters: ``links: [{from: follower, to: leader, rtt: 100ms, rate: 200mbit}]``.

``from`` is the cluster that connects (a CCR follower), ``to`` the one it connects to (the leader's transport
port). With provider local bench emulates the link with a proxy of its own (``link_proxy.py``). On a cloud the link
is the real network: bench measures every remote-cluster connection of the topology (``cloud_links.py``) whether
or not ``links`` names it, and refuses rtt, rate and loss there (nothing would shape them).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

_RTT = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s)\s*$")
# tc's rate units (bits per second), as netem users write them
_RATE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(bit|kbit|mbit|gbit)\s*$")
_LOSS = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*%\s*$")
_RATE_UNITS = {"bit": 1, "kbit": 1_000, "mbit": 1_000_000, "gbit": 1_000_000_000}


def parse_rtt_ms(v: Any) -> float:
    """``100ms``, ``0.1s`` or ``0`` -> milliseconds; anything else a ValueError saying what is expected."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v == 0:
        return 0.0
    m = _RTT.match(str(v))
    if not m:
        raise ValueError(f"{v!r} is not a round trip time: write it like 100ms or 0.1s")
    value = float(m.group(1)) * (1000.0 if m.group(2) == "s" else 1.0)
    if value > 10_000:
        raise ValueError(f"{v!r} is longer than 10 s")
    return value


def parse_rate_bps(v: Any) -> int:
    """``200mbit`` -> bits per second (tc's units: bit, kbit, mbit, gbit)."""
    m = _RATE.match(str(v))
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"{v!r} is not a rate: write it like 200mbit (units bit, kbit, mbit, gbit)")
    return int(float(m.group(1)) * _RATE_UNITS[m.group(2)])


def parse_loss_percent(v: Any) -> float:
    m = _LOSS.match(str(v))
    if not m or float(m.group(1)) >= 100:
        raise ValueError(f"{v!r} is not a loss: write it like 0.1%")
    return float(m.group(1))


def rate_text(bps: int | None) -> str:
    if bps is None:
        return "unlimited"
    for unit, scale in (("gbit", 1_000_000_000), ("mbit", 1_000_000), ("kbit", 1_000)):
        if bps >= scale:
            return f"{bps / scale:g}{unit}"
    return f"{bps}bit"


class Link(BaseModel):
    """One link between two clusters of a topology; the values are what bench emulates locally."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    source: str = Field(alias="from")
    target: str = Field(alias="to")
    rtt_ms: float = Field(default=0.0, alias="rtt")
    rate_bps: int | None = Field(default=None, alias="rate")
    loss_percent: float | None = Field(default=None, alias="loss")

    @field_validator("rtt_ms", mode="before")
    @classmethod
    def _rtt(cls, v: Any) -> float:
        return parse_rtt_ms(v)

    @field_validator("rate_bps", mode="before")
    @classmethod
    def _rate(cls, v: Any) -> int | None:
        return None if v is None else parse_rate_bps(v)

    @field_validator("loss_percent", mode="before")
    @classmethod
    def _loss(cls, v: Any) -> float | None:
        return None if v is None else parse_loss_percent(v)

    @property
    def label(self) -> str:
        return f"{self.source}->{self.target}"

    def text(self) -> str:
        """``follower->leader rtt 100 ms, rate 200mbit``."""
        out = f"{self.label} rtt {self.rtt_ms:g} ms, rate {rate_text(self.rate_bps)}"
        return out + (f", loss {self.loss_percent:g} %" if self.loss_percent is not None else "")


def check_links(links: list[Link], clusters: dict[str, list[str]], provider: str) -> None:
    """Every link joins a cluster to one it names in remote_clusters (the connection a link shapes), once; loss is
    refused locally (a TCP proxy cannot drop packets). ``clusters``: name -> its remote_clusters. ValueErrors."""
    seen: set[tuple[str, str]] = set()
    for i, link in enumerate(links):
        where = f"links[{i}]"
        for field, name in (("from", link.source), ("to", link.target)):
            if name not in clusters:
                raise ValueError(f"{where}.{field}: {name!r} is not a cluster of this topology (clusters: "
                                 f"{', '.join(clusters)})")
        if link.target not in clusters[link.source]:
            raise ValueError(f"{where}: cluster {link.source} does not connect to {link.target} (add {link.target} "
                             f"to clusters[{link.source}].remote_clusters)")
        if (link.source, link.target) in seen:
            raise ValueError(f"{where}: a second link {link.label}")
        seen.add((link.source, link.target))
        if link.loss_percent is not None and provider == "local":
            raise ValueError(f"{where}.loss: provider local emulates a link with a TCP proxy, which cannot drop "
                             f"packets (this kernel has no netem); remove loss")
        shaped = [f for f, v in (("rtt", link.rtt_ms), ("rate", link.rate_bps), ("loss", link.loss_percent)) if v]
        if provider != "local" and shaped:  # refused, not ignored: a cloud link is measured, never shaped
            raise ValueError(f"{where}.{shaped[0]}: on {provider} the link is the real network between the hosts, "
                             f"which bench measures before the race, not emulates: remove {', '.join(shaped)}")
