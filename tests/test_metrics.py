"""Offline metrics, each expected value computed by hand."""

from __future__ import annotations

import math

import pytest

from evaluators.metrics import (
    all_gold_recall_at_k,
    answer_in_context,
    answer_tokens,
    citation_precision,
    counterfactual_above_gold_at_k,
    exact_match,
    flatten_answers,
    hit_at_k,
    insufficient_rate,
    mean_defined,
    misled,
    mrr_at_k,
    ndcg_at_k,
    normalize_answer,
    percentile,
    precision_at_k,
    recall_at_k,
    token_f1,
)

# --- retrieval ---------------------------------------------------------------------------------------


def test_recall_counts_distinct_gold_found_in_top_k() -> None:
    ranked = ["a", "b", "c", "d"]
    gold = ["b", "d", "x"]
    assert recall_at_k(ranked, gold, 1) == 0.0
    assert recall_at_k(ranked, gold, 2) == pytest.approx(1 / 3)
    assert recall_at_k(ranked, gold, 4) == pytest.approx(2 / 3)


def test_k_larger_than_the_list_uses_the_whole_list() -> None:
    assert recall_at_k(["a", "b"], ["b"], 100) == 1.0
    assert precision_at_k(["a", "b"], ["b"], 5) == pytest.approx(1 / 5)  # divided by k, not by 2
    assert ndcg_at_k(["a", "b"], ["b"], 100) == pytest.approx(1 / math.log2(3))


def test_duplicates_in_the_ranking_count_once_at_their_first_position() -> None:
    # Top-2 distinct ids are a, b: the repeated "a" does not push "b" out.
    assert recall_at_k(["a", "a", "b"], ["b"], 2) == 1.0
    assert hit_at_k(["a", "a", "b"], ["b"], 2) == 1.0
    assert mrr_at_k(["a", "b", "b", "c"], ["c"]) == pytest.approx(1 / 3)
    # A gold id retrieved twice is credited once: DCG 1, ideal 1 + 1/log2(3).
    assert ndcg_at_k(["g1", "g1"], ["g1", "g2"], 2) == pytest.approx(1 / (1 + 1 / math.log2(3)))
    assert precision_at_k(["g", "g", "g"], ["g"], 3) == pytest.approx(1 / 3)


def test_empty_results_score_zero_and_empty_gold_is_undefined() -> None:
    for metric in (recall_at_k, all_gold_recall_at_k, hit_at_k, precision_at_k, mrr_at_k, ndcg_at_k):
        assert metric([], ["g"], 5) == 0.0
        assert metric(["a", "b"], [], 5) is None


def test_k_must_be_positive() -> None:
    with pytest.raises(ValueError, match="k must be at least 1"):
        recall_at_k(["a"], ["a"], 0)


def test_a_tie_in_the_ranking_is_broken_by_list_order() -> None:
    # Two equally scored passages: the list order the retriever chose is the order scored.
    assert mrr_at_k(["g", "a"], ["g"]) == 1.0
    assert mrr_at_k(["a", "g"], ["g"]) == 0.5
    assert recall_at_k(["g", "a"], ["g"], 2) == recall_at_k(["a", "g"], ["g"], 2) == 1.0


def test_all_gold_recall_needs_every_hop() -> None:
    ranked = ["b", "x", "d"]
    assert all_gold_recall_at_k(ranked, ["b", "d"], 2) == 0.0
    assert all_gold_recall_at_k(ranked, ["b", "d"], 3) == 1.0
    assert hit_at_k(ranked, ["b", "d"], 1) == 1.0


def test_ndcg_binary_relevance_with_ideal_from_min_gold_k() -> None:
    # Gold at ranks 2 and 4: DCG = 1/log2(3) + 1/log2(5); ideal = 1 + 1/log2(3).
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(["a", "g1", "b", "g2"], ["g1", "g2"], 10) == pytest.approx(expected)
    assert ndcg_at_k(["a", "g1", "b", "g2"], ["g1", "g2"], 10) == pytest.approx(0.650921, abs=1e-6)
    # Three gold ids but k=1: the ideal has one relevant slot, so a gold at rank 1 is perfect.
    assert ndcg_at_k(["g1", "g2"], ["g1", "g2", "g3"], 1) == 1.0


