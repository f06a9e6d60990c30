"""Structured outputs exchanged between nodes and brains (pydantic at the boundary).

The graph state and its checkpoints hold these models, so they must stay plain data.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

QueryType = Literal["factual", "analytical", "comparative", "procedural"]
Complexity = Literal["simple", "moderate", "complex"]
# global: whole-document/collection questions; sql: the question asks over table records
# (nodes/retrieve_sql.py); api: a configured HTTP API answers it (all issue 26)
StrategyName = Literal["vector", "keyword", "hybrid", "multi_hop", "global", "sql", "api"]
SuggestedAction = Literal["answer", "retry_vector", "retry_keyword", "multi_hop", "rewrite"]


# A second-hop sub-query is a template naming the first hop's phrase in angle brackets:
# "spouse of <director of Inception>".
BRIDGE_RE = re.compile(r"<([^<>]+)>")


def fill_bridge(template: str, entity: str) -> str:
    """Put the entity found by the first hop into a second-hop template."""
    return BRIDGE_RE.sub(entity, template, count=1)


def strip_bridge(template: str) -> str:
    """A searchable query from a template when no bridge entity is known (drop the brackets)."""
    return BRIDGE_RE.sub(lambda m: m.group(1), template)


class QuestionProfile(BaseModel):
    """What the offline brain reads a question as, parsed once (providers/offline_brain/profile.py) and
    carried in the analysis, so the judge and the writer read it instead of parsing the text again."""

    model_config = ConfigDict(frozen=True)

    text: str
    language: str = Field(description="detect_language of the question (zh, en, ...)")
    reader: str = Field(description="the answer's language: zh for a Chinese question, else en")
    terms: list[str] = Field(default_factory=list, description="key terms, in question order")
    kinds: list[str] = Field(default_factory=list, description="kinds of fact asked for (number, date, ...)")
    defined_term: str | None = Field(default=None, description="X of 什么是X / What is X")
    parts: list[str] = Field(
        default_factory=list, description="sub-questions (the analysis's sub_queries); [] for a simple one"
    )
    asks_for_code: bool = Field(default=False, description="asks for a command, code or an example")
    has_referring_word: bool = Field(
        default=False, description="leans on an earlier turn (它 / this / what about)"
    )

    @property
    def kind_set(self) -> set[str]:
        return set(self.kinds)


class QueryAnalysis(BaseModel):
    """What the analyzer decided about a question and how to search for it."""

    query_type: QueryType = "factual"
    complexity: Complexity = "simple"
    sub_queries: list[str] = Field(default_factory=list)
    recommended_strategy: StrategyName = "hybrid"
    reasoning: str = ""
    entities: list[str] = Field(default_factory=list)
    identifiers: list[str] = Field(
        default_factory=list, description="exact tokens (codes, versions, numbers) worth keyword search"
    )
    language: str = "en"
    unmentioned: list[str] = Field(
        default_factory=list,
        description="names and identifiers of the question no chunk of the collection mentions (as this "
        "caller may read it): set by the analysis step from the keyword index, read by the answerability model",
    )
    # the offline analyzer's reading of the question (None from an LLM analyzer or an older checkpoint)
    profile: QuestionProfile | None = None


RELEVANCE_THRESHOLD = 0.5  # the one cut: a chunk judged at or above it counts as relevant evidence


class ChunkJudgement(BaseModel):
    chunk_id: str
    relevance: float = Field(ge=0.0, le=1.0)
    reason: str = ""


class RetrievalEvaluation(BaseModel):
    """Whether the retrieved evidence suffices, and what to do when it does not."""

    judgements: list[ChunkJudgement] = Field(default_factory=list)
    is_sufficient: bool = False
    missing_info: list[str] = Field(default_factory=list)
    suggested_action: SuggestedAction = "answer"
    reasoning: str = ""
    pointers: list[str] = Field(
        default_factory=list,
        description="names the best passages mention while words of the question are missing: "
        "where one more hop could go (the policy hops only through ones the corpus has as documents)",
    )
    matched: bool | None = Field(
        default=None,
        description="whether the best passages match the question by its key terms or by meaning; None "
        "when the judge does not say (the policy then never calls the evidence off-topic)",
    )
    # issue 21: the fitted answerability model's verdict (providers/brain/answerability); None when not assessed
    answerability: float | None = Field(default=None, description="p(the evidence answers the question)")
    answerable: bool | None = Field(default=None, description="answerability at or above its threshold")

    def relevant_ids(self) -> list[str]:
        """Chunks judged relevant (at or above ``RELEVANCE_THRESHOLD``), in judgement order."""
        return [j.chunk_id for j in self.judgements if j.relevance >= RELEVANCE_THRESHOLD]


class Passage(BaseModel):
    """A piece of evidence handed to the answer writer, numbered for citation."""

    number: int
    chunk_id: str
    source: str
    heading: str = ""
    text: str


class Citation(BaseModel):
    number: int
    chunk_id: str
    source: str
    heading: str = ""
    snippet: str = ""


class SentenceSupport(BaseModel):
    sentence: str
    cited: list[int] = Field(default_factory=list)
    supported: bool = True
    score: float = 1.0


class DraftAnswer(BaseModel):
    """The answer writer's output: text with [n] markers plus whether evidence was insufficient."""

    answer: str
    insufficient: bool = False
    missing: list[str] = Field(default_factory=list)
    tool_calls: list[dict] = Field(
        default_factory=list, description="tools.ToolResult dumps the answer shows"
    )
    offline: bool = Field(
        default=False,
        description="written by the offline writer (the passages' sentences, or a computation over their "
        "values): the offline support check reads it (Brain.verify_offline)",
    )


class SqlQuery(BaseModel):
    """A model's text-to-SQL answer: one SELECT over the schema it was shown (checked before it runs)."""

    sql: str = Field(description="one read-only SELECT statement, no comments, no semicolons")
    reasoning: str = ""
