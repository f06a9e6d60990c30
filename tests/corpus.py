"""A small bilingual corpus of chunks used by retrieval and graph tests."""

from __future__ import annotations

from pathlib import Path

from core.chunks import Chunk

DOCS: list[tuple[str, str, str, str]] = [
    # (id, source, title, text)
    ("err-4711", "docs/errors.md", "Error codes", "Error code E-4711 means the disk quota was exceeded."),
    ("err-4712", "docs/errors.md", "Error codes", "Error code E-4712 means the network is unreachable."),
    ("err-4710", "docs/errors.md", "Error codes", "Error code E-4710 means the password expired."),
    ("cat", "notes/pets.txt", "Pets", "The cat sat quietly on the mat all afternoon."),
    (
        "rrf-zh",
        "docs/zh/retrieval.md",
        "检索",
        "混合检索使用倒数排名融合（RRF）算法，把向量检索和关键词检索的结果合并在一起，常数 k 取 60。",
    ),
    ("py-zh", "docs/zh/install.md", "安装", "安装时需要 Python 3.11 以上版本，并建议创建虚拟环境。"),
    (
        "hnsw-en",
        "docs/en/index.md",
        "Vector index",
        "Above 200,000 chunks the vector index switches from exact search to HNSW graphs.",
    ),
    (
        "bm25-en",
        "docs/en/keyword.md",
        "Keyword search",
        "Keyword search ranks chunks with BM25 using k1=1.2 and b=0.75 and keeps identifiers like gpt-4o whole.",
    ),
    ("jieba-zh", "docs/zh/keyword.md", "关键词检索", "中文关键词检索用结巴分词切词，再用 BM25 打分。"),
    (
        "mix",
        "docs/mixed.md",
        "Mixed",
        "我们用 gpt-4o 生成答案，并用 BM25 和 FAISS 做检索（retrieval）。",
    ),
]


def corpus_chunks() -> list[Chunk]:
    chunks = []
    for number, (cid, source, title, text) in enumerate(DOCS):
        language = "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in text) else "en"
        chunks.append(
            Chunk(
                id=cid,
                text=text,
                source=source,
                title=title,
                heading_path=[title],
                chunk_index=number,
                language=language,
                mtime=1_700_000_000 + number * 86_400,
                metadata={"team": "search" if "search" in text.lower() or "检索" in text else "ops"},
            )
        )
    return chunks


def index_of_files(tmp_path_factory, embedder, files: dict[str, str]) -> Path:
    """An index folder built by the real ingest pipeline from ``{file name: text}`` written to disk."""
    from config import load_settings
    from ingestion.pipeline import ingest_paths

    docs = tmp_path_factory.mktemp("docs")
    for name, text in files.items():
        (docs / name).write_text(text, encoding="utf-8")
    folder = tmp_path_factory.mktemp("index")
    settings = load_settings(index_dir=folder, embedder="use-multilingual")
    ingest_paths([docs], settings, embedder, index_dir=folder, progress=False)
    return folder
