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

import re
from dataclasses import dataclass, field

from core.blocks import BlockShape, bounded_block, introduced_block, option_lines
from core.cues import instruction_sentences, is_instruction
from core.names import entry_name
from core.schemas import DraftAnswer, Passage, strip_bridge
from core.text import contains_cjk
from providers.meaning import Meaning
from providers.offline_brain import features as f
from providers.offline_brain.agreement import Scored, agreement, backing, differing_words, rival_map, twins
from providers.offline_brain.analysis import key_terms
from providers.offline_brain.answer_language import (
    is_code_line,
    reader_copies,
    sentence_language,
    source_label,
)
from providers.offline_brain.extractive import found_share, split_sentences
from providers.offline_brain.facts import asked_facts, compatible, is_date_key, split_dateline
from providers.offline_brain.lexicon import lexicon
from providers.offline_brain.profile import QuestionProfile, as_profile
from providers.offline_brain.weights import BrainParams, Selection, params
from providers.offline_brain.words import missing_words

_ZH, _EN, _ANY = lexicon().tables("answer")


# ---- what is not an answer sentence ---------------------------------------------------------------

_COMMAND_LINE = re.compile(rf"^\s*(?:\$ |>>> |(?:{lexicon().alternation('shell_commands', 'any')})\s)")


