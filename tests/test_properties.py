"""Property tests (hypothesis): the tokenizer, the splitter and JSON repair hold their promises on any
input, not only on the examples we thought of. Example counts are bounded to keep CI fast."""

from __future__ import annotations

import json
import unicodedata

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.schemas import QueryAnalysis
from core.tokenize import EN_STOPWORDS, tokenize
from ingestion.documents import Block, LoadedDocument
from ingestion.splitter import SplitConfig, split_document
from providers.json_repair import loads_tolerant, parse_model_json

BOUNDED = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Letters of several scripts, with CJK, digits, punctuation, accents and spaces mixed in.
ALPHABET = st.sampled_from(
    list("abcxyzABCXYZ0123456789 -._+/'\n\t,.;!?")
    + list("éèàüößçñÉÜ")
    + list("абвгдежзПРИВЕТ")
    + list("αβγδΑΘΩάέ")
    + list("مرحباשלום")
    + list("中文检索排名融合混合倒数的了")
    + ["\u0301", "\u00a0", "\uff47", "\uff14", "\u202e"]
)
TEXT = st.text(alphabet=ALPHABET, max_size=120)


@BOUNDED
@given(TEXT)
def test_tokens_are_non_empty_and_free_of_spaces(text):
    for token in tokenize(text):
        assert token and token == token.strip() and " " not in token


@BOUNDED
@given(TEXT)
def test_tokenizing_is_the_same_before_and_after_nfkc(text):
    assert tokenize(text) == tokenize(unicodedata.normalize("NFKC", text))


@BOUNDED
@given(st.text(alphabet=st.sampled_from(list("abcdefghijklmnopqrstuvwxyz")), min_size=2, max_size=12))
def test_an_accented_latin_word_and_its_plain_form_are_one_term(word):
    accented = word[0] + "\u0301" + word[1:]  # an acute accent on the first letter
    assert tokenize(accented) == tokenize(word)
    assert tokenize(word.upper()) == tokenize(word)


@BOUNDED
@given(
    st.text(
        alphabet=st.sampled_from(list("абвгдежзийклмнопрстуфхцчшщыэюяαβγδεζηθικλμνξπρστυφχψω")),
        min_size=1,
        max_size=12,
    )
)
def test_words_of_non_latin_alphabets_are_kept(word):
    assert tokenize(word) == [word.casefold()]


@BOUNDED
@given(st.text(alphabet=st.sampled_from(list("abcdefghijklmnopqrstuvwxyz")), min_size=1, max_size=12))
def test_a_latin_word_yields_a_term_unless_it_is_a_stopword(word):
    assert bool(tokenize(word)) == (word not in EN_STOPWORDS)


PARAGRAPH = st.text(alphabet=ALPHABET, min_size=1, max_size=400).map(str.strip).filter(bool)


@BOUNDED
@given(st.lists(PARAGRAPH, min_size=1, max_size=6), st.integers(min_value=40, max_value=300))
def test_every_piece_is_a_span_of_the_document(paragraphs, chunk_size):
    doc = LoadedDocument(
        source="/doc.md",
        title="t",
        blocks=[Block(kind="paragraph", text=p) for p in paragraphs],
        mtime=0.0,
        file_hash="0",
        size=1,
    )
    full = doc.full_text()
    config = SplitConfig(chunk_size=chunk_size, chunk_overlap=min(20, chunk_size // 4))
    pieces = split_document(doc, config)
    assert pieces
    covered = [False] * len(full)
    for piece in pieces:
        assert full[piece.char_start : piece.char_end] == piece.text
        for i in range(piece.char_start, piece.char_end):
            covered[i] = True
    assert all(covered[i] for i, ch in enumerate(full) if not ch.isspace())


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@BOUNDED
@given(st.lists(JSON_VALUES, max_size=4) | st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=4))
def test_valid_json_is_returned_unchanged(value):
    assert loads_tolerant(json.dumps(value, ensure_ascii=False)) == value


@BOUNDED
@given(st.text(max_size=200))
def test_arbitrary_text_is_parsed_or_refused_with_value_error(text):
    try:
        result = parse_model_json(text, QueryAnalysis)
    except ValueError as exc:
        assert str(exc)  # a message the caller can log, never another exception type
    else:
        assert isinstance(result, QueryAnalysis)


@BOUNDED
@given(
    st.lists(st.text(max_size=30), max_size=4),
    st.sampled_from(
        ["{}", "```json\n{}\n```", "Sure! {} Done.", "好的：\n{}\n希望有帮助。", "<think>x</think>{}"]
    ),
)
def test_a_wrapped_reply_keeps_its_values(sub_queries, wrapper):
    body = json.dumps({"query_type": "comparative", "sub_queries": sub_queries}, ensure_ascii=False)
    result = parse_model_json(wrapper.replace("{}", body), QueryAnalysis)
    assert result.query_type == "comparative" and result.sub_queries == sub_queries
