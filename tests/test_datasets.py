"""Reading evaluation sets in the shared layout: fixtures in temp folders, then every real set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evaluators.datasets import (
    DATA_DIR_ENV,
    DatasetError,
    NoCorpusError,
    corpus_hash,
    has_counterfactuals,
    is_multi_hop,
    load_dataset,
    plant_counterfactuals,
    shared_data_dir,
    sub_questions,
)


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


def make_set(
    root: Path,
    name: str,
    corpus: list[dict[str, Any]],
    queries: list[dict[str, Any]],
    meta: list[dict[str, Any]] | None = None,
) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    write_jsonl(folder / "corpus.jsonl", corpus)
    write_jsonl(folder / "queries.jsonl", queries)
    if meta is not None:
        write_jsonl(folder / "queries_meta.jsonl", meta)
    return folder


EN_CORPUS = [
    {"id": "d1", "title": "Journal of Psychotherapy Integration", "text": "Published by the APA."},
    {
        "id": "d2",
        "title": "American Psychological Association",
        "text": "Its first president was G. Stanley Hall.",
    },
    {"id": "d3", "title": "Person-centered therapy", "text": "Developed by Carl Rogers."},
]
EN_QUERIES = [
    {
        "id": "q1",
        "question": "Who was the first president of the publisher of Journal of Psychotherapy Integration?",
        "answer": "G. Stanley Hall",
        "gold_ids": ["d1", "d2"],
    },
    {"id": "q2", "question": "Who developed person-centered therapy?", "answer": None, "gold_ids": ["d3"]},
    {
        "id": "q3",
        "question": "Who published the journal?",
        "answer": ["APA", "the APA"],
        "gold_ids": ["d1", "d2"],
    },
]
EN_META = [
    {
        "id": "q1",
        "hops": "2hop",
        "answer_aliases": ["Stanley Hall"],
        "decomposition": [
            {
                "question": "Who published Journal of Psychotherapy Integration?",
                "answer": "APA",
                "gold_id": "d1",
            },
            {"question": "Who was the first president of #1 ?", "answer": "G. Stanley Hall", "gold_id": "d2"},
        ],
    },
    {"id": "not-a-query", "hops": "2hop"},
]
ZH_CORPUS = [
    {"id": "z1", "title": "泡泡战士", "text": "生命数耗完即算为踢爆。若游戏中离，则4分钟内不得进行配对。"},
    {"id": "z2", "title": "梵文", "text": "在歐洲，梵語的學術研究，由德國學者陸特和漢斯雷頓開創。"},
]
ZH_QUERIES = [
    {"id": "zq1", "question": "生命数耗完即算为什么？", "answer": "踢爆", "gold_ids": ["z1"]},
    {
        "id": "zq2",
        "question": "陸特和漢斯雷頓開創了哪一地區對梵語的學術研究？",
        "answer": ["歐洲", "歐洲。"],
        "gold_ids": ["z2"],
    },
]


# --- the happy path ----------------------------------------------------------------------------------


def test_loads_english_set_with_meta_and_aliases(tmp_path: Path) -> None:
    folder = make_set(tmp_path, "musique_like", EN_CORPUS, EN_QUERIES, EN_META)
    dataset = load_dataset(folder)

    assert dataset.name == "musique_like"
    assert dataset.language == "en"
    assert [doc.id for doc in dataset.corpus] == ["d1", "d2", "d3"]
    q1, q2, q3 = dataset.queries
    assert q1.answers == ["G. Stanley Hall", "Stanley Hall"]  # MuSiQue aliases are acceptable answers
    assert q1.meta["hops"] == "2hop"
    assert q1.meta["answer_raw"] == "G. Stanley Hall"
    assert q2.answers == [] and q2.meta == {"answer_raw": None}
    assert q3.answers == ["APA", "the APA"]
    assert dataset.has_answers


def test_loads_chinese_set_and_detects_language(tmp_path: Path) -> None:
    dataset = load_dataset(make_set(tmp_path, "cmrc_like", ZH_CORPUS, ZH_QUERIES))
    assert dataset.language == "zh"
    assert dataset.queries[1].answers == ["歐洲", "歐洲。"]
    assert dataset.queries[1].gold_ids == ["z2"]


def test_limit_keeps_first_queries_and_the_whole_corpus(tmp_path: Path) -> None:
    dataset = load_dataset(make_set(tmp_path, "s", EN_CORPUS, EN_QUERIES, EN_META), limit=1)
    assert [q.id for q in dataset.queries] == ["q1"]
    assert len(dataset.corpus) == 3
    with pytest.raises(DatasetError, match="limit must be a positive"):
        load_dataset(tmp_path / "s", limit=0)


def test_integer_ids_become_strings_and_fanoutqa_answers_flatten(tmp_path: Path) -> None:
    folder = make_set(
        tmp_path,
        "s",
        [{"id": 4983, "title": None, "text": "abstract"}],
        [
            {"id": 7, "question": "Batting hands?", "answer": {"Pat Burrell": "Right"}, "gold_ids": [4983]},
        ],
    )
    dataset = load_dataset(folder)
    assert dataset.corpus[0].id == "4983" and dataset.corpus[0].title == ""
    assert dataset.queries[0].id == "7"
    assert dataset.queries[0].gold_ids == ["4983"]
    assert dataset.queries[0].answers == ["Pat Burrell", "Right"]
    assert dataset.queries[0].meta["answer_raw"] == {"Pat Burrell": "Right"}


def test_a_bare_name_is_looked_up_in_the_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_set(tmp_path, "tiny_set", ZH_CORPUS, ZH_QUERIES)
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    assert shared_data_dir() == tmp_path
    assert load_dataset("tiny_set").name == "tiny_set"
    with pytest.raises(DatasetError, match=r"Known sets in .*tiny_set"):
        load_dataset("no_such_set")
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "absent"))
    assert shared_data_dir() is None


# --- clear errors ------------------------------------------------------------------------------------


def test_missing_folder_or_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="dataset folder not found"):
        load_dataset(tmp_path / "nowhere")
    (tmp_path / "half").mkdir()
    write_jsonl(tmp_path / "half" / "corpus.jsonl", EN_CORPUS)
    with pytest.raises(DatasetError, match=r"missing queries\.jsonl"):
        load_dataset(tmp_path / "half")


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    folder = make_set(tmp_path, "s", EN_CORPUS, EN_QUERIES)
    with (folder / "queries.jsonl").open("a", encoding="utf-8") as handle:
        handle.write("\n{not json\n")
    with pytest.raises(DatasetError, match=r"queries\.jsonl:5: invalid JSON"):
        load_dataset(folder)


@pytest.mark.parametrize(
    ("file", "rows", "message"),
    [
        ("queries", [{"id": "q", "answer": "x", "gold_ids": []}], r"queries\.jsonl:1: field 'question'"),
        ("queries", [{"id": "q", "question": "?", "gold_ids": "d1"}], r"queries\.jsonl:1: field 'gold_ids'"),
        ("queries", [{"question": "?", "gold_ids": []}], r"queries\.jsonl:1: field 'id'"),
        ("queries", [EN_QUERIES[0], EN_QUERIES[0]], r"queries\.jsonl:2: duplicate query id 'q1'"),
        ("corpus", [{"id": "d1", "text": 5}], r"corpus\.jsonl:1: field 'text'"),
        ("corpus", [EN_CORPUS[0], EN_CORPUS[0]], r"corpus\.jsonl:2: duplicate corpus id 'd1'"),
        ("corpus", [["not", "an", "object"]], r"corpus\.jsonl:1: expected a JSON object"),
    ],
)
def test_bad_rows_are_reported_with_their_line(
    tmp_path: Path, file: str, rows: list[Any], message: str
) -> None:
    folder = make_set(tmp_path, "s", EN_CORPUS, EN_QUERIES)
    write_jsonl(folder / f"{file}.jsonl", rows)
    with pytest.raises(DatasetError, match=message):
        load_dataset(folder)


def test_non_utf8_file_is_reported(tmp_path: Path) -> None:
    folder = make_set(tmp_path, "s", EN_CORPUS, EN_QUERIES)
    (folder / "corpus.jsonl").write_bytes('{"id": "d", "text": "中文"}\n'.encode("gb18030"))
    with pytest.raises(DatasetError, match=r"corpus\.jsonl:1: not valid UTF-8"):
        load_dataset(folder)


# --- helpers -----------------------------------------------------------------------------------------


def test_corpus_hash_is_stable_and_content_sensitive(tmp_path: Path) -> None:
    first = load_dataset(make_set(tmp_path, "a", EN_CORPUS, EN_QUERIES))
    same = load_dataset(make_set(tmp_path, "b", EN_CORPUS, EN_QUERIES[:1]))  # queries do not matter
    retitled = [{**EN_CORPUS[0], "title": "Other"}, *EN_CORPUS[1:]]
    changed = load_dataset(make_set(tmp_path, "c", retitled, EN_QUERIES))
    # Moving text between title and body must change the hash (fields are length-prefixed).
    shifted = [{"id": "d1", "title": "ab", "text": "c"}]
    shifted_other = [{"id": "d1", "title": "a", "text": "bc"}]
    h1 = corpus_hash(load_dataset(make_set(tmp_path, "d", shifted, EN_QUERIES[1:2])))
    h2 = corpus_hash(load_dataset(make_set(tmp_path, "e", shifted_other, EN_QUERIES[1:2])))

    assert corpus_hash(first) == corpus_hash(same)
    assert len(corpus_hash(first)) == 64
    assert corpus_hash(first) != corpus_hash(changed)
    assert h1 != h2


def test_is_multi_hop_when_most_queries_have_several_gold(tmp_path: Path) -> None:
    assert is_multi_hop(load_dataset(make_set(tmp_path, "en", EN_CORPUS, EN_QUERIES)))  # 2 of 3
    assert not is_multi_hop(load_dataset(make_set(tmp_path, "zh", ZH_CORPUS, ZH_QUERIES)))


def test_sub_questions_for_musique_and_nested_fanoutqa(tmp_path: Path) -> None:
    musique = load_dataset(make_set(tmp_path, "m", EN_CORPUS, EN_QUERIES, EN_META)).queries[0]
    steps = sub_questions(musique)
    assert [s.gold_id for s in steps] == ["d1", "d2"]
    assert steps[1].answers == ["G. Stanley Hall"]

    fanout_meta = {
        "id": "f1",
        "decomposition": [
            {
                "id": "s1",
                "question": "Who were the first 2 picks?",
                "answer": ["Pat Burrell", "Mark Mulder"],
                "depends_on": [],
                "evidence": {"title": "1998 Major League Baseball draft"},
                "decomposition": [
                    {
                        "id": "s2",
                        "question": "Which team picked first?",
                        "answer": "Phillies",
                        "decomposition": [],
                    }
                ],
            },
            {
                "id": "s3",
                "question": "Batting hand of Pat Burrell?",
                "answer": "Right",
                "depends_on": ["s1"],
                "evidence": {"title": "Pat Burrell"},
                "decomposition": [],
            },
        ],
    }
    folder = make_set(
        tmp_path,
        "f",
        [],
        [
            {
                "id": "f1",
                "question": "Batting hands of the first two picks?",
                "answer": {"Pat Burrell": "Right"},
                "gold_ids": ["wiki:1998 Major League Baseball draft", "wiki:Pat Burrell"],
            }
        ],
        [fanout_meta],
    )
    fanout = load_dataset(folder)
    assert fanout.corpus == []
    steps = sub_questions(fanout.queries[0])
    assert [s.question for s in steps] == [
        "Who were the first 2 picks?",
        "Which team picked first?",
        "Batting hand of Pat Burrell?",
    ]
    assert [s.gold_id for s in steps] == ["wiki:1998 Major League Baseball draft", None, "wiki:Pat Burrell"]
    assert steps[2].depends_on == ["s1"]
    assert sub_questions(musique.model_copy(update={"meta": {}})) == []


def test_plant_counterfactuals_adds_the_wrong_passages(tmp_path: Path) -> None:
    corpus = [{"id": "p1", "title": "", "text": "Super Bowl LV was played in Tampa, Florida."}]
    queries = [
        {
            "id": "en_fact-0",
            "question": "Super Bowl 2021 location",
            "answer": "Tampa, Florida",
            "gold_ids": ["p1"],
        }
    ]
    meta = [
        {
            "id": "en_fact-0",
            "fakeanswer": "Glendale, Arizona",
            "positive_wrong": ["Super Bowl LV was played in Glendale, Arizona.", corpus[0]["text"]],
        }
    ]
    dataset = load_dataset(make_set(tmp_path, "rgb_like", corpus, queries, meta))
    planted = plant_counterfactuals(dataset)

    assert planted.name == "rgb_like+counterfactual"
    assert sorted(doc.id for doc in planted.corpus) == ["en_fact-0::counterfactual-0", "p1"]
    assert planted.queries[0].meta["counterfactual_ids"] == ["en_fact-0::counterfactual-0"]
    assert planted.queries[0].gold_ids == ["p1"]
    assert len(dataset.corpus) == 1  # the original is untouched
    assert has_counterfactuals(dataset) and not has_counterfactuals(
        planted.model_copy(update={"queries": []})
    )


def test_planted_passages_are_mixed_into_the_corpus_not_appended(tmp_path: Path) -> None:
    """Where a planted copy sits must carry no label: appended after the corpus, every exact BM25 tie
    with its true passage went to the truth by index position alone."""
    corpus = [{"id": f"p{i}", "title": "", "text": f"第{i}届运动会在城市{i}举行。"} for i in range(40)]
    queries = [
        {
            "id": f"zh_fact-{i}",
            "question": f"第{i}届运动会在哪里举行？",
            "answer": f"城市{i}",
            "gold_ids": [f"p{i}"],
        }
        for i in range(40)
    ]
    meta = [
        {"id": f"zh_fact-{i}", "fakeanswer": "某地", "positive_wrong": [f"第{i}届运动会在某地{i}举行。"]}
        for i in range(40)
    ]
    dataset = load_dataset(make_set(tmp_path, "rgb_like", corpus, queries, meta))

    mixed = [doc.id for doc in plant_counterfactuals(dataset).corpus]
    again = [doc.id for doc in plant_counterfactuals(dataset).corpus]
    appended = [doc.id for doc in plant_counterfactuals(dataset, order="appended").corpus]

    assert mixed == again  # fixed by the ids: the same index on every run
    assert sorted(mixed) == sorted(appended) and len(mixed) == 80
    assert appended[:40] == [f"p{i}" for i in range(40)]
    copy_first = sum(mixed.index(f"zh_fact-{i}::counterfactual-0") < mixed.index(f"p{i}") for i in range(40))
    assert 10 <= copy_first <= 30  # about half the copies come before their true passage


def test_a_set_without_passages_is_refused_only_when_a_corpus_is_required(tmp_path: Path) -> None:
    meta = [{"id": "zq1", "decomposition": [{"question": "生命数耗完会怎样？"}]}]
    folder = make_set(tmp_path, "fanout_like", [], ZH_QUERIES, meta)
    assert load_dataset(folder).corpus == []  # decomposition checks read it without passages
    with pytest.raises(NoCorpusError, match=r"has no corpus.*bench/analyzer_accuracy\.py"):
        load_dataset(folder, require_corpus=True)
    plain = make_set(tmp_path, "empty_en", [], EN_QUERIES)
    with pytest.raises(NoCorpusError, match="has no corpus") as info:
        load_dataset(plain, require_corpus=True)
    assert "analyzer" not in str(info.value)  # no decompositions, no pointer to the decomposition bench


# --- the real shared sets ----------------------------------------------------------------------------

EXPECTED_LANGUAGE = {
    "hotpotqa_hipporag100": "en",
    "musique_hipporag100": "en",
    "scifact_train": "en",
    "cmrc2018_trial": "zh",
    "drcd_dev": "zh",
    "rgb_zh_fact": "zh",
    "rgb_en_fact": "en",
    "fanoutqa_dev": "en",
}


def _real_sets() -> list[Path]:
    root = shared_data_dir()
    if root is None:
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / "queries.jsonl").is_file())


@pytest.mark.skipif(not _real_sets(), reason="shared evaluation data not present")
@pytest.mark.parametrize("folder", _real_sets(), ids=lambda p: p.name)
def test_every_real_set_loads(folder: Path) -> None:
    dataset = load_dataset(folder)
    assert dataset.queries
    if dataset.name in EXPECTED_LANGUAGE:
        assert dataset.language == EXPECTED_LANGUAGE[dataset.name]
    if dataset.corpus:  # every gold id points at a passage (FanOutQA ships no corpus)
        ids = {doc.id for doc in dataset.corpus}
        assert all(gold in ids for query in dataset.queries for gold in query.gold_ids)
    assert len(corpus_hash(dataset)) == 64
