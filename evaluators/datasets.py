"""Evaluation datasets in the shared layout: ``corpus.jsonl``, ``queries.jsonl``, ``queries_meta.jsonl``.

Every set under ``../shared/data`` uses one layout (see its README). The loader validates each line and
names the file and line of the first problem, flattens the many answer shapes (string, alternatives,
nested RGB lists, FanOutQA dicts) into a list of acceptable strings, and attaches the optional per-query
extras (decompositions, question types, counterfactual passages, evidence labels) as ``meta``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from core.text import detect_language
from evaluators.metrics import flatten_answers

DATA_DIR_ENV = "AGENTIC_RAG_DATA_DIR"
CORPUS_FILE = "corpus.jsonl"
QUERIES_FILE = "queries.jsonl"
META_FILE = "queries_meta.jsonl"


class DatasetError(ValueError):
    """A dataset folder or line that cannot be read; the message names the file and line."""


class NoCorpusError(DatasetError):
    """The set ships questions but no passages (FanOutQA): retrieval cannot be scored on it."""


DECOMPOSITION_BENCH = "bench/analyzer_accuracy.py"
DECOMPOSITION_DOC = "docs/analyzer.md"


class CorpusDoc(BaseModel):
    id: str
    title: str = ""
    text: str


class EvalQuery(BaseModel):
    """One evaluation question. ``answers`` are alternatives (any one is correct); the source's answer
    field is kept verbatim in ``meta["answer_raw"]`` for metrics that need its structure."""

    id: str
    question: str
    answers: list[str] = Field(default_factory=list)
    gold_ids: list[str] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)


class SubQuestion(BaseModel):
    """A gold sub-question of a multi-hop query (MuSiQue or FanOutQA decomposition)."""

    question: str
    answers: list[str] = Field(default_factory=list)
    gold_id: str | None = None
    depends_on: list[str] = Field(default_factory=list)


class Dataset(BaseModel):
    name: str
    corpus: list[CorpusDoc]
    queries: list[EvalQuery]
    language: Literal["zh", "en"]

    @property
    def has_answers(self) -> bool:
        return any(query.answers for query in self.queries)


def shared_data_dir() -> Path | None:
    """The folder holding the evaluation sets: ``$AGENTIC_RAG_DATA_DIR`` if set, else ``../shared/data``
    beside the repository; ``None`` when that folder does not exist (tests then skip)."""
    candidate = data_dir_candidate()
    return candidate if candidate.is_dir() else None


def data_dir_candidate() -> Path:
    """Where evaluation sets are looked up by name, whether or not that folder exists."""
    configured = os.environ.get(DATA_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


def resolve_dataset_dir(name_or_path: str | Path) -> Path:
    """A folder path as given, or a bare set name (``hotpotqa_hipporag100``) looked up in
    :func:`shared_data_dir`."""
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    shared = shared_data_dir()
    if shared is not None and len(path.parts) == 1 and (shared / path).is_dir():
        return shared / path
    known = sorted(p.name for p in shared.iterdir() if p.is_dir()) if shared else []
    looked = [str(path.absolute())]
    if len(path.parts) == 1:
        candidate = data_dir_candidate()
        missing = "" if candidate.is_dir() else ", which does not exist"
        looked.append(f"{candidate / path} (sets folder {candidate}{missing})")
    hint = f" Known sets in {shared}: {', '.join(known)}." if known else ""
    raise DatasetError(
        f"dataset folder not found: {name_or_path}; looked in {' and '.join(looked)}. Pass a folder path, "
        f"or set {DATA_DIR_ENV} to the folder holding the evaluation sets.{hint}"
    )


def _read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line; malformed lines raise with file and line."""
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise DatasetError(f"{path}: cannot open ({exc.strerror})") from exc
    with handle:
        lineno = 0
        try:
            for lineno, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DatasetError(f"{path}:{lineno}: invalid JSON ({exc.msg})") from exc
                if not isinstance(obj, dict):
                    raise DatasetError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
                yield lineno, obj
        except UnicodeDecodeError as exc:
            raise DatasetError(f"{path}:{lineno + 1}: not valid UTF-8") from exc


