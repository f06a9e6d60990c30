"""Evidence judged by meaning, answers a reader can use, and verification that can fail (zh and en).

The offline brain here gets the real multilingual embedder the index uses (``embedder`` fixture), the
way ``app.wiring.build_context`` hands it over.
"""

from __future__ import annotations

import pytest

from core.chunks import Chunk, ScoredChunk
from core.schemas import Passage, QueryAnalysis
from core.text import split_sentences
from providers.brain import offline_brain
from providers.offline_brain.answer import is_prose
from providers.offline_brain.facts import facts, wanted
from tests.graph_fixtures import make_context

__all__ = ["make_context"]  # the fixture is used by name

RRF_EN = (
    "Hybrid search runs vector and keyword search and merges the two rankings with reciprocal rank "
    "fusion. Each chunk receives the sum of 1 / (k + rank) over the lists it appears in, with k = 60."
)
RRF_ZH = "混合检索同时运行向量检索和关键词检索，并用倒数排名融合合并两份排名。每个片段的得分是 1/(k+排名) 之和，k 取 60。"
OFFLINE_EN = "Offline mode is the default whenever no model is configured. Nothing is downloaded at run time."
OFFLINE_ZH = "只要没有配置模型，默认就是离线模式。运行时不会下载任何东西。"


@pytest.fixture(scope="module")
def brain(embedder):
    return offline_brain(embedder=embedder)


def chunk(cid: str, text: str, score: float = 1.0, title: str = "") -> ScoredChunk:
    return ScoredChunk(chunk=Chunk(id=cid, text=text, source=f"docs/{cid}.md", title=title), score=score)


def passage(number: int, text: str, heading: str = "") -> Passage:
    return Passage(
        number=number, chunk_id=f"c{number}", source=f"docs/{number}.md", heading=heading, text=text
    )


def snippet_passages(snippets: list[str]) -> list[Passage]:
    """Search snippets as passages [1]..[n], in the order given."""
    return [passage(n, text) for n, text in enumerate(snippets, start=1)]


def chosen_sentence(brain, question: str, snippets: list[str]) -> str:
    """The sentence the offline writer picks first to answer ``question`` from ``snippets``."""
    from providers.offline_brain.answer import choose

    return choose(question, snippet_passages(snippets), brain.write.meaning)[0].sentence


# ---- evaluate: sufficiency by meaning ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "evidence"),
    [("混合检索怎么合并两路结果？", RRF_EN), ("How does hybrid search merge the two result lists?", RRF_ZH)],
)
def test_evidence_in_the_other_language_is_judged_by_meaning(brain, question, evidence):
    chunks = [
        chunk("gold", evidence, 1.0),
        chunk("other", OFFLINE_EN if "混合" in question else OFFLINE_ZH, 0.2),
    ]
    judged = brain.judge(question, QueryAnalysis(), chunks, [])
    assert judged.is_sufficient and judged.suggested_action == "answer"
    assert "gold" in judged.relevant_ids()
    lexical_only = offline_brain().judge(question, QueryAnalysis(), chunks, [])
    assert not lexical_only.is_sufficient  # word overlap alone cannot see it


@pytest.mark.parametrize(
    ("question", "words", "fragments"),
    [
        ("如何用 systemd 创建一个服务器服务？", {"systemd", "服务器"}, {"务器", "器服"}),
        ("How do I create a systemd service for the web server?", {"systemd", "server"}, {"serv", "creat"}),
    ],
)
def test_insufficient_names_whole_words_of_the_question(brain, question, words, fragments):
    cat = chunk("cat", "The cat sat quietly on the mat all afternoon. 猫整个下午都安静地坐在垫子上。")
    judged = brain.judge(question, QueryAnalysis(), [cat], [])
    assert not judged.is_sufficient
    assert words <= set(judged.missing_info) and not fragments & set(judged.missing_info)
    draft = brain.write(question, [passage(1, cat.chunk.text)])
    assert draft.insufficient and all(word in draft.answer for word in words)
    assert not any(fragment in draft.missing for fragment in fragments)