def test_mrr_is_zero_when_gold_is_below_the_cutoff() -> None:
    ranked = [f"d{i}" for i in range(12)] + ["g"]
    assert mrr_at_k(ranked, ["g"], 10) == 0.0
    assert mrr_at_k(ranked, ["g"], 13) == pytest.approx(1 / 13)


# --- normalisation -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("The Eiffel Tower!", "eiffel tower"),
        ("An apple a day", "apple day"),
        ("theory of the  mind", "theory of mind"),  # only whole-word articles go
        ("“北京”。", "北京"),
        ("《三体》、刘慈欣！", "三体刘慈欣"),
        ("（注：）‘好’；“坏”？", "注好坏"),
        ("２０１８年", "2018年"),  # full-width digits
        ("ＧＰＴ－４", "gpt4"),  # full-width letters and hyphen
        ("4 分钟", "4分钟"),  # a space next to a Chinese character means nothing
        ("「梵語」", "梵語"),  # traditional corner brackets; characters are not simplified
        ("歐洲。", "歐洲"),
        ("二〇〇八年，北京", "二〇〇八年北京"),  # 〇 is a numeral, not punctuation
        ("Seoul Records，2005年", "seoul records 2005年"),  # a Chinese comma separates like a space
        ("收视率为7.07，15岁", "收视率为707 15岁"),  # ASCII punctuation is deleted (SQuAD)
        ("G. Stanley Hall’s book", "g stanley hall book"),  # possessive dropped, curly or not
        ("", ""),
        (None, ""),
    ],
)
def test_normalize_answer_chinese_and_english(raw: str | None, normalised: str) -> None:
    assert normalize_answer(raw) == normalised


def test_interpunct_variants_normalise_alike() -> None:
    assert (
        normalize_answer("李·哈维·奥斯瓦尔德") == normalize_answer("李•哈维•奥斯瓦尔德") == "李哈维奥斯瓦尔德"
    )


def test_answer_tokens_split_cjk_by_character_and_latin_by_word() -> None:
    assert answer_tokens("The big red dog") == ["big", "red", "dog"]
    assert answer_tokens("4分钟") == ["4", "分", "钟"]
    assert answer_tokens("GPT-4 发布了") == ["gpt4", "发", "布", "了"]
    assert answer_tokens("梵語研究") == ["梵", "語", "研", "究"]


# --- answers -----------------------------------------------------------------------------------------


def test_exact_match_takes_the_best_alternative() -> None:
    assert exact_match("Tampa, Florida.", "tampa florida") == 1.0
    assert exact_match("蘇達爾摩", ["《蘇達爾摩》", "蘇達爾摩號"]) == 1.0
    assert exact_match("悉尼", ["澳大利亚", "悉尼"]) == 1.0
    assert exact_match("墨尔本", ["澳大利亚", "悉尼"]) == 0.0
    assert exact_match(None, "Norway") == 0.0
    assert exact_match("Norway", None) is None
    assert exact_match("Norway", []) is None


def test_token_f1_english_by_words() -> None:
    # pred tokens big/red/dog, gold red/dog: P = 2/3, R = 1, F1 = 0.8
    assert token_f1("the big red dog", "red dog") == pytest.approx(0.8)
    assert token_f1("cat", "red dog") == 0.0
    assert token_f1("", "red dog") == 0.0


def test_token_f1_chinese_by_characters() -> None:
    # pred 4/分/钟/内, gold 4/分/钟: P = 3/4, R = 1, F1 = 6/7
    assert token_f1("4分钟内", "4分钟") == pytest.approx(6 / 7)
    # traditional characters compare as written
    assert token_f1("歐洲地區", "歐洲") == pytest.approx(2 * (2 / 4) / (2 / 4 + 1))


