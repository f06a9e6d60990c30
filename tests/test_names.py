"""The one name extractor and the one title extractor (core.names), and the roles' name shapes as data."""

from __future__ import annotations

import re

import pytest

from core.names import NameShape, find_names, find_titles, name_matches, title_matches
from providers.offline_brain.lexicon import lexicon


def shape(role: str) -> NameShape:
    return NameShape.from_dict(lexicon().entry(f"{role}.name_shape", "en")["table"])


class TestTitles:
    def test_a_title_without_its_marks_zh_and_en(self):
        assert find_titles("他写了《三体》和《球状闪电》。") == ["三体", "球状闪电"]
        assert find_titles("The novel 《The Three-Body Problem》 won the Hugo.") == ["The Three-Body Problem"]

    def test_the_limit_is_the_longest_title_read(self):
        long = "《" + "长" * 41 + "》"
        assert find_titles(long, 40) == []
        assert find_titles(long, 80) == ["长" * 41]
        assert [m.group(0) for m in title_matches(long, None)] == [long]

    def test_other_marks_when_asked(self):
        text = "「浮士德」与“Hello Love”以及《红楼梦》"
        assert find_titles(text, 30, "《》「」“”") == ["浮士德", "Hello Love", "红楼梦"]
        assert find_titles(text) == ["红楼梦"]


class TestNameShapes:
    def test_particles_join_a_name_zh_text_has_none(self):
        analysis = shape("analysis")
        question = "Who painted for Leonardo da Vinci and the Bank of England?"
        assert find_names(question, analysis) == ["Leonardo da Vinci", "Bank of England"]
        assert find_names("达芬奇画了什么？", analysis) == []

    def test_two_or_more_words_unless_one_counts(self):
        assert find_names("Ask about Paris.", shape("judge")) == []
        assert find_names("Ask about Paris.", shape("facts")) == ["Ask", "Paris"]
        assert find_names("It was Paris.", shape("facts")) == ["It", "Paris"]

    def test_a_run_of_particles_only_where_the_role_allows_it(self):
        text = "Ludwig van der Rohe built it."
        assert find_names(text, shape("facts")) == ["Ludwig van der Rohe"]
        assert find_names(text, shape("judge")) == []

    def test_each_shape_reads_as_its_old_regex_did(self):
        """The shapes replaced six regexes; on these cases each matches exactly as its regex did."""
        old = {
            "analysis": r"\b[A-Z][\w'-]*(?:\s+(?:of|the|and|de|von|van|du|da|la|for|on)\s+[A-Z][\w'-]*|\s+[A-Z][\w'-]*)+",
            "contextualize": r"\b[A-Z][a-z]+(?:[ -](?:(?:da|de|di|van|von|der|le|la)\s)?[A-Z][a-z]+)+\b",
            "judge": r"\b[A-Z][a-z]+(?: (?:of |de |da |von |van |the )?[A-Z][a-z]+)+\b",
        }
        cases = [
            "Compare Leonardo da Vinci with Jean-Luc Picard of the Enterprise.",
            "Marie Curie and Pierre Curie won in 1903; the Bank of England did not.",
            "The University of California, Los Angeles hired Ann O'Neill-Smith.",
            "在 New York 的 Museum of Modern Art 看到了《星夜》。",
        ]
        for role, pattern in old.items():
            for text in cases:
                before = [(m.span(), m.group()) for m in re.finditer(pattern, text)]
                assert [(m.span(), m.group()) for m in name_matches(text, shape(role))] == before, (
                    role,
                    text,
                )

    def test_a_shape_round_trips_as_data(self):
        facts = shape("facts")
        assert NameShape.from_dict(facts.__dict__) == facts
        with pytest.raises(TypeError):
            NameShape.from_dict({"wrod": "[A-Z]\\w*"})