# ---- verify: it can fail ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "verdicts"),
    [
        ("混合检索把两份排名合并在一起[1]。常数 k 取 80[1]。", [True, False]),  # 80 is not in the evidence
        (
            "Hybrid search merges the two rankings with reciprocal rank fusion [1]. The constant k is 80 [1].",
            [True, False],
        ),
        (
            "混合检索用倒数排名融合合并两份排名[1]。熊猫主要吃竹子[2]。",
            [True, False],
        ),  # 2 is about something else
        ("Hybrid search merges both rankings [1]. Pandas mostly eat bamboo [2].", [True, False]),
        ("混合检索合并两份排名[2]。", [False]),  # a true claim, but the wrong passage cited
        ("Hybrid search merges both rankings [2].", [False]),
    ],
)
def test_a_sentence_the_evidence_does_not_support_is_flagged(brain, answer, verdicts):
    passages = [passage(1, RRF_EN), passage(2, OFFLINE_ZH if "混合" in answer else OFFLINE_EN)]
    support = brain.verify(answer, passages)
    assert [s.supported for s in support] == verdicts


@pytest.mark.parametrize(
    ("answer", "evidence"),
    [
        ("每个片段的得分是 1/(k+排名) 之和，k 取 80[1]。", RRF_ZH),
        (
            "Each chunk receives the sum of 1 / (k + rank) over the lists it appears in, with k = 80 [1].",
            RRF_EN,
        ),
    ],
)
def test_a_copied_sentence_with_a_changed_number_is_unsupported(brain, answer, evidence):
    """Every word but the number is in the passage: only the stated specific gives it away."""
    [verdict] = brain.verify(answer, [passage(1, evidence)])
    assert verdict.score >= 0.6 and not verdict.supported
    [faithful] = brain.verify(answer.replace("80", "60"), [passage(1, evidence)])
    assert faithful.supported


@pytest.mark.parametrize(
    ("answer", "evidence"),
    [
        ("混合检索用倒数排名融合合并两份排名，k 取 60[1]。", RRF_EN),
        ("Hybrid search merges the two rankings with reciprocal rank fusion [1].", RRF_ZH),
    ],
)
def test_a_faithful_sentence_citing_the_other_language_is_supported(brain, answer, evidence):
    assert [s.supported for s in brain.verify(answer, [passage(1, evidence)])] == [True]


def test_verify_removes_unsupported_sentences_when_configured(make_context, embedder):
    from graph.builder import build_graph
    from graph.run import ask

    context = make_context(remove_unsupported=True)
    result = ask(build_graph(), "混合检索的常数 k 是多少？", context=context)
    assert "60" in result.answer and all(s.supported for s in result.support)


# ---- answers ---------------------------------------------------------------------------------------


def test_only_prose_is_an_answer_sentence():
    assert is_prose("The fusion constant k is 60.")
    assert is_prose("常数 k 取 60。")
    for junk in (
        "| `AGENTIC_RAG_TOP_K` | 10 | passages kept after reranking |",
        "[rrf]: https://example.org/rrf",
        "## Hybrid search (RRF)",
        "python main.py ingest --rebuild PATH",
        "```bash",
        "混合检索（RRF）",
    ):
        assert not is_prose(junk), junk


@pytest.mark.parametrize(
    ("question", "kinds"),
    [
        ("RRF 的常数是多少？", {"number"}),
        ("How many candidates are fetched?", {"number"}),
        ("泰坦尼克号是哪一年沉没的？", {"date"}),
        ("When did the Berlin Wall fall?", {"date"}),
        ("《红楼梦》的作者是谁？", {"name"}),
        ("Who designed the bridge?", {"name"}),
        ("2019年军运会在哪个城市举办？", {"place"}),
        ("Which country won the most medals?", {"place"}),
        ("F-35战斗机研发国家", {"place"}),  # no question word: the noun it ends on asks
        ("Super Bowl 2021 location", {"place"}),
        ("索尼PlayStation 4发售日期", {"date"}),
        ("What is the release date of the game?", {"date"}),
        ("什么是混合检索？", set()),
        ("How does hybrid search merge rankings?", set()),
    ],
)
def test_the_kind_of_fact_asked_for(question, kinds):
    assert wanted(question) == kinds


