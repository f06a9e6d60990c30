"""Follow-up questions made standalone by resolving what they refer to, not by prefixing a topic.

"那它的常数是多少？" after a question about 混合检索 becomes "混合检索的常数是多少？": the referring word
(它 / 那个 / 这个 / 她 / it / that / this one / they) is replaced by the entity it stands for and the rest
of the sentence stays as the user wrote it. The entity comes from the conversation: a person pronoun
(他 / 她 / he / she) takes the person the last answer or question names; "这首词 / 这幅作品" takes the
《title》 named; anything else takes the thing the previous question was about. A follow-up with nothing to
refer to (a fresh thread) is not guessed at: :func:`needs_clarification` says to ask which thing is meant.
"""

from __future__ import annotations

import re
from itertools import pairwise

from core.chunks import ScoredChunk
from core.names import NameShape, find_names, name_matches, title_matches
from core.text import contains_cjk
from providers.offline_brain.analysis import key_terms
from providers.offline_brain.decompose import segment, topic_of, zh_list
from providers.offline_brain.lexicon import lexicon
from providers.offline_brain.noun_phrases import names_a_thing, whole_noun_phrase
from providers.offline_brain.weights import params
from providers.offline_brain.words import content_words, pos_tags

_ZH, _EN, _ANY = lexicon().tables("contextualize")
_NAME_SHAPE = NameShape.from_dict(_EN.name_shape)

# ---- the antecedent --------------------------------------------------------------------------------


def _zh_subject(question: str) -> str:
    """The noun phrase a Chinese question is about: its topic cut before the first verb after a noun."""
    tokens = list(segment(question))
    if (
        "时" in tokens[: params().limits.contextualize["time_clause_tokens"]]
    ):  # "文档切分时块大小…": the subject follows the time clause
        question = "".join(tokens[tokens.index("时") + 1 :])
    topic = topic_of(question)
    pairs = pos_tags(topic)
    kept: list[tuple[str, str]] = []
    for i, (word, flag) in enumerate(pairs):
        has_noun = any(f.startswith(("n", "eng")) for _, f in kept)
        last = i == len(pairs) - 1
        if has_noun and flag[:1] in "vp" and (not last or len(word) == 1 or word in _ZH.predicate_verbs):
            break
        kept.append((word, flag))

    def dangling(word: str, flag: str) -> bool:
        if flag[:1] == "v":  # a verb ends a noun phrase only as a predicate ("屠呦呦发现"), not "增量导入"
            return len(word) == 1 or word in _ZH.predicate_verbs
        return flag in _ZH.stopper or word in ("的", "默认")

    while kept and dangling(*kept[-1]):
        kept.pop()
    subject = "".join(w for w, _ in kept).strip()
    return subject or topic


def _en_subject(question: str) -> str:
    """The noun phrase an English question is about (subject, or object after "who discovered")."""
    q = question.strip().rstrip("?.! ")
    which = _EN.which_noun.match(q)
    if which:
        return which.group(1)
    obj = _EN.object_lead.match(q)
    rest = q[obj.end() :] if obj else _EN.lead.sub("", q, count=1)
    rest = _EN.article.sub("", rest)
    words = rest.split()
    kept: list[str] = []
    for i, word in enumerate(words):
        bare = word.lower().strip(",;:")
        # "the Milvus store handle(s)": a listed verb followed by another one is the noun of the phrase
        verb = bare in _EN.verbs and not (i + 1 < len(words) and words[i + 1].lower() in _EN.verbs)
        if kept and (verb or bare in _EN.ends_subject):
            break
        kept.append(word.strip(",;:"))
    return " ".join(kept[: params().limits.contextualize["subject_words"]]) or q


def _subject(question: str) -> str:
    return _zh_subject(question) if _is_chinese(question) else _en_subject(question)


def _is_chinese(question: str) -> bool:
    """Read as a Chinese question: it has Chinese and is not an English question naming a Chinese term
    ("What does 倒数排名融合 mean?")."""
    return contains_cjk(question) and not _EN.latin_question_opening.match(question)


def _person(text: str) -> str:
    """A person named in the text: a capitalised Latin name, or a Chinese name jieba tags as one."""
    latin = find_names(text, _NAME_SHAPE)
    if latin:
        return latin[0]
    for word, flag in pos_tags(text):
        if flag in _ZH.person_tags and len(word) >= 2:
            return word
    return ""


def _title(text: str) -> str:
    found = next(title_matches(text, params().limits.contextualize["title_chars"]), None)
    return found.group(0) if found else ""