def test_token_f1_mixed_text_and_multiple_answers() -> None:
    assert token_f1("GPT-4发布了", "gpt4 发布") == pytest.approx(6 / 7)
    # "G. Stanley Hall" alone: P = 1, R = 2/3, F1 = 0.8; the alias "Stanley Hall" matches fully.
    assert token_f1("Stanley Hall", "G. Stanley Hall") == pytest.approx(0.8)
    assert token_f1("Stanley Hall", ["G. Stanley Hall", "Stanley Hall"]) == 1.0
    assert token_f1("anything", None) is None


def test_answer_in_context_is_a_normalised_substring() -> None:
    context = "The game was played at Raymond James Stadium in Tampa,  Florida."
    assert answer_in_context(context, "tampa florida") == 1.0
    assert answer_in_context(context, "Glendale, Arizona") == 0.0
    assert answer_in_context("第六届立法会共有７０个议席。", "70") == 1.0
    assert answer_in_context("在歐洲，梵語的學術研究", ["亞洲", "歐洲"]) == 1.0
    assert answer_in_context("共有170个议席", "70") == 0.0  # numbers and Latin words match whole
    assert answer_in_context("a party at noon", "art") == 0.0
    assert answer_in_context("", "70") == 0.0
    assert answer_in_context("some text", None) is None


def test_citation_precision_accepts_gold_or_answer_bearing_citations() -> None:
    cited = ["g1", "x", "y", "x"]
    texts = ["…", "2000年奥运会在澳大利亚悉尼举办", "无关的段落", "duplicate"]
    # g1 is gold, x contains an acceptable answer, y neither; the second x is the same citation.
    assert citation_precision(cited, ["g1"], texts, ["澳大利亚", "悉尼"]) == pytest.approx(2 / 3)
    assert citation_precision(["g1", "x"], ["g1"]) == 0.5  # without texts only gold ids count
    assert citation_precision(["d1"], [], ["Norway won 39 medals"], "Norway") == 1.0
    assert citation_precision([], ["g1"], [], "Norway") is None


def test_insufficient_rate_and_misled() -> None:
    assert insufficient_rate([True, False, False, True]) == 0.5
    assert insufficient_rate([]) is None
    assert misled("Glendale, Arizona", "Tampa, Florida", "Glendale, Arizona") == 1.0
    assert misled("Tampa, Florida, not Glendale, Arizona", "Tampa, Florida", "Glendale, Arizona") == 0.0
    assert misled("共有170个议席", "70", "170") == 1.0  # "70" inside "170" is not the true answer
    assert misled("共有70个议席", "70", "170") == 0.0
    assert misled(None, "70", "170") is None
    assert misled("70", "70", None) is None


# --- answer shapes -----------------------------------------------------------------------------------


def test_flatten_answers_handles_every_dataset_shape() -> None:
    assert flatten_answers("踢爆") == ["踢爆"]
    assert flatten_answers(["蘇達爾摩", "《蘇達爾摩》"]) == ["蘇達爾摩", "《蘇達爾摩》"]
    assert flatten_answers([["July 21 2017", "Jul 21, 2017"]]) == ["July 21 2017", "Jul 21, 2017"]
    assert flatten_answers({"Pat Burrell": "Right", "Mark Mulder": "Left"}) == [
        "Pat Burrell",
        "Right",
        "Mark Mulder",
        "Left",
    ]
    assert flatten_answers({"Earth": 1.0, "Mars": 0.3794, "Moon": 7}) == [
        "Earth",
        "1",
        "Mars",
        "0.3794",
        "Moon",
        "7",
    ]
    assert flatten_answers([2006, 2012, 2006]) == ["2006", "2012"]
    assert flatten_answers(True) == ["yes"]
    assert flatten_answers(None) == []
    assert flatten_answers(["  ", ""]) == []


