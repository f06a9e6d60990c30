"""The one name extractor and the one title extractor: capitalised names and 《titles》 in text.

Every role that reads a name off English text (the analyser's entities, the follow-up resolver's
antecedents, the judge's pointers, the writer's name facts, the bridge hop's next entity, the entity
graph) uses ``find_names``; every role that reads a 《title》 uses ``find_titles``. Roles differ in what they accept
as a name, and those differences are a ``NameShape`` (data the role passes), not a regex of its own:
which capitalised word, which lower-case particles may join two words ("Leonardo da Vinci", "Bank of
England"), whether several may stand in a row ("Ludwig van der Rohe"), whether one word alone counts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from core.text import code_in, contains_cjk, jieba, to_simplified


@dataclass(frozen=True)
class NameShape:
    """What one role reads as a capitalised name."""

    word: str = r"[A-Z][\w'’.-]*"  # one capitalised word
    particles: tuple[str, ...] = ()  # lower-case words allowed between two words ("of", "van", "da")
    gap: str = r"\s+"  # between two words
    after_particle: str = r"\s+"  # between a particle and the next word
    particle_run: bool = False  # several particles in a row ("van der")
    two_or_more: bool = False  # one capitalised word alone is no name
    before: str = r"\b"  # what must hold before the first word
    after: str = ""  # what must hold after the last word

    @classmethod
    def from_dict(cls, data: dict) -> NameShape:
        return cls(**{**data, "particles": tuple(data.get("particles", ()))})

    def pattern(self) -> str:
        """The regex source of this shape (compiled by ``re`` or, for ``\\p{Lu}`` words, ``regex``)."""
        joined = ""
        if self.particles:
            joined = f"(?:(?:{'|'.join(self.particles)}){self.after_particle})" + (
                "*" if self.particle_run else "?"
            )
        more = "+" if self.two_or_more else "*"
        return f"{self.before}{self.word}(?:{self.gap}{joined}{self.word}){more}{self.after}"


@lru_cache(maxsize=32)
def _compiled(shape: NameShape) -> re.Pattern[str]:
    return re.compile(shape.pattern())


def name_matches(text: str, shape: NameShape) -> Iterator[re.Match[str]]:
    """Each capitalised name of ``shape`` in ``text``, as a match (its position matters to some roles)."""
    return _compiled(shape).finditer(text)


def find_names(text: str, shape: NameShape) -> list[str]:
    """The capitalised names of ``shape`` in ``text``, in order."""
    return [m.group(0) for m in name_matches(text, shape)]


@lru_cache(maxsize=32)
def _title_re(limit: int | None, marks: str) -> re.Pattern[str]:
    count = f"{{1,{limit}}}" if limit else "+"
    pairs = [marks[i : i + 2] for i in range(0, len(marks), 2)]
    return re.compile("|".join(f"{re.escape(o)}([^{re.escape(c)}]{count}){re.escape(c)}" for o, c in pairs))


def title_matches(text: str, limit: int | None = 40, marks: str = "《》") -> Iterator[re.Match[str]]:
    """Each quoted title in ``text``: 《…》 by default (``marks`` lists opening/closing pairs, e.g.
    "《》「」“”"), at most ``limit`` characters inside (None: any length)."""
    return _title_re(limit, marks).finditer(text)


def find_titles(text: str, limit: int | None = 40, marks: str = "《》") -> list[str]:
    """The titles in ``text`` without their marks (《三体》 → 三体), in order."""
    return [next(g for g in m.groups() if g) for m in title_matches(text, limit, marks)]


_NAME_LIKE = re.compile(r"[A-Z0-9_./#+-]|[\u3400-\u9fff]")


def name_like(text: str) -> bool:
    """Whether ``text`` is written as a name is: a capital, a digit or an identifier's mark (Django,
    useEffect, helm_release, v-model, gpt-4o) or Chinese characters (珠穆朗玛峰), not a plain
    lower-case word ("keyword search": a model's analysis may call anything an entity)."""
    return bool(_NAME_LIKE.search(text))


# jieba's part-of-speech tags for proper nouns: place, person, organisation ("nz", other proper noun, also tags
# words such as 新创建)
PROPER_NOUN_TAGS = frozenset({"ns", "nr", "nrfg", "nrt", "nt"})


def chinese_proper_nouns(text: str) -> list[str]:
    """Chinese words jieba tags as proper nouns (珠穆朗玛峰/ns, 法国/ns), in simplified script: the
    Chinese names a question gives, which no capital marks as it marks a Latin-script name. Only words
    jieba's dictionary lists: what its HMM guesses for characters it does not know is no reliable name
    (松才 in "鸡毛松才可以", 和浩汉 in "宏碁和浩漢"), and a passage may cut the same characters otherwise."""
    if not contains_cjk(text):
        return []
    listed = jieba().dt.FREQ  # the shared dictionary, initialised once
    from jieba import posseg

    words = posseg.lcut(to_simplified(text))
    found = [
        w.word for w in words if w.flag in PROPER_NOUN_TAGS and contains_cjk(w.word) and listed.get(w.word)
    ]
    return list(dict.fromkeys(w for w in found if len(w) > 1))


def names_to_look_up(question: str, found: Iterable[str]) -> list[str]:
    """What the collection is asked whether it mentions: the names an analysis ``found`` that the
    question writes (``asked_names``) and the question's Chinese proper nouns."""
    return asked_names(question, [*found, *chinese_proper_nouns(question)])


def asked_names(question: str, names: Iterable[str]) -> list[str]:
    """The names an analysis found that the question itself writes (in either Chinese script) and that
    are written as names (``name_like``): what a model's analysis normalised or invented is left out."""
    written = question + to_simplified(question)
    return [n for n in dict.fromkeys(names) if n and name_like(n) and n in written]


# A section heading that is an API entry: one token of code; which marks make it code rather than a word
# (``v-once``, ``defineStore()``, ``store.$patch``, ``inheritAttrs``, ``helm_release``); a command heading
# ("helm repo add") counts where the section's own code writes it.
_ENTRY_TOKEN = re.compile(r"[A-Za-z_$@][\w$@.:/-]*(?:\(\))?")
_CODE_MARK = re.compile(r"\(\)$|[$_@]|^[a-z_$][\w$]*\.[\w$]|^[a-z]+[A-Z]|^[a-z]+(?:-[a-z]+)+$")
_COMMAND = re.compile(r"[a-z][\w-]*(?: [a-z][\w-]*){1,3}")


def entry_name(heading: str, text: str = "") -> str:
    """The API entry a section documents when its own heading (the last of ``heading``'s " > " path) is
    one: reference pages name the entry in the heading and describe it in sentences that do not repeat
    the name ("Render the element and component once only" under ``v-once``), so an answer of those
    sentences names it. "" for a heading in words ("Getting Started", 安装, "Vue.js")."""
    title = heading.rsplit(" > ", 1)[-1].strip()
    name = title.strip("`").strip()
    if not name or len(name) > 40 or not name.isascii() or "`" in name:
        return ""
    if title != name or (_ENTRY_TOKEN.fullmatch(name) and _CODE_MARK.search(name)):
        return name  # written as code, or shaped as code
    return name if _COMMAND.fullmatch(name) and name in code_in(text) else ""
