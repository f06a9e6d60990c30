"""Ingestion on a real local Ray cluster: the same chunks and vectors as the plain path, failures reported."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ingestion.pipeline import ingest_paths
from retrievers.index import open_index

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install -e '.[ray]'")

from ingestion.ray_ingest import groups_of, ray_processor  # noqa: E402

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guide"


@pytest.fixture(scope="module")
def local_ray():
    from ingestion.ray_ingest import start_ray

    start_ray(None, 2)
    yield
    ray.shutdown()


def _rows(folder: Path) -> dict[str, tuple[object, np.ndarray]]:
    index = open_index(folder)
    try:
        vectors = np.load(index.generation / "vectors.npy")
        return {chunk.id: (chunk, vectors[pos]) for pos, chunk, _ in index.docstore.iter_rows()}
    finally:
        index.close()


def test_files_are_dealt_into_ordered_groups():
    assert groups_of(list(range(10)), 4) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert groups_of([], 3) == [] and groups_of([1], 8) == [[1]]


@pytest.mark.slow
def test_ray_ingest_gives_the_same_chunk_ids_and_vectors_as_the_plain_path(
    local_ray, settings, embedder, tmp_path
):
    plain = settings.model_copy(update={"index_dir": tmp_path / "plain"})
    on_ray = settings.model_copy(update={"index_dir": tmp_path / "ray"})
    first = ingest_paths([GUIDE], plain, embedder, progress=False)
    second = ingest_paths([GUIDE], on_ray, embedder, progress=False, processor=ray_processor(on_ray))
    assert sorted(first.added) == sorted(second.added) and not second.failed
    assert first.chunks_total == second.chunks_total > 0
    a, b = _rows(plain.index_dir), _rows(on_ray.index_dir)
    assert a.keys() == b.keys()
    for chunk_id, (chunk, vector) in a.items():
        assert b[chunk_id][0] == chunk
        assert np.allclose(b[chunk_id][1], vector, atol=1e-5)


@pytest.mark.slow
def test_files_of_a_worker_that_keeps_failing_are_reported_and_old_versions_kept(
    local_ray, settings, embedder, tmp_path
):
    ingest_paths([GUIDE / "en"], settings, embedder, progress=False)
    broken = settings.model_copy(update={"embedder": f"st:{tmp_path / 'no-such-model'}"})
    (tmp_path / "en").mkdir()
    for path in (GUIDE / "en").iterdir():  # same names under another root: all new files
        (tmp_path / "en" / path.name).write_text(path.read_text(encoding="utf-8") + "\nchanged\n")
    report = ingest_paths(
        [tmp_path / "en"], settings, embedder, progress=False, processor=ray_processor(broken)
    )
    assert len(report.failed) == 5 and not report.added
    assert all("Ray worker failed after 3 attempts" in f.reason for f in report.failed)
    assert report.chunks_total == open_index(settings.index_dir).count()  # the earlier files are still there