def test_fanoutqa_dict_answers_are_scored_as_alternatives() -> None:
    answer = {"Tom Holland": "Jon Watts", "Tobey Maguire": "Sam Raimi"}
    assert exact_match("Sam Raimi", answer) == 1.0
    assert answer_in_context("Spider-Man (2002) was directed by Sam Raimi.", answer) == 1.0


# --- aggregation -------------------------------------------------------------------------------------


def test_mean_defined_skips_undefined_values() -> None:
    assert mean_defined([1.0, None, 0.0, math.nan]) == 0.5
    assert mean_defined([None, None]) is None


def test_percentile_interpolates_linearly() -> None:
    values = [4.0, 1.0, 3.0, 2.0]
    assert percentile(values, 50) == 2.5
    assert percentile(values, 95) == pytest.approx(3.85)  # 2.85 of the way: 3 + 0.85 * (4 - 3)
    assert percentile(values, 0) == 1.0
    assert percentile(values, 100) == 4.0
    assert percentile([7.0], 95) == 7.0
    assert percentile([], 50) is None
    with pytest.raises(ValueError, match="within"):
        percentile(values, 101)


def test_counterfactual_above_gold_counts_wrong_evidence_read_first() -> None:
    gold, fake = ["g1", "g2"], ["q::counterfactual-0"]
    assert counterfactual_above_gold_at_k(["x", "q::counterfactual-0", "g2"], gold, fake, 10) == 1.0
    assert counterfactual_above_gold_at_k(["g2", "q::counterfactual-0"], gold, fake, 10) == 0.0
    # no gold in the top k: a planted passage there is read with nothing true to contradict it
    assert counterfactual_above_gold_at_k(["x", "q::counterfactual-0", "g1"], gold, fake, 2) == 1.0
    assert counterfactual_above_gold_at_k(["x", "y"], gold, fake, 10) == 0.0
    assert counterfactual_above_gold_at_k(["立法会-真"], ["立法会-真"], [], 10) is None  # nothing planted
    assert counterfactual_above_gold_at_k(["a"], [], fake, 10) is None


# --- what the reader sees (issue 8) ------------------------------------------------------------------


def test_answer_has_gold_reads_the_answer_text_after_normalisation() -> None:
    from evaluators.metrics import answer_has_gold

    # case, full width and punctuation fold; whole numbers and words only
    assert answer_has_gold("The default is ＲＲＦ k = 60 [1].", ["60"]) == 1.0
    assert answer_has_gold("It was designed by Corvin Hale.", "corvin hale") == 1.0
    assert answer_has_gold("About 160 of them.", "60") == 0.0
    # traditional characters in the answer match a simplified gold answer, and the reverse
    assert answer_has_gold("在歐洲，梵語的學術研究始於十八世紀[2]。", ["欧洲"]) == 1.0
    assert answer_has_gold("梵语研究始于欧洲。", "歐洲") == 1.0
    assert answer_has_gold("资料没有提到。", "欧洲") == 0.0
    assert answer_has_gold(None, "欧洲") == 0.0
    assert answer_has_gold("anything", []) is None


def test_retrievals_are_counted_from_the_trace() -> None:
    from evaluators.metrics import retrievals_in_trace

    single = [{"node": "analyze_query"}, {"node": "retrieve_hybrid"}, {"node": "rerank"}]
    retry = [*single, {"node": "rewrite_query"}, {"node": "retrieve_keyword"}]
    hops = [
        {"node": "retrieve_multi_hop", "counts": {"sub_queries": 2, "bridge_hops": 1}},
        {"node": "retrieve_vector"},
    ]
    old = [{"node": "retrieve_multi_hop", "decision": "2 sub-queries, 1 bridge hops", "counts": {}}]
    assert retrievals_in_trace(single) == 1
    assert retrievals_in_trace(retry) == 2
    assert retrievals_in_trace(hops) == 4  # two sub-queries and a bridge, then a retry
    assert retrievals_in_trace(old) == 3
    assert retrievals_in_trace([]) == 0
