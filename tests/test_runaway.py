"""A streamed answer that stopped answering (providers/brain/runaway.py): where it loops or copies out the
passage list, and what is kept before that point. Through the writer and a real HTTP server:
tests/test_local_llm_bounds.py."""

from __future__ import annotations

from core.schemas import Passage
from providers.brain.runaway import echo_at, kept_before, loop_at, runaway

PASSAGES = [
    Passage(number=1, chunk_id="c1", source="cmrc2018_trial/TRIAL_662", heading="乍都节公园", text="…"),
    Passage(number=2, chunk_id="c2", source="guide/retrieval.md", text="Hybrid search fuses BM25 …"),
]


class TestALoop:
    def test_a_sentence_written_three_times_is_a_loop_from_its_second_copy(self):
        zh = "公园开放于1980年[1]。" + "它的面积约为0.304平方公里[1]。" * 3
        en = "Hybrid search uses RRF [2]. " + "The constant k is 60 in the default settings [2]. " * 3
        for text, first_copy_end in (
            (zh, len("公园开放于1980年[1]。它的面积约为0.304平方公里[1]。")),
            (en, len("Hybrid search uses RRF [2]. The constant k is 60 in the default settings [2]. ")),
        ):
            assert loop_at(text) == first_copy_end

    def test_two_copies_are_not_yet_a_loop(self):
        assert loop_at("它的面积约为0.304平方公里[1]。" * 2) is None
        assert loop_at("The constant k is 60 in the default settings [2]. " * 2) is None

    def test_formatting_and_short_repeats_are_text(self):
        for text in (
            "-" * 80,
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
            "哈哈哈",
            "a b a b a b",
            "。。。。。。" * 10,
        ):
            assert loop_at(text) is None, text

    def test_one_character_run_long_enough_is_a_loop(self):
        assert loop_at("The answer is 1" + "0" * 60) is not None
        assert loop_at("答案是" + "好" * 60) is not None


class TestAnEcho:
    def test_a_context_entry_header_in_the_reply_is_an_echo(self):
        zh = "面积约为0.304平方公里[1]。\n\n[1] cmrc2018_trial/TRIAL_662 › 乍都节公园： 乍都节公园（）位于"
        en = "Use RRF [2].\n\n[2] guide/retrieval.md: Hybrid search"
        assert echo_at(zh, PASSAGES) == zh.index("\n\n[1]") + 2
        assert echo_at(en, PASSAGES) == en.index("\n\n[2]") + 2

    def test_citing_a_passage_or_naming_its_file_is_not_an_echo(self):
        assert echo_at("面积约为0.304平方公里[1]。", PASSAGES) is None
        assert echo_at("See guide/retrieval.md [2] for the fusion.", PASSAGES) is None


class TestWhatIsKept:
    def test_the_text_before_the_point_ends_at_its_last_sentence_and_keeps_its_citations(self):
        assert kept_before("它的面积约为0.304平方公里。[1] 另外它", 22) == "它的面积约为0.304平方公里。[1]"
        assert kept_before("It is 0.304 km² [1]. It was opened", 34) == "It is 0.304 km² [1]."

    def test_a_reply_that_starts_with_the_echo_keeps_nothing(self):
        text = "[1] cmrc2018_trial/TRIAL_662 › 乍都节公园： 乍都节公园"
        at, how = runaway(text, PASSAGES)
        assert (at, how) == (0, "copied out the passages") and kept_before(text, at) == ""

    def test_the_earlier_of_a_loop_and_an_echo_wins(self):
        text = "It is 0.304 km² [1].\n\n[1] cmrc2018_trial/TRIAL_662 › x" + " Park opened in 1980 [1]." * 3
        assert runaway(text, PASSAGES) == (text.index("[1] cmrc"), "copied out the passages")