@pytest.mark.parametrize(
    ("question", "expected"),
    [("RRF 的常数 k 是多少？", "k 取 60"), ("What is the value of the RRF constant k?", "k = 60")],
)
def test_answer_is_the_sentence_holding_the_fact_without_tables_code_or_repeats(brain, question, expected):
    text = RRF_ZH if "常数" in question else RRF_EN
    noisy = f"## Hybrid search\n\n{text}\n\n| setting | default |\n| --- | --- |\n| rrf_k | 60 |\n\n[rrf]: https://x.org/rrf"
    passages = [passage(1, "python main.py search --mode hybrid QUERY"), passage(2, noisy), passage(3, text)]
    draft = brain.write(question, passages)
    assert not draft.insufficient and expected in draft.answer
    assert "|" not in draft.answer and "http" not in draft.answer and "main.py" not in draft.answer
    assert "##" not in draft.answer
    sentence = next(
        s for s in draft.answer.replace("。", "。\n").replace(". ", ".\n").splitlines() if expected in s
    )
    assert draft.answer.count(sentence.split("[")[0].strip()) == 1  # the same sentence from 2 and 3: once


def test_code_is_an_answer_when_the_question_asks_for_a_command(brain):
    passages = [passage(1, "Rebuild the index from your documents:\n\npython main.py ingest --rebuild PATH")]
    assert "python main.py ingest --rebuild PATH" in brain.write("用什么命令重建索引？", passages).answer


@pytest.mark.parametrize(
    ("question", "evidence", "note"),
    [
        ("混合检索怎么合并两路结果？", RRF_EN, "以下引自英文资料原文"),
        ("How does hybrid search merge the two result lists?", RRF_ZH, "Quoted from a Chinese source"),
    ],
)
def test_an_answer_quoted_from_the_other_language_says_so(brain, question, evidence, note):
    draft = brain.write(question, [passage(1, evidence)])
    assert not draft.insufficient and note in draft.answer and "[1]" in draft.answer


def test_at_most_three_sentences(brain):
    many = " ".join(f"Hybrid search fact number {i} is about merging rankings with fusion." for i in range(8))
    draft = brain.write("How does hybrid search merge rankings?", [passage(1, many)])
    assert 1 <= draft.answer.count("[1]") <= 3


def test_meaning_cache_smaller_than_one_call(embedder):
    """More texts than the cache holds, some cached before: every vector still comes back, in order."""
    from providers.meaning import Meaning

    meaning = Meaning(embedder, cache_size=3)
    texts = ["混合检索", "hybrid search", "倒数排名融合", "reciprocal rank fusion", "熊猫", "panda"]
    meaning.similarity("RRF", texts[:2])
    sims = meaning.similarity("RRF", texts)
    assert len(sims) == 6 and sims[:2] == pytest.approx(meaning.similarity("RRF", texts[:2]), abs=1e-4)


# ---- news snippets: the fact of the asked kind, the one most passages agree on ----------------------


def test_sentences_of_news_snippets_split_where_sentences_end():
    assert split_sentences(
        "Jan. 5, 2023 ... Veltra named Niels B. Christiansen CEO. He won the U.S. Open."
    ) == [
        "Jan. 5, 2023 ...",
        "Veltra named Niels B. Christiansen CEO.",
        "He won the U.S. Open.",
    ]
    assert split_sentences("他说：“走吧。”我们就出发了。（这是真的。）然后呢") == [
        "他说：“走吧。”",
        "我们就出发了。",
        "（这是真的。）",
        "然后呢",
    ]


