"""A started cluster's stored facts (``ClusterInfo.facts()`` merged into the trial's clusters) as text (pure)."""

from __future__ import annotations

from typing import Any


def distribution_text(cluster: dict[str, Any]) -> str | None:
    """What a started cluster was installed from and ran on, in one line (None for clusters bench did not start):
    ``release elasticsearch-8.19.21-linux-x86_64.tar.gz (sha512 1a2b3c4d5e6f…), 98 modules, bundled JDK 24.0.2``."""
    d = cluster.get("distribution")
    if not isinstance(d, dict):
        return None
    what = d.get("repository", "?")
    if d.get("flavour") == "minimal":
        what += " (minimal build)"
    archive = d.get("archive") or d.get("source") or ""
    checksum = str(d.get("checksum") or "")
    algo, _, digest = checksum.partition(":")
    text = f"{what} {archive}".strip() + (f" ({algo} {digest[:12]}…)" if digest else "")
    modules = d.get("modules") or []
    text += f", {len(modules)} module{'s' if len(modules) != 1 else ''}"
    if len(modules) <= 6:
        text += f" ({', '.join(modules)})" if modules else ""
    if d.get("plugins"):
        text += f", {len(d['plugins'])} bundled plugin{'s' if len(d['plugins']) != 1 else ''}"
    j = cluster.get("java")
    if isinstance(j, dict):
        text += f", {j.get('source', '?')} JDK {j.get('version') or '?'}"
        if j.get("source") == "system":
            text += f" ({j.get('home')})"
    if d.get("fallback"):
        text += f"; fell back from release: {d['fallback']}"
    return text
