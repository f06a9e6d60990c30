"""What kind of fact a question asks for, and the facts of that kind a sentence states.

"Who / 谁" asks for a name, "when / 哪一年" for a date, "how many / 多少" for a number, "where / 哪里" for
a place. A sentence that holds a fact of the asked kind can answer; one that does not, hardly. Facts
come back as normalised keys ("march 3 2017" and "Mar. 3, 2017" are one date; "1,361万" and "1361万"
one number) so the writer can count how many passages state the same one: news snippets disagree, and a
fact several passages state beats one stated once. What the question itself states ("in 2019", the
name it asks about) is never the answer, so it is left out.
"""

from __future__ import annotations

import re
from functools import lru_cache

from core.names import NameShape, find_titles, name_matches
from core.text import contains_cjk, to_simplified
from core.tokenize import EN_STOPWORDS
from providers.offline_brain.lexicon import lexicon
from providers.offline_brain.weights import params
from providers.offline_brain.words import pos_tags

_ZH, _EN, _ANY = lexicon().tables("facts")
_NAME_SHAPE = NameShape.from_dict(_EN.name_shape)

_KINDS = ("number", "date", "name", "place", "value")  # the kinds of fact a question can ask for
FACT_KINDS = frozenset({"number", "date", "name", "place"})  # kinds whose facts can be read off a sentence
# the cues for each kind, and for a role someone holds ("市长", "coach"): data/{zh,en}.json asks_for_*


def split_dateline(text: str) -> tuple[str, str]:
    """A news snippet's leading date ("Sep 13, 2016 ... ") and the rest: the date the page was
    written, which says when only for a sentence reporting the event that day."""
    found = _ANY.dateline.match(text)
    return (found.group(0), text[found.end() :]) if found else ("", text)


def is_date_key(key: str) -> bool:
    """Whether a fact's key is a date (``2020``, ``2020-5-29``, ``?-5-29``), as ``facts`` writes it."""
    return bool(_ANY.date_key.fullmatch(key))


def compatible(a: str, b: str) -> bool:
    """Two date keys that do not contradict each other: "2020" and "2020-5-29", not "2020-5" and "2019-5"."""
    return a == b or a.startswith(b + "-") or b.startswith(a + "-")


def wanted(question: str) -> set[str]:
    """The kinds of fact the question asks for (number, date, name, place, value); empty for others.

    A date question is not also a number question ("how many years ago" aside, "哪一年" holds 几)."""
    words = lexicon()
    kinds = {kind for kind in _KINDS if words.pattern(f"asks_for_{kind}").search(question)}
    if not kinds and words.pattern("names_a_role").search(question):
        kinds.add("name")  # "香港第四任行政长官？", "year-end No 1 in tennis in 2019": who holds the role
    if "date" in kinds and "number" in kinds and not _ANY.how_many.search(question):
        kinds.discard("number")
    if "place" in kinds:
        kinds.discard("name")  # 哪个城市 / which city: the place cue is the more specific one
    return kinds


def has_kind(sentence: str, kind: str) -> bool:
    """The sentence states something of this kind at all (facts the question states included)."""
    if kind == "number":
        return bool(_ZH.digit.search(sentence))
    if kind == "date":
        return bool(_ZH.date_mark.search(sentence))
    if kind in ("name", "place"):
        return bool(facts(sentence, kind, ""))
    return bool(_EN.value.search(sentence))


def facts(sentence: str, kind: str, question: str) -> dict[str, float]:
    """Facts of ``kind`` the sentence states and the question does not: normalised key -> weight
    (a date's precision; 1.0 otherwise)."""
    return {key: weight for key, (weight, _) in stated_facts(sentence, kind, question).items()}


def asked_facts(
    sentence: str, kinds: set[str], question: str, written: bool = False
) -> dict[str, float] | dict[str, str]:
    """The facts of every asked kind that can be read off a sentence (``FACT_KINDS``) it states:
    normalised key -> weight (as :func:`facts`), or -> as written in the sentence (``written``)."""
    out: dict = {}
    for kind in kinds & FACT_KINDS:
        found = stated_facts(sentence, kind, question).items()
        out.update({key: surface if written else weight for key, (weight, surface) in found})
    return out


def stated_facts(sentence: str, kind: str, question: str) -> dict[str, tuple[float, str]]:
    """Like :func:`facts`, with each fact as written in the sentence: key -> (weight, surface)."""
    if kind == "date":
        found = _dates(sentence)
        stated = set(_dates(question))
    elif kind == "number":
        found = _numbers(sentence)
        stated = set(_numbers(question)) | set(_dates(question))
    elif kind in ("name", "place"):
        asked = _question_words(question)
        found = _split_at(_names(sentence, kind), asked)
        said = re.sub(r"\s+", "", question.lower())
        # a Chinese name holding a word of the question spells out the question's own subject
        # (香港特别行政区 for "香港第四任行政长官？"), it does not answer it
        subject = [w for w in asked if contains_cjk(w) and len(w) >= 2]
        return {
            k: v
            for k, v in found.items()
            if not set(k.split()) <= asked
            and k not in asked
            and re.sub(r"\s+", "", k) not in said
            and not any(w in to_simplified(k) for w in subject)
        }
    else:
        return {}
    return {k: v for k, v in found.items() if k not in stated}