@pytest.mark.parametrize(
    ("sentence", "kind", "question", "expected"),
    [
        (
            "The bridge reopened on Mar. 3, 2022, after work began in 2020.",
            "date",
            "When did it reopen?",
            {"2022-3-3": 1.0, "2020": 0.6},
        ),
        (
            "大桥于2019年12月28日通车，2015年开工。",
            "date",
            "大桥是哪一年通车的？",
            {"2019-12-28": 1.0, "2015": 0.6},
        ),
        (
            "In 2018, 13,610 thousand jobs and 91% of targets.",
            "number",
            "How many jobs in 2018?",
            {"13610thousand": 1.0, "91%": 1.0},
        ),
        ("2018年，城镇新增就业：1,361万人。", "number", "2018年新增就业多少人？", {"1361万": 1.0}),
        ("2018年城镇新增就业1,361万人。", "number", "2018年新增就业多少人？", {"1361万": 1.0}),
        (
            "Director Niels B. Christiansen joined the LEGO Group.",
            "name",
            "Who runs the LEGO Group?",
            {"director niels b. christiansen": 1.0},
        ),
        (
            "钢铁侠由小罗伯特·唐尼饰演。",
            "name",
            "钢铁侠是谁演的？",
            {"罗伯特·唐尼": 1.0, "罗伯特": 1.0, "唐尼": 1.0},
        ),
    ],
)
def test_facts_of_the_asked_kind_are_normalised_and_leave_out_what_the_question_states(
    sentence, kind, question, expected
):
    assert facts(sentence, kind, question) == expected


SNIPPETS_EN = [
    "Apr 18, 2023 ... Okafor's rival Mia Chen won the Harbor City marathon, one early report said.",
    "Apr 17, 2023 ... The Harbor City marathon drew a record field this year. Runners faced strong "
    "headwinds along the bay. Lena Okafor crossed the line first, ahead of last year's champion.",
    "Who won the Harbor City marathon? Results and photos from Sunday's race.",
    "Lena Okafor won the Harbor City marathon on Sunday in 2:24:10.",
    "Lena Okafor, who won the Harbor City marathon, thanked the crowd.",
]
SNIPPETS_ZH = [
    "2022年4月11日 ... 一篇早期报道称，青川马拉松冠军是王小川。",
    "2022年4月10日 ... 青川马拉松今日鸣枪开跑，共有两万名选手参赛。比赛当天气温较高。最终李明远以2小时12分的成绩夺得冠军。",
    "青川马拉松冠军是谁？赛事成绩查询入口。",
    "青川马拉松冠军李明远赛后表示，将备战全国锦标赛。",
    "获得青川马拉松冠军的李明远感谢了观众。",
]


@pytest.mark.parametrize(
    ("question", "snippets", "truth", "planted"),
    [
        ("Who won the Harbor City marathon?", SNIPPETS_EN, "Lena Okafor", "Mia Chen"),
        ("青川马拉松的冠军是谁？", SNIPPETS_ZH, "李明远", "王小川"),
    ],
)
def test_the_fact_most_passages_state_outvotes_a_planted_one(brain, question, snippets, truth, planted):
    """The planted snippet ranks first and names someone else; two passages agree on the winner."""
    assert truth in chosen_sentence(brain, question, snippets)
    assert truth in brain.write(question, snippet_passages(snippets)).answer


@pytest.mark.parametrize(
    ("question", "other", "snippet", "fact"),
    [
        (
            "When was the Solvik vaccine approved?",
            "What is the Solvik vaccine made of?",
            "Dec 14, 2021 ... Regulators approved the Solvik vaccine on Tuesday. It showed 91% efficacy.",
            "Dec 14, 2021",
        ),
        (
            "索维克疫苗是什么时候获批的？",
            "索维克疫苗的有效率是多少？",
            "2021年12月14日 ... 监管机构今天批准了索维克疫苗。该疫苗的有效率为91%。",
            "2021年12月14日",
        ),
    ],
)
def test_a_snippets_date_joins_its_first_sentence_only_when_a_date_is_asked(
    brain, question, other, snippet, fact
):
    assert fact in brain.write(question, [passage(1, snippet)]).answer
    assert fact not in brain.write(other, [passage(1, snippet)]).answer


# ---- contradicting copies, other editions, names as the question does not state them ----------------


