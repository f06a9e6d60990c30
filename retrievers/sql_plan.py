"""Offline text-to-SQL for simple questions over one table, by rules over the schema.

The question is matched against each table: its values (a sample of each text column's distinct
values: "Berlin", "北京"), its column names and the concepts they stand for ("earn" -> salary,
"youngest" -> min age; retrievers/sql_words.py), its table name. Each match is a scored signal; the
table with the best score that also explains most of the question's content words is the one asked
about, and the cues found (count / sum / average / max / min, comparisons with a number, "which X",
"who") decide the statement: an aggregate with filters, the row with the largest value, a group with
the largest aggregate, or the values of one column for the filtered rows. Anything else is None: the
question goes to passage search (or, with an LLM, to text-to-SQL over the schema).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from core.text import contains_cjk
from core.tokenize import tokenize
from retrievers.sql import Column, Table
from retrievers.sql_words import (
    AGGREGATES,
    ASKING,
    COMPARISONS,
    CONCEPT_SUPERLATIVES,
    CONCEPTS,
    RECORD_WORDS,
    SUPERLATIVES,
)

# Least share of the question's content words the schema must explain for the question to be "about"
# the table (chosen on tests/data/sql_questions.jsonl vs tests/data/analyzer_questions.jsonl).
MIN_COVERAGE = 0.6
CONCEPT_WEIGHT = 0.7  # a column found through a concept word, not its own name


@dataclass(frozen=True)
class Span:
    start: int
    end: int

    def overlaps(self, other: Span) -> bool:
        return self.start < other.end and other.start < self.end


@dataclass
class Match:
    column: str
    score: float
    span: Span
    value: str | None = None  # a matched cell value (a filter); None: the column itself is named


@dataclass
class SqlPlan:
    sql: str
    table: str
    kind: str
    score: float
    coverage: float
    reason: str = ""


@dataclass
class Reading:
    """What the question says about one table."""

    table: Table
    values: list[Match] = field(default_factory=list)
    columns: list[Match] = field(default_factory=list)
    table_named: Span | None = None
    cues: list[Span] = field(default_factory=list)
    coverage: float = 0.0

    @property
    def score(self) -> float:
        named = 1.0 if self.table_named else 0.0
        return sum(m.score for m in self.values) + sum(m.score for m in self.columns) + named


def _spans(phrase: str, text: str) -> list[Span]:
    """Where ``phrase`` occurs: on word boundaries for Latin text (plural -s allowed), anywhere for CJK."""
    if not phrase:
        return []
    if contains_cjk(phrase):
        return [Span(m.start(), m.end()) for m in re.finditer(re.escape(phrase), text)]
    stem = re.sub(r"(?<=\w\w\w)s$", "", phrase.casefold())  # "employees" also names "employee"
    pattern = r"(?<![A-Za-z0-9_])" + re.escape(stem) + r"(?:s|es)?(?![A-Za-z0-9_])"
    return [Span(m.start(), m.end()) for m in re.finditer(pattern, text.casefold())]


def _concepts_of(column: str) -> list[str]:
    name = column.casefold()
    return [concept for concept, words in CONCEPTS.items() if name == concept or name in words]


def _words_of(column: Column) -> list[tuple[str, float]]:
    """Phrases that name a column: its name (and its parts), then its concepts' words."""
    parts = [p for p in re.split(r"[_\s]+", column.name) if len(p) > 1]
    named = [(column.name, 1.0)] + [(p, 0.9) for p in parts if p != column.name]
    for concept in _concepts_of(column.name):
        named += [(w, CONCEPT_WEIGHT) for w in CONCEPTS[concept] if w.casefold() != column.name.casefold()]
    return named


def read_question(question: str, table: Table) -> Reading:
    """The table's values, columns and name found in the question, longest value matches first."""
    reading = Reading(table=table)
    taken: list[Span] = []
    values = [
        (column, value)
        for column in table.columns
        if column.kind == "text"
        for value in column.samples
        if len(value.strip()) > 1 and not re.fullmatch(r"[\d\s.:-]+", value)
    ]
    for column, value in sorted(values, key=lambda cv: -len(cv[1])):
        for span in _spans(value, question):
            if not any(span.overlaps(t) for t in taken):
                taken.append(span)
                reading.values.append(Match(column.name, 1.0 + 0.05 * min(len(value), 10), span, value))
    for column in table.columns:
        best: Match | None = None
        for phrase, weight in _words_of(column):
            for span in _spans(phrase, question):
                if any(span.overlaps(t) for t in taken):
                    continue
                if best is None or weight > best.score:
                    best = Match(column.name, weight, span)
        if best is not None:
            reading.columns.append(best)
    for phrase in {table.name, *re.split(r"[_\s]+", table.name)}:
        for span in _spans(phrase, question) if len(phrase) > 1 else ():
            if not any(span.overlaps(t) for t in taken):
                reading.table_named = span
    reading.cues = _cue_spans(question)
    reading.coverage = _coverage(question, reading)
    return reading


