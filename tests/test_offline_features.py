"""The offline brain as a fitted model: the question profile, one feature per signal, the combiner and
its weights file, the lexicon. Chinese and English cases side by side."""

from __future__ import annotations

import json

import pytest

from core.schemas import Passage
from providers.offline_brain import features as f
from providers.offline_brain.answer import candidates, choose, refers_back
from providers.offline_brain.lexicon import Lexicon, lexicon
from providers.offline_brain.profile import QuestionProfile, profile
from providers.offline_brain.weights import WEIGHTS_FILE, BrainParams, Combiner, params


class TestQuestionProfile:
    def test_reads_the_question_once_zh(self) -> None:
        p = profile("什么是青石协议？")
        assert (p.language, p.reader, p.defined_term) == ("zh", "zh", "青石协议")
        assert "青石" in "".join(p.terms)

    def test_reads_the_question_once_en(self) -> None:
        p = profile("How many people live in Oslo?")
        assert (p.language, p.reader) == ("en", "en")
        assert p.kinds == ["number"] and "oslo" in p.terms

    def test_parts_are_the_analysis_sub_queries(self) -> None:
        from providers.offline_brain.analysis import analyze_question

        for question in ("北京和上海的人口分别是多少？", "Who directed Alien and who directed Aliens?"):
            assert profile(question).parts == analyze_question(question).sub_queries
            assert len(profile(question).parts) == 2

    def test_asks_for_code(self) -> None:
        assert profile("重建索引的命令是什么？").asks_for_code
        assert profile("What is the command to rebuild the index?").asks_for_code
        assert not profile("What is the codex of Leicester?").asks_for_code  # whole words only

    def test_serialisable_and_memoised(self) -> None:
        p = profile("它的默认值是多少？")
        assert QuestionProfile.model_validate_json(p.model_dump_json()) == p
        assert profile("它的默认值是多少？") is p
        assert p.has_referring_word


class TestCoverage:
    def test_rare_terms_count_more(self) -> None:
        weights = f.term_weights(["银行", "初名"], [{"银行"}, {"银行"}, {"银行", "初名"}])
        assert f.coverage(weights, {"银行", "初名"}) == 1.0
        assert f.coverage(weights, {"初名"}) > f.coverage(weights, {"银行"}) > 0

    def test_en_and_empty(self) -> None:
        weights = f.term_weights(["oslo", "population"], [{"oslo"}, {"oslo", "population"}])
        assert 0 < f.coverage(weights, {"oslo"}) < 0.5
        assert f.coverage({}, {"oslo"}) == 0.0


class TestMeaning:
    def test_clipped_to_unit_interval(self) -> None:
        assert f.meaning(-0.2) == 0.0 and f.meaning(0.4) == 0.4 and f.meaning(1.2) == 1.0

    def test_meaning_match_scale(self) -> None:
        assert f.meaning_match(0.27, 0.27) == pytest.approx(0.5)
        assert f.meaning_match(0.9, 0.27) == 1.0
        assert f.on_question(0.8, 0.0, 0.27) == 0.8


class TestForeign:
    def test_other_language_without_shared_terms(self) -> None:
        zh, en = profile("奥斯陆有多少人口？"), profile("How many people live in Oslo?")
        assert f.foreign("Oslo has 700,000 inhabitants.", zh, 0.0) == 1.0
        assert f.foreign("奥斯陆有七十万人口。", en, 0.0) == 1.0

    def test_same_language_is_not_foreign(self) -> None:
        zh, en = profile("奥斯陆有多少人口？"), profile("How many people live in Oslo?")
        assert f.foreign("奥斯陆有七十万人口。", zh, 0.0) == 0.0
        assert f.foreign("Oslo has 700,000 inhabitants.", en, 0.0) == 0.0

    def test_shared_terms_leave_meaning_the_rest(self) -> None:
        """Issue 21: a Chinese question over English docs shares a name or two (`v-model`, KeepAlive)
        with many sentences; sharing one no longer takes the meaning weight away altogether."""
        zh, en = profile("奥斯陆有多少人口？"), profile("How many people live in Oslo?")
        assert f.foreign("Oslo has 700,000 inhabitants.", zh, 0.3) == pytest.approx(0.7)
        assert f.foreign("奥斯陆有七十万人口。", en, 0.5) == pytest.approx(0.5)
        assert f.foreign("Oslo has 700,000 inhabitants.", zh, 1.0) == 0.0


