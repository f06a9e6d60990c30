"""Word lists, patterns and cut-offs as data: the lexicon's tables decode by their shape, fills put shared
pieces in once, and the rules read their cut-offs from weights.json (issue 20, item 4)."""

from __future__ import annotations

import json
import re

import pytest

from providers.offline_brain.analysis import estimate_complexity
from providers.offline_brain.answer import is_prose
from providers.offline_brain.lexicon import DATA, Lexicon, lexicon
from providers.offline_brain.weights import params


def custom(entries: dict) -> Lexicon:
    return Lexicon({"zh": entries.get("zh", {}), "en": entries.get("en", {}), "any": entries.get("any", {})})


class TestTables:
    def test_words_keep_their_order_unless_they_are_a_set(self):
        lex = custom(
            {
                "zh": {"m.fillers": {"words": ["有什么区别", "区别"]}},
                "en": {"m.stop": {"words": ["the", "a"], "set": True}},
            }
        )
        zh, en, _any = lex.tables("m")
        assert zh.fillers == ("有什么区别", "区别")  # replaced in this order: the longer phrase first
        assert en.stop == frozenset({"the", "a"})

    def test_a_regex_keeps_its_flags_and_fills_shared_pieces(self):
        lex = custom(
            {
                "en": {
                    "m.month": {"fragment": "(?:Jan(?:uary)?|May)"},
                    "m.date": {
                        "regex": r"\b%(month)s \d{1,2}\b",
                        "flags": ["IGNORECASE"],
                        "fill": {"month": "m.month"},
                    },
                },
                "zh": {"m.date": {"regex": r"\d+\s*月\s*\d+\s*日"}},
            }
        )
        zh, en, _any = lex.tables("m")
        assert en.date.search("on JANUARY 3 it rained") and not en.date.search("on Juno 3")
        assert zh.date.search("3月29日") and not zh.date.search("三月")

    def test_a_piece_the_code_computes_is_given_by_name(self):
        lex = custom(
            {"any": {"m.unit": {"regex": r"多少(?P<unit>%(unit)s)|how many (?P<u>%(unit)s)", "fill": {}}}}
        )
        pattern = lex.regex(lex.entry("m.unit", "any"), unit="km|公里")
        assert pattern.search("多少公里").group("unit") == "公里" and pattern.search("how many km")

    def test_a_missing_table_names_its_file(self):
        zh, _en, _any = custom({}).tables("m")
        with pytest.raises(KeyError, match=r"zh\.json"):
            _ = zh.nothing

    def test_every_packaged_regex_compiles(self):
        lex = lexicon()
        for language in ("zh", "en", "any"):
            raw = json.loads((DATA / f"{language}.json").read_text(encoding="utf-8"))
            for use in raw:
                entry = raw[use]
                if "." not in use or "cues" in entry:  # the type cues are read by analysis._cue
                    continue
                if "given" in entry:  # pieces the code computes
                    assert lex.regex(entry, **dict.fromkeys(entry["given"], "x")), use
                else:
                    assert lex.decoded(use, language) is not None, use

    def test_every_table_a_module_names_exists(self):
        """Tables decode when first read: a misspelt name would fail only on the question that reaches it."""
        from pathlib import Path

        lex, languages = lexicon(), {"_ZH": "zh", "_EN": "en", "_ANY": "any"}
        for path in sorted(Path(DATA).parent.glob("*.py")):
            for space, name in re.findall(r"\b(_ZH|_EN|_ANY)\.([a-z]\w*)", path.read_text(encoding="utf-8")):
                assert f"{path.stem}.{name}" in lex.entries[languages[space]], f"{path.name}: {space}.{name}"

    def test_no_word_list_left_in_the_logic(self):
        """The check docs/evaluation.md names: no literal collection of three or more words in a logic
        file, besides the kinds' names and ``__all__``."""
        import ast
        from pathlib import Path

        allowed = {
            "comparative",
            "years",
            "difference",
            "number",
            "keyword",
            "zh",
            "QuestionProfile",
            "analyze_question",
            "contextualize_question",
            "compress_passages",
            "FACT_KINDS",
        }
        for path in sorted(Path(DATA).parent.glob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            exported = {
                id(node.value)
                for node in ast.walk(tree)
                if isinstance(node, ast.Assign)
                and any(getattr(t, "id", "") == "__all__" for t in node.targets)
            }
            for node in ast.walk(tree):
                if id(node) in exported:
                    continue
                if isinstance(node, ast.Tuple | ast.List | ast.Set):
                    words = [
                        e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
                    ]
                    words = [w for w in words if re.search(r"[A-Za-z]{2,}|[\u4e00-\u9fff]", w)]
                    assert len(words) < 3 or words[0] in allowed, f"{path.name}:{node.lineno} {words[:4]}"


class TestWording:
    def test_the_writers_wording_is_what_the_support_check_skips(self):
        """The writer's insufficient answer and its notes are data (answer.insufficient, answer.rivals);
        the support check reads the same openings (support.not_a_claim_re, support.lead_re): no claim."""
        zh, en, _any = lexicon().tables("answer")
        support = lexicon().tables("support")[2]
        for wording in (zh.insufficient, en.insufficient):
            assert support.not_a_claim_re.match(wording["unknown"])
            assert support.not_a_claim_re.match(wording["lacks"].format(what="x"))
            assert support.lead_re.match(wording["closest"].format(head="", closest="").strip())
        for wording in (zh.rivals, en.rivals):
            assert support.lead_re.match(wording["note"].format(items="").strip())


class TestCutOffs:
    @pytest.mark.parametrize(
        ("question", "complexity"),
        [
            ("向量数据库是什么？", "simple"),
            ("What is a vector database?", "simple"),
            (
                "在一个有很多用户同时访问的生产环境里面向量数据库应该怎样配置才能保证检索速度足够快？",
                "moderate",
            ),
            (
                "How should a vector database be configured in production so that search stays fast for many users?",
                "moderate",
            ),
        ],
    )
    def test_a_long_question_is_moderate_by_the_limit_in_the_data(self, question, complexity):
        assert estimate_complexity(question, [], []) == complexity
        assert params().limits.analysis["some_words"] == 14

    def test_a_short_line_without_end_mark_is_no_prose(self):
        limits = params().limits.answer
        assert not is_prose("安装步骤") and not is_prose("Install steps")
        assert is_prose("安装需要三个步骤。") and is_prose("Installing takes three steps.")
        assert limits["short_chars"] == 12 and limits["short_words"] == 5

    def test_a_cut_off_is_a_value_to_vary_not_a_global(self):
        varied = params().with_value("limits.analysis.some_words", 30)
        assert varied.limits.analysis["some_words"] == 30 and params().limits.analysis["some_words"] == 14
        with pytest.raises(KeyError):
            params().with_value("limits.analysis.no_such_limit", 3)


# Numbers an offline-brain logic file may write, each with why it is structure rather than a setting
# (issue 20: "no tuned numeric constant stays in offline-brain code"). Everything else lives in
# data/weights.json (``params()``): a fitted weight, a selection limit or a rule's cut-off.
STRUCTURAL_NUMBERS = {
    0: "nothing, the first index, the bottom of a [0, 1] scale",
    1: "one, the next or previous index (-1: the last), the top of a [0, 1] scale",
    2: "a pair: two parts make a comparison, two characters a Chinese word; a row tuple's third field",
    0.5: "the midpoint of a [0, 1] scale: half from one signal, half from the other",
    10: "the decimal base: a Chinese numeral below ten is a digit, 十 and 百 multiply",
    1e-12: "a float tolerance: scores closer than this are equal",
}
# Numbers allowed by where they stand, not by value.
ALLOWED_PLACES = {
    "round": "the digits a figure is shown with (round(x, n)), not what it decides",
    "lru_cache": "a cache's size (maxsize=n): memory, not behaviour",
}
# A public function's default for a setting the runtime always passes (config.py names its default).
ALLOWED_DEFAULTS = {
    ("check_answer_support", "threshold"): "settings.support_threshold is passed (providers/brain)",
}


def _literals_not_allowed(source: str) -> list[tuple[int, object]]:
    """(line, value) of every int/float literal of ``source`` that is neither structural nor in an
    allowed place."""
    import ast

    tree = ast.parse(source)
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            called = getattr(node.func, "id", getattr(node.func, "attr", ""))
            if called == "round" and len(node.args) > 1:
                allowed.add(id(node.args[1]))
            if called == "lru_cache":
                allowed.update(id(k.value) for k in node.keywords if k.arg == "maxsize")
        if isinstance(node, ast.FunctionDef):
            positional = node.args.posonlyargs + node.args.args
            pairs = zip(
                positional[len(positional) - len(node.args.defaults) :], node.args.defaults, strict=True
            )
            pairs = [*pairs, *zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True)]
            allowed.update(
                id(d) for a, d in pairs if d is not None and (node.name, a.arg) in ALLOWED_DEFAULTS
            )
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and type(node.value) in (int, float)
        and node.value not in STRUCTURAL_NUMBERS
        and id(node) not in allowed
    ]


class TestNoTunedNumber:
    def test_no_tuned_number_left_in_the_logic(self):
        """Every int/float literal in providers/offline_brain/*.py is structural (``STRUCTURAL_NUMBERS``,
        each with its reason) or stands where a number decides nothing (``ALLOWED_PLACES``,
        ``ALLOWED_DEFAULTS``); a cut-off, weight or window belongs in data/weights.json."""
        from pathlib import Path

        found = {
            f"{path.name}:{line}": value
            for path in sorted(Path(DATA).parent.glob("*.py"))
            for line, value in _literals_not_allowed(path.read_text(encoding="utf-8"))
        }
        assert not found, f"tuned numbers in logic files (move them to data/weights.json): {found}"

    def test_the_check_catches_a_window_and_allows_structure(self):
        source = (
            "from functools import lru_cache\n"
            "@lru_cache(maxsize=4096)\n"
            "def f(text, threshold=0.6):\n"
            "    return round(len(text[:300]) / 2, 3) >= 0.5 and text[-1]\n"
            "def check_answer_support(answer, threshold=0.6):\n"
            "    return threshold\n"
        )
        assert _literals_not_allowed(source) == [(3, 0.6), (4, 300)]