def _zh_number(text: str) -> int | None:
    """1-999 written in Arabic or Chinese numerals (六, 十一, 二十三, 一百零五); None for others."""
    if text.isdigit():
        return int(text)
    total, digit = 0, 0
    for char in text:
        value = _ZH.numerals.get(char)
        if value is None:
            return None
        if value < 10:
            digit = value
        else:  # 十, 百: a multiplier of the digit before it (一 when none: 十一)
            total += (digit or 1) * value
            digit = 0
    return total + digit


def editions(text: str) -> dict[str, set[int]]:
    """The years and ordinals that pin down which occurrence of a recurring event the text is about:
    "2019年亚洲杯", "the 92nd Academy Awards", "第六届立法会", "Season 11"."""
    out: dict[str, set[int]] = {}
    for kind, pattern in _ANY.edition.items():
        for m in pattern.finditer(text):
            value = next(g for g in m.groups() if g)
            if value.lower() in _EN.ordinal_words:
                number: int | None = _EN.ordinal_words.index(value.lower()) + 1
            else:
                number = _zh_number(value)
            if number is not None:
                out.setdefault(kind, set()).add(number)
    return out


def other_edition(sentence: str, question: str) -> bool:
    """The sentence is about another occurrence than the one asked about: the question names a year
    (or an ordinal) and the sentence names years (ordinals), none of them the question's."""
    asked, said = editions(question), editions(sentence)
    return any(said.get(kind) and not values & said[kind] for kind, values in asked.items())


def _dates(text: str) -> dict[str, tuple[float, str]]:
    found: dict[str, tuple[float, str]] = {}
    taken: list[tuple[int, int]] = []
    for pattern in _EN.dates:
        for m in pattern.finditer(text):
            if any(a <= m.start() < b for a, b in taken):
                continue
            taken.append(m.span())
            parts = m.groupdict()
            named = (parts.get("m") or "").lower()  # "Sept." is month 9: the first name it opens with
            month = parts.get("mm") or (
                str(next(i for i, m in enumerate(_EN.months, 1) if named.startswith(m))) if named else None
            )
            day = re.sub(r"\D", "", parts.get("d") or "") or None
            _add_date(found, parts["y"], month, day, m.group(0))
    for m in _ZH.date.finditer(text):
        free = not any(a <= m.start() < b for a, b in taken)
        if free and m.group(0).strip() and (m.group("y") or m.group("mm")):
            _add_date(found, m.group("y"), m.group("mm"), m.group("d"), m.group(0).strip())
    return found


def _add_date(
    found: dict[str, tuple[float, str]], year: str | None, month: str | None, day: str | None, surface: str
) -> None:
    key = year or "?"
    key += f"-{int(month)}" if month else ""
    key += f"-{int(day)}" if day and month else ""
    precision = sum(1 for part in (year, month, day and month) if part)
    if precision and key not in found:
        found[key] = (params().other.date_precision[str(precision)], surface)


# parts of a date or a clock time are not amounts: "Oct 23, 2019, 6:30 p.m." states no number 23 or 6
# (every date pattern but the last, the bare year: "2015 people" is a number)
_NOT_AMOUNTS = [*_EN.dates[:-1], *_EN.not_amounts]


def _numbers(text: str) -> dict[str, tuple[float, str]]:
    out: dict[str, tuple[float, str]] = {}
    taken = [m.span() for pattern in _NOT_AMOUNTS for m in pattern.finditer(text)]
    for m in _ANY.number.finditer(text):
        if any(a <= m.start("n") < b for a, b in taken):
            continue
        value = m.group("n").replace(",", "").replace("，", "")
        unit = (m.group("u") or "").lower().replace("％", "%").replace("percent", "%")
        if re.fullmatch(_ANY.year, value) and not unit:
            continue  # a bare year is a date, not an amount
        out.setdefault(value + unit, (1.0, m.group(0).strip()))
    return out


@lru_cache(maxsize=4096)
def _question_words(question: str) -> frozenset[str]:
    words = re.findall(r"[\w'’-]+", question.lower())
    if contains_cjk(question):
        words += [w for w, _ in pos_tags(question)]
    return frozenset(words)


