"""The offline writer's combiner is fitted reproducibly from frozen inputs (issue 20).

The fit (bench/fit_offline_brain.py) is a choice model over the candidates' named features; these specs
check it on small designed question sets whose answer is known, and that the frozen inputs it reads
(bench/fit_inputs.py) are stable files the committed weights can be traced back to.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import ClassVar

import pytest

from bench.fit_inputs import FIT_INPUTS, SPLITS, load_inputs, read_rows, slim, write_rows
from bench.fit_offline_brain import (
    adoption,
    changed_by,
    choose_l2,
    choose_l2_by_set,
    fit,
    language_of,
    set_language,
    top1,
)
from providers.offline_brain.weights import BrainParams, Combiner

START = Combiner(terms={"coverage": 0.5, "agreed": 0.1}, gates={"other_edition": 0.9})


def question(gold_agreed: bool, size: int = 4, name: str = "set") -> tuple[list[dict], list[bool], str]:
    """One question: equal coverage everywhere; the sentence holding the answer is the one other
    passages agree with (or, when ``gold_agreed`` is false, one that agreement does not mark)."""
    feats = [{"coverage": 0.6, "agreed": 0.0, "other_edition": 0.0} for _ in range(size)]
    labels = [False] * size
    labels[1] = True
    feats[1 if gold_agreed else 2]["agreed"] = 1.0
    # a decoy: a sentence about another year's event covers the question better, enough to beat the
    # answer under the start's weights
    feats[3] |= {"coverage": 0.9, "other_edition": 1.0}
    return feats, labels, name


class TestTheFit:
    def test_a_feature_that_marks_the_answer_gains_weight(self):
        questions = [question(True, name="zh") for _ in range(30)] + [
            question(True, name="en") for _ in range(30)
        ]
        fitted, stats = fit(START, questions, l2=0.01)
        assert fitted.terms["agreed"] > START.terms["agreed"]
        assert fitted.terms["coverage"] == START.terms["coverage"]  # the scale stays fixed
        assert fitted.gates["other_edition"] < START.gates["other_edition"]  # the decoy is gated harder
        assert stats["loss_after"] < stats["loss_before"]
        assert top1(fitted, questions) == 1.0 and top1(START, questions) < 1.0

    def test_a_feature_that_marks_a_wrong_sentence_loses_weight(self):
        questions = [question(False) for _ in range(40)]
        fitted, _ = fit(START, questions, l2=0.01)
        assert fitted.terms["agreed"] < START.terms["agreed"]

    def test_a_strong_pull_keeps_the_weights_near_the_start(self):
        questions = [question(True) for _ in range(30)]
        loose, _ = fit(START, questions, l2=0.001)
        tight, _ = fit(START, questions, l2=100.0)
        assert abs(tight.terms["agreed"] - 0.1) < abs(loose.terms["agreed"] - 0.1)

    def test_what_is_not_free_stays_exactly_as_it_was(self):
        start = START.model_copy(update={"terms": START.terms | {"agreed": 0.123456789}})
        fitted, _ = fit(
            start, [question(True) for _ in range(20)], 0.1, free=lambda name: name == "other_edition"
        )
        assert fitted.terms == start.terms and fitted.gates["other_edition"] != start.gates["other_edition"]

    def test_the_same_inputs_give_the_same_weights(self):
        questions = [question(i % 3 != 0, name=f"s{i % 2}") for i in range(40)]
        assert fit(START, questions, 0.1)[0].to_dict() == fit(START, questions, 0.1)[0].to_dict()

    def test_questions_with_nothing_to_choose_between_are_left_out(self):
        none_gold = ([{"coverage": 0.5}, {"coverage": 0.4}], [False, False], "set")
        all_gold = ([{"coverage": 0.5}, {"coverage": 0.4}], [True, True], "set")
        _, stats = fit(START, [none_gold, all_gold, question(True)], l2=0.1)
        assert stats["questions"] == 1


class TestChoosingThePull:
    def test_leaving_one_set_out_picks_from_the_grid_and_reports_each_value(self):
        questions = [question(True, name="zh") for _ in range(20)] + [
            question(False, name="en") for _ in range(20)
        ]
        best, figures = choose_l2_by_set(START, questions, [0.01, 10.0])
        assert best in (0.01, 10.0) and set(figures) == {0.01, 10.0}
        assert all(0.0 <= v <= 1.0 for v in figures.values())

    def test_each_set_is_scored_by_a_fit_that_never_saw_it(self):
        # on "zh" agreement marks the answer, on "en" it marks a wrong sentence (the answer covers the
        # question best there): either set alone is learnt perfectly, but a fit on one misleads on the
        # other, so a loose pull scores 0 on the set left out and the stronger pull is kept
        zh = [question(True, name="zh") for _ in range(20)]
        en = []
        for _ in range(20):
            feats = [{"coverage": 0.6, "agreed": 0.0} for _ in range(4)]
            feats[1]["coverage"], feats[2]["agreed"] = 0.7, 1.0
            en.append((feats, [False, True, False, False], "en"))
        assert top1(fit(START, zh, 0.001)[0], zh) == 1.0 and top1(fit(START, en, 0.001)[0], en) == 1.0
        best, figures = choose_l2_by_set(START, zh + en, [0.001, 100.0])
        assert figures[0.001] == 0.0 and best == 100.0

    def test_the_even_odd_split_is_still_available(self):
        best, figures = choose_l2(START, [question(True) for _ in range(20)], [0.1, 1.0])
        assert best in figures


class TestFrozenInputs:
    ROWS: ClassVar[list[dict]] = [
        {
            "question": "法国的首都是哪里？",
            "answers": ["巴黎"],
            "fake": None,
            "passages": [
                {"number": 1, "chunk_id": "c1", "source": "geo.md", "heading": "", "text": "巴黎是法国首都。"}
            ],
        },
        {
            "question": "Where is the Super Bowl 2021?",
            "answers": ["Tampa"],
            "fake": "Glendale",
            "passages": [
                {"number": 1, "chunk_id": "c2", "source": "nfl.md", "heading": "2021", "text": "In Tampa."}
            ],
        },
    ]

    def test_the_same_rows_give_the_same_bytes(self, tmp_path: Path):
        write_rows(tmp_path / "a.jsonl.gz", self.ROWS)
        write_rows(tmp_path / "b.jsonl.gz", self.ROWS)
        assert (tmp_path / "a.jsonl.gz").read_bytes() == (tmp_path / "b.jsonl.gz").read_bytes()
        assert read_rows(tmp_path / "a.jsonl.gz") == self.ROWS

    def test_a_row_keeps_only_what_the_writer_reads(self):
        row = self.ROWS[0] | {"extra": 1}
        row["passages"] = [row["passages"][0] | {"score": 0.9, "metadata": {"x": 1}}]
        assert slim(row) == self.ROWS[0]

    def test_a_folder_that_was_never_built_is_a_clear_error(self, tmp_path: Path):
        with pytest.raises(SystemExit, match=r"bench/fit_inputs\.py"):
            load_inputs(tmp_path)

    def test_splits_are_read_by_folder(self, tmp_path: Path):
        write_rows(tmp_path / "train" / "cmrc2018_trial.jsonl.gz", self.ROWS[:1])
        write_rows(tmp_path / "held_out" / "rgb_en_fact.jsonl.gz", self.ROWS[1:])
        (tmp_path / "provenance.json").write_text("{}")
        assert load_inputs(tmp_path) == {
            "held_out": {"rgb_en_fact": self.ROWS[1:]},
            "train": {"cmrc2018_trial": self.ROWS[:1]},
        }

    def test_no_set_slice_is_both_trained_on_and_held_out(self):
        for name in set(SPLITS["train"]) & set(SPLITS["held_out"]):
            train, held = SPLITS["train"][name], SPLITS["held_out"][name]
            assert not [i for i in range(4000) if train(i) and held(i)], name


class TestTheCommittedWeights:
    @pytest.mark.parametrize(
        "folder", [FIT_INPUTS, FIT_INPUTS.with_name("fit_inputs_e5")], ids=lambda p: p.name
    )
    def test_the_packaged_inputs_hold_every_split_named_in_their_provenance(self, folder: Path):
        provenance = json.loads((folder / "provenance.json").read_text(encoding="utf-8"))
        for split, sets in provenance["splits"].items():
            for name in sets:
                with gzip.open(folder / split / f"{name}.jsonl.gz", "rt", encoding="utf-8") as rows:
                    assert sum(1 for _ in rows) > 0, (split, name)

    def test_the_writer_weights_name_a_command_that_reads_the_packaged_inputs(self):
        fit_record = BrainParams.load().writer.provenance["fit"]
        assert "--inputs bench/data/fit_inputs" in fit_record["command"]
        assert fit_record["held_out_sets"] and fit_record["figures"]


class TestAdoption:
    """A fit is adopted only where no set's answer figure falls by more than the tolerance; a term
    gated to one language (``*_question``) is judged on that language's sets alone."""

    CURRENT = Combiner(
        terms={
            "coverage": 0.5,
            "meaning": 0.9,
            "meaning*chinese_question": 0.0,
            "meaning*english_question": 0.0,
        }
    )

    @staticmethod
    def figures(**changes: tuple[float, float]) -> dict[str, dict[str, float]]:
        return {
            f"held-out: {name}": {"has_gold_per_in_ctx_before": a, "has_gold_per_in_ctx_after": b}
            for name, (a, b) in changes.items()
        }

    LANGUAGES: ClassVar[dict[str, str]] = {"cmrc": "zh", "drcd": "zh", "musique": "en"}

    def test_the_language_of_a_set_and_of_a_term(self):
        assert (
            set_language([{"question": "谁赢了？"}, {"question": "Who won?"}, {"question": "法国的首都？"}])
            == "zh"
        )
        assert language_of("meaning*english_question") == "en" and language_of("meaning") is None

    def test_a_language_term_is_judged_on_its_own_language(self):
        fitted = self.CURRENT.model_copy(
            update={
                "terms": self.CURRENT.terms
                | {"meaning*chinese_question": -0.7, "meaning*english_question": -0.5}
            }
        )
        figures = self.figures(cmrc=(0.85, 0.87), drcd=(0.85, 0.86), musique=(0.27, 0.25))
        adopted, worse = adoption(self.CURRENT, fitted, figures, self.LANGUAGES, 0.01)
        assert adopted == {"zh"} and worse == {"en": {"held-out: musique": -0.02}}

    def test_a_shared_term_is_judged_on_every_set(self):
        fitted = self.CURRENT.model_copy(update={"terms": self.CURRENT.terms | {"meaning": 0.2}})
        figures = self.figures(cmrc=(0.85, 0.87), musique=(0.27, 0.25))
        assert adoption(self.CURRENT, fitted, figures, self.LANGUAGES, 0.01) == (
            set(),
            {"all": {"held-out: musique": -0.02}},
        )
        figures = self.figures(cmrc=(0.85, 0.87), musique=(0.27, 0.265))
        assert adoption(self.CURRENT, fitted, figures, self.LANGUAGES, 0.01) == ({"all"}, {})

    def test_only_adopted_terms_change(self):
        assert changed_by("meaning*chinese_question", {"zh"}) and not changed_by(
            "meaning*english_question", {"zh"}
        )
        assert not changed_by("meaning", {"zh"}) and changed_by("meaning", {"all"})
