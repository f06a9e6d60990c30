"""`python main.py search "query" --mode vector|keyword|hybrid|multi_hop|hyde`

``hyde`` searches with a hypothetical answer's vector mixed with the question's: the one given with
``--hypothesis``, else the best sentence of a first hybrid pass (offline HyDE, docs/evaluation.md)."""

from __future__ import annotations

import argparse

from cli.common import add_common, make_console, positive_int, print_json, settings_from, shown


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("search", help="search the index without the agent")
    p.add_argument("query", help="what to look for (words, an identifier, a question)")
    p.add_argument(
        "--mode",
        choices=["vector", "keyword", "hybrid", "multi_hop", "hyde"],
        default="hybrid",
        help="which retriever (default: hybrid = vector + keyword fused with RRF)",
    )
    p.add_argument("--k", type=positive_int, default=10, help="number of results (1 or more, default 10)")
    p.add_argument("--hypothesis", help="hyde: the hypothetical answer to search with")
    p.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="source=GLOB, language=zh, after=2024-01-01, before=..., or any metadata key",
    )
    add_common(p)
    p.set_defaults(handler=run)


def first_pass_hypothesis(retrievers, query: str, depth: int, filters) -> str:  # type: ignore[no-untyped-def]
    from providers.brain.hyde import best_first_pass_sentence

    return best_first_pass_sentence(query, retrievers.hybrid.search(query, depth, filters))


def run(args: argparse.Namespace) -> int:
    from core.chunks import Filters
    from retrievers.factory import open_retrievers
    from retrievers.index import require_chunks

    settings = settings_from(args)
    filters = Filters.from_pairs(args.filter) if args.filter else None
    if not args.query.strip():
        raise ValueError("the query is empty")
    retrievers = open_retrievers(settings)
    require_chunks(retrievers.index)
    hypothesis = None
    if args.mode == "hyde":
        hypothesis = args.hypothesis or first_pass_hypothesis(
            retrievers, args.query, settings.candidate_k, filters
        )
        hits = retrievers.hyde.search(args.query, args.k, filters, hypothetical_answer=hypothesis or None)
    else:
        hits = retrievers.by_name(args.mode).search(args.query, args.k, filters)
    if args.json:
        print_json(
            {
                "query": args.query,
                "mode": args.mode,
                "k": args.k,
                **({"hypothesis": hypothesis} if args.mode == "hyde" else {}),
                "results": [
                    {
                        "rank": rank,
                        "id": hit.id,
                        "score": hit.score,
                        "ranks": hit.ranks,
                        "scores": hit.scores,
                        "source": hit.chunk.source,
                        "locator": hit.chunk.locator(),
                        "title": hit.chunk.title,
                        "heading_path": hit.chunk.heading_path,
                        "language": hit.chunk.language,
                        "text": hit.chunk.text,
                    }
                    for rank, hit in enumerate(hits, start=1)
                ],
            }
        )
        return 0
    console = make_console()
    if args.mode == "hyde":
        console.print(
            f"[dim]hypothesis: {shown(hypothesis or '(none: plain vector search)')}[/]", highlight=False
        )
    if not hits:
        console.print("no results")
    for rank, hit in enumerate(hits, start=1):
        heading = " > ".join(hit.chunk.heading_path)
        ranks = ", ".join(f"{k}#{v}" for k, v in hit.ranks.items())
        console.print(
            f"[bold]{rank}.[/] {shown(hit.chunk.source)} [dim]{shown(heading)}[/] "
            f"score={hit.score:.4f} ({shown(ranks)})",
            highlight=False,
        )
        console.print("   " + shown(hit.chunk.text[:200].replace("\n", " ")), highlight=False)
    return 0