def _cue_spans(question: str) -> list[Span]:
    phrases = [
        *(p for cues in AGGREGATES.values() for p in cues),
        *(p for cues in SUPERLATIVES.values() for p in cues),
        *CONCEPT_SUPERLATIVES,
        *COMPARISONS,
        *ASKING,
        *RECORD_WORDS,
    ]
    return [span for phrase in phrases for span in _spans(phrase, question)]


def _coverage(question: str, reading: Reading) -> float:
    """Share of the question's content words inside a schema match or a cue (numbers count as
    explained when the question compares with them)."""
    covered = [m.span for m in reading.values + reading.columns] + reading.cues
    if reading.table_named:
        covered.append(reading.table_named)
    words = [
        (m.start(), m.group())
        for m in re.finditer(r"[A-Za-z][\w'-]*|\d+(?:\.\d+)?|[\u4e00-\u9fff]+", question)
    ]
    total = explained = 0
    for start, word in words:
        for term in tokenize(word):
            total += 1
            inside = any(s.start <= start < s.end or (start <= s.start < start + len(word)) for s in covered)
            explained += inside or (term.replace(".", "").isdigit() and _comparison(question) is not None)
    return explained / total if total else 0.0


def _found(phrases: tuple[str, ...] | list[str], question: str) -> Span | None:
    spans = [s for p in phrases for s in _spans(p, question)]
    return min(spans, key=lambda s: s.start) if spans else None


def _comparison(question: str) -> tuple[str, str, float, Span] | None:
    """A comparison with a number: (operator, implied concept, number, span of the phrase)."""
    for phrase, (op, concept) in sorted(COMPARISONS.items(), key=lambda kv: -len(kv[0])):
        for span in _spans(phrase, question):
            after = re.match(r"\s*(-?\d[\d,]*(?:\.\d+)?)", question[span.end :])
            before = re.search(r"(-?\d[\d,]*(?:\.\d+)?)\s*(?:年|岁|条|个)?\s*$", question[: span.start])
            if phrase.startswith("or ") or phrase in ("以上", "以下", "之后", "以后", "之前", "以前"):
                number = before
            else:
                number = after
            if number:
                return op, concept, float(number.group(1).replace(",", "")), span
    return None


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(value: str | float) -> str:
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else str(value)
    return "'" + value.replace("'", "''") + "'"


def _key_column(table: Table) -> Column | None:
    """The column naming each record (a "name" concept column, else the first all-distinct text one)."""
    text = [c for c in table.columns if c.kind == "text"]
    named = [c for c in text if "name" in _concepts_of(c.name)]
    if named:
        return named[0]
    distinct = [c for c in text if len(c.samples) >= table.rows > 0]
    return distinct[0] if distinct else None


def _asked_column(question: str, reading: Reading) -> Column | None:
    """The column whose values the question asks for: "which X", "哪个X", "what X", or "who"."""
    table = reading.table
    for word in ASKING:
        for span in _spans(word, question):
            for match in reading.columns:
                column = table.column(match.column)
                gap = question[span.end : match.span.start]
                if (
                    column
                    and column.kind == "text"
                    and 0 <= match.span.start - span.end <= 3
                    and not gap.strip(" 的")
                ):
                    return column
            if reading.table_named and 0 <= reading.table_named.start - span.end <= 3:
                return _key_column(table)
    if _found(CONCEPTS["name"], question):
        return _key_column(table)
    return None


def _number_column(reading: Reading, concept: str = "", exclude: str = "") -> Column | None:
    """The numeric column the question names (or the one the concept stands for), strongest match first."""
    table = reading.table
    if concept:
        for column in table.columns:
            if column.kind == "number" and concept in _concepts_of(column.name):
                return column
    for match in sorted(reading.columns, key=lambda m: -m.score):
        column = table.column(match.column)
        if column and column.kind == "number" and column.name != exclude:
            return column
    return None


def _date_column(reading: Reading) -> Column | None:
    for match in reading.columns:
        column = reading.table.column(match.column)
        if column and column.kind == "text" and column.samples and re.match(r"\d{4}-\d\d", column.samples[0]):
            return column
    return None


