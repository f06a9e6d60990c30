"""What a llama.cpp server's prefix reuse saves the compact requests (issue 22): one prompt, timed.

Not a test: starts ``python main.py llm serve`` (bench/local_llm.py's ``start_server``) and sends, over
HTTP, the compact judge's request, then the writer's (streamed) and the support check's, which repeat
the judge's prompt up to their last lines, then the writer's again behind a one-word change at the
start (nothing reusable: what the writer costs without the judge before it). Prints seconds per request
and the server's prompt and generation speed read off a plain request.

    python bench/llm_prefix_reuse.py [--model qwen2.5-coder-1.5b]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.local_llm import start_server  # noqa: E402
from providers import prompts  # noqa: E402
from providers.brain.judge import _CompactJudgeReply  # noqa: E402
from providers.brain.verify import _SupportReply  # noqa: E402

PASSAGE = "Hybrid search fuses BM25 and vector results with reciprocal rank fusion; its constant k is {k}. "
QUESTION = "\n\nQuestion:\nWhat is the RRF constant k?"


def context_block(passages: int = 5, repeat: int = 6) -> str:
    return prompts.context_block(
        [(str(i), f"doc{i}.md", PASSAGE.format(k=60 + i) * repeat) for i in range(1, passages + 1)]
    )


def post(
    url: str, model: str, user: str, schema: Any = None, stream: bool = False, max_tokens: int = 40
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "system", "content": prompts.ANSWER_SYSTEM}, {"role": "user", "content": user}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": stream,
    }
    if schema is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}
    request = urllib.request.Request(
        f"{url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    started = time.perf_counter()
    raw = urllib.request.urlopen(request, timeout=900).read()
    seconds = time.perf_counter() - started
    usage = {} if stream else json.loads(raw).get("usage", {})
    return {"s": round(seconds, 1), **usage}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args()
    server, url = start_server(args.model, args.threads)
    block = context_block()
    try:
        post(url, args.model, "Say OK.", max_tokens=2)  # loads the weights into memory
        rows = [
            (
                "compact judge (cold: new passages)",
                post(
                    url,
                    args.model,
                    f"{block}{QUESTION}\n\n{prompts.JUDGE_COMPACT_TASK}",
                    _CompactJudgeReply.model_json_schema(),
                ),
            ),
            ("writer after the judge (streamed)", post(url, args.model, block + QUESTION, stream=True)),
            (
                "support check after the writer",
                post(
                    url,
                    args.model,
                    f"{block}\n\n{prompts.CHECK_SUPPORT_COMPACT_TASK}\n\nAnswer sentences:\n1. k is 61 [1].",
                    _SupportReply.model_json_schema(),
                ),
            ),
            (
                "writer with nothing to reuse (streamed)",
                post(url, args.model, "Now: " + block + QUESTION, stream=True),
            ),
            (
                "plain, 1 token (prompt speed)",
                post(url, args.model, "Then: " + block + QUESTION, max_tokens=1),
            ),
            (
                "plain, 64 tokens after it (generation speed)",
                post(url, args.model, "Then: " + block + QUESTION + " Explain at length.", max_tokens=64),
            ),
        ]
    finally:
        server.terminate()
        server.wait()
    print(f"\n{args.model}: seconds per request\n")
    for label, row in rows:
        print(f"- {label}: {row}")
    prompt, gen = rows[4][1], rows[5][1]
    if prompt.get("prompt_tokens") and gen.get("completion_tokens"):
        print(
            f"\nprompt ≈ {prompt['prompt_tokens'] / prompt['s']:.0f} tokens/s; generation ≈ {gen['completion_tokens'] / max(gen['s'] - 1, 0.1):.1f} tokens/s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
