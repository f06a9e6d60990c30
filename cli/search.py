"""`python main.py search "query" --mode vector|keyword|hybrid|multi_hop|hyde`

``hyde`` searches with a hypothetical answer's vector mixed with the question's: the one given with
``--hypothesis``, else the best sentence of a first hybrid pass (offline HyDE, docs/evaluation.md)."""

from __future__ import annotations

import argparse

from cli.common import add_common, make_console, positive_int, print_json, settings_from, shown


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("search", help="search the index without the agent")
    p.add_argument("query", help="what to look for (words, an identifier, a question)")
    from retrievers.search import SEARCH_MODES

    p.add_argument(
        "--mode",
        choices=SEARCH_MODES,
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


def run(args: argparse.Namespace) -> int:
    from core.chunks import Filters
    from retrievers.factory import open_retrievers
    from retrievers.filter_keys import require_known_keys
    from retrievers.index import require_chunks
    from retrievers.search import hit_record, search

    settings = settings_from(args)
    filters = Filters.from_pairs(args.filter) if args.filter else None
    if not args.query.strip():
        raise ValueError("the query is empty")
    retrievers = open_retrievers(settings)
    require_chunks(retrievers.index)
    require_known_keys(retrievers.index, filters)
    found = search(
        retrievers,
        args.query,
        mode=args.mode,
        k=args.k,
        filters=filters,
        hypothesis=args.hypothesis,
        depth=settings.candidate_k,
    )
    hits, hypothesis = found.hits, found.hypothesis
    if args.json:
        print_json(
            {
                "query": args.query,
                "mode": args.mode,
                "k": args.k,
                **({"hypothesis": hypothesis} if args.mode == "hyde" else {}),
                "results": [hit_record(rank, hit) for rank, hit in enumerate(hits, start=1)],
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
