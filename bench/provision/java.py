"""Which JDK runs the node: the java_home argument, the engine's env var, $JAVA_HOME, or `java` on PATH."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from bench.errors import ProvisionError
from bench.provision.model import EngineLayout


def resolve_java_home(java_home: Path | None, layout: EngineLayout) -> Path:
    candidates: list[tuple[str, str | None]] = [
        ("java_home", str(java_home) if java_home else None),
        (f"${layout.java_home_env}", os.environ.get(layout.java_home_env)),
        ("$JAVA_HOME", os.environ.get("JAVA_HOME")),
    ]
    for source, value in candidates:
        if value:
            home = Path(value).expanduser()
            if not (home / "bin" / "java").is_file():
                raise ProvisionError(f"{source}={home} has no bin/java; point it at a JDK home "
                                     "(e.g. /usr/lib/jvm/java-17-openjdk-amd64)")
            return home
    java = shutil.which("java")
    if java:
        # /usr/bin/java -> /usr/lib/jvm/<jdk>/bin/java -> the JDK home.
        return Path(os.path.realpath(java)).parent.parent
    raise ProvisionError(f"no Java found for {layout.engine}: the integ-test distribution has no bundled JDK; "
                         f"pass --java-home or set {layout.java_home_env} or JAVA_HOME")