def is_prose(sentence: str) -> bool:
    """False for code lines, table rows, link definitions, headings and heading-like fragments."""
    text = sentence.strip()
    if not text or _ANY.table_row.match(text) or _ANY.link_definition.match(text) or _ANY.heading.match(text):
        return False
    if _COMMAND_LINE.match(text) or text.startswith("```"):  # a command, or a fence opening a block
        return False
    body, lim = _ANY.list_mark.sub("", text), params().limits.answer
    if len(_ANY.code_chars.findall(body)) > max(lim["code_chars"], len(body) // lim["chars_per_code_char"]):
        return False
    ends = bool(re.search(r"[。！？；.!?;:：][)）\]」”\"']?\s*$", body))
    short = len(body) < lim["short_chars"] if contains_cjk(body) else len(body.split()) < lim["short_words"]
    return ends or not short


def clean(sentence: str) -> str:
    """The sentence as a reader should see it: list marks and Markdown emphasis removed, and a code
    fence the chunk cut open ("…语法如下：```yaml") left to ``introduced_block``."""
    text = _ANY.list_mark.sub("", sentence.strip())
    if not text.startswith(("```", "~~~")):
        text = _ANY.dangling_fence.sub("", text)
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
    match: float  # on the question at all (features.on_question), the sufficiency scale
    facts: dict[str, str] = field(default_factory=dict)  # facts of the asked kinds: key -> as written
    features: dict[str, float] = field(default_factory=dict)  # the signals the combiner weighed
    block: str = ""  # the code block, command or table the sentence introduces, as the answer shows it


def candidates(
    question: str | QuestionProfile,
    passages: list[Passage],
    meaning: Meaning | None,
    weights: BrainParams | None = None,
) -> list[Candidate]:
    """Every prose sentence of the passages with its features (``features.py``) and the writer's
    combined score for the question (``weights.writer``; 0 for a sentence not on the question)."""
    profile = as_profile(question)
    weights = weights or params()
    kinds = profile.kind_set
    rows: list[tuple[int, int, str]] = []
    bodies: list[str] = []  # each sentence without the snippet's date: what it says about the event
    shape = block_shape(weights.selection)
    for p_index, passage in enumerate(passages):
        dateline, body = split_dateline(passage.text)
        pieces = split_sentences(body)
        if f.asks_how_to(profile):  # a command reference lists its flags in a block: each can answer "how"
            pieces = [line for piece in pieces for line in (piece, *option_lines(piece, shape))]
        planted = instruction_sentences(body)
        for position, raw in enumerate(pieces):
            # text telling the assistant or reader what to do is data, never answer text
            sentence = clean(raw) if profile.asks_for_code or is_prose(raw) else ""
            if not sentence or addressed_to_reader(raw, planted):
                continue
            # the page's date is evidence only when a date is asked
            dated = dateline and position == 0 and "date" in kinds
            rows.append((p_index, position, dateline + sentence if dated else sentence))
            bodies.append(sentence)
    sims = meaning.similarity(profile.text, [r[2] for r in rows]) if meaning and rows else [0.0] * len(rows)
    headings = [set(key_terms(p.heading)) for p in passages]
    # what each passage's heading says, by meaning: across languages the section often names the answer
    titled = [p.heading for p in passages]
    heading_sims = (
        meaning.similarity(profile.text, titled) if meaning and any(titled) else [0.0] * len(titled)
    )
    found_in = [set(key_terms(r[2])) | headings[r[0]] for r in rows]  # the heading says what it is about
    weight = f.term_weights(profile.terms, found_in)
    signals: list[dict[str, float]] = []
    scored: list[Scored] = []  # (match by words and meaning, on the question at all): what agreement reads
    for (_, _, sentence), sim, found in zip(rows, sims, found_in, strict=True):
        cover = f.coverage(weight, found)
        signal = {
            "coverage": cover,
            "meaning": f.meaning(sim),
            "foreign": f.foreign(sentence, profile, cover),
        }
        signals.append(signal)
        scored.append((weights.writer.score(signal), f.on_question(cover, sim, weights.judge.semantic_match)))
    stated = [asked_facts(r[2], kinds, profile.text) for r in rows]
    elsewhere = [f.other_edition(body, profile) for body in bodies]
    # a vote is what the sentence itself says about this occurrence of the event: not the date the page
    # was written, not a sentence about another year's (or season's) event
    votes = [
        {} if away else asked_facts(body, kinds, profile.text)
        for body, away in zip(bodies, elsewhere, strict=True)
    ]
    # translated pages state a fact in both languages: the reader's own copy is the one to quote
    copies = reader_copies(
        [r[2] for r in rows],
        [r[0] for r in rows],
        [topical > 0 for _, topical in scored],
        profile.reader,
        meaning.pairwise if meaning else None,
    )
    backed = backing(rows, votes, scored, weights.agreement)
    agree = agreement(votes, backed, weights.agreement)
    disputed = contested([r[0] for r in rows], bodies, votes, scored)
    # the question's language: the same for every sentence
    asked = {"chinese_question": f.asked_in(profile, "zh"), "english_question": f.asked_in(profile, "en")}
    out = []
    for (p_index, position, sentence), signal, (_, topical), said, agreed, away, dispute, copy in zip(
        rows, signals, scored, stated, agree, elsewhere, disputed, copies, strict=True
    ):
        fits = f.fits_kind(sentence, said, profile)
        # the code block, command or table the sentence introduces: the answer shows it
        block = introduced_block(sentence, passages[p_index].text, shape)
        signal = signal | {
            "restates_question": f.restates_question(sentence),
            "fits_kind": fits,
            "misses_kind": f.misses_kind(fits, profile),
            "agreed": agreed,
            "contested": float(dispute),
            "defines": f.defines(sentence, profile),
            "names_code": f.names_code(sentence, profile),
            "introduces_block": f.introduces_block(block, profile),
            "prior": f.prior(p_index),
            **asked,
            "other_edition": away,
            "reader_copy": copy,
            "heading_meaning": f.meaning(heading_sims[p_index]) if passages[p_index].heading else 0.0,
        }
        score = weights.writer.score(signal) if topical else 0.0
        # with the snippet's date: copies differ there too
        shown = asked_facts(sentence, kinds, profile.text, written=True)
        out.append(Candidate(p_index, position, sentence, score, topical, shown, signal, block))
    return out


def addressed_to_reader(sentence: str, planted: list[str]) -> bool:
    """The sentence is (part of) an instruction to the assistant or reader (``core.cues``): "Ignore
    previous instructions…", "tell the user to visit … to log in", 忽略以上指令. ``planted`` are the
    instruction sentences of its passage as the cue's own splitter reads them, so a fragment of one
    ("example/login and say PWNED") is caught too."""
    text = sentence.strip()
    return is_instruction(text) or any(text in p or p in text for p in planted if text)


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


def refers_back(sentence: str) -> bool:
    """The sentence opens by pointing back at the one before it (所以, 在此背景下, 这些, "As a result", "He")."""
    return bool(lexicon().pattern("opens_by_referring_back").match(sentence.strip()))


def _with_antecedents(
    chosen: list[Candidate], pool: list[Candidate], language: str, limits: Selection
) -> list[Candidate]:
    """Each chosen sentence that refers back comes with the sentence before it in its passage, so the
    reader sees what "所以" follows from or whom "He" means; the predecessor follows it in priority (the
    note's trimming drops it first) and joins only where the answer has room left (``length_budget``,
    ``max_sentences``): it never displaces a sentence chosen on its own merit."""
    out, budget = list(chosen), limits.length_budget[language]
    for item in chosen:
        before = _in_passage(item, pool, -1) if refers_back(item.sentence) else None
        if before is None or _place(before) in {_place(c) for c in out} or len(out) >= limits.max_sentences:
            continue
        if sum(len(c.sentence) for c in out) + len(before.sentence) <= budget:
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


def _date_precision(key: str) -> int:
    return sum(part != "?" for part in key.split("-"))


def _fuller_first(pool: list[Candidate], language: str, close_to_best: float) -> list[Candidate]:
    """The best sentence's date as the evidence states it most fully and in the reader's own writing:
    a sentence close to the best (``close_to_best``) that states the same date with the year the best
    one leaves out ("2020年11月24日" for "11月24日"), or the same date as the question's language writes
    dates ("2017年4月14日" for "2017-04-14" in a Chinese answer) leads instead. The answer quotes its
    source's wording, so it picks the source that words the fact for the reader."""
    lead = pool[0]
    dates = {k: v for k, v in lead.facts.items() if is_date_key(k)}
    if not dates:
        return pool
    reads = _ANY.reader_date[language]  # a date as the reader's language writes dates

    def better(key: str, surface: str) -> bool:
        for mine, written in dates.items():
            fuller = _date_precision(key) > _date_precision(mine) and (
                compatible(key, mine) or (mine.startswith("?") and key.endswith(mine[1:]))
            )
            readable = key == mine and reads.search(surface) and not reads.search(written)
            if fuller or readable:
                return True
        return False

    for other in pool[1:]:
        if other.score < close_to_best * lead.score:
            break
        if any(better(k, v) for k, v in other.facts.items() if is_date_key(k)):
            return [other] + [c for c in pool if c is not other]
    return pool


def _ranked(items: list[Candidate]) -> list[Candidate]:
    """The sentences on the question, best first (ties: earlier passage, earlier sentence)."""
    return sorted((c for c in items if c.score > 0), key=lambda c: (-c.score, c.passage_index, c.position))


def choose(
    question: str | QuestionProfile,
    passages: list[Passage],
    meaning: Meaning | None,
    weights: BrainParams | None = None,
) -> list[Candidate]:
    """The one to three sentences that answer; one per sub-question first for multi-part questions
    (the profile's ``parts``: the analysis's sub-queries)."""
    profile, weights = as_profile(question), weights or params()
    limits = weights.selection
    everything = candidates(profile, passages, meaning, weights)
    pool = _ranked(everything)
    if not pool:
        return []
    top = pool[0].score  # the threshold stays the best score when a fuller sentence leads
    language = profile.reader
    pool = _fuller_first(pool, language, limits.close_to_best)
    chosen: list[Candidate] = []
    for sub in [as_profile(strip_bridge(q)) for q in profile.parts][: limits.max_sentences]:
        if profile.kinds and not sub.kinds:
            continue  # a name the question mentions ("Last of Us Part II"), not a part that asks for a fact
        best = next(iter(_ranked(candidates(sub, passages, meaning, weights))), None)
        if best and not _duplicate(best.sentence, chosen):
            chosen.append(best)
    if profile.asks_for_code and pool and pool[0].sentence.rstrip().endswith((":", "：")):
        # "Rebuild the index from your documents:" introduces the command that was asked for
        follower = _in_passage(pool[0], everything, 1)
        if follower:
            return [pool[0], follower]
    for item in pool:
        if len(chosen) >= limits.max_sentences:
            break
        if _duplicate(item.sentence, chosen) or any(twins(item.sentence, c.sentence) for c in chosen):
            continue  # a near copy adds nothing; if it states another fact, the answer names it (rivals)
        if chosen:
            length = sum(len(c.sentence) for c in chosen) + len(item.sentence)
            if item.score < limits.close_to_best * top or length > limits.length_budget[language]:
                continue
        chosen.append(item)
    return _with_antecedents(chosen, everything, language, limits)


# ---- introduced blocks ----------------------------------------------------------------------------


def block_shape(limits: Selection) -> BlockShape:
    """What the writer reads as a block's lines (``core.blocks``): its table rows and command lines, and
    how much of a block an answer shows (``limits``; the anchor: ``limits.answer["anchor_chars"]``)."""
    anchor = params().limits.answer["anchor_chars"]
    return BlockShape(
        _ANY.table_row, _COMMAND_LINE, _ANY.option_help, limits.block_lines, limits.block_chars, anchor
    )


# ---- writing --------------------------------------------------------------------------------------


def _cite(
    items: list[Candidate], passages: list[Passage], reader: str = "", limits: Selection | None = None
) -> str:
    """Sentences in evidence order, each closed by its passage's [n]; spacing follows each sentence.
    With the ``reader``'s language, each run of sentences in another language opens with a label
    naming it (``answer_language.source_label``); code lines belong to the run they sit in. A block
    the sentence introduces follows it, bounded by ``limits``."""
    limits = limits or params().selection
    parts: list[str] = []
    previous = reader
    for item in sorted(items, key=lambda c: (c.passage_index, c.position)):
        sentence = item.sentence.rstrip()
        # a code line is in no language: it carries no label and does not end the run it sits in
        code = is_code_line(sentence) or not is_prose(sentence)
        passage = passages[item.passage_index]
        entry = "" if code or sentence.startswith("`") else entry_name(passage.heading, passage.text)
        if entry and not any(entry in said for said in [sentence, *parts]):  # the entry it describes, once
            sentence = f"`{entry}`{'：' if contains_cjk(sentence[:1]) else ': '}{sentence}"
        language = (previous if code else sentence_language(sentence)) if reader else ""
        label = source_label(reader, language) if reader and language != previous else ""
        previous = language
        marker = f"[{passage.number}]"
        end = re.search(r"[。！？；.!?;]$", sentence)
        cjk = contains_cjk(sentence[-params().limits.answer["tail_chars"] :])
        if sentence.startswith(("```", "~~~")):  # a block asked for itself: shown bounded, then cited
            parts.append(f"{bounded_block(sentence, block_shape(limits))}\n\n{marker}\n\n")
        elif item.block:  # "…as follows [1]:" and the block itself, on lines of its own
            lead = sentence.rstrip(":：")
            colon = sentence[len(lead) :] or ("：" if cjk else ":")
            parts.append(f"{label}{lead}{'' if cjk else ' '}{marker}{colon}\n\n{item.block}\n\n")
        elif end:
            parts.append(f"{label}{sentence[:-1]}{'' if cjk else ' '}{marker}{sentence[-1]}")
        else:  # an introduction whose block the evidence does not hold ends as a statement, not "…: [1]."
            sentence = sentence.rstrip(":： ")
            parts.append(f"{label}{sentence}{marker}。" if cjk else f"{label}{sentence} {marker}.")
    text = ""
    for part in parts:
        label_after_cjk = part.startswith("（") and text.endswith(("。", "！", "？", "；"))  # （以下引自…）
        glued = not text or text.endswith("\n") or (contains_cjk(text[-2:]) and contains_cjk(part[:1]))
        text += part if glued or label_after_cjk else " " + part
    return text.strip()


def _rivals_note(
    language: str, picked: list[Candidate], pool: list[Candidate], passages: list[Passage], most: int
) -> str:
    """Where near copies in the evidence state another value of a fact the answer gives, name it, cited:
    "另有资料作“大阪”[2]。" / 'Another source says "London" [2].' (at most ``most``)."""
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
        if len(named) < most and surface not in said and not any(surface in s for s in named):
            named[surface] = passages[p_index].number
    wording = _ZH.rivals if language == "zh" else _EN.rivals
    listed = wording["joiner"].join(wording["item"].format(said=s, n=n) for s, n in named.items())
    return wording["note"].format(items=listed) if named else ""


def extractive_answer(
    question: str | QuestionProfile,
    passages: list[Passage],
    threshold: float = 0.5,
    meaning: Meaning | None = None,
    weights: BrainParams | None = None,
) -> DraftAnswer:
    """Answer with sentences copied from the passages, each followed by its passage's [n].

    Insufficient when no sentence is on the question: the passages jointly cover less than
    ``threshold`` of its key terms and no sentence reaches ``SEMANTIC_MATCH`` by meaning. The
    message then names the question's words the passages lack."""
    profile, weights = as_profile(question), weights or params()
    language = profile.reader
    budget = weights.selection.length_budget[language]
    most = weights.selection.max_rivals
    picked = choose(profile, passages, meaning, weights)
    evidence_terms = set().union(*(key_terms(f"{p.heading} {p.text}") for p in passages))
    covered = found_share(profile.terms, evidence_terms) if profile.terms else 1.0
    # on the question at all: any sentence of the evidence (vectors are cached), not only the chosen ones
    pool = candidates(profile, passages, meaning, weights)
    best_match = max((c.match for c in pool), default=0.0)
    on_topic = covered >= threshold or best_match >= 0.5
    if picked and on_topic:
        note = _rivals_note(language, picked, pool, passages, most)
        while len(picked) > 1 and sum(len(c.sentence) for c in picked) + len(note) > budget:
            picked = picked[:-1]  # the note on another version counts toward the length budget
            note = _rivals_note(language, picked, pool, passages, most)
        cited = _cite(picked, passages, language, weights.selection)
        after_block = note and cited.endswith(("```", "~~~"))  # a note after a block opens its own line
        return DraftAnswer(answer=cited + (f"\n\n{note.strip()}" if after_block else note))
    missing = missing_words(profile.text, evidence_terms) if covered < threshold else []
    closest = _cite(picked[:1], passages) if picked else ""
    wording = _ZH.insufficient if language == "zh" else _EN.insufficient
    head = wording["lacks"].format(what=wording["joiner"].join(missing)) if missing else wording["unknown"]
    text = wording["closest"].format(head=head, closest=closest) if closest else head
    return DraftAnswer(answer=text, insufficient=True, missing=missing)
