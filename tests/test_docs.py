"""Docs that cannot drift: every setting the README and the bundled guide name exists, with the default
they state; every README example command runs against the bundled guide and finds something."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from config import ENV_PREFIX, OTHER_ENV_NAMES, Settings, env_names

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs" / "guide").rglob("*.md"))]
ENV_TO_FIELD = {name: field for field in Settings.model_fields for name in env_names(field)}
NAME_RE = re.compile(rf"\b{ENV_PREFIX}[A-Z0-9_]*[A-Z0-9]\b")
NUMBER_RE = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])")


def shown(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def same(stated: str, default: Any) -> bool:
    """A default as the docs write it: numbers compare as numbers (``1.0`` is ``1``), the rest as text."""
    if isinstance(default, int | float) and not isinstance(default, bool):
        try:
            return float(stated.replace(",", "")) == float(default)
        except ValueError:
            return False
    return stated == shown(default)


def prose_and_tables(text: str) -> tuple[list[str], list[str]]:
    """Sentences of the prose (wrapped lines joined, code blocks dropped) and table rows."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    rows = [line for line in text.splitlines() if line.lstrip().startswith("|")]
    prose = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("|"))
    sentences = []
    for paragraph in re.split(r"\n\s*\n", prose):
        joined = " ".join(paragraph.split())
        sentences += re.split(r"(?<=[.!?;])\s+|(?<=[。！？；])", joined)
    return sentences, rows


def numbers(text: str) -> set[str]:
    return {n.replace(",", "") for n in NUMBER_RE.findall(text)}


def mentioned_fields(sentence: str) -> list[str]:
    """Settings a sentence names: by variable (not an ``X=value`` example) or as a backticked field name."""
    names = [m.group(0) for m in NAME_RE.finditer(sentence) if sentence[m.end() : m.end() + 1] != "="]
    fields = [ENV_TO_FIELD[n] for n in names if n in ENV_TO_FIELD]
    fields += [f for f in re.findall(r"`([a-z][a-z0-9_]+)`", sentence) if f in Settings.model_fields]
    return fields


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_variable_named_in_the_docs_exists(doc):
    names = set(NAME_RE.findall(doc.read_text(encoding="utf-8")))
    unknown = sorted(n for n in names if n not in ENV_TO_FIELD and n not in OTHER_ENV_NAMES)
    assert unknown == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_defaults_stated_in_the_docs_match_config(doc):
    sentences, rows = prose_and_tables(doc.read_text(encoding="utf-8"))
    wrong = []
    for sentence in sentences:
        found = numbers(sentence)
        for field in mentioned_fields(sentence):
            default = Settings.model_fields[field].default
            if found and isinstance(default, int | float) and not any(same(n, default) for n in found):
                wrong.append(f"{field} (default {shown(default)}): {sentence}")
    for row in rows:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) < 2:
            continue
        names = re.findall(rf"`({ENV_PREFIX}[A-Z0-9_]+|_[A-Z0-9_]+)`", cells[0])
        full = [n if n.startswith(ENV_PREFIX) else ENV_PREFIX + n.lstrip("_") for n in names]
        fields = [ENV_TO_FIELD[n] for n in full if n in ENV_TO_FIELD]
        stated = [v.strip().strip("`") for v in cells[1].split(" / ")]
        if not fields or len(stated) != len(fields):
            continue
        for field, value in zip(fields, stated, strict=True):
            default = Settings.model_fields[field].default
            if not same(value, default):
                wrong.append(f"{field}: table says {value!r}, config.py {shown(default)!r}")
    assert wrong == []


# --- README examples -------------------------------------------------------------------------------------

# Commands the README shows that this test does not run, and why.
NOT_RUN = {
    "serve": "runs until stopped; tests/test_serve.py starts the real server",
    "eval": "needs the shared evaluation data and minutes of CPU; tests/test_eval_cli.py covers eval",
    "mcp": "speaks MCP on stdin/stdout; tests/test_mcp.py drives it with the SDK's own client",
    "llm": "llm serve runs until stopped; tests/test_local_llm.py starts it with the packaged model",
}


def readme_commands() -> list[list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            if line.startswith("python main.py"):
                argv = shlex.split(line, comments=True)[2:]
                if not argv or argv[0] not in NOT_RUN:
                    commands.append(argv)
    return commands


def test_the_readme_shows_commands_worth_running():
    commands = readme_commands()
    assert len(commands) >= 10
    assert {argv[0] for argv in commands if argv} >= {"ingest", "search", "ask", "threads", "index", "config"}


@pytest.fixture(scope="module")
def readme_run(tmp_path_factory) -> list[tuple[list[str], subprocess.CompletedProcess]]:
    """Every README command in order (ingest first), against the bundled guide in a fresh index."""
    tmp = tmp_path_factory.mktemp("readme")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTIC_RAG_")}
    env.update(
        PYTHONPATH=str(ROOT),
        AGENTIC_RAG_INDEX_DIR=str(tmp / "index"),
        AGENTIC_RAG_CHECKPOINT_DB=str(tmp / "checkpoints.sqlite"),
        AGENTIC_RAG_RERANKER="lexical",
        AGENTIC_RAG_BRAIN="offline",
    )
    runs = []
    thread_id = "support-42"
    for argv in readme_commands():
        argv = [thread_id if a == "ID" else str(tmp / "index") if a == "DIR" else a for a in argv]
        done = subprocess.run(
            [sys.executable, str(ROOT / "main.py"), *argv],
            cwd=ROOT,
            env=env,
            input="How does hybrid search merge results?\n",
            capture_output=True,
            text=True,
            timeout=600,
        )
        runs.append((argv, done))
    return runs


def test_every_readme_command_runs_and_finds_something(readme_run):
    failures = []
    for argv, done in readme_run:
        out = done.stdout
        found = bool(out.strip()) and "no results" not in out and '"results": []' not in out
        if argv[:1] in (["ask"], []):
            found = found and bool(re.search(r"\[\d+\]", out))
        if argv[:1] == ["search"]:
            found = found and ("docs/guide" in out)
        if done.returncode != 0 or not found:
            failures.append(f"{' '.join(argv)} -> {done.returncode}\n{out[-500:]}\n{done.stderr[-500:]}")
    assert failures == []


def test_the_license_file_matches_pyproject():
    import tomllib

    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_eval_says_where_it_looked_for_a_dataset(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTIC_RAG_")}
    env.update(PYTHONPATH=str(ROOT), AGENTIC_RAG_DATA_DIR=str(tmp_path / "sets"))
    done = subprocess.run(
        [sys.executable, str(ROOT / "main.py"), "eval", "hotpotqa_hipporag100"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    message = done.stderr
    assert str(tmp_path / "hotpotqa_hipporag100") in message  # as given, from the working folder
    assert str(tmp_path / "sets" / "hotpotqa_hipporag100") in message and "does not exist" in message
    assert "AGENTIC_RAG_DATA_DIR" in message