def _items(text: str) -> str:
    """The things a comparison or list names, joined ("向量数据库和全文索引")."""
    parsed = zh_list(text.strip().rstrip("？?。")) if contains_cjk(text) else None
    return "和".join(parsed[1][:2]) if parsed else ""  # a list has two items or more


class _Conversation:
    """What the earlier turns offer as antecedents, most recent first."""

    def __init__(self, history: list[tuple[str, str]], topic: str = "") -> None:
        self.users = [t for r, t in history if r == "user" and t.strip()]
        self.answers = [t for r, t in history if r == "assistant" and t.strip()]
        self.topic = topic  # carried over when the last question was itself a follow-up

    @property
    def last_question(self) -> str:
        return self.users[-1] if self.users else ""

    @property
    def last_answer(self) -> str:
        return re.sub(r"\[\d+\]", "", self.answers[-1]) if self.answers else ""

    def thing(self) -> str:
        if self.topic:
            return self.topic
        question = self.last_question
        return whole_noun_phrase(_subject(question), question) if question else ""

    def person(self) -> str:
        """A who-question's person is in its answer; otherwise the question's own person comes first."""
        question = self.last_question
        answered = _person(self.last_answer) if _ANY.asks_who.search(question) else ""
        return answered or _person(question) or self.thing()

    def title(self) -> str:
        return _title(self.last_answer) or _title(self.last_question) or self.thing()

    def pair(self) -> str:
        return _items(self.last_question) or self.thing()

    def action(self) -> str:
        q = _ZH.can_words.sub("", self.last_question)
        return _ZH.question_end.sub("", q).strip()


# ---- detection ------------------------------------------------------------------------------------


def _zh_referring(question: str) -> tuple[int, int, str] | None:
    """(start, end, kind) of the first referring expression in a Chinese question."""
    for words, kind in ((_ZH.action, "action"), (_ZH.place, "thing")):
        for word in words:
            at = question.find(word)
            if at >= 0:
                return at, at + len(word), kind
    classified = _ANY.classified_thing.search(question)
    if classified:
        return classified.start(), classified.end(), "title"
    tokens = [piece for token in segment(question) for piece in _split_pronoun(token)]
    names = [m.span() for m in _ANY.transliterated.finditer(question)]
    at = 0
    for i, token in enumerate(tokens):
        if any(start <= at < end for start, end in names):  # 那 in "庫那西利·美那西" is a syllable
            at += len(token)
            continue
        if token in _ZH.person:
            return at, at + len(token), "person"
        if token in _ZH.thing:
            return at, at + len(token), "thing"
        modal = token == "该" and "".join(tokens[i + 1 : i + 2]).startswith(_ZH.modal_after_gai)
        if token in _ZH.demonstrative and not modal and (token not in ("那", "这") or i + 1 < len(tokens)):
            if token in ("这两个", "这几个"):
                return at, at + len(token), "pair"
            # "那个让检索变慢的东西": a relative clause describes the thing, it does not refer back
            if token in _ZH.describable and _describes(
                tokens[i + 1 : i + 1 + params().limits.contextualize["description_tokens"]]
            ):
                return None  # "那个让检索变慢的东西": a description, not a reference
            return at, at + len(token), "demonstrative"
        at += len(token)
    return None


def _describes(following: list[str]) -> bool:
    """A relative clause "让检索变慢的东西": 的 followed by the noun it describes."""
    ends = ("吗", "呢", "？", "?", "。", "，", ",")
    return any(token == "的" and after not in ends for token, after in pairwise(following))


def _split_pronoun(token: str) -> list[str]:
    """jieba glues a pronoun to its verb ("它会"): split it off so it can be found."""
    found = _ZH.pronoun_opening.match(token)
    return [found.group(1), found.group(2)] if found else [token]


def _en_referring(question: str) -> re.Match[str] | None:
    if _EN.conjunction_that.search(question):
        return None
    for match in _EN.referring.finditer(question):
        word = match.group(0).lower()
        before = question[: match.start()].split()
        if word == "that" and before and before[-1].lower() not in _EN.takes_a_pronoun:
            continue  # "the film that was shot ...": a relative clause, not a reference
        if word in _EN.demonstratives:
            nxt = question[match.end() :].lstrip()
            # "this setting" names its noun; keep it only when the noun is generic ("this one")
            if nxt[:1].isalpha() and not _EN.not_after_demonstrative.match(nxt):
                continue
        return match
    return None