class TestRestatesQuestion:
    def test_zh_and_en(self) -> None:
        assert f.restates_question("奥斯陆有多少人口？") == 1.0
        assert f.restates_question("How many people live in Oslo? [2]") == 1.0
        assert f.restates_question("奥斯陆有七十万人口。") == 0.0
        assert f.restates_question("Oslo has 700,000 inhabitants.") == 0.0


class TestFitsKind:
    def test_number_asked(self) -> None:
        zh, en = profile("奥斯陆有多少人口？"), profile("How many people live in Oslo?")
        assert f.fits_kind("奥斯陆有70万人口。", {"700000": 1.0}, zh) == 1.0
        assert f.fits_kind("Oslo is the capital.", {}, en) == 0.0
        assert f.misses_kind(0.0, en) == 1.0 and f.misses_kind(1.0, zh) == 0.0

    def test_no_kind_asked(self) -> None:
        p = profile("Why is the sky blue?")
        assert f.fits_kind("It scatters light.", {}, p) == 0.0
        assert f.misses_kind(0.0, p) == 0.0


class TestDefines:
    def test_defining_sentence(self) -> None:
        assert f.defines("青石协议是一项贸易协定。", profile("什么是青石协议？")) == 1.0
        assert (
            f.defines("The Bluestone Accord is a trade pact.", profile("What is the Bluestone Accord?"))
            == 1.0
        )

    def test_repeating_sentence(self) -> None:
        assert f.defines("各方都讨论了青石协议。", profile("什么是青石协议？")) == 0.0
        assert (
            f.defines("The Bluestone Accord was signed in 2001.", profile("What is the Bluestone Accord?"))
            == 0.0
        )


class TestPriorAndOtherEdition:
    def test_prior_follows_rank(self) -> None:
        assert f.prior(0) == 1.0 and f.prior(1) == 0.5 and 0 < f.prior(9) < f.prior(1)

    def test_other_edition(self) -> None:
        zh, en = profile("2019年世界杯冠军是谁？"), profile("Who won the 2019 World Cup?")
        assert f.other_edition("2018年世界杯冠军是法国。", zh) == 1.0
        assert f.other_edition("France won the 2018 World Cup.", en) == 1.0
        assert f.other_edition("France won the 2019 World Cup.", en) == 0.0


class TestAskedIn:
    def test_the_question_language_not_the_sentences(self) -> None:
        en, zh = profile("Who won the 2019 World Cup?"), profile("2019年世界杯冠军是谁？")
        assert f.asked_in(en, "en") == 1.0 and f.asked_in(en, "zh") == 0.0
        assert f.asked_in(zh, "zh") == 1.0 and f.asked_in(zh, "en") == 0.0
        assert f.asked_in(profile("Vue 的 v-model 怎么用？"), "zh") == 1.0  # Chinese with an English name

    def test_every_candidate_carries_both(self) -> None:
        passages = [
            Passage(number=1, chunk_id="c", source="s", text="France won the 2018 World Cup. 法国队夺冠。")
        ]
        en = candidates("Who won the 2018 World Cup?", passages, None)
        zh = candidates("2018年世界杯冠军是谁？", passages, None)
        assert en and all(
            c.features["english_question"] == 1.0 == 1 - c.features["chinese_question"] for c in en
        )
        assert zh and all(
            c.features["chinese_question"] == 1.0 == 1 - c.features["english_question"] for c in zh
        )


class TestCombiner:
    def test_terms_products_and_gates(self) -> None:
        c = Combiner(terms={"a": 1.0, "a*b": 0.5}, gates={"g": 0.5})
        assert c.score({"a": 0.4, "b": 1.0}) == pytest.approx(0.6)
        assert c.score({"a": 0.4, "b": 1.0, "g": 1.0}) == pytest.approx(0.3)
        assert c.features() == {"a", "b", "g"}

    def test_round_trip_and_validation(self) -> None:
        c = Combiner(terms={"a": 1.0}, gates={"g": 0.7}, provenance={"date": "2026-12-01"})
        assert Combiner.from_dict(json.loads(json.dumps(c.to_dict()))) == c
        with pytest.raises(ValueError, match="gate 'g'"):
            Combiner(terms={"a": 1.0}, gates={"g": 0.0})


