"""Reading, splitting and embedding on a Ray cluster (``ingest PATH --ray [ADDRESS]``).

The driver still decides what to (re)index and writes the store; only the expensive part moves, in two
rounds of Ray tasks: files are dealt out in groups to be read and split (the same functions as the plain
path, so the same chunk ids), then the chunk texts are embedded in exactly the plain path's batches
(``embed_batch_size``, in order): an embedding depends on the other texts of its batch through padding,
so equal batches are what make the vectors equal. Each worker process loads the embedder once.

Failures are never silent: a file its loader rejects comes back as a failed file with the reason; a task
that dies (worker crash, lost node, an exception outside the loaders) is retried by Ray
(``TASK_RETRIES``), and if it still fails, every file it held (or whose chunks it was embedding) is
reported as failed with the error.

Ray is an optional extra (``pip install -e '.[ray]'``). Without an address a local cluster is started
with ``workers`` CPUs; with one (``ray://head:10001`` or ``auto``) the project must be installed on every
node (docs/deploy.md).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from config import Settings
from ingestion.indexing import embedding_text
from ingestion.pipeline import FileOutcome, Processor, load_file

TASK_RETRIES = 2
_EMBEDDERS: dict[str, Any] = {}  # per worker process: the model, loaded by the first task


def _embedder(settings: Settings):
    from retrievers.factory import embedder_for

    if settings.embedder not in _EMBEDDERS:
        _EMBEDDERS[settings.embedder] = embedder_for(settings)
    return _EMBEDDERS[settings.embedder]


def load_group(items: list[tuple[str, str]], settings: Settings) -> list[FileOutcome]:
    """Read and split one group of (path, sha256) files: the first round's Ray task."""
    semantic_embed = _embedder(settings).embed_documents if settings.semantic_split else None
    return [load_file(Path(path), digest, settings, semantic_embed) for path, digest in items]


def embed_batches(batches: list[list[str]], settings: Settings) -> np.ndarray:
    """Embed consecutive batches, each on its own (same boundaries as the plain path): the second round."""
    embedder = _embedder(settings)
    blocks = [np.asarray(embedder.embed_documents(batch), dtype=np.float32) for batch in batches]
    return np.concatenate(blocks) if blocks else np.zeros((0, embedder.dim), dtype=np.float32)


def groups_of(items: list, n_groups: int) -> list[list]:
    """Deal items into at most ``n_groups`` contiguous groups of near-equal size (order kept)."""
    if not items:
        return []
    size = math.ceil(len(items) / max(1, n_groups))
    return [items[i : i + size] for i in range(0, len(items), size)]


def start_ray(address: str | None, workers: int | None) -> None:
    """Join the cluster at ``address``, or start a local one with ``workers`` CPUs."""
    try:
        import ray
    except ImportError:
        raise ValueError(
            "--ray needs Ray, an optional extra: bash scripts/setup.sh ray (or pip install '.[ray]')"
        ) from None
    if ray.is_initialized():
        return
    root = str(Path(__file__).resolve().parent.parent)
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
        ray.init(
            num_cpus=workers,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": path, "OMP_NUM_THREADS": "1"}},
        )


def ray_processor(
    settings: Settings, *, address: str | None = None, workers: int | None = None, tasks_per_worker: int = 4
) -> Processor:
    """A ``Processor`` for ``ingest_paths`` that runs ``process_group`` as Ray tasks."""

    def process(items: list[tuple[Path, str]]) -> tuple[list[FileOutcome], np.ndarray]:
        import ray

        start_ray(address, workers)
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        options = {"num_cpus": 1, "max_retries": TASK_RETRIES, "retry_exceptions": True}
        load, embed = ray.remote(**options)(load_group), ray.remote(**options)(embed_batches)
        groups = groups_of([(str(p), d) for p, d in items], cpus * tasks_per_worker)
        outcomes: list[FileOutcome] = []
        for group, future in [(g, load.remote(g, settings)) for g in groups]:
            try:
                outcomes.extend(ray.get(future))
            except Exception as exc:  # failed TASK_RETRIES + 1 times: report, never drop
                outcomes.extend(FileOutcome(source=path, error=_failed(exc)) for path, _ in group)
        owner = [n for n, o in enumerate(outcomes) for _ in o.chunks]
        texts = [embedding_text(c) for o in outcomes for c in o.chunks]
        size = settings.embed_batch_size
        batches = [texts[i : i + size] for i in range(0, len(texts), size)]
        vectors: list[np.ndarray | None] = [None] * len(texts)
        start = 0
        parts = groups_of(batches, cpus * tasks_per_worker)
        for part, future in [(p, embed.remote(p, settings)) for p in parts]:
            count = sum(len(b) for b in part)
            try:
                block = ray.get(future)
                vectors[start : start + count] = list(block)
            except Exception as exc:
                for n in set(owner[start : start + count]):
                    outcomes[n] = FileOutcome(source=outcomes[n].source, error=_failed(exc))
            start += count
        kept = [v for v, n in zip(vectors, owner, strict=True) if outcomes[n].error is None]
        return outcomes, np.stack(kept) if kept else np.zeros((0, 0), dtype=np.float32)

    return process


def _failed(exc: Exception) -> str:
    return f"Ray worker failed after {TASK_RETRIES + 1} attempts: {_first_line(exc)}"


def _first_line(exc: Exception) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return (lines[-1] if lines else type(exc).__name__)[:300]
