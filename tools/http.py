"""Configured HTTP APIs as tools: a tools file names each endpoint (URL template, parameters, an auth
header read from an environment variable, trigger words), and only those endpoints are ever called.

    tools:
      - name: weather
        description: Current weather for a city
        url: http://api.example.com/v1/weather?city={city}&units={units}
        parameters:
          city: {description: city name, required: true, values: {柏林: Berlin, 巴黎: Paris}}
          units: {default: metric}
        auth: {header: Authorization, env: WEATHER_TOKEN, prefix: "Bearer "}
        triggers: [weather, forecast, 天气]
        show: [temperature, conditions]

An OpenAPI 3 document is read too (each GET operation a tool; ``x-triggers`` and ``x-auth-env``
extensions carry the trigger words and the token's variable). Trigger words are data: offline, a tool
fires when the question contains one of them and every required parameter can be read from the question
(its ``values``, a ``pattern`` with one group, or a default); a model fills the parameters through tool
calling instead. The host of each URL is fixed by its template (a placeholder there is refused), values
are URL-encoded into the path and query, redirects are not followed, and a call has a timeout and a
response size limit. Every response is cited by its URL and the time it was fetched.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from tools.errors import ToolError

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
SHOWN_CHARS = 600


class Parameter(BaseModel):
    description: str = ""
    required: bool = False
    default: str | None = None
    values: dict[str, str] = Field(default_factory=dict, description="words in a question -> the value sent")
    pattern: str | None = Field(default=None, description="a regex whose first group reads the value")

    @field_validator("values", mode="before")
    @classmethod
    def _list_of_values(cls, value: Any) -> Any:
        return {str(v): str(v) for v in value} if isinstance(value, list) else value

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"pattern {value!r} is not a regular expression: {exc}") from None
        return value


class Auth(BaseModel):
    header: str = "Authorization"
    env: str
    prefix: str = ""


class ApiResponse(BaseModel):
    tool: str
    url: str
    fetched_at: str
    status: int
    text: str
    data: Any = None

    def shown(self, fields: list[str]) -> str:
        """The response as the answer quotes it: the named fields, else the compact body."""
        if fields and isinstance(self.data, dict):
            picked = [f"{f} {_lookup(self.data, f)}" for f in fields if _lookup(self.data, f) is not None]
            if picked:
                return "; ".join(picked)
        body = json.dumps(self.data, ensure_ascii=False) if self.data is not None else self.text
        body = " ".join(body.split())
        return body if len(body) <= SHOWN_CHARS else body[:SHOWN_CHARS] + " …"


def _lookup(data: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


class ApiTool(BaseModel):
    name: str
    description: str
    url: str
    method: str = "GET"
    parameters: dict[str, Parameter] = Field(default_factory=dict)
    auth: Auth | None = None
    triggers: list[str] = Field(default_factory=list)
    show: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(f"tool name {value!r}: letters, digits, _ and - only")
        return value

    @field_validator("method")
    @classmethod
    def _get_only(cls, value: str) -> str:
        if value.upper() != "GET":
            raise ValueError(f"method {value!r}: only GET endpoints are called (a question never writes)")
        return "GET"

    @model_validator(mode="after")
    def _fixed_host(self) -> ApiTool:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"url {self.url!r}: an http(s) URL with a host")
        if _PLACEHOLDER.search(f"{parts.scheme}://{parts.netloc}"):
            raise ValueError(f"url {self.url!r}: the host may not be a parameter")
        unknown = set(_PLACEHOLDER.findall(self.url)) - set(self.parameters)
        if unknown:
            raise ValueError(f"url {self.url!r} names undeclared parameters: {', '.join(sorted(unknown))}")
        return self

    @property
    def host(self) -> str:
        return urlsplit(self.url).netloc.lower()

    def triggered_by(self, question: str) -> str | None:
        """The trigger word the question contains, if any (Latin words on word boundaries)."""
        folded = question.casefold()
        for word in self.triggers:
            w = word.casefold()
            if re.search(r"[\u4e00-\u9fff]", w):
                if w in folded:
                    return word
            elif re.search(r"(?<![a-z0-9])" + re.escape(w) + r"(?![a-z0-9])", folded):
                return word
        return None

    def read_args(self, question: str) -> dict[str, str] | None:
        """Parameter values read from the question by the tool's own data; None when a required one is
        missing (the tool then does not fire offline)."""
        args: dict[str, str] = {}
        folded = question.casefold()
        for name, parameter in self.parameters.items():
            value = None
            for word, sent in sorted(parameter.values.items(), key=lambda kv: -len(kv[0])):
                if word.casefold() in folded:
                    value = sent
                    break
            if value is None and parameter.pattern:
                match = re.search(parameter.pattern, question)
                value = match.group(1).strip() if match and match.groups() else None
            if value is None:
                value = parameter.default
            if value is None and parameter.required:
                return None
            if value is not None:
                args[name] = value
        return args

    def url_for(self, args: dict[str, Any]) -> str:
        """The URL with each value URL-encoded into its place; unknown or missing parameters refused."""
        unknown = set(args) - set(self.parameters)
        if unknown:
            raise ToolError(f"{self.name}: unknown parameters {', '.join(sorted(unknown))}")
        values = {
            name: str(args[name]) if args.get(name) not in (None, "") else p.default
            for name, p in self.parameters.items()
        }
        missing = [n for n, p in self.parameters.items() if p.required and not values.get(n)]
        if missing:
            raise ToolError(f"{self.name}: missing parameters {', '.join(missing)}")
        url = _PLACEHOLDER.sub(lambda m: quote(values.get(m.group(1)) or "", safe=""), self.url)
        if urlsplit(url).netloc.lower() != self.host:
            raise ToolError(f"{self.name}: {url} is not on the configured host {self.host}")
        return url


class ApiTools(BaseModel):
    tools: list[ApiTool]
    timeout_s: float = 10.0
    max_kb: int = 256

    @model_validator(mode="after")
    def _unique(self) -> ApiTools:
        names = [t.name for t in self.tools]
        if len(set(names)) != len(names):
            raise ValueError(f"tool names must be unique: {', '.join(names)}")
        return self

    def get(self, name: str) -> ApiTool:
        tool = next((t for t in self.tools if t.name == name), None)
        if tool is None:
            raise ToolError(
                f"unknown API tool {name!r} (configured: {', '.join(t.name for t in self.tools)})"
            )
        return tool

    @property
    def hosts(self) -> set[str]:
        return {t.host for t in self.tools}

    def triggered(self, question: str) -> list[tuple[ApiTool, str]]:
        return [(t, w) for t in self.tools if (w := t.triggered_by(question))]

    def call(self, name: str, args: dict[str, Any]) -> ApiResponse:
        """GET the tool's URL: configured host only, no redirects, ``timeout_s``, at most ``max_kb``."""
        import httpx

        tool = self.get(name)
        url = tool.url_for(args)
        if urlsplit(url).netloc.lower() not in self.hosts:
            raise ToolError(f"{url}: host is not configured")
        headers = {"Accept": "application/json, text/plain;q=0.9"}
        if tool.auth is not None:
            token = os.environ.get(tool.auth.env)
            if not token:
                raise ToolError(f"{tool.name}: set {tool.auth.env} to the API's token")
            headers[tool.auth.header] = tool.auth.prefix + token
        limit = self.max_kb * 1024
        fetched = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
        try:
            with (
                httpx.Client(timeout=self.timeout_s, follow_redirects=False) as client,
                client.stream("GET", url, headers=headers) as response,
            ):
                if response.is_redirect:
                    raise ToolError(f"{tool.name}: {url} redirects elsewhere; redirects are not followed")
                declared = int(response.headers.get("content-length") or 0)
                if declared > limit:
                    raise ToolError(f"{tool.name}: response larger than {self.max_kb} KB")
                body = b""
                for piece in response.iter_bytes():
                    body += piece
                    if len(body) > limit:
                        raise ToolError(f"{tool.name}: response larger than {self.max_kb} KB")
                status = response.status_code
        except httpx.TimeoutException:
            raise ToolError(f"{tool.name}: no answer within {self.timeout_s:g} s") from None
        except httpx.HTTPError as exc:
            raise ToolError(f"{tool.name}: {type(exc).__name__}: {exc}") from None
        text = body.decode("utf-8", errors="replace")
        if status >= 400:
            raise ToolError(f"{tool.name}: HTTP {status} from {url}: {' '.join(text.split())[:200]}")
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        return ApiResponse(tool=tool.name, url=url, fetched_at=fetched, status=status, text=text, data=data)

    def langchain_tools(self) -> list[Any]:
        """The APIs as LangChain tools for ``bind_tools``; the model's calls are run through ``call``."""
        from langchain_core.tools import StructuredTool
        from pydantic import create_model

        built = []
        for tool in self.tools:
            fields: dict[str, Any] = {
                name: (str, Field(description=p.description or name))
                if p.required
                else (str | None, Field(default=p.default, description=p.description or name))
                for name, p in tool.parameters.items()
            }
            schema = create_model(f"{tool.name.replace('-', '_')}_args", **fields)
            built.append(
                StructuredTool.from_function(
                    func=lambda **kwargs: "", name=tool.name, description=tool.description, args_schema=schema
                )
            )
        return built