class TestBrainParams:
    def test_packaged_file_loads_with_provenance(self) -> None:
        p = params()
        assert p.writer.provenance and p.selection.provenance and p.judge.provenance
        assert BrainParams.load(WEIGHTS_FILE) == p
        assert BrainParams.from_dict(p.to_dict()) == p

    def test_with_value_is_a_copy(self) -> None:
        p = params()
        q = p.with_value("selection.close_to_best", 0.5).with_value("writer.terms.agreed", 0.2)
        assert (q.selection.close_to_best, q.writer.terms["agreed"]) == (0.5, 0.2)
        assert p.selection.close_to_best != 0.5  # the packaged one is untouched
        with pytest.raises(KeyError):
            p.with_value("selection.no_such_thing", 1)

    def test_bad_file_is_one_clear_error(self, tmp_path) -> None:
        bad = tmp_path / "weights.json"
        bad.write_text('{"writer": {"terms": {}}}', encoding="utf-8")
        with pytest.raises(ValueError, match="offline brain weights"):
            BrainParams.load(bad)

    def test_weights_change_the_choice(self) -> None:
        """The writer reads its weights: without the agreement term, the fact most passages back loses
        its lead to the first passage's sentence."""
        passages = [
            Passage(
                number=1, chunk_id="a", source="a", heading="", text="Reports said the bridge opened in 1999."
            ),
            Passage(
                number=2, chunk_id="b", source="b", heading="", text="The bridge opened in 2001 after delays."
            ),
            Passage(
                number=3, chunk_id="c", source="c", heading="", text="Officials opened the bridge in 2001."
            ),
        ]
        question = "When did the bridge open?"
        assert "2001" in choose(question, passages, None)[0].sentence
        no_agreement = params().with_value("writer.terms.agreed", 0.0)
        top = max(candidates(question, passages, None, no_agreement), key=lambda c: c.score)
        assert "1999" in top.sentence


class TestLexicon:
    def test_patterns_zh_and_en(self) -> None:
        opens = lexicon().pattern("opens_by_referring_back")
        assert opens.match("所以到了七月，价格回落。") and opens.match("As a result, the company cut jobs.")
        assert not opens.match("Thistle grows wild.")  # whole words: "this" is not "Thistle"
        assert refers_back("在此背景下，各家经纪商决定降价。") and refers_back("He served as mayor.")

    def test_unknown_list_is_a_clear_error(self, tmp_path) -> None:
        (tmp_path / "en.json").write_text(
            '{"greet": {"match": "anywhere", "words": ["hi"]}}', encoding="utf-8"
        )
        custom = Lexicon.load(tmp_path)
        assert custom.pattern("greet").search("oh hi there") and not custom.pattern("greet").search("this")
        with pytest.raises(KeyError, match="no word list"):
            custom.pattern("farewell")


class TestCodeNames:
    """Issue 21: technical docs name their things in code, so `.once` answers "哪个修饰符…" as a name would."""

    @pytest.mark.parametrize(
        ("sentence", "question", "name"),
        [
            ("`.once` - trigger handler at most once.", "哪个事件修饰符让事件只触发一次？", ".once"),
            (
                "`.once` 修饰符让处理函数最多触发一次。",
                "Which event modifier makes a handler fire a single time?",
                ".once",
            ),
            ("We can limit the cache via the `max` prop.", "KeepAlive 用哪个属性限制缓存数量？", "max"),
        ],
    )
    def test_an_inline_code_span_is_a_name(self, sentence: str, question: str, name: str) -> None:
        from providers.offline_brain.facts import facts

        assert name.lower() in facts(sentence, "name", question)

    def test_the_question_own_code_is_not_an_answer(self) -> None:
        from providers.offline_brain.facts import facts

        assert "keepalive" not in facts("`<KeepAlive>` caches instances.", "name", "KeepAlive 用哪个属性？")
