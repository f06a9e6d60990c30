"""Figures for docs/reliability.md: kills, concurrent turns, damaged files, checkpoint storage.

    python bench/reliability.py kill-ingest --runs 10
    python bench/reliability.py kill-ask --runs 10
    python bench/reliability.py concurrent --rounds 5
    python bench/reliability.py damage
    python bench/reliability.py storage --turns 1000 --threads 1000
    python bench/reliability.py second     # issue 24: stale files, damaged caches, full/read-only disks ...

Each prints one JSON line. Real processes (``python main.py ...``) are killed with SIGKILL after a
delay drawn from a seeded generator, so a run can be repeated. Work happens in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FIXTURES = ROOT / "tests" / "fixtures" / "ingest"


def env_for(index: Path, db: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTIC_RAG_", "OPENAI_"))}
    env.update(
        PYTHONPATH=str(ROOT),
        AGENTIC_RAG_INDEX_DIR=str(index),
        AGENTIC_RAG_CHECKPOINT_DB=str(db),
        AGENTIC_RAG_EMBEDDER="use-multilingual",
        AGENTIC_RAG_RERANKER="lexical",
        AGENTIC_RAG_BRAIN="offline",
    )
    return env


def cli(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "main.py", *argv], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )


def start(env: dict[str, str], *argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "main.py", *argv],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def kill_after(proc: subprocess.Popen[str], seconds: float) -> bool:
    """SIGKILL after ``seconds`` unless it ended first; True when it was killed."""
    try:
        proc.wait(timeout=seconds)
        return False
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        return True


def kill_ingest(runs: int, seed: int) -> dict:
    from retrievers.index import open_index

    rng = random.Random(seed)
    work = Path(tempfile.mkdtemp(prefix="rel-ingest-"))
    index, docs = work / "index", work / "docs"
    env = env_for(index, work / "cp.sqlite")
    shutil.copytree(FIXTURES, docs)
    began = time.monotonic()
    assert cli(env, "ingest", str(docs)).returncode == 0
    took = time.monotonic() - began
    survived = killed = 0
    for run in range(runs):
        before = open_index(index)
        old_count = before.count() if hasattr(before, "count") else before.size
        before.close()
        (docs / f"new_{run}.md").write_text(f"# Note {run}\n\nRun {run} adds this note. 第 {run} 次。\n" * 40)
        killed += kill_after(start(env, "ingest", str(docs)), rng.uniform(0.3, 1.0) * took)
        try:
            after = open_index(index)
            count = after.count() if hasattr(after, "count") else after.size
            ok = count >= old_count and after.docstore.count() == after.size
            after.close()
        except Exception:
            ok = False
        survived += ok
    shutil.rmtree(work, ignore_errors=True)
    return {"figure": "ingest kill -9", "runs": runs, "killed_mid_run": killed, "index_intact": survived}


def kill_ask(runs: int, seed: int) -> dict:
    rng = random.Random(seed)
    work = Path(tempfile.mkdtemp(prefix="rel-ask-"))
    index = work / "index"
    env = env_for(index, work / "cp.sqlite")
    assert cli(env, "ingest", str(FIXTURES)).returncode == 0
    questions = [
        "What Python version do I need?",
        "安装大约需要多长时间？",
        "How do I ask my first question?",
    ]
    intact = killed = 0
    for run in range(runs):
        thread = f"T{run}"
        began = time.monotonic()
        assert cli(env, "ask", questions[0], "--thread", thread).returncode == 0
        took = time.monotonic() - began  # kill somewhere in the second half of a turn's run time
        killed += kill_after(
            start(env, "ask", questions[1], "--thread", thread), rng.uniform(0.5, 1.0) * took
        )
        done = cli(env, "ask", questions[2], "--thread", thread, "--json")
        shown = json.loads(cli(env, "threads", "show", thread, "--json").stdout)["turns"]
        roles = [role for role, _ in shown]
        whole = roles == ["user", "assistant"] * (len(roles) // 2)
        own = done.returncode == 0 and json.loads(done.stdout)["question"] == questions[2]
        intact += whole and own and shown[-2][1] == questions[2]
    shutil.rmtree(work, ignore_errors=True)
    return {
        "figure": "ask --thread kill -9",
        "runs": runs,
        "killed_mid_run": killed,
        "nothing_half_kept": intact,
    }


def concurrent(rounds: int) -> dict:
    work = Path(tempfile.mkdtemp(prefix="rel-conc-"))
    index = work / "index"
    env = env_for(index, work / "cp.sqlite")
    assert cli(env, "ingest", str(FIXTURES)).returncode == 0
    questions = [
        "What Python version do I need?",
        "什么是多跳检索？",
        "How do I ask my first question?",
        "安装大约需要多长时间？",
    ]
    kept = crossed = 0
    for r in range(rounds):
        thread = f"same-{r}"
        procs = [start(env, "ask", q, "--thread", thread, "--json") for q in questions]
        answers = {}
        for q, proc in zip(questions, procs, strict=True):
            out, _ = proc.communicate()
            answers[q] = json.loads(out)["answer"] if proc.returncode == 0 else None
        turns = [tuple(t) for t in json.loads(cli(env, "threads", "show", thread, "--json").stdout)["turns"]]
        pairs = dict(zip(turns[0::2], turns[1::2], strict=False))
        for q in questions:
            reply = pairs.get(("user", q))
            kept += reply is not None
            crossed += reply is not None and reply[1] != answers[q]
    shutil.rmtree(work, ignore_errors=True)
    return {
        "figure": "4 concurrent asks on one thread",
        "rounds": rounds,
        "turns": rounds * 4,
        "kept": kept,
        "crossed": crossed,
    }


def damage() -> dict:
    from retrievers.index import IndexCorruptedError, open_index

    work = Path(tempfile.mkdtemp(prefix="rel-dmg-"))
    index = work / "index"
    env = env_for(index, work / "cp.sqlite")
    assert cli(env, "ingest", str(FIXTURES)).returncode == 0
    generation = index / json.loads((index / "index.json").read_text())["current"]
    names = sorted(json.loads((generation / "manifest.json").read_text())["files"])
    cases = detected = 0
    for name in names:
        for where in (0.0, 0.5, 1.0):
            copy = work / "copy"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(index, copy)
            target = copy / generation.name / name
            size = target.stat().st_size
            with open(target, "r+b") as handle:
                handle.seek(max(0, min(int(size * where), size - 16)))
                handle.write(bytes(range(0xA0, 0xB0)))
            cases += 1
            try:
                open_index(copy).close()
            except IndexCorruptedError:
                detected += 1
    shutil.rmtree(work, ignore_errors=True)
    return {
        "figure": "16 overwritten bytes per index file (start, middle, end)",
        "cases": cases,
        "detected": detected,
    }


def sqlite_bytes(db: Path) -> int:
    """The SQLite file's size once its write-ahead log is folded into it."""
    import sqlite3

    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return db.stat().st_size