def has_referring_word(question: str) -> bool:
    """Whether the question leans on something said before (a pronoun, a demonstrative, "what about")."""
    q = question.strip()
    if _is_chinese(q):
        return _zh_referring(q) is not None or bool(_ZH.then_what_about.search(q))
    return _en_referring(q) is not None or bool(_EN.what_about.match(q))


def names_its_own_context(question: str) -> bool:
    """A long question, or one naming a person, title or identifier, carries its own antecedent
    ("Scott Buchholz ... he previously served as ...")."""
    q = question.strip()
    lim = params().limits.contextualize
    long = (
        len(re.findall(r"[\u4e00-\u9fff]", q)) > lim["long_chars"]
        if contains_cjk(q)
        else len(q.split()) > lim["long_words"]
    )
    own = (
        next(title_matches(q, None, '《》""“”'), None)
        or next(name_matches(q, _NAME_SHAPE), None)
        or re.search(r"\w*\d\w*|[A-Z]{2,}", q)
    )
    return bool(long or own or _said_before_the_reference(q) or _antecedent_before_pronoun(q))


def _reference(question: str) -> tuple[int, str] | None:
    """Where the first referring expression starts and its kind: "pronoun" (他 / 它 / it / her ...),
    "其", or another (a demonstrative "那个性能问题", "this one", names its noun after it)."""
    if _is_chinese(question):
        found = _zh_referring(question)
        if found is None:
            return None
        word = question[found[0] : found[1]]
        return found[0], "pronoun" if found[2] in ("person", "thing") else "其" if word == "其" else found[2]
    match = _en_referring(question)
    if match is None:
        return None
    return match.start(), "pronoun" if match.group(0).lower() in _EN.pronouns else "other"


def _antecedent_before_pronoun(question: str) -> bool:
    """A pronoun (她 / 其 / 它 / it / her ...) refers back to a noun said before it in the same
    question ("杨丽音和她的丈夫", "喬治亞在其外交政策上", "How did the town get its name?"); a
    demonstrative ("那个性能问题", "this one") names its noun after it and is not settled this way."""
    found = _reference(question)
    if found is None or found[1] not in ("pronoun", "其"):
        return False
    before = question[: found[0]]
    if _is_chinese(question):
        return any(flag in _ZH.naming_tags for _, flag in pos_tags(before))
    return len(content_words(before)) >= 1


def _said_before_the_reference(question: str) -> bool:
    """Two content words before the referring word name what it refers to ("Anthrax spores are
    hard to dispose of once they ...", "蘇利南這地區"); "How do I fix that?" names nothing."""
    found = _reference(question)
    return len(content_words(question[: found[0] if found else 0])) >= 2


def needs_clarification(question: str, history: list[tuple[str, str]]) -> bool:
    """True when a short question refers back but neither it nor the conversation names anything it
    could refer to (a fresh thread opened with "那个性能问题怎么解决的？")."""
    if not has_referring_word(question) or names_its_own_context(question):
        return False
    return not _Conversation(history).thing()


def the_one_document(question: str, hits: list[ScoredChunk]) -> str:
    """The one document (title, else source) among search ``hits`` that holds every content word of a
    question referring to something unnamed; "" when none or several do. A fresh thread cannot say
    what "它的启动口令" means, but a corpus where only one document speaks of a 启动口令 can."""
    words = content_words(question)
    if not words:
        return ""
    terms: dict[str, set[str]] = {}
    for hit in hits:
        doc = hit.chunk.title.strip() or hit.chunk.source
        terms.setdefault(doc, set()).update(key_terms(f"{hit.chunk.title} {hit.chunk.text}"))
    fits = [doc for doc, found in terms.items() if all(any(t in found for t in key_terms(w)) for w in words)]
    return fits[0] if len(fits) == 1 else ""


# ---- rewriting ------------------------------------------------------------------------------------


def _join(left: str, middle: str, right: str) -> str:
    """Concatenate, with a space where Latin script meets Chinese (readability, not meaning)."""
    out = left
    for piece in (middle, right):
        meets = bool(out and piece) and contains_cjk(out[-1]) != contains_cjk(piece[0])
        if (
            meets
            and out[-1] != " "
            and piece[0] not in " ，,？?。的"
            and (out[-1].isalnum() or piece[0].isalnum())
        ):
            out += " "
        out += piece
    return re.sub(r"\s{2,}", " ", out)


def _head(referent: str) -> str:
    """The thing, not its attribute: 它 after "HNSW 索引的性能问题" is "HNSW 索引"."""
    head = referent.split("的", 1)[0].strip()
    return head if len(head) >= 2 else referent