def _filters(reading: Reading, question: str, skip: str = "") -> tuple[list[str], str]:
    """WHERE conditions: the matched values (one column's several values OR-ed), and a comparison."""
    by_column: dict[str, list[str]] = {}
    for match in reading.values:
        if match.column != skip and match.value is not None:
            by_column.setdefault(match.column, []).append(match.value)
    conditions = [
        f"{_quote(c)} = {_literal(v[0])}"
        if len(v) == 1
        else f"{_quote(c)} IN ({', '.join(map(_literal, v))})"
        for c, v in by_column.items()
    ]
    compared = ""
    found = _comparison(question)
    if found:
        op, concept, number, _ = found
        column = _number_column(reading, concept)
        dates = _date_column(reading)
        if dates is not None and 1000 <= number <= 2999 and number.is_integer() and not concept:
            year = int(number)
            bound = {">": f"{year + 1}", ">=": f"{year}", "<": f"{year}", "<=": f"{year + 1}"}[op]
            strict = {">": ">=", ">=": ">=", "<": "<", "<=": "<"}[op]
            conditions.append(f"{_quote(dates.name)} {strict} '{bound}'")
            compared = dates.name
        elif column is not None:
            conditions.append(f"{_quote(column.name)} {op} {_literal(number)}")
            compared = column.name
    return conditions, compared


def _where(conditions: list[str]) -> str:
    return f" WHERE {' AND '.join(conditions)}" if conditions else ""


def plan_for(question: str, reading: Reading) -> tuple[str, str] | None:
    """(sql, kind) for the question over the reading's table, or None when no rule applies."""
    table = reading.table
    name = _quote(table.name)
    aggregate = next((a for a, cues in AGGREGATES.items() if a != "count" and _found(cues, question)), None)
    counting = _found(AGGREGATES["count"], question) is not None
    concept_sup = next(
        (
            v
            for k, v in sorted(CONCEPT_SUPERLATIVES.items(), key=lambda kv: -len(kv[0]))
            if _spans(k, question)
        ),
        None,
    )
    superlative = (
        concept_sup[0]
        if concept_sup
        else next((s for s, cues in SUPERLATIVES.items() if _found(cues, question)), None)
    )
    asked = _asked_column(question, reading)
    conditions, compared = _filters(reading, question, skip=asked.name if asked else "")
    number = _number_column(reading, concept_sup[1] if concept_sup else "", exclude=compared)
    order = "DESC" if superlative == "max" else "ASC"
    if asked is not None and superlative:
        if aggregate or (counting or number is None):
            measure = f"{aggregate.upper()}({_quote(number.name)})" if aggregate and number else "COUNT(*)"
            sql = (
                f"SELECT {_quote(asked.name)}, {measure} AS value FROM {name}{_where(conditions)} "
                f"GROUP BY {_quote(asked.name)} ORDER BY value {order} LIMIT 1"
            )
            return sql, "group"
        sql = (
            f"SELECT {_quote(asked.name)}, {_quote(number.name)} FROM {name}{_where(conditions)} "
            f"ORDER BY {_quote(number.name)} {order} LIMIT 1"
        )
        return sql, "argmax" if superlative == "max" else "argmin"
    if aggregate and number is not None:
        return f"SELECT {aggregate.upper()}({_quote(number.name)}) FROM {name}{_where(conditions)}", aggregate
    if superlative and number is not None and not counting:
        return (
            f"SELECT {superlative.upper()}({_quote(number.name)}) FROM {name}{_where(conditions)}",
            superlative,
        )
    if counting and (number is None or compared):
        return f"SELECT COUNT(*) FROM {name}{_where(conditions)}", "count"
    if asked is not None and conditions:
        return f"SELECT DISTINCT {_quote(asked.name)} FROM {name}{_where(conditions)}", "list"
    if number is not None and reading.values:  # "What is the salary of Alice Chen?", "上海电脑的金额是多少"
        return f"SELECT {_quote(number.name)} FROM {name}{_where(conditions)}", "lookup"
    return None


def plan_sql(question: str, tables: list[Table]) -> SqlPlan | None:
    """The statement for the best-matching table whose schema explains the question, or None."""
    readings = sorted(
        (read_question(question, t) for t in tables),
        key=lambda r: (r.coverage >= MIN_COVERAGE, r.score),
        reverse=True,
    )
    for reading in readings:
        if reading.coverage < MIN_COVERAGE or reading.score < 1.0:
            break
        planned = plan_for(question, reading)
        if planned is not None:
            sql, kind = planned
            reason = (
                f"{kind} over {reading.table.name}: score {reading.score:.2f}, "
                f"{reading.coverage:.0%} of the question's words matched by the schema"
            )
            return SqlPlan(
                sql, reading.table.name, kind, round(reading.score, 2), round(reading.coverage, 2), reason
            )
    return None


def table_question(question: str, tables: list[Table]) -> Reading | None:
    """The table a question asks about (its reading), when the schema explains enough of it and it asks
    for something over records; the routing signal for the SQL route."""
    best = max(
        (read_question(question, t) for t in tables), key=lambda r: (r.coverage, r.score), default=None
    )
    if best is None or best.coverage < MIN_COVERAGE or best.score < 1.0:
        return None
    return best