@pytest.mark.parametrize(
    ("question", "snippets", "truth", "planted", "note"),
    [
        (
            "Who won the Harbor City marathon?",
            [
                "Mia Chen won the Harbor City marathon on Sunday, finishing in 2:24:10.",
                "Apr 18, 2023 ... Mia Chen won the Harbor City marathon on Sunday, finishing in 2:24:10.",
                "Lena Okafor won the Harbor City marathon on Sunday, finishing in 2:24:10.",
            ],
            "Lena Okafor",
            "Mia Chen",
            "Another source says",
        ),
        (
            "青川马拉松的冠军是谁？",
            [
                "王小川以2小时12分的成绩夺得青川马拉松冠军。",
                "2022年4月11日 ... 王小川以2小时12分的成绩夺得青川马拉松冠军。",
                "李明远以2小时12分的成绩夺得青川马拉松冠军。",
            ],
            "李明远",
            "王小川",
            "另有资料作",
        ),
    ],
)
def test_near_copies_that_contradict_each_other_are_both_named(
    brain, question, snippets, truth, planted, note
):
    """Two copies of the wrong version outrank and outnumber the right one: counting cannot settle it,
    so the answer gives one version and names the other, cited."""
    passages = snippet_passages(snippets)
    answer = brain.write(question, passages).answer
    assert truth in answer and planted in answer and note in answer
    assert answer.count(planted) == 1  # the second copy is not repeated


@pytest.mark.parametrize(
    ("question", "snippets", "truth", "note"),
    [
        (
            "What does the Solvik plant make?",
            [
                "The Solvik plant makes glass bottles for the region.",
                "The Solvik plant makes steel pipes for the region.",
            ],
            "steel pipes",
            'Another source says "steel pipes" [2].',
        ),
        (
            "索维克工厂生产什么？",
            ["索维克工厂为本地区生产玻璃瓶。", "索维克工厂为本地区生产钢管。"],
            "钢管",
            "另有资料作“钢管”[2]。",
        ),
    ],
)
def test_a_near_copy_differing_in_one_place_is_named_whatever_is_asked(
    brain, question, snippets, truth, note
):
    passages = snippet_passages(snippets)
    assert brain.write(question, passages).answer.endswith(note)


@pytest.mark.parametrize(
    ("question", "snippets", "truth"),
    [
        (
            "Who won the 2021 Harbor City marathon?",
            [
                "Mia Chen won the Harbor City marathon in 2020.",
                "In 2020 Mia Chen won the Harbor City marathon, ahead of a record field.",
                "Lena Okafor won this year's Harbor City marathon.",
            ],
            "Lena Okafor",
        ),
        (
            "第六届青川马拉松的冠军是谁？",
            [
                "王小川夺得第五届青川马拉松冠军。",
                "第五届青川马拉松冠军王小川赛后接受了采访。",
                "李明远夺得本届青川马拉松冠军。",
            ],
            "李明远",
        ),
    ],
)
def test_a_sentence_about_another_edition_does_not_answer(brain, question, snippets, truth):
    """Two passages agree on last year's winner; neither votes nor answers for this year's."""
    assert truth in chosen_sentence(brain, question, snippets)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "the 92nd Academy Awards, season 11 and the fourth-season premiere in 2019",
            {"year": {2019}, "ordinal": {92, 11, 4}},
        ),
        ("2018-2019赛季第六届立法会，第二十三次会议", {"year": {2018, 2019}, "ordinal": {6, 23}}),
    ],
)
def test_editions_a_question_can_name(text, expected):
    from providers.offline_brain.facts import editions

    assert editions(text) == expected


@pytest.mark.parametrize(
    ("question", "snippets", "truth"),
    [
        (
            "When did the Solvik bridge open?",
            [
                "Nov 14, 2022 ... The Solvik bridge: tolls and traffic news.",
                "Nov 14, 2022 ... Solvik bridge news and photos from the bay.",
                "The Solvik bridge opened on August 22, 2021, after four years of work.",
            ],
            "August 22, 2021",
        ),
        (
            "索维克大桥是什么时候通车的？",
            [
                "2022年11月14日 ... 索维克大桥新闻与现场图片。",
                "2022年11月14日 ... 索维克大桥资讯、收费与交通。",
                "索维克大桥于2021年8月22日通车，工程历时四年。",
            ],
            "2021年8月22日",
        ),
    ],
)
def test_the_date_a_page_was_written_is_no_vote_for_when_it_happened(brain, question, snippets, truth):
    assert truth in chosen_sentence(brain, question, snippets)