def _from_openapi(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Each GET operation of an OpenAPI 3 document as a tool entry."""
    servers = document.get("servers") or [{}]
    base = str(servers[0].get("url", "")).rstrip("/")
    schemes = (document.get("components") or {}).get("securitySchemes") or {}
    entries = []
    for path, operations in (document.get("paths") or {}).items():
        get = (operations or {}).get("get")
        if not get:
            continue
        parameters, query = {}, []
        for p in get.get("parameters") or []:
            if p.get("in") not in ("path", "query"):
                continue
            schema = p.get("schema") or {}
            parameters[p["name"]] = {
                "description": p.get("description", ""),
                "required": bool(p.get("required")) or p.get("in") == "path",
                "default": None if schema.get("default") is None else str(schema["default"]),
                "values": p.get("x-values") or {},
                "pattern": p.get("x-pattern"),
            }
            if p.get("in") == "query":
                query.append(f"{p['name']}={{{p['name']}}}")
        auth = None
        for requirement in get.get("security") or document.get("security") or []:
            for scheme_name in requirement:
                scheme = schemes.get(scheme_name) or {}
                env = scheme.get("x-auth-env")
                if env and scheme.get("type") == "http" and scheme.get("scheme") == "bearer":
                    auth = {"header": "Authorization", "env": env, "prefix": "Bearer "}
                elif env and scheme.get("type") == "apiKey" and scheme.get("in") == "header":
                    auth = {"header": scheme.get("name", "X-API-Key"), "env": env}
        name = get.get("operationId") or re.sub(r"[^A-Za-z0-9_]+", "_", path).strip("_")
        entries.append(
            {
                "name": name,
                "description": get.get("summary") or get.get("description") or name,
                "url": base + path + ("?" + "&".join(query) if query else ""),
                "parameters": parameters,
                "auth": auth,
                "triggers": get.get("x-triggers") or [],
                "show": get.get("x-show") or [],
            }
        )
    return entries


def load_tools_file(path: Path, *, timeout_s: float = 10.0, max_kb: int = 256) -> ApiTools:
    """The tools a YAML/JSON tools file (or an OpenAPI 3 document) configures; a bad file is one
    ``ToolError`` line naming the file and the first problem."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ToolError(f"tools file {path}: {exc.strerror or exc}") from None
    try:
        if path.suffix.lower() == ".json":
            document = json.loads(raw)
        else:
            import yaml

            document = yaml.safe_load(raw)
    except ValueError as exc:
        raise ToolError(f"tools file {path}: not valid JSON/YAML ({str(exc).splitlines()[0]})") from None
    except Exception as exc:  # yaml.YAMLError
        raise ToolError(f"tools file {path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(document, dict):
        raise ToolError(f"tools file {path}: expected a mapping with 'tools' (or an OpenAPI 3 document)")
    entries = (
        _from_openapi(document) if str(document.get("openapi", "")).startswith("3") else document.get("tools")
    )
    try:
        return ApiTools(tools=entries or [], timeout_s=timeout_s, max_kb=max_kb)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        raise ToolError(f"tools file {path}: {where}: {first['msg']}") from None
