"""The load-driver host over SSH (paramiko): wait for it, install bench at the orchestrator's version,
run a race there, and copy the trial (store rows and logs) back.

bench is installed from a wheel of the running bench (bench.cloud.wheel), so the driver runs exactly the
orchestrator's code and data; its dependencies come from the driver's package index, or from the driver's
own site-packages when ``system_site_packages`` is set (offline hosts, tests). Host keys are
trusted on first use and recorded in a known_hosts file of the trial (the machine was created a minute
ago by us; there is no earlier key to compare with).
"""

from __future__ import annotations

import logging
import posixpath
import shlex
import stat
import tempfile
import time
from pathlib import Path
from typing import Self

import paramiko

import bench
from bench.cloud.wheel import build_wheel
from bench.util.errors import ProvisionError, RaceError
from bench.util.redact import redact_text

log = logging.getLogger(__name__)


class RemoteHost:
    """One SSH connection to a cloud machine (driver or node)."""

    def __init__(self, host: str, user: str, key_file: str | Path, port: int = 22,
                 known_hosts: Path | None = None):
        self.host, self.user, self.port = host, user, port
        self.key_file = Path(key_file).expanduser()
        self.known_hosts = known_hosts
        self.client: paramiko.SSHClient | None = None

    def connect(self, timeout: float = 300) -> Self:
        """Connect, retrying while the machine boots (sshd not up yet, connection refused)."""
        if not self.key_file.is_file():
            raise ProvisionError(f"SSH private key {self.key_file} does not exist; set ssh.private_key in the topology")
        deadline = time.monotonic() + timeout
        last = ""
        while True:
            client = paramiko.SSHClient()
            if self.known_hosts and self.known_hosts.exists():
                client.load_host_keys(str(self.known_hosts))
            client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
            try:
                client.connect(self.host, port=self.port, username=self.user, key_filename=str(self.key_file),
                               timeout=15, banner_timeout=30, auth_timeout=30, allow_agent=False,
                               look_for_keys=False)
                if self.known_hosts:
                    self.known_hosts.parent.mkdir(parents=True, exist_ok=True)
                    client.save_host_keys(str(self.known_hosts))
                self.client = client
                return self
            except paramiko.AuthenticationException as e:
                client.close()
                raise ProvisionError(f"SSH to {self.user}@{self.host}:{self.port} rejected key {self.key_file}: {e}") \
                    from None
            except (OSError, paramiko.SSHException) as e:
                client.close()
                last = str(e)
            if time.monotonic() > deadline:
                raise ProvisionError(f"SSH to {self.user}@{self.host}:{self.port} failed for {timeout:.0f} s: {last}")
            time.sleep(3)

    def __enter__(self) -> Self:
        return self if self.client else self.connect()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.client:
            self.client.close()
            self.client = None

    def run(self, command: str, timeout: float = 600, check: bool = True) -> tuple[int, str, str]:
        assert self.client, "connect() first"
        try:
            _, out, err = self.client.exec_command(command, timeout=timeout)
            stdout = out.read().decode(errors="replace")
            stderr = err.read().decode(errors="replace")
            rc = out.channel.recv_exit_status()
        except (TimeoutError, paramiko.SSHException) as e:
            raise ProvisionError(f"on {self.host}: {redact_text(command)[:200]} failed: {e}") from None
        if check and rc != 0:
            tail = redact_text((stderr or stdout).strip().replace("\n", " | "))[-500:]
            raise ProvisionError(f"on {self.host}: {redact_text(command)[:200]} exited {rc}: {tail}")
        return rc, stdout, stderr

    def put(self, local: Path, remote: str, mode: int = 0o644) -> None:
        assert self.client
        with self.client.open_sftp() as sftp:
            sftp.put(str(local), remote)
            sftp.chmod(remote, mode)

    def put_tree(self, local: Path, remote: str) -> int:
        """Copy a local folder (e.g. a track) to remote, recursively; returns the number of files."""
        assert self.client
        count = 0
        with self.client.open_sftp() as sftp:
            for path in sorted(Path(local).rglob("*")):
                target = posixpath.join(remote, *path.relative_to(local).parts)
                if path.is_dir():
                    continue
                parts = posixpath.dirname(target).split("/")
                for i in range(1, len(parts) + 1):
                    d = "/".join(parts[:i])
                    if d:
                        try:
                            sftp.mkdir(d)
                        except OSError:
                            pass
                sftp.put(str(path), target)
                count += 1
        return count

    def put_text(self, text: str, remote: str, mode: int = 0o600) -> None:
        """Write text (e.g. client options with a password) to a file only the remote user can read."""
        assert self.client
        with self.client.open_sftp() as sftp, sftp.open(remote, "w") as f:
            f.chmod(mode)
            f.write(text)

    def get_tree(self, remote: str, local: Path) -> int:
        """Copy a remote folder (recursively) to local; returns the number of files; missing folder -> 0."""
        assert self.client
        count = 0
        with self.client.open_sftp() as sftp:
            def walk(r: str, dest: Path) -> None:
                nonlocal count
                try:
                    entries = sftp.listdir_attr(r)
                except FileNotFoundError:
                    return
                dest.mkdir(parents=True, exist_ok=True)
                for e in entries:
                    rp, lp = posixpath.join(r, e.filename), dest / e.filename
                    if stat.S_ISDIR(e.st_mode or 0):
                        walk(rp, lp)
                    elif stat.S_ISREG(e.st_mode or 0):
                        sftp.get(rp, str(lp))
                        count += 1
            walk(remote, local)
        return count

    def get(self, remote: str, local: Path) -> None:
        assert self.client
        with self.client.open_sftp() as sftp:
            sftp.get(remote, str(local))


