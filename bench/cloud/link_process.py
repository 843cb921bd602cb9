"""The link proxy's process (``link_proxy.py``): started for one link, stopped with the race whatever ends it.

Its stdin is a pipe from this process: closing it stops the proxy, and so does this process's death (the pipe
closes with it), so no proxy outlives its race even after a SIGKILL."""

from __future__ import annotations

import subprocess
import sys

from bench.cloud.links import Link
from bench.util.errors import ClusterError


class LinkProcess:
    def __init__(self, link: Link, target: str) -> None:
        self.link, self.target = link, target
        cmd = [sys.executable, "-m", "bench.cloud.link_proxy", target, "--rtt-ms", str(link.rtt_ms)]
        if link.rate_bps:
            cmd += ["--rate-bps", str(link.rate_bps)]
        self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().strip()
        if not line.isdigit():
            self.stop()
            raise ClusterError(f"link {link.label}: its proxy to {target} did not start (exit "
                               f"{self._proc.returncode}, said {line!r})")
        self.port = int(line)
        self.address = f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self._proc.pid

    def running(self) -> bool:
        return self._proc.poll() is None

    def stop(self) -> None:
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()

    def __enter__(self) -> LinkProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