def storage(turns: int, threads: int) -> dict:
    """One thread of ``turns`` turns (sizes at 100, 500, 1000 and the end), then ``threads`` one-question
    threads pruned. ``log_text_bytes`` is the UTF-8 text the conversation log holds (questions, answers,
    citations): what a thread must keep; ``newest_checkpoint_bytes`` is one checkpoint's row."""
    import sqlite3

    from app.wiring import build_context
    from config import load_settings
    from graph.builder import build_graph
    from graph.run import ask
    from memory.checkpointer import open_checkpointer
    from memory.threads import prune_threads, reclaim_space
    from nodes.state import CHECKPOINT_TYPES

    work = Path(tempfile.mkdtemp(prefix="rel-store-"))
    index = work / "index"
    assert cli(env_for(index, work / "x.sqlite"), "ingest", str(FIXTURES)).returncode == 0
    settings = load_settings(
        index_dir=index, embedder="use-multilingual", reranker="lexical", brain="offline"
    )
    context = build_context(settings)
    questions = [
        "What Python version do I need?",
        "安装大约需要多长时间？",
        "How do I ask my first question?",
    ]
    out: dict = {
        "figure": "checkpoint SQLite size",
        "max_checkpoints_per_thread": settings.max_checkpoints_per_thread,
    }
    one = work / "one-thread.sqlite"
    marks = sorted({n for n in (100, 500, 1000) if n <= turns} | {turns})
    with open_checkpointer(sqlite_path=one, allowed_types=CHECKPOINT_TYPES) as saver:
        app = build_graph(checkpointer=saver, max_checkpoints_per_thread=settings.max_checkpoints_per_thread)
        for n in range(1, turns + 1):
            ask(app, questions[n % 3], context=context, thread_id="long")
            if n in marks:
                with sqlite3.connect(one) as conn:
                    (log_text,) = conn.execute(
                        "SELECT SUM(length(CAST(question AS BLOB)) + length(CAST(answer AS BLOB)) "
                        "+ length(CAST(citations AS BLOB))) FROM conversation_log"
                    ).fetchone()
                    (newest,) = conn.execute(
                        "SELECT length(checkpoint) FROM checkpoints ORDER BY checkpoint_id DESC LIMIT 1"
                    ).fetchone()
                out[f"after_{n}_turns"] = {
                    "db_bytes": sqlite_bytes(one),
                    "log_text_bytes": log_text,
                    "newest_checkpoint_bytes": newest,
                }
    many = work / "many-threads.sqlite"
    with open_checkpointer(sqlite_path=many, allowed_types=CHECKPOINT_TYPES) as saver:
        app = build_graph(checkpointer=saver)
        for n in range(threads):
            ask(app, questions[n % 3], context=context, thread_id=f"t{n}")
        out[f"bytes_{threads}_threads"] = sqlite_bytes(many)
        pruned = prune_threads(saver, timedelta(seconds=1), now=datetime.now(UTC) + timedelta(days=1))
        out["pruned"] = len(pruned)
        out["bytes_after_prune_without_vacuum"] = sqlite_bytes(many)
        reclaim_space(saver)
        out["bytes_after_prune"] = sqlite_bytes(many)
    shutil.rmtree(work, ignore_errors=True)
    return out


