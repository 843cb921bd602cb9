"""INFINI Loadgen's YAML config (``loadgen.yml``): the model, and loading it into ready-to-render requests.

Accepted keys are Loadgen's: ``env``, ``runner``, ``variables``, ``requests`` (each ``request`` with
``method``, ``url``, ``body``, ``body_repeat_times``, ``headers``, ``basic_auth``, ``runtime_variables``,
``runtime_body_line_variables``; ``assert``, see ``conditions.py``). HTTP >= 400 is an error; a response
that fails its ``assert`` is invalid. ``register`` and ``sleep`` are parsed but not evaluated, and said so.
``env`` gives defaults that the process environment overrides, as in Loadgen.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from bench.loadgen.conditions import Predicate, compile_condition
from bench.loadgen.template import CompiledTemplate, RequestTemplate, substitute_env
from bench.loadgen.variables import Variables, VariableSpec
from bench.util import redact
from bench.util.errors import ConfigError
from bench.util.yaml_file import load_yaml_model

log = logging.getLogger(__name__)
_COMPAT_NDJSON = "application/vnd.elasticsearch+x-ndjson;compatible-with=7"
_COMPAT_JSON = "application/vnd.elasticsearch+json;compatible-with=7"


class RunnerSpec(BaseModel):
    model_config = ConfigDict(extra="allow")
    total_rounds: int = 0  # <= 0: run for the duration
    no_warm: bool = False
    valid_status_codes_during_warmup: list[int] = Field(default_factory=list)
    assert_error: bool = False
    log_requests: bool = False
    default_endpoint: str | None = None


class BasicAuth(BaseModel):
    username: str = ""
    password: str = ""


class RequestSpec(BaseModel):
    model_config = ConfigDict(extra="allow")
    method: str = "GET"
    url: str
    body: str = ""
    body_repeat_times: int = 0
    headers: list[dict[str, Any]] = Field(default_factory=list)
    basic_auth: BasicAuth | None = None
    runtime_variables: dict[str, str] = Field(default_factory=dict)
    runtime_body_line_variables: dict[str, str] = Field(default_factory=dict)


class SleepSpec(BaseModel):
    sleep_in_milli_seconds: int = 0


class RequestItem(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    request: RequestSpec | None = None
    assert_: Any = Field(default=None, alias="assert")
    register_: Any = Field(default=None, alias="register")
    sleep: SleepSpec | None = None


class LoadgenConfig(BaseModel):
    model_config = ConfigDict(extra="allow")
    env: dict[str, Any] = Field(default_factory=dict)
    runner: RunnerSpec = Field(default_factory=RunnerSpec)
    variables: list[VariableSpec] = Field(default_factory=list)
    requests: list[RequestItem] = Field(default_factory=list)


@dataclass
class LoadgenRequest:
    """One request of the config, compiled: where it goes and how to render it."""

    index: int
    endpoint: str | None  # scheme://host:port of an absolute url, None for a relative one
    template: RequestTemplate
    label: str  # "POST /_bulk", for logs and the warmup display
    check: Predicate | None = None  # the request's ``assert``: False makes the response invalid


@dataclass
class LoadgenPlan:
    path: Path
    config: LoadgenConfig
    variables: Variables
    requests: list[LoadgenRequest]
    warnings: list[str] = field(default_factory=list)

    def endpoints(self) -> list[str]:
        return sorted({r.endpoint for r in self.requests if r.endpoint})

    def typed_bulk_requests(self) -> list[LoadgenRequest]:
        """Bulk requests whose action lines name ``_type`` (removed in Elasticsearch 8)."""
        return [r for r in self.requests if r.template.is_bulk and r.template.body is not None
                and '"_type"' in r.template.body.fmt]

    def enable_compat7(self) -> list[int]:
        """Send typed bulk requests with Elasticsearch's REST API compatibility (``compatible-with=7``), under which
        Elasticsearch 8 still accepts ``_type``; returns the indices of the requests changed."""
        changed = []
        for r in self.typed_bulk_requests():
            h = r.template.headers
            if not any(k.lower() == "content-type" for k in h):
                h["Content-Type"] = CompiledTemplate(_COMPAT_NDJSON)
                h["Accept"] = CompiledTemplate(_COMPAT_JSON)
                changed.append(r.index)
        return changed


def _env(config: LoadgenConfig, environ: Mapping[str, str]) -> dict[str, str]:
    env = {k: str(v) for k, v in config.env.items()}
    env.update(environ)  # the process environment overrides the config's defaults, as in Loadgen
    return env


def read_config(path: Path | str) -> LoadgenConfig:
    p = Path(path).expanduser()
    if not p.is_file():
        raise ConfigError(f"--config: loadgen config {p} not found")
    return load_yaml_model(p, LoadgenConfig, "loadgen config", "'variables' and 'requests'", empty_ok=True)

def load_plan(path: Path | str, *, environ: Mapping[str, str] | None = None, seed: int | None = None) -> LoadgenPlan:
    """Read, validate and compile a Loadgen YAML file; every problem is one ConfigError line naming it."""
    p = Path(path).expanduser().resolve()
    config = read_config(p)
    env = _env(config, os.environ if environ is None else environ)
    variables = Variables(config.variables, base_dir=p.parent, seed=seed, where=f"{p}: variables")
    plan = LoadgenPlan(p, config, variables, [])
    if not any(item.request for item in config.requests):
        raise ConfigError(f"{p}: 'requests' has no request: add at least one '- request: {{method, url}}'")
    for i, item in enumerate(config.requests):
        if item.sleep is not None:
            plan.warnings.append(f"requests[{i}]: 'sleep' is not evaluated by bench: requests follow each other "
                                 f"without pause; pace them with -r")
        if item.request is None:
            continue
        where = f"{p}: requests[{i}].request"
        r = item.request
        if item.register_ is not None:
            plan.warnings.append(f"requests[{i}]: 'register' is not evaluated by bench: later requests do not see "
                                 f"the values it names")
        check = compile_condition(item.assert_, f"{p}: requests[{i}].assert") if item.assert_ is not None else None
        url = substitute_env(r.url, env, where=f"{where}.url").strip()
        endpoint, path = _split_url(url, where=f"{where}.url", default=config.runner.default_endpoint)
        headers: dict[str, str] = {}
        for h in r.headers:
            for k, v in h.items():
                headers[str(k)] = substitute_env(str(v), env, where=f"{where}.headers.{k}")
        if r.basic_auth is not None and (r.basic_auth.username or r.basic_auth.password):
            user = substitute_env(r.basic_auth.username, env, where=f"{where}.basic_auth.username")
            password = substitute_env(r.basic_auth.password, env, where=f"{where}.basic_auth.password")
            if password:
                redact.register_secret(password)
            import base64

            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            redact.register_secret(token)
            headers["Authorization"] = f"Basic {token}"
        body = substitute_env(r.body, env, where=f"{where}.body")
        if body and "_bulk" in path and not body.endswith("\n"):
            body += "\n"  # a bulk body must end with a newline; repetitions must not run lines together
        template = RequestTemplate(method=r.method, url=path, body=body, headers=headers,
                                   repeat=max(1, r.body_repeat_times), runtime=r.runtime_variables,
                                   line=r.runtime_body_line_variables, variables=variables, where=where)
        for name in template.unknown:
            plan.warnings.append(f"requests[{i}]: $[[{name}]] names no variable: it is sent as "
                                 f"'not_found', as Loadgen does")
        plan.requests.append(LoadgenRequest(i, endpoint, template, f"{template.method} {path.split('?')[0]}",
                                            check))
    return plan


def _split_url(url: str, *, where: str, default: str | None) -> tuple[str | None, str]:
    if url.startswith("/"):
        return (default.rstrip("/") if default else None), url
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{where}: '{url}' is not an http(s) URL or a path starting with '/'")
    if "$[[" in parts.netloc:
        raise ConfigError(f"{where}: variables in the host part of '{url}' are not supported: use $[[env.X]]")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return f"{parts.scheme}://{parts.netloc}", path