def _id(obj: dict[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, str | int) or str(value).strip() == "":
        raise DatasetError(f"{where}: field '{key}' must be a non-empty string or integer, got {value!r}")
    return str(value)


def _text(obj: dict[str, Any], key: str, where: str, *, required: bool) -> str:
    value = obj.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise DatasetError(f"{where}: field '{key}' must be a non-empty string, got {value!r}")
    return value


def _read_corpus(path: Path) -> list[CorpusDoc]:
    docs: list[CorpusDoc] = []
    seen: dict[str, int] = {}
    for lineno, obj in _read_jsonl(path):
        where = f"{path}:{lineno}"
        doc = CorpusDoc(
            id=_id(obj, "id", where),
            title=_text(obj, "title", where, required=False),
            text=_text(obj, "text", where, required=False),
        )
        if doc.id in seen:
            raise DatasetError(f"{where}: duplicate corpus id {doc.id!r} (first on line {seen[doc.id]})")
        seen[doc.id] = lineno
        docs.append(doc)
    return docs


def _read_queries(path: Path, limit: int | None) -> list[EvalQuery]:
    queries: list[EvalQuery] = []
    seen: dict[str, int] = {}
    for lineno, obj in _read_jsonl(path):
        if limit is not None and len(queries) >= limit:
            break
        where = f"{path}:{lineno}"
        gold = obj.get("gold_ids") or []
        if not isinstance(gold, list) or any(
            isinstance(g, bool) or not isinstance(g, str | int) for g in gold
        ):
            raise DatasetError(f"{where}: field 'gold_ids' must be a list of ids, got {gold!r}")
        query = EvalQuery(
            id=_id(obj, "id", where),
            question=_text(obj, "question", where, required=True),
            answers=flatten_answers(obj.get("answer")),
            gold_ids=list(dict.fromkeys(str(g) for g in gold)),
            meta={"answer_raw": obj.get("answer")},
        )
        if query.id in seen:
            raise DatasetError(f"{where}: duplicate query id {query.id!r} (first on line {seen[query.id]})")
        seen[query.id] = lineno
        queries.append(query)
    return queries


def _attach_meta(path: Path, queries: list[EvalQuery]) -> None:
    """Merge ``queries_meta.jsonl`` into each query's meta; MuSiQue answer aliases become answers."""
    by_id = {query.id: query for query in queries}
    seen: dict[str, int] = {}
    for lineno, obj in _read_jsonl(path):
        where = f"{path}:{lineno}"
        query_id = _id(obj, "id", where)
        if query_id in seen:
            raise DatasetError(
                f"{where}: duplicate meta for query {query_id!r} (first on line {seen[query_id]})"
            )
        seen[query_id] = lineno
        query = by_id.get(query_id)
        if query is None:  # a query beyond ``limit``, or meta for a query the set does not have
            continue
        extras = {key: value for key, value in obj.items() if key != "id"}
        query.meta.update(extras)
        aliases = extras.get("answer_aliases")
        if aliases and query.answers:
            query.answers = list(dict.fromkeys([*query.answers, *flatten_answers(aliases)]))


def _detect_dataset_language(corpus: list[CorpusDoc], queries: list[EvalQuery]) -> Literal["zh", "en"]:
    """Majority vote of the per-text detector over the questions (the corpus when there are none)."""
    texts = [q.question for q in queries] or [f"{d.title} {d.text}" for d in corpus[:500]]
    votes = Counter(detect_language(text) for text in texts)
    return "zh" if votes["zh"] > votes["en"] else "en"


def _has_decompositions(meta_path: Path) -> bool:
    """True when the first meta line carries a gold ``decomposition`` (FanOutQA, MuSiQue)."""
    if not meta_path.is_file():
        return False
    for _, obj in _read_jsonl(meta_path):
        return bool(obj.get("decomposition"))
    return False


def _no_corpus_message(folder: Path) -> str:
    message = (
        f"{folder.name} has no corpus ({folder / CORPUS_FILE} holds no passages), so retrieval and "
        "answers cannot be evaluated on it."
    )
    if _has_decompositions(folder / META_FILE):
        message += (
            " Its gold sub-question decompositions check query decomposition only: run "
            f"`python {DECOMPOSITION_BENCH} --fanoutqa {folder}` (figures in {DECOMPOSITION_DOC})."
        )
    return message


def load_dataset(dir: Path | str, limit: int | None = None, *, require_corpus: bool = False) -> Dataset:
    """Load one evaluation set; ``limit`` keeps the first N queries (the corpus always stays whole so
    distractors are not lost). ``dir`` may also be a bare set name under :func:`shared_data_dir`.
    ``require_corpus`` refuses a set without passages (:class:`NoCorpusError`), as retrieval needs."""
    if limit is not None and limit < 1:
        raise DatasetError(f"limit must be a positive number of queries, got {limit}")
    folder = resolve_dataset_dir(dir)
    missing = [name for name in (CORPUS_FILE, QUERIES_FILE) if not (folder / name).is_file()]
    if missing:
        raise DatasetError(
            f"{folder} is not an evaluation set: missing {', '.join(missing)} "
            f"(expected {CORPUS_FILE}, {QUERIES_FILE} and optionally {META_FILE})"
        )
    corpus = _read_corpus(folder / CORPUS_FILE)
    if require_corpus and not corpus:
        raise NoCorpusError(_no_corpus_message(folder))
    queries = _read_queries(folder / QUERIES_FILE, limit)
    if not queries:
        raise DatasetError(f"{folder / QUERIES_FILE}: no queries")
    if (folder / META_FILE).is_file():
        _attach_meta(folder / META_FILE, queries)
    return Dataset(
        name=folder.resolve().name,
        corpus=corpus,
        queries=queries,
        language=_detect_dataset_language(corpus, queries),
    )


def corpus_hash(dataset: Dataset) -> str:
    """sha256 over every document's id, title and text in corpus order (length-prefixed so field
    boundaries cannot shift); the key for caching an index built from this corpus."""
    digest = hashlib.sha256(b"agentic-rag-corpus-v1\0")
    for doc in dataset.corpus:
        for field in (doc.id, doc.title, doc.text):
            data = field.encode("utf-8")
            digest.update(len(data).to_bytes(8, "big"))
            digest.update(data)
    return digest.hexdigest()


def _hashed_place(key: str, slots: int) -> int:
    """A place in ``range(slots)`` fixed by ``key`` alone: the same corpus on every run and machine."""
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") % slots


def is_multi_hop(dataset: Dataset) -> bool:
    """True when most queries (more than half of those with gold ids) have several gold passages.

    Note that RGB sets pass this test too: their gold lists are redundant copies of one fact, so
    all-gold recall there means "found every supporting copy", not "found every hop"."""
    with_gold = [len(query.gold_ids) for query in dataset.queries if query.gold_ids]
    return bool(with_gold) and sum(n > 1 for n in with_gold) * 2 > len(with_gold)


def sub_questions(query: EvalQuery) -> list[SubQuestion]:
    """The gold decomposition in ``meta["decomposition"]``, depth-first (FanOutQA nests them).

    MuSiQue steps carry ``gold_id``; FanOutQA steps carry a Wikipedia ``evidence`` page whose title maps
    to the ``wiki:<title>`` ids used in ``gold_ids``."""
    out: list[SubQuestion] = []

    def walk(steps: Any) -> None:
        for step in steps or []:
            if not isinstance(step, dict) or not step.get("question"):
                continue
            evidence = step.get("evidence")
            gold_id = step.get("gold_id")
            if gold_id is None and isinstance(evidence, dict) and evidence.get("title"):
                gold_id = f"wiki:{evidence['title']}"
            out.append(
                SubQuestion(
                    question=str(step["question"]),
                    answers=flatten_answers(step.get("answer")),
                    gold_id=None if gold_id is None else str(gold_id),
                    depends_on=[str(d) for d in step.get("depends_on") or []],
                )
            )
            walk(step.get("decomposition"))

    walk(query.meta.get("decomposition"))
    return out


def has_counterfactuals(dataset: Dataset) -> bool:
    """True when some query carries counterfactual passages to plant (RGB ``positive_wrong``)."""
    return any(query.meta.get("positive_wrong") for query in dataset.queries)


PlantOrder = Literal["mixed", "appended"]


def plant_counterfactuals(dataset: Dataset, order: PlantOrder = "mixed") -> Dataset:
    """A copy whose corpus also holds each query's counterfactual passages (RGB ``positive_wrong``).

    The shared RGB corpora hold only the true passages; planting the altered copies (ids
    ``<query id>::counterfactual-<i>``, listed in ``meta["counterfactual_ids"]``) tests whether a
    system repeats the planted wrong answer (``meta["fakeanswer"]``).

    ``order="mixed"`` (default) puts each copy at a place drawn from a hash of its id, so where a
    passage sits says nothing about whether it is true. Appended after the corpus (``"appended"``,
    the old layout), every copy that ties its true passage exactly loses the tie in any ranker that
    breaks ties by index position (BM25 here, and most engines): that rewards insertion order, not
    ranking, and made keyword search look 0.04-0.05 nDCG@10 better on RGB than with ties in random
    order (docs/evaluation.md)."""
    known_texts = {doc.text for doc in dataset.corpus}
    corpus = list(dataset.corpus)
    queries: list[EvalQuery] = []
    for query in dataset.queries:
        planted: list[str] = []
        for i, text in enumerate(query.meta.get("positive_wrong") or []):
            if not isinstance(text, str) or not text.strip() or text in known_texts:
                continue
            doc_id = f"{query.id}::counterfactual-{i}"
            doc = CorpusDoc(id=doc_id, text=text)
            if order == "appended":
                corpus.append(doc)
            else:
                corpus.insert(_hashed_place(doc_id, len(corpus) + 1), doc)
            known_texts.add(text)
            planted.append(doc_id)
        queries.append(query.model_copy(update={"meta": {**query.meta, "counterfactual_ids": planted}}))
    return dataset.model_copy(
        update={"name": f"{dataset.name}+counterfactual", "corpus": corpus, "queries": queries}
    )