# Run by the venv's python: a .pth file listing the given interpreter's site-packages (argv[1], one a line).
_LINK_SITE = ("import sys, sysconfig; open(sysconfig.get_path('purelib') + '/bench-offline-site.pth', 'w')"
              ".write(sys.argv[1])")
_SITE_DIRS = "import site; print(*site.getsitepackages(), sep=chr(10))"


def install_command(python: str, venv: str, wheel: str, *, system_site_packages: bool = False,
                    offline: bool = False, extras: tuple[str, ...] = ()) -> str:
    """The shell command that makes ``venv`` from ``python`` and installs bench's wheel file ``wheel`` into it.

    offline: a venv without pip whose only extra path is ``python``'s own site-packages (a .pth file), so
    a venv ``python`` (the test session's) lends exactly what it declares; --system-site-packages would
    instead expose the base interpreter behind it, whatever that happens to have installed. extras: bench's
    optional extras to install with it (e.g. ray); offline they come from that same site-packages."""
    py, whl = shlex.quote(python), shlex.quote(wheel)
    pip = f"{venv}/bin/python -m pip install -q --disable-pip-version-check"
    # bench's version stays the same while its code changes, and pip skips a local wheel of an installed
    # version: the last step always reinstalls bench itself (--no-deps: its dependencies are left as they are).
    if not offline:
        flags = " --system-site-packages" if system_site_packages else ""
        target = shlex.quote(f"{wheel}[{','.join(extras)}]" if extras else wheel)
        return f"{py} -m venv{flags} {venv} && {pip} {target} && {pip} --force-reinstall --no-deps {whl}"
    # A wheel needs no build: no index, no build tools; the dependencies are already on the lent path.
    return (f"{py} -m venv --without-pip {venv} && "
            f"{venv}/bin/python -c {shlex.quote(_LINK_SITE)} \"$({py} -c {shlex.quote(_SITE_DIRS)})\" && "
            f"{pip} --no-index --force-reinstall --no-deps {whl}")


class DriverHost(RemoteHost):
    """The load driver: a RemoteHost that gets bench installed and runs races."""

    def __init__(self, host: str, user: str, key_file: str | Path, port: int = 22,
                 known_hosts: Path | None = None, workdir: str = ".", python: str = "python3"):
        super().__init__(host, user, key_file, port, known_hosts)
        # Relative to the login directory unless absolute; python: the interpreter the venv is made from.
        self.venv, self.home, self.wheels = (f"{workdir}/{n}" for n in ("bench-venv", "bench-home", "bench-wheel"))
        self.python = python

    def install_bench(self, wheel: Path | None = None, system_site_packages: bool = False, offline: bool = False,
                      timeout: float = 900, extras: tuple[str, ...] = ()) -> str:
        """Install bench's ``wheel`` (default: one built now, see build_wheel) into ~/bench-venv on the driver,
        its tracks, cars and templates inside; returns the remote version string. offline: no package index at
        all — pip and every dependency come from the site-packages of the interpreter ``python`` names (which
        may itself be a venv), never from its base interpreter's."""
        with tempfile.TemporaryDirectory() as tmp:
            local = wheel or build_wheel(Path(tmp))
            remote = f"{self.wheels}/{local.name}"  # pip reads name, version and tags from the file name
            self.run(f"rm -rf {self.wheels} && mkdir -p {self.wheels}")
            self.put(local, remote)
        self.run(install_command(self.python, self.venv, remote, system_site_packages=system_site_packages,
                                 offline=offline, extras=extras), timeout=timeout)
        _, out, _ = self.run(f"{self.venv}/bin/bench --version")
        version = out.strip().split()[-1]
        if version != bench.__version__:
            raise ProvisionError(f"driver {self.host} runs bench {version}, the orchestrator {bench.__version__}")
        return version

    def run_race(self, args: list[str], timeout: float = 24 * 3600) -> tuple[str, str]:
        """Run 'bench race ARGS' with BENCH_HOME=~/bench-home; returns (remote trial id, output)."""
        home = self.home if self.home.startswith("/") else f"$HOME/{self.home}"
        cmd = f"BENCH_HOME={home} {self.venv}/bin/bench --quiet race " + " ".join(map(shlex.quote, args))
        rc, out, err = self.run(cmd, timeout=timeout, check=False)
        import re

        m = re.search(r"Trial ([0-9a-f]{32}) stored", out) or re.search(r"Trial ([0-9a-f]{32})", out + err)
        if not m:
            tail = redact_text((err or out).strip().replace("\n", " | "))[-500:]
            raise RaceError(f"the race on driver {self.host} failed before storing a trial (exit {rc}): {tail}")
        return m.group(1), out + err

    def fetch_trial(self, trial_id: str, local_dir: Path) -> Path:
        """Copy the driver's store (a consistent snapshot through SQLite's backup API) and the trial's
        folder (logs) into local_dir; returns the snapshot's path."""
        local_dir.mkdir(parents=True, exist_ok=True)
        snap = f"{self.home}/export-{trial_id}.db"
        script = ("import sqlite3,sys; s=sqlite3.connect(sys.argv[1]); d=sqlite3.connect(sys.argv[2]); "
                  "s.backup(d); d.close()")
        self.run(f"{self.venv}/bin/python -c {shlex.quote(script)} {self.home}/bench.db {snap}")
        db = local_dir / "driver.db"
        self.get(snap, db)
        self.get_tree(f"{self.home}/trials/{trial_id}", local_dir / "driver-trial")
        return db


def client_auth(user: str | None, password: str | None) -> dict[str, str | None]:
    """The client options that sign in with a cluster's generated password (none without one)."""
    return {"basic_auth_user": user, "basic_auth_password": password} if password else {}
