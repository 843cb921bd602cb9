"""What a failed ``bin/elasticsearch-plugin install`` / ``bin/opensearch-plugin install`` of a named plugin means,
in one line: the plugin, where it came from, the tool's own reason and what to do.

The tool checks compatibility itself (the engine version the plugin was built for, the plugins it extends, jar
hell), so bench relies on it and only translates its answer: a Java exception and a stack trace.
"""

from __future__ import annotations

import re

from bench.provision.plugin_download import PluginSource
from bench.provision.plugin_names import FLAGS

# "Exception in thread "main" java.lang.IllegalArgumentException: <reason>" (OpenSearch),
# "java.lang.IllegalArgumentException: <reason>" (Elasticsearch), "ERROR: <reason>" (either, for user errors)
_REASON = re.compile(r'^(?:Exception in thread "[^"]*" )?(?:[\w$]+\.)*[\w$]*(?:Exception|Error): (.+)$|^ERROR: (.+)$')


def tool_reason(output: str) -> str:
    """The plugin tool's reason for failing: its first exception or ERROR line, else the output's last line."""
    for line in output.splitlines():
        m = _REASON.match(line.strip())
        if m:
            return (m.group(1) or m.group(2)).strip()
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


def install_failure(source: PluginSource, engine: str, version: str, node: str, exit_code: int,
                    output: str) -> str:
    reason = tool_reason(output)
    flag = FLAGS.get(engine, "--elasticsearch-plugins")
    if "missing plugin" in reason.lower():
        todo = f"name the plugins it needs before it ({flag}=NEEDED,{source.name}) or leave it out"
    else:
        todo = (f"name a version of {source.name} built for {engine} {version} ({flag}={source.name}:VERSION), "
                f"or race the {engine} version it was built for")
    return (f"{source.label()} from {source.url} cannot be installed into {engine} {version} (node {node}, plugin "
            f"tool exit {exit_code}): {reason}; {todo}")
