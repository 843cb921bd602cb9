"""Which JDK runs the nodes: the distribution's bundled one by default, or a system JDK (Rally's ``--runtime-jdk``).

``runtime_jdk=None``: the bundled JDK when the install has one (``jdk/``, as the official archives do), else a
system JDK (``$ES_JAVA_HOME``/``$OPENSEARCH_JAVA_HOME``, ``$JAVA_HOME``, ``java`` on the ``PATH``).
``runtime_jdk="bundled"``: the bundled JDK or one line saying this build has none. ``runtime_jdk="17"``: a system
JDK of that major version, found as Rally finds it (``JAVA17_HOME``, then ``JAVA_HOME``; each must really be that
major) and then, beyond Rally, the engine's variable, ``java`` on the ``PATH`` and ``/usr/lib/jvm/*``.
The version is read from the JDK's ``release`` file, which every JDK since 9 (and Debian's 8) ships: no JVM
is started to find it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from bench.provision.model import EngineLayout, JavaFacts, JdkSource
from bench.util.errors import ConfigError, ProvisionError

SYSTEM_JVM_DIRS = (Path("/usr/lib/jvm"), Path("/usr/java"), Path("/Library/Java/JavaVirtualMachines"))


def jdk_version(home: Path) -> str | None:
    """``JAVA_VERSION`` of the JDK's release file (e.g. ``17.0.13``), or None."""
    try:
        for line in (home / "release").read_text(errors="replace").splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "JAVA_VERSION":
                return value.strip().strip('"') or None
    except OSError:
        return None
    return None


def _facts(source: JdkSource, home: Path, found_by: str) -> JavaFacts:
    return JavaFacts(source=source, home=str(home), version=jdk_version(home), found_by=found_by)


def _is_jdk(home: Path) -> bool:
    return (home / "bin" / "java").is_file()


def resolve_java(install: Path, layout: EngineLayout, runtime_jdk: str | None = None,
                 java_home: Path | None = None, what: str = "this distribution") -> JavaFacts:
    """The JDK the nodes of ``install`` run on. ``what`` names the distribution in messages."""
    bundled = install / "jdk"
    if java_home is not None:
        home = Path(java_home).expanduser()
        if not _is_jdk(home):
            raise ProvisionError(f"java_home {home} has no bin/java; point it at a JDK home")
        return _facts("system", home, "java_home")
    if runtime_jdk == "bundled" or (runtime_jdk is None and _is_jdk(bundled)):
        if not _is_jdk(bundled):
            raise ConfigError(f"--runtime-jdk=bundled: {what} has no bundled JDK (Maven's integ-test builds have "
                              f"none); pass --runtime-jdk=17 (or another major version) or use the release repository")
        return _facts("bundled", bundled, "bundled")
    if runtime_jdk is not None:
        return _system_jdk_of_major(int(runtime_jdk), layout)
    for source, value in ((f"${layout.java_home_env}", os.environ.get(layout.java_home_env)),
                          ("$JAVA_HOME", os.environ.get("JAVA_HOME"))):
        if value:
            home = Path(value).expanduser()
            if not _is_jdk(home):
                raise ProvisionError(f"{source}={home} has no bin/java; point it at a JDK home "
                                     "(e.g. /usr/lib/jvm/java-17-openjdk-amd64)")
            return _facts("system", home, source)
    java = shutil.which("java")
    if java:
        # /usr/bin/java -> /usr/lib/jvm/<jdk>/bin/java -> the JDK home.
        return _facts("system", Path(os.path.realpath(java)).parent.parent, "PATH")
    raise ProvisionError(f"no Java found for {layout.engine}: {what} has no bundled JDK; install a JDK 17 or newer "
                         f"and set JAVA_HOME (or {layout.java_home_env}, or pass --runtime-jdk=17 with JAVA17_HOME "
                         f"set), or use the release repository, whose archives bundle one")


def _system_jdk_of_major(major: int, layout: EngineLayout) -> JavaFacts:
    """Rally's order (``JAVA<major>_HOME``, ``JAVA_HOME``), then the engine's variable, PATH, the JVM folders."""
    specific = f"JAVA{major}_HOME"
    value = os.environ.get(specific)
    if value:
        home = Path(value).expanduser()
        found = JavaFacts(source="system", home=str(home), version=jdk_version(home), found_by=specific)
        if not _is_jdk(home) or found.major != major:
            raise ConfigError(f"{specific}={home} is not a JDK {major} (found "
                              f"{found.version or 'no JDK release file'}); point it at a JDK {major} home")
        return found
    candidates: list[tuple[str, Path]] = []
    for var in ("JAVA_HOME", layout.java_home_env):
        if os.environ.get(var):
            candidates.append((f"${var}", Path(os.environ[var]).expanduser()))
    if shutil.which("java"):
        candidates.append(("PATH", Path(os.path.realpath(shutil.which("java") or "")).parent.parent))
    for folder in SYSTEM_JVM_DIRS:
        if folder.is_dir():
            for home in sorted(folder.iterdir()):
                mac_home = home / "Contents" / "Home"
                candidates.append((str(folder), mac_home if mac_home.is_dir() else home))
    for found_by, home in candidates:
        if _is_jdk(home):
            facts = JavaFacts(source="system", home=str(home.resolve()), version=jdk_version(home), found_by=found_by)
            if facts.major == major:
                return facts
    raise ConfigError(f"--runtime-jdk={major}: no JDK {major} found; install one and set {specific} "
                      f"(looked at {specific}, JAVA_HOME, {layout.java_home_env}, java on the PATH and "
                      f"{', '.join(str(d) for d in SYSTEM_JVM_DIRS)})")
