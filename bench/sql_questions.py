"""The frozen table-question set (tests/data/sql_questions.jsonl) over tests/data/tables/*.csv loaded the
way ingest loads them: how many questions the SQL route answers offline, and that nothing was written.

    python bench/sql_questions.py            # offline rules
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ingestion.tables import sync_tables, tables_path
from retrievers.sql import SqlDatabase, SqlError
from retrievers.sql_plan import plan_sql

ROOT = Path(__file__).resolve().parents[1]
SET = ROOT / "tests" / "data" / "sql_questions.jsonl"
TABLES = ROOT / "tests" / "data" / "tables"
# Questions about passages, not tables: how many the SQL route would wrongly take with these tables present.
PASSAGE_SETS = ("analyzer_questions.jsonl", "analyzer_questions_fresh.jsonl", "compute_questions.jsonl")


def build_database(folder: Path) -> SqlDatabase:
    files = {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(TABLES.glob("*.csv"))}
    sync_tables(folder, files)
    return SqlDatabase(f"sqlite:///{tables_path(folder)}")


def cell_matches(expected: object, cell: object) -> bool:
    if isinstance(expected, int | float) and not isinstance(cell, str | type(None)):
        return math.isclose(float(cell), float(expected), rel_tol=1e-6)
    return str(cell).strip().casefold() == str(expected).strip().casefold()


def correct(item: dict, rows: list[tuple]) -> bool:
    """Every expected value is among the result's cells and the result has the expected row count."""
    cells = [c for row in rows for c in row]
    return len(rows) == item["rows"] and all(any(cell_matches(e, c) for c in cells) for e in item["expected"])


def main() -> None:
    items = [json.loads(line) for line in SET.read_text(encoding="utf-8").splitlines() if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        db = build_database(Path(tmp))
        before = hashlib.sha256(db.path.read_bytes()).hexdigest()
        hits = {"en": [0, 0], "zh": [0, 0]}
        for item in items:
            plan = plan_sql(item["question"], db.tables())
            ok, shown = False, "no plan"
            if plan is not None:
                try:
                    result = db.run(plan.sql)
                    ok, shown = correct(item, result.rows), f"{plan.sql} -> {result.rows[:3]}"
                except SqlError as exc:
                    shown = f"{plan.sql} -> {exc}"
            hits[item["lang"]][0] += ok
            hits[item["lang"]][1] += 1
            if not ok:
                print(f"MISS {item['id']} {item['kind']}: {item['question']} | {shown}")
        unchanged = hashlib.sha256(db.path.read_bytes()).hexdigest() == before
        passage_questions = [
            json.loads(line)["question"]
            for name in PASSAGE_SETS
            for line in (ROOT / "tests" / "data" / name).read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
        routed = [q for q in passage_questions if plan_sql(q, db.tables()) is not None]
    solved = sum(h[0] for h in hits.values())
    for question in routed:
        print(f"ROUTED (passage question) {question}")
    print(
        f"passage questions routed to SQL: {len(routed)}/{len(passage_questions)} ({', '.join(PASSAGE_SETS)})"
    )
    print(
        f"answered {solved}/{len(items)} = {solved / len(items):.3f} (en {hits['en'][0]}/{hits['en'][1]}, "
        f"zh {hits['zh'][0]}/{hits['zh'][1]}); database unchanged: {unchanged}"
    )


if __name__ == "__main__":
    main()