def _case(
    results: list[dict],
    name: str,
    ok: bool,
    done: subprocess.CompletedProcess[str] | None = None,
    *,
    lost: bool = False,
    wrong: bool = False,
) -> None:
    results.append(
        {
            "case": name,
            "passed": bool(ok),
            "traceback": bool(done is not None and "Traceback" in done.stderr),
            "data_lost": lost,
            "wrong_answer_served": wrong,
        }
    )


def _mount(*argv: str) -> bool:
    return os.geteuid() == 0 and subprocess.run(["mount", *argv], capture_output=True).returncode == 0


def second() -> dict:
    """Issue 24's catalogue through the real CLI: each case is tried once and judged."""
    import sqlite3

    work = Path(tempfile.mkdtemp(prefix="rel-second-"))
    results: list[dict] = []
    docs = work / "docs"
    shutil.copytree(FIXTURES, docs)
    index = work / "index"
    env = env_for(index, work / "cp.sqlite")
    assert cli(env, "ingest", str(docs)).returncode == 0
    question = "What Python version do I need?"
    # 1. stale content: emptied, binary
    for label, data in (("emptied file", b""), ("file overwritten with binary", b"\x00\xff" * 100)):
        (docs / "quickstart_en.md").write_bytes(data)
        done = cli(env, "ingest", str(docs), "--json")
        report = json.loads(done.stdout) if done.returncode == 0 else {}
        answer = cli(env, "search", "Python 3.11", "--json")
        stale = "quickstart_en.md" in answer.stdout
        _case(
            results,
            f"stale: {label}",
            done.returncode == 0 and report.get("removal_reasons") and not stale,
            done,
            wrong=stale,
        )
        shutil.copy(FIXTURES / "quickstart_en.md", docs / "quickstart_en.md")
        cli(env, "ingest", str(docs))
    # 2. damaged caches
    cache = index / "cache" / "answers.sqlite"
    for label in ("answer cache random bytes", "answer cache damaged pages", "answer cache edited payload"):
        cli(env, "ask", question)
        with sqlite3.connect(cache) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            if label.endswith("payload"):
                conn.execute("UPDATE answers SET payload = replace(payload, '3.11', '2.7')")
        if label.endswith("bytes"):
            cache.write_bytes(random.Random(1).randbytes(cache.stat().st_size))
        elif label.endswith("pages"):
            data = bytearray(cache.read_bytes())
            for off in range(4096, len(data), 4096):
                data[off + 200 : off + 264] = b"\xde\xad\xbe\xef" * 16
            cache.write_bytes(bytes(data))
        done = cli(env, "ask", question, "--json")
        answer = json.loads(done.stdout)["answer"] if done.returncode == 0 else ""
        _case(results, label, "3.11" in answer and "2.7" not in answer, done, wrong="2.7" in answer)
    # 6. cache being a file, generation being a file
    shutil.rmtree(index / "cache")
    (index / "cache").write_text("x")
    done = cli(env, "ask", question, "--json")
    _case(results, "cache folder is a file", done.returncode == 0, done)
    (index / "cache").unlink()
    copy = work / "gen-file"
    shutil.copytree(index, copy)
    current = json.loads((copy / "index.json").read_text())["current"]
    shutil.rmtree(copy / current)
    (copy / current).write_text("x")
    done = cli(env_for(copy, work / "cp.sqlite"), "ask", question)
    _case(
        results,
        "generation folder is a file",
        done.returncode == 2 and len(done.stderr.splitlines()) == 1,
        done,
    )
    # 3. read-only index (bind mount)
    ro = work / "ro"
    ro.mkdir()
    if _mount("--bind", str(index), str(ro)) and _mount("-o", "remount,ro,bind", str(ro)):
        for reranker in ("lexical", "e5"):
            done = cli(
                {**env_for(ro, work / "cp.sqlite"), "AGENTIC_RAG_RERANKER": reranker},
                "ask",
                question,
                "--json",
            )
            _case(results, f"read-only index ({reranker})", done.returncode == 0, done)
        subprocess.run(["umount", str(ro)], capture_output=True)
    # 4. full disk (2 MB tmpfs), refused up front and mid-write
    small = work / "small"
    small.mkdir()
    if _mount("-t", "tmpfs", "-o", "size=2m", "tmpfs", str(small)):
        bulk = work / "bulk"
        shutil.copytree(FIXTURES, bulk)
        for i in range(55):
            (bulk / f"b{i}.md").write_text(
                f"# N{i}\n\n" + " ".join(f"Fact {i}-{j} is {i * j}." for j in range(60))
            )
        small_env = env_for(small / "index", work / "cp.sqlite")
        assert cli(small_env, "ingest", str(bulk)).returncode == 0

        def note(i: int) -> None:
            facts = " ".join(f"Fact {i}-{j} is {i * j}." for j in range(60))
            (bulk / f"b{i}.md").write_text(f"# N{i}\n\n{facts}")

        def judge(label: str, done: subprocess.CompletedProcess[str]) -> None:
            left = list((small / "index").glob("gen-*.tmp-*"))
            after = cli(small_env, "ask", question, "--json")
            served = after.returncode == 0 and "3.11" in json.loads(after.stdout)["answer"]
            ok = done.returncode == 2 and len(done.stderr.strip().splitlines()[-1:]) == 1 and not left
            _case(
                results,
                label,
                ok and "is full" in done.stderr and served and "embedding cache" not in after.stderr,
                done,
                lost=not served,
            )

        for i in range(100, 500):
            note(i)
        judge("full disk, refused before writing", cli(small_env, "ingest", str(bulk)))
        for i in range(100, 500):
            (bulk / f"b{i}.md").unlink()
        for step in range(40):  # add notes until the generation no longer fits: it fills the disk mid-write
            for i in range(600 + 3 * step, 603 + 3 * step):
                note(i)
            done = cli(small_env, "ingest", str(bulk))
            if done.returncode != 0:
                break
        judge("full disk mid-write" if "while writing" in done.stderr else "full disk (refused)", done)
        subprocess.run(["umount", str(small)], capture_output=True)
    # 5. damaged checkpoint pages
    db = work / "cpd.sqlite"
    cenv = env_for(index, db)
    for thread in ("A", "B"):
        cli(cenv, "ask", question, "--thread", thread)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(db.read_bytes())
    for off in range(4096, len(data), 4096):
        data[off + 200 : off + 264] = b"\xde\xad\xbe\xef" * 16
    db.write_bytes(bytes(data))
    done = cli(cenv, "ask", question, "--thread", "A")
    _case(
        results,
        "damaged checkpoint pages: ask --thread",
        done.returncode in (1, 2) and str(db) in done.stderr,
        done,
    )
    done = cli(cenv, "ask", question, "--thread", "new")
    _case(results, "damaged checkpoint pages: another thread", done.returncode == 0, done)
    # 9. lock files (a healthy store: a damaged thread is never pruned, its lock stays with it)
    ldb = work / "locks.sqlite"
    lenv = env_for(index, ldb)
    for thread in ("one", "二", "three"):
        cli(lenv, "ask", question, "--thread", thread)
    done = cli(lenv, "threads", "delete", "二")
    _case(
        results,
        "lock file goes with a deleted thread",
        len(list(Path(f"{ldb}.locks").glob("*.lock"))) == 2,
        done,
    )
    done = cli(lenv, "threads", "prune", "--older-than", "1s")
    _case(results, "lock files go with pruned threads", not any(Path(f"{ldb}.locks").glob("*.lock")), done)
    shutil.rmtree(work, ignore_errors=True)
    return {
        "figure": "second reliability catalogue (issue 24)",
        "cases_tried": len(results),
        "passed": sum(r["passed"] for r in results),
        "tracebacks": sum(r["traceback"] for r in results),
        "data_lost": sum(r["data_lost"] for r in results),
        "wrong_answers_served": sum(r["wrong_answer_served"] for r in results),
        "failed": [r["case"] for r in results if not r["passed"]],
        "cases": [r["case"] for r in results],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="what", required=True)
    for name in ("kill-ingest", "kill-ask"):
        p = sub.add_parser(name)
        p.add_argument("--runs", type=int, default=10)
        p.add_argument("--seed", type=int, default=12)
    sub.add_parser("concurrent").add_argument("--rounds", type=int, default=5)
    sub.add_parser("damage")
    sub.add_parser("second")
    p = sub.add_parser("storage")
    p.add_argument("--turns", type=int, default=500)
    p.add_argument("--threads", type=int, default=1000)
    args = parser.parse_args()
    started = time.process_time()
    if args.what == "kill-ingest":
        result = kill_ingest(args.runs, args.seed)
    elif args.what == "kill-ask":
        result = kill_ask(args.runs, args.seed)
    elif args.what == "concurrent":
        result = concurrent(args.rounds)
    elif args.what == "damage":
        result = damage()
    elif args.what == "second":
        result = second()
    else:
        result = storage(args.turns, args.threads)
    result["cpu_s_this_process"] = round(time.process_time() - started, 1)
    result["load"] = os.getloadavg()[0]
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
