"""The model's text-to-SQL on the frozen table-question set: the SQL route's prompt (providers/brain/sql.py)
with the schema and sample values, answered by a local GGUF model through llama_cpp in this process, each
statement checked and run read-only as the route does. Prints misses and the share answered.

    python bench/sql_llm.py --model path/to/qwen2.5-coder-0.5b.gguf [--kinds group,compare] [--limit N]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.sql_questions import SET, build_database, correct
from core.schemas import SqlQuery
from providers.brain.sql import SQL_SYSTEM, sql_user
from retrievers.sql import SqlError, describe


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a GGUF file (MODELS.md: the packaged Qwen2.5-Coder)")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--kinds", default="", help="only these kinds, comma-separated (e.g. group,compare)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    from llama_cpp import Llama

    llm = Llama(model_path=args.model, n_ctx=4096, n_threads=args.threads, verbose=False, seed=0)
    items = [json.loads(line) for line in SET.read_text(encoding="utf-8").splitlines() if line.strip()]
    if args.kinds:
        items = [i for i in items if i["kind"] in args.kinds.split(",")]
    items = items[: args.limit or None]
    schema = {"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]}
    with tempfile.TemporaryDirectory() as tmp:
        db = build_database(Path(tmp))
        before = hashlib.sha256(db.path.read_bytes()).hexdigest()
        described = describe(db.tables())
        hits, refused, started = {"en": [0, 0], "zh": [0, 0]}, 0, time.perf_counter()
        for item in items:
            reply = llm.create_chat_completion(
                messages=[
                    {"role": "system", "content": SQL_SYSTEM},
                    {"role": "user", "content": sql_user(item["question"], described, "sqlite")},
                ],
                temperature=0.0,
                max_tokens=160,
                response_format={"type": "json_object", "schema": schema},
            )
            text = reply["choices"][0]["message"]["content"] or ""
            ok, shown = False, text
            try:
                sql = SqlQuery.model_validate_json(text).sql
                result = db.run(sql)
                ok, shown = correct(item, result.rows), f"{sql} -> {result.rows[:3]}"
            except SqlError as exc:
                refused += 1
                shown = f"{text} -> {exc}"
            except ValueError as exc:
                shown = f"{text[:120]} -> unparsable ({type(exc).__name__})"
            hits[item["lang"]][0] += ok
            hits[item["lang"]][1] += 1
            verdict = "ok  " if ok else "MISS"
            print(f"{verdict} {item['id']} {item['kind']}: {item['question']} | {shown[:220]}", flush=True)
        unchanged = hashlib.sha256(db.path.read_bytes()).hexdigest() == before
    solved = sum(h[0] for h in hits.values())
    print(
        f"model {Path(args.model).name}: answered {solved}/{len(items)} = {solved / len(items):.3f} "
        f"(en {hits['en'][0]}/{hits['en'][1]}, zh {hits['zh'][0]}/{hits['zh'][1]}); refused by the check "
        f"or failed: {refused}; database unchanged: {unchanged}; {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