@pytest.mark.parametrize(
    ("sentence", "kind", "question", "expected"),
    [
        (
            "New Vanguard CEO Tim Buckley spoke to investors.",
            "name",
            "Who is the new CEO of Vanguard?",
            {"tim buckley"},
        ),
        ("《哈利·波特》的作者写了本侦探小说。", "name", "《哈利·波特》的作者是谁", set()),
        ("《人在囧途》由葉偉民执导。", "name", "《人在囧途》的导演是谁？", {"叶伟民"}),
        (
            "2018-2019赛季欧冠决赛利物浦2比0热刺。",
            "name",
            "2018-2019赛季欧冠冠军是谁？",
            {"利物浦"},
        ),  # a club named after its city
    ],
)
def test_names_are_what_the_question_does_not_state(sentence, kind, question, expected):
    assert set(facts(sentence, kind, question)) == expected


def test_a_semicolon_inside_brackets_does_not_end_the_sentence():
    assert split_sentences(
        "新德里（又译纽德里，印地语：नई दिल्ली；英语：New Delhi）是印度的首都。它很大；人很多。"
    ) == [
        "新德里（又译纽德里，印地语：नई दिल्ली；英语：New Delhi）是印度的首都。",
        "它很大；",
        "人很多。",
    ]
    assert split_sentences("Victoria (born 1819; died 1901) was queen. She reigned long.") == [
        "Victoria (born 1819; died 1901) was queen.",
        "She reigned long.",
    ]


@pytest.mark.parametrize(
    ("a", "b", "near", "differs"),
    [
        (
            "Solvik Bridge: Directed by Justin Kurzel.",
            "Solvik Bridge: Directed by James Cameron.",
            True,
            "James Cameron",
        ),
        (
            "Oct 19, 2021 ... Google has officially announced its new Pixel 6.",
            "October 19, 2011 ... Google has officially announced its new Pixel 6.",
            True,
            "",  # two places differ: a near copy, but no single stretch to name
        ),
        ("《人在囧途》由叶伟民执导，文隽监制。", "《人在囧途》由葉偉民執導，文雋監製。", False, ""),
        (
            "阿布贾是尼日利亚首都与第八大人口城市。",
            "阿尔及尔是尼日利亚首都与第八大人口城市。",
            True,
            "阿尔及尔",
        ),
        ("Lena Okafor won the marathon.", "Heavy rain fell on the bay all day.", False, ""),
        (  # the same statement in other words (a command page's summary and its synopsis): no rival
            "roll back a release to a previous revision",
            "This command rolls back a release to a previous revision.",
            True,
            "",
        ),
    ],
)
def test_near_copies_and_what_sets_them_apart(a, b, near, differs):
    from providers.offline_brain.agreement import differing_words, twins

    assert twins(a, b) is near
    assert differing_words(a, b) == differs


@pytest.mark.parametrize(
    ("texts", "answer", "wrong"),
    [
        (
            ["Mia Chen won the Harbor City marathon.", "Lena Okafor won the Harbor City marathon."],
            'Mia Chen won the Harbor City marathon [1]. Another source says "Lena Okafor" [2].',
            'Mia Chen won the Harbor City marathon [1]. Another source says "John Smith" [2].',
        ),
        (
            ["王小川夺得青川马拉松冠军。", "李明远夺得青川马拉松冠军。"],
            "王小川夺得青川马拉松冠军[1]。另有资料作“李明远”[2]。",
            "王小川夺得青川马拉松冠军[1]。另有资料作“张三”[2]。",
        ),
    ],
)
def test_the_other_version_named_must_be_in_the_passage_it_cites(texts, answer, wrong):
    from providers.offline_brain.support import check_answer_support

    passages = [passage(n, text) for n, text in enumerate(texts, start=1)]
    assert all(v.supported for v in check_answer_support(answer, passages))
    assert [v.supported for v in check_answer_support(wrong, passages)] == [True, False]
