"""Does the evidence support each answer sentence? Checked by terms, by meaning and by specifics.

A sentence is supported when the passages it cites contain most of its key terms or say the same thing
by meaning (a multilingual embedding, so a Chinese sentence citing an English passage can pass), and
every specific it states (a number, a Latin-script name or identifier) appears in those passages. The
specifics rule is what lets verification fail on fluent but wrong claims: "RRF uses k = 80 [1]" is
close in meaning to a passage saying "k = 60", but 80 is nowhere in it.
"""

from __future__ import annotations

import unicodedata

from core.schemas import Passage, SentenceSupport
from core.text import CITATION_RE, parse_citations, split_sentences
from providers.meaning import Meaning
from providers.offline_brain.analysis import key_terms
from providers.offline_brain.extractive import coverage
from providers.offline_brain.lexicon import lexicon
from providers.offline_brain.weights import params
from tools.shown import operands, recomputes, strip_lead

_ZH, _EN, _ANY = lexicon().tables("support")


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def specifics(sentence: str) -> list[str]:
    """Numbers and Latin-script names or identifiers a sentence states (not its first word)."""
    bare = CITATION_RE.sub("", sentence)
    found = _ANY.number.findall(unicodedata.normalize("NFKC", bare))
    first = _ANY.sentence_start_word.match(bare)
    for match in _EN.latin_specific.finditer(bare):
        if first and match.start() == first.start(1):
            continue
        found.append(match.group(0))
    return list(dict.fromkeys(found))


def copied_block(block: str, passages: list[Passage]) -> bool:
    """A fenced block in an answer is supported when one passage holds every line of it as written
    (whitespace aside; the fence lines and a "…" cut mark are the writer's own)."""
    lines = CITATION_RE.sub("", block).strip().split("\n")[1:-1]
    lines = [" ".join(x.split()) for x in lines if x.strip() not in ("", "…")]
    return bool(lines) and any(all(x in " ".join(p.text.split()) for x in lines) for p in passages)


def _not_a_claim(bare: str) -> bool:
    """Leads, disclaimers and short connectives carry no claim to support."""
    return bare.endswith((":", "：")) or bool(_ANY.not_a_claim_re.match(bare)) or len(key_terms(bare)) <= 1


def check_answer_support(
    answer: str, passages: list[Passage], threshold: float = 0.6, meaning: Meaning | None = None
) -> list[SentenceSupport]:
    """One verdict per answer sentence against the passages it cites; ``threshold`` is the share of
    the sentence's key terms the cited passages must contain for a lexical match."""
    by_number = {p.number: p for p in passages}
    results: list[SentenceSupport] = []
    for sentence in split_sentences(answer):  # a marker after a sentence end stays with it
        block = sentence.lstrip().startswith(("```", "~~~"))  # a block the answer shows: copied, or not
        cited = [] if block else parse_citations(sentence)
        bare = _ANY.lead_re.sub("", CITATION_RE.sub("", sentence).strip()).strip()
        computation = strip_lead(bare)
        score = None  # a yes/no verdict scores as its own value
        if block:
            supported = copied_block(sentence, passages)
        elif computation is not None:  # a shown tool computation: recompute it, find its operands
            evidence = " ".join(by_number[n].text for n in cited if n in by_number).replace(",", "")
            supported = recomputes(computation) and all(o in evidence for o in operands(computation) if cited)
        elif not cited:
            supported = _not_a_claim(bare)
        else:
            known = [by_number[n] for n in cited if n in by_number]
            evidence = " ".join(f"{p.heading} {p.text}" for p in known)
            terms = key_terms(bare)
            lexical = coverage(terms, evidence) if terms else float(bool(evidence))
            similar = 0.0
            if meaning is not None and known and bare:
                pieces = [s for p in known for s in split_sentences(p.text)]
                similar = max(meaning.similarity(bare, pieces), default=0.0)
            folded = _fold(evidence)
            stated = all(_fold(item) in folded for item in specifics(bare))
            valid = len(known) == len(cited)
            supported = valid and stated and (lexical >= threshold or similar >= params().other.support_match)
            score = round(max(lexical, similar), 3)
        shown = float(supported) if score is None else score
        results.append(SentenceSupport(sentence=sentence, cited=cited, supported=supported, score=shown))
    return results