def _zh_resolve(question: str, conversation: _Conversation) -> str:
    q = _ZH.leading_then.sub("", question.strip())
    found = _zh_referring(q)
    if found is None:
        topic = conversation.thing()
        stripped = _ZH.then_opening.sub("", q).strip("，, ")
        if stripped.endswith(_ZH.what_about_endings):
            return _join(_head(topic), "的", stripped)
        return q
    start, end, kind = found
    referent = {
        "person": conversation.person,
        "title": conversation.title,
        "pair": conversation.pair,
        "action": conversation.action,
    }.get(kind, conversation.thing)()
    if not referent:
        return q
    word = q[start:end]
    if kind == "thing":
        referent = _head(referent)
    after = q[end:]
    if kind == "demonstrative":
        following = list(segment(after)) if after else []
        noun = following[0] if following else ""
        for size in (2, 1):  # "那个性能问题" when the referent already says "HNSW 索引的性能问题"
            phrase = "".join(following[:size])
            if len(following) >= size and len(phrase) >= 2 and phrase in referent:
                return _join(
                    q[:start], referent[: referent.index(phrase) + len(phrase)], after[len(phrase) :]
                )
        if noun and len(noun) >= 2 and noun in conversation.last_question and noun not in referent:
            return _join(q[:start], f"{referent}的", after)  # 那个性能问题 -> HNSW 索引的性能问题
        # "这个机制" -> "增量导入的机制"; "这个能关掉吗" -> "X 能关掉吗"
        names_noun = len(noun) >= 2 and not after.startswith(_ZH.not_a_noun_after)
        if word in _ZH.bare_referring or names_noun:
            return _join(q[:start], f"{referent}的", after)
    return _join(q[:start], referent, after)


def _en_resolve(question: str, conversation: _Conversation) -> str:
    q = _EN.leading_conjunction.sub("", question.strip())
    about = _EN.what_about.match(q)
    match = _en_referring(q)
    if about and not match:
        thing = about.group(2).rstrip("?")
        return f"What about {thing} of {conversation.thing()}?"
    if match is None:
        return q
    word = match.group(0).lower()
    person = word in _EN.person
    referent = conversation.person() if person else conversation.thing()
    suffix = _EN.person[word] if person else "'s" if word in ("its", "their") else ""
    if not referent:
        return q
    if not contains_cjk(referent) and not re.search(r"[A-Z0-9_]", referent) and not person:
        referent = f"the {referent}"
    resolved = q[: match.start()] + referent + suffix + q[match.end() :]
    if match.start() == 0:
        resolved = resolved[0].upper() + resolved[1:]
    return resolved


def _names_its_antecedent(question: str) -> bool:
    """A pronoun whose own sentence names a thing before it ("…the index is damaged, and how do I
    rebuild it…", "重排序器需要 GPU 吗，还是它能…") means that thing: nothing to resolve."""
    found = _reference(question)
    return found is not None and found[1] == "pronoun" and names_a_thing(question[: found[0]])


def _standalone(question: str, conversation: _Conversation) -> str:
    if not has_referring_word(question) or not conversation.thing() or _names_its_antecedent(question):
        return question
    if _is_chinese(question):
        return _zh_resolve(question, conversation)
    return _en_resolve(question, conversation)


def contextualize_question(question: str, history: list[tuple[str, str]]) -> str:
    """A standalone form of ``question`` given (role, text) turns, oldest first; unchanged if self-contained."""
    if not isinstance(question, str):
        raise TypeError(f"question must be a string, got {type(question).__name__}")
    for turn in history:
        if not (isinstance(turn, tuple | list) and len(turn) == 2):
            raise ValueError(f"history turns must be (role, text) pairs, got {turn!r}")
        if turn[0] not in ("user", "assistant"):
            raise ValueError(f"history role must be 'user' or 'assistant', got {turn[0]!r}")
    if not question.strip() or not history:
        return question
    # resolve earlier follow-ups first, so "it" two turns later still means the thing it meant then
    resolved: list[tuple[str, str]] = []
    topic = ""
    for role, text in history:
        if role == "user" and text.strip():
            conversation = _Conversation(resolved, topic)
            if resolved and has_referring_word(text) and conversation.thing():
                topic = conversation.thing()
                text = _standalone(text, conversation)
            else:
                topic = ""
        resolved.append((role, text))
    return _standalone(question, _Conversation(resolved, topic))