def _name_words(words: list[str]) -> list[str]:
    """A capitalised run trimmed to the name it holds: without a leading article, month or weekday,
    a possessor ("Slovenia's Tadej Pogačar" -> Tadej Pogačar), words with digits ("No1 Ashleigh Barty")
    or a trailing "of"."""
    for i in range(len(words) - 1, -1, -1):
        if _ANY.possessive.search(words[i]) or any(c.isdigit() for c in words[i]):
            words = words[i + 1 :] or [_ANY.possessive.sub("", words[i])]
            break

    def dropped(word: str) -> bool:
        low = word.lower().strip(".")
        month = re.fullmatch(_EN.month, word.strip("."), re.IGNORECASE)  # "Mar", "March"; not "Mara"
        return low in EN_STOPWORDS or bool(month) or low in _EN.weekdays or any(c.isdigit() for c in word)

    while words and dropped(words[0]):
        words = words[1:]
    while words and (words[-1].lower() in _EN.not_name_endings or any(c.isdigit() for c in words[-1])):
        words = words[:-1]
    return words


def _names(sentence: str, kind: str) -> dict[str, tuple[float, str]]:
    out = find_titles(sentence, params().limits.facts["title_chars"]) if kind == "name" else []
    if kind == "name":  # technical docs name their things in code: "哪个修饰符" is answered by `.once`
        out += [span.strip("<>/ ") for span in _ANY.code_span.findall(sentence) if span.strip("<>/ ")]
    # a sentence's first word is capitalised whatever it is ("View maps ...", "Results of ..."), so
    # alone it is not taken for a name
    first = re.search(r"[A-Za-z]", sentence)
    for m in name_matches(sentence, _NAME_SHAPE):
        words = _name_words(m.group(0).split())
        if len(words) == 1 and first and m.start() == first.start() and m.group(0).split()[0] == words[0]:
            continue
        if words and not (len(words) == 1 and len(words[0]) < 2):
            out.append(" ".join(words).rstrip("."))
    if contains_cjk(sentence):
        flags = _ZH.name_flags if kind == "name" else _ZH.place_flags
        # tagged as simplified text: jieba's dictionary is simplified, and 葉偉民 and 叶伟民 are one name
        tagged = pos_tags(to_simplified(sentence))
        if kind == "name":
            out += _dotted_names([word for word, _ in tagged])
        for i, (word, flag) in enumerate(tagged):
            if not flag.startswith(flags):
                continue
            if flag.startswith("nr") and len(word) == 1 and i + 1 < len(tagged):
                following, tag = tagged[i + 1]  # 李 + 明远: jieba cuts an unknown given name off its surname
                if contains_cjk(following) and len(following) <= 2 and (tag[:1] == "n" or tag == "a"):
                    word += following
            if len(word) >= 2:
                out.append(word)
    return {name.lower(): (1.0, name) for name in reversed(out)}  # the first surface of each key wins


def _split_at(found: dict[str, tuple[float, str]], asked: frozenset[str]) -> dict[str, tuple[float, str]]:
    """Capitalised runs cut at the words the question states: "New Vanguard CEO Tim Buckley" asked
    "Who is the new CEO of Vanguard?" names Tim Buckley."""
    out: dict[str, tuple[float, str]] = {}
    for weight, surface in found.values():
        runs: list[list[str]] = [[]]
        for word in surface.split():
            if re.sub(r"['’]s$", "", word.lower()).strip(".,:;") in asked:
                runs.append([])
            else:
                runs[-1].append(word)
        for run in runs:
            name = " ".join(run)
            if len(name) >= 2:
                out.setdefault(name.lower(), (weight, name))
    return out


def _dotted_names(words: list[str]) -> list[str]:
    """Names whose parts jieba cut apart at the middle dot: 罗伯特 · 唐尼 -> 罗伯特·唐尼."""
    out, i = [], 0
    while i < len(words):
        j = i
        while j + 2 < len(words) and words[j + 1] in _ANY.name_dots and words[j + 2].strip(" ·•・，。"):
            j += 2
        name = "".join(words[i : j + 1])
        if j > i and contains_cjk(name):
            out.append(name)
        i = j + 1
    return out


# "什么是X？", "X是什么？", "X指的是什么？", "What is X?", "What does X mean?": the question asks what X is
# what may stand between the term and its copula: "（Bluestone Accord）", "，亦称三角恋，", ", also called X,"
# "X is a …", not the passive "X is seen as …" / "X was signed in …"


def defined_term(question: str) -> str | None:
    """The term a definition question asks about ("青石协议" for "什么是青石协议？"), or None."""
    for pattern in _ANY.definition_questions:
        m = pattern.match(question)
        if m and 1 <= len(m.group("x")) <= params().limits.facts["defined_term_chars"]:
            return m.group("x")
    return None


def defines(sentence: str, term: str) -> bool:
    """The sentence opens with the term and goes on to say what it is ("X（…），是…", "X is a …"):
    the defining sentence, not one that merely repeats the term."""
    text = to_simplified(sentence.strip())
    text = _EN.leading_article.sub("", text)
    want = _EN.leading_article.sub("", to_simplified(term.strip()))
    if not want or not text.lower().startswith(want.lower()):
        return False
    rest = _ANY.aside.sub("", text[len(want) :], count=1)
    return bool(_ANY.copula.match(rest))
