"""The offline answer: the one to three sentences of the evidence that answer the question, cited.

Extractive on purpose (no text-writing model ships offline), so the work is choosing well:
- by meaning first (the question's embedding against each sentence's, so a Chinese question can be
  answered by an English sentence), with key-term coverage as a second signal;
- by the kind of fact asked for: "how many / 多少" prefers a sentence with a number, "when / 何时" one
  with a date, "who / 谁" one with a name, "default / 默认" one with a value;
- only prose: code lines, table rows, link definitions and heading fragments are skipped unless the
  question asks for a command or code;
- where sources disagree: a sentence whose asked-for fact a near copy elsewhere states otherwise leads,
  and the answer names the other version, cited (``contested``, ``_rivals_note``);
- "什么是X / What is X" prefers the sentence that says what X is (``facts.defines``);
- no repeats, and short: further sentences join only while they score close to the best one and the
  answer stays readable (``LENGTH_BUDGET``); a sentence that opens by referring back ("所以…", "He…")
  brings the sentence before it where there is room.
When the sentences come from passages in the other language, the answer says so: it quotes them as
written rather than pretending to translate.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from core.schemas import DraftAnswer, Passage, strip_bridge
from core.text import contains_cjk, detect_language
from providers.offline_brain.agreement import Scored, agreement, backing, differing_words, rival_map, twins
from providers.offline_brain.analysis import key_terms
from providers.offline_brain.decompose import decompose
from providers.offline_brain.extractive import split_sentences
from providers.offline_brain.facts import (
    MONTH_WORD,
    compatible,
    defined_term,
    defines,
    facts,
    has_kind,
    other_edition,
    split_dateline,
    stated_facts,
    wanted,
)
from providers.offline_brain.judge import SEMANTIC_MATCH, semantic_match
from providers.offline_brain.meaning import Meaning
from providers.offline_brain.words import missing_words

MAX_SENTENCES = 3
# Chosen with bench/answer_params.py on dev slices disjoint from the reported queries (CMRC 2018 trial
# 500-599, DRCD dev 1000-1099, HotpotQA answers): answer_has_gold / answer_in_context 0.84 / 0.85 / 0.39.
CLOSE_TO_BEST = 0.65  # a further sentence must score at least this share of the best one
LENGTH_BUDGET = {"zh": 130, "en": 250}  # characters of answer text a further sentence may fill
TYPE_BONUS = 0.15
AGREE_BONUS = 0.6  # the sentence stating the fact most passages back (see agreement())
# "什么是X / What is X": the sentence that opens with X and says what it is (facts.defines)
DEFINES_BONUS = 0.15
CONTESTED_BONUS = 1.0  # a sentence whose asked-for fact a near copy elsewhere states otherwise (contested())
FACT_KINDS = {"number", "date", "name", "place"}  # kinds whose facts can be read off a sentence
WRONG_KIND = 0.7  # "how many" answered by a sentence without any number: score kept at this share
MAX_RIVALS = 2  # other versions of the asked fact an answer names (see _rivals_note)
OTHER_EDITION = 0.7  # a sentence about another year's / season's event (facts.other_edition): likewise
_LANGUAGE_NAME = {("zh", "en"): "英文", ("en", "zh"): "Chinese"}
# What the writer adds around copied sentences; verification strips or skips these (no claim in them).
LEAD_RE = re.compile(
    r"^(?:（以下引自\w+资料原文）|\(Quoted from an? \w+ source\.\)\s*|最接近的内容：|The closest they come:\s*"
    r"|另有资料作|Another source says\s*)"
)
NOT_A_CLAIM_RE = re.compile(r"^(?:根据现有资料无法确定|This cannot be determined from the documents)")

_IS_DATE_KEY = re.compile(r"(?:\d{4}|\?)(?:-\d{1,2}){0,2}")
_ASKS = re.compile(r"[?？]\s*(?:\[\d+\])?\s*$")
# a sentence that opens by pointing back at the one before it ("所以…", "在此背景下…", "这些…", "As a result…",
# "He…"): it is about what its predecessor names, and alone it leaves the reader without that
_REFERS_BACK = re.compile(
    r"^(?:所以|因此|因而|于是|故而|正因(?:为)?如此|在此(?:背景|基础|情况)下|在这种情况下|此后|此外|这|那些|该|此|其|他|她|它)"
    r"|^(?:so|therefore|thus|hence|consequently|as a result|for this reason|that is why|this|these|that|those"
    r"|it|its|he|his|she|her|they|their|(?:against|in|under|because of|after|despite) (?:this|these|that))\b",
    re.IGNORECASE,
)
_ASKS_FOR_CODE = re.compile(
    r"命令|代码|示例|脚本|怎么写|\bcommand\b|\bcode\b|\bsnippet\b|\bexample\b|\bsyntax\b|\bscript\b|\bcli\b",
    re.IGNORECASE,
)


# ---- what is not an answer sentence ---------------------------------------------------------------

_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$|^\s*\|?\s*:?-{3,}")
_LINK_DEFINITION = re.compile(r"^\s*\[[^\]]+\]:\s*\S+")
_HEADING = re.compile(r"^\s*#{1,6}\s")
_SHELL = re.compile(
    r"^\s*(?:\$ |>>> |```|(?:python3?|pip|bash|sh|cd|export|git|npm|docker|curl|uv|make|sudo)\s)"
)
_CODE_CHARS = re.compile(r"[{}();=<>\[\]]")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def is_prose(sentence: str) -> bool:
    """False for code lines, table rows, link definitions, headings and heading-like fragments."""
    text = sentence.strip()
    if not text or _TABLE_ROW.match(text) or _LINK_DEFINITION.match(text) or _HEADING.match(text):
        return False
    if _SHELL.match(text) or text.startswith(("    ", "\t")):
        return False
    body = _LIST_MARK.sub("", text)
    if len(_CODE_CHARS.findall(body)) > max(3, len(body) // 12):
        return False
    ends = bool(re.search(r"[。！？；.!?;:：][)）\]」”\"']?\s*$", body))
    short = len(body) < 12 if contains_cjk(body) else len(body.split()) < 5
    return ends or not short


def clean(sentence: str) -> str:
    """The sentence as a reader should see it: list marks and Markdown emphasis removed."""
    text = _LIST_MARK.sub("", sentence.strip())
    return re.sub(r"\*\*|__", "", text).strip()


def _fingerprint(text: str) -> str:
    return re.sub(r"[\W_]+", "", text).lower()


# ---- choosing -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    passage_index: int
    position: int
    sentence: str
    score: float
    match: float  # max(term coverage, meaning match) without bonuses: is this on the question at all?
    facts: dict[str, str] = field(default_factory=dict)  # facts of the asked kinds: key -> as written


def term_weights(terms: list[str], sentences: list[set[str]]) -> dict[str, float]:
    """Inverse sentence frequency of each question term among the candidates: the topic every
    sentence mentions (越南投资发展银行) says little; the asked-about word (初名) says which one answers."""
    n = len(sentences)
    return {t: math.log(1 + (n + 1) / (1 + sum(t in found for found in sentences))) for t in terms}


def candidates(question: str, passages: list[Passage], meaning: Meaning | None) -> list[Candidate]:
    """Every prose sentence of the passages with its score for ``question``."""
    allow_code = bool(_ASKS_FOR_CODE.search(question))
    terms = key_terms(question)
    kinds = wanted(question)
    language = detect_language(question)
    rows: list[tuple[int, int, str]] = []
    bodies: list[str] = []  # each sentence without the snippet's date: what it says about the event
    for p_index, passage in enumerate(passages):
        dateline, body = split_dateline(passage.text)
        pieces = split_sentences(body)
        for position, raw in enumerate(pieces):
            if allow_code or is_prose(raw):
                sentence = clean(raw)
                if sentence:
                    # the page's date is evidence only when a date is asked
                    joined = (
                        dateline + sentence if dateline and position == 0 and "date" in kinds else sentence
                    )
                    rows.append((p_index, position, joined))
                    bodies.append(sentence)
    sims = meaning.similarity(question, [r[2] for r in rows]) if meaning and rows else [0.0] * len(rows)
    out = []
    headings = [set(key_terms(p.heading)) for p in passages]
    found_in = [set(key_terms(r[2])) | headings[r[0]] for r in rows]  # the heading says what it is about
    weight = term_weights(terms, found_in)
    total = sum(weight.values())
    scored = []
    for (_, _, sentence), sim, found in zip(rows, sims, found_in, strict=True):
        cov = sum(weight[t] for t in terms if t in found) / total if total else 0.0
        topical = max(cov, semantic_match(sim))  # on the question at all (the sufficiency scale)
        # which sentence answers: words and meaning together in the question's language; meaning
        # alone for a sentence in the other language, where no word can match
        by_meaning = max(0.0, sim) / (2 * SEMANTIC_MATCH)
        match = (cov + by_meaning) / 2 if cov or detect_language(sentence) == language else by_meaning
        scored.append((match, topical))
    stated = [_stated(r[2], kinds, question) for r in rows]
    elsewhere = [other_edition(body, question) for body in bodies]
    # a vote is what the sentence itself says about this occurrence of the event: not the date the page
    # was written, not a sentence about another year's (or season's) event
    votes = [
        {} if away else _stated(body, kinds, question) for body, away in zip(bodies, elsewhere, strict=True)
    ]
    backed = backing(rows, votes, scored)
    agree = agreement(votes, backed)
    disputed = contested([r[0] for r in rows], bodies, votes, scored)
    term = defined_term(question)
    for (p_index, position, sentence), (match, topical), said, agreed, away, dispute in zip(
        rows, scored, stated, agree, elsewhere, disputed, strict=True
    ):
        if not kinds:
            fits = 0.0
        else:
            fits = sum(bool(said) if k in FACT_KINDS else has_kind(sentence, k) for k in kinds) / len(kinds)
        prior = 0.1 / (1 + p_index)  # the reranker put this passage higher
        if _ASKS.search(sentence):
            match *= WRONG_KIND  # a question in the evidence restates the question, it does not answer
        score = (
            (
                match
                + TYPE_BONUS * fits
                + AGREE_BONUS * agreed
                + CONTESTED_BONUS * dispute
                + DEFINES_BONUS * bool(term and defines(sentence, term))
                + prior
            )
            * (WRONG_KIND if kinds and not fits else 1.0)
            * (OTHER_EDITION if away else 1.0)
        )
        shown = _surfaces(sentence, kinds, question)  # with the snippet's date: copies differ there too
        out.append(Candidate(p_index, position, sentence, score if topical else 0.0, topical, shown))
    return out


def contested(
    passage_of: list[int], bodies: list[str], votes: list[dict[str, float]], scored: list[Scored]
) -> list[bool]:
    """Per sentence: a near copy in another passage states another fact of the asked kind in its place.

    Where sources that otherwise read alike disagree exactly on a fact of the kind asked ("Casey Affleck
    wins Best Actor" / "Joaquin Phoenix wins Best Actor"), that slot is what the question asks about, so
    both versions are scored up; the answer then states the better-backed one and names the other
    (``_rivals_note``) instead of quoting a sentence that settles nothing. ``votes`` are the facts each
    sentence states without its page's date (copies of one story often differ only there)."""
    rows_with_facts = [
        (p_index, body, {key: key for key in said})
        for p_index, body, said, (_, topical) in zip(passage_of, bodies, votes, scored, strict=True)
        if said and topical
    ]
    rivals = rival_map(rows_with_facts)
    return [
        bool(topical) and any(key in rivals for key in said)
        for said, (_, topical) in zip(votes, scored, strict=True)
    ]


def _surfaces(sentence: str, kinds: set[str], question: str) -> dict[str, str]:
    """The facts of the asked kinds the sentence states: normalised key -> as written."""
    shown: dict[str, str] = {}
    for kind in kinds & FACT_KINDS:
        shown.update({key: surface for key, (_, surface) in stated_facts(sentence, kind, question).items()})
    return shown


def _stated(sentence: str, kinds: set[str], question: str) -> dict[str, float]:
    said: dict[str, float] = {}
    for kind in kinds & FACT_KINDS:
        said.update(facts(sentence, kind, question))
    return said


def refers_back(sentence: str) -> bool:
    """The sentence opens by pointing back at the one before it (所以, 在此背景下, 这些, "As a result", "He")."""
    return bool(_REFERS_BACK.match(sentence.strip()))


def _with_antecedents(chosen: list[Candidate], pool: list[Candidate], language: str) -> list[Candidate]:
    """Each chosen sentence that refers back comes with the sentence before it in its passage, so the
    reader sees what "所以" follows from or whom "He" means; the predecessor follows it in priority (the
    note's trimming drops it first) and joins only where the answer has room left (``LENGTH_BUDGET``,
    ``MAX_SENTENCES``): it never displaces a sentence chosen on its own merit."""
    out, budget = list(chosen), LENGTH_BUDGET[language]
    for item in chosen:
        if not refers_back(item.sentence):
            continue
        before = _in_passage(item, pool, -1)
        if before is None or _place(before) in {_place(c) for c in out}:
            continue
        if len(out) >= MAX_SENTENCES or sum(len(c.sentence) for c in out) + len(before.sentence) > budget:
            continue
        out.insert(out.index(item) + 1, before)
    return out


def _duplicate(sentence: str, chosen: list[Candidate]) -> bool:
    key = _fingerprint(sentence)
    return any(key in _fingerprint(c.sentence) or _fingerprint(c.sentence) in key for c in chosen)


def _place(item: Candidate) -> tuple[int, int]:
    """Where a sentence sits (passage, position): one sentence scored for two sub-questions is one place."""
    return item.passage_index, item.position


def _in_passage(item: Candidate, pool: list[Candidate], offset: int) -> Candidate | None:
    """The sentence ``offset`` places after (negative: before) ``item`` in its passage, if it is in ``pool``."""
    return next((c for c in pool if _place(c) == (item.passage_index, item.position + offset)), None)


_READER_DATE = {"zh": re.compile(r"\d\s*[年月]"), "en": re.compile(rf"(?i)\b{MONTH_WORD}")}


def _date_precision(key: str) -> int:
    return sum(part != "?" for part in key.split("-"))


def _fuller_first(pool: list[Candidate], language: str) -> list[Candidate]:
    """The best sentence's date as the evidence states it most fully and in the reader's own writing:
    a sentence close to the best (``CLOSE_TO_BEST``) that states the same date with the year the best
    one leaves out ("2020年11月24日" for "11月24日"), or the same date as the question's language writes
    dates ("2017年4月14日" for "2017-04-14" in a Chinese answer) leads instead. The answer quotes its
    source's wording, so it picks the source that words the fact for the reader."""
    lead = pool[0]
    dates = {k: v for k, v in lead.facts.items() if _IS_DATE_KEY.fullmatch(k)}
    if not dates:
        return pool

    def better(key: str, surface: str) -> bool:
        for mine, written in dates.items():
            fuller = _date_precision(key) > _date_precision(mine) and (
                compatible(key, mine) or (mine.startswith("?") and key.endswith(mine[1:]))
            )
            readable = (
                key == mine
                and _READER_DATE[language].search(surface)
                and not _READER_DATE[language].search(written)
            )
            if fuller or readable:
                return True
        return False

    for other in pool[1:]:
        if other.score < CLOSE_TO_BEST * lead.score:
            break
        if any(better(k, v) for k, v in other.facts.items() if _IS_DATE_KEY.fullmatch(k)):
            return [other] + [c for c in pool if c is not other]
    return pool


def choose(question: str, passages: list[Passage], meaning: Meaning | None) -> list[Candidate]:
    """The one to three sentences that answer; one per sub-question first for multi-part questions."""
    everything = candidates(question, passages, meaning)
    pool = sorted(
        (c for c in everything if c.score > 0),
        key=lambda c: (-c.score, c.passage_index, c.position),
    )
    if not pool:
        return []
    top = pool[0].score  # the threshold stays the best score when a fuller sentence leads
    language = "zh" if detect_language(question) == "zh" else "en"
    pool = _fuller_first(pool, language)
    chosen: list[Candidate] = []
    kinds = wanted(question)
    for sub in [strip_bridge(q) for q in decompose(question)][:MAX_SENTENCES]:
        if kinds and not wanted(sub):
            continue  # a name the question mentions ("Last of Us Part II"), not a part that asks for a fact
        best = next(
            iter(
                sorted(
                    (c for c in candidates(sub, passages, meaning) if c.score > 0),
                    key=lambda c: (-c.score, c.passage_index, c.position),
                )
            ),
            None,
        )
        if best and not _duplicate(best.sentence, chosen):
            chosen.append(best)
    if _ASKS_FOR_CODE.search(question) and pool and pool[0].sentence.rstrip().endswith((":", "：")):
        # "Rebuild the index from your documents:" introduces the command that was asked for
        follower = _in_passage(pool[0], everything, 1)
        if follower:
            return [pool[0], follower]
    for item in pool:
        if len(chosen) >= MAX_SENTENCES:
            break
        if _duplicate(item.sentence, chosen) or any(twins(item.sentence, c.sentence) for c in chosen):
            continue  # a near copy adds nothing; if it states another fact, the answer names it (rivals)
        if chosen:
            length = sum(len(c.sentence) for c in chosen) + len(item.sentence)
            if item.score < CLOSE_TO_BEST * top or length > LENGTH_BUDGET[language]:
                continue
        chosen.append(item)
    return _with_antecedents(chosen, everything, language)


# ---- writing --------------------------------------------------------------------------------------


def _cite(items: list[Candidate], passages: list[Passage]) -> str:
    """Sentences in evidence order, each closed by its passage's [n]; spacing follows each sentence."""
    parts: list[str] = []
    for item in sorted(items, key=lambda c: (c.passage_index, c.position)):
        sentence = item.sentence.rstrip()
        marker = f"[{passages[item.passage_index].number}]"
        end = re.search(r"[。！？；.!?;]$", sentence)
        cjk = contains_cjk(sentence[-3:])
        if end:
            parts.append(f"{sentence[:-1]}{'' if cjk else ' '}{marker}{sentence[-1]}")
        else:
            parts.append(f"{sentence}{marker}。" if cjk else f"{sentence} {marker}.")
    text = ""
    for part in parts:
        text += part if not text or (contains_cjk(text[-2:]) and contains_cjk(part[:1])) else " " + part
    return text


def _rivals_note(
    language: str, picked: list[Candidate], pool: list[Candidate], passages: list[Passage]
) -> str:
    """Where near copies in the evidence state another value of a fact the answer gives, name it, cited:
    "另有资料作“大阪”[2]。" / 'Another source says "London" [2].' (at most ``MAX_RIVALS``)."""
    rivals = rival_map([(c.passage_index, c.sentence, c.facts) for c in pool if c.score > 0 and c.facts])
    said = " ".join(c.sentence for c in picked)
    found = [pair for item in picked for key in item.facts for pair in rivals.get(key, [])]
    # near copies of an answer sentence that differ in one short stretch of words, whatever the kind
    found += [
        (other.passage_index, differing_words(item.sentence, other.sentence))
        for item in picked
        for other in pool
        if other.score > 0
        and other.passage_index != item.passage_index
        and twins(item.sentence, other.sentence)
    ]
    found = [(p_index, surface) for p_index, surface in found if surface]
    named: dict[str, int] = {}
    for p_index, surface in sorted(found, key=lambda pair: -len(pair[1])):  # 克里斯托弗·诺兰, not 诺兰
        if len(named) < MAX_RIVALS and surface not in said and not any(surface in s for s in named):
            named[surface] = passages[p_index].number
    if not named:
        return ""
    if language == "zh":
        return "另有资料作" + "、".join(f"“{s}”[{n}]" for s, n in named.items()) + "。"
    return " Another source says " + ", ".join(f'"{s}" [{n}]' for s, n in named.items()) + "."


def _source_note(question_language: str, items: list[Candidate]) -> str:
    """A lead naming the source language when the answer quotes passages in the other language."""
    other = [c for c in items if detect_language(c.sentence) != question_language]
    if not other:
        return ""
    name = _LANGUAGE_NAME.get((question_language, detect_language(other[0].sentence)), "")
    if question_language == "zh":
        return f"（以下引自{name}资料原文）"
    return f"(Quoted from a {name} source.) "


def extractive_answer(
    question: str, passages: list[Passage], threshold: float = 0.5, meaning: Meaning | None = None
) -> DraftAnswer:
    """Answer with sentences copied from the passages, each followed by its passage's [n].

    Insufficient when no sentence is on the question: the passages jointly cover less than
    ``threshold`` of its key terms and no sentence reaches ``SEMANTIC_MATCH`` by meaning. The
    message then names the question's words the passages lack."""
    language = "zh" if detect_language(question) == "zh" else "en"
    picked = choose(question, passages, meaning)
    evidence_terms: set[str] = set()
    for passage in passages:
        evidence_terms |= set(key_terms(f"{passage.heading} {passage.text}"))
    terms = key_terms(question)
    covered = sum(1 for t in terms if t in evidence_terms) / len(terms) if terms else 1.0
    # on the question at all: any sentence of the evidence (vectors are cached), not only the chosen ones
    pool = candidates(question, passages, meaning)
    best_match = max((c.match for c in pool), default=0.0)
    on_topic = covered >= threshold or best_match >= 0.5
    if picked and on_topic:
        note = _rivals_note(language, picked, pool, passages)
        while len(picked) > 1 and sum(len(c.sentence) for c in picked) + len(note) > LENGTH_BUDGET[language]:
            picked = picked[:-1]  # the note on another version counts toward the length budget
            note = _rivals_note(language, picked, pool, passages)
        return DraftAnswer(answer=_source_note(language, picked) + _cite(picked, passages) + note)
    missing = missing_words(question, evidence_terms) if covered < threshold else []
    closest = _cite(picked[:1], passages) if picked else ""
    if language == "zh":
        what = "、".join(missing)
        head = (
            f"根据现有资料无法确定答案：资料中没有提到“{what}”。" if missing else "根据现有资料无法确定答案。"
        )
        text = f"{head}最接近的内容：{closest}" if closest else head
    else:
        what = ", ".join(missing)
        head = (
            f"This cannot be determined from the documents: they do not mention {what}."
            if missing
            else "This cannot be determined from the documents."
        )
        text = f"{head} The closest they come: {closest}" if closest else head
    return DraftAnswer(answer=text, insufficient=True, missing=missing)
