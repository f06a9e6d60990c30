"""The documentation evaluation (issue 21): its frozen questions are well-formed and its scoring says
correct / refused / wrong as the issue defines them. No ingest here; bench/docs_eval/run.py runs it."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "bench" / "docs_eval"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"docs_eval_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


run = _load("run")
QUESTIONS = run.load_questions()
MANIFEST = json.loads((HERE / "manifest.json").read_text(encoding="utf-8"))
PAGES = {p["dest"] + page for p in MANIFEST["projects"] for page in p["pages"]}


def page_language(page: str) -> str:
    return page.split("/")[1]


# --- the frozen set ------------------------------------------------------------------------------


def test_the_set_has_enough_questions_of_each_kind_in_both_languages():
    howto = [q for q in QUESTIONS if q.kind == "howto"]
    unanswerable = [q for q in QUESTIONS if q.kind == "unanswerable"]
    assert len(howto) >= 40 and len(unanswerable) >= 15
    for group in (howto, unanswerable):
        langs = [q.lang for q in group]
        assert min(langs.count("en"), langs.count("zh")) >= len(group) // 3  # about half each
    assert {(q.project, q.lang) for q in howto} >= {
        ("vue", "en"),
        ("vue", "zh"),
        ("helm", "en"),
        ("helm", "zh"),
    }
    assert {q.lang for q in howto if q.cross_language} == {"en", "zh"}


def test_ids_are_unique_and_questions_are_written_in_their_language():
    assert len({q.id for q in QUESTIONS}) == len(QUESTIONS)
    for q in QUESTIONS:
        has_han = any("\u4e00" <= ch <= "\u9fff" for ch in q.question)
        assert has_han == (q.lang == "zh"), q.id


def test_every_howto_names_a_key_and_pages_of_the_manifest():
    for q in QUESTIONS:
        if q.kind == "howto":
            assert q.key.strip() and q.page, q.id
            assert set(q.pages()) <= PAGES, (q.id, set(q.pages()) - PAGES)
            same = page_language(q.page) == q.lang
            assert same != q.cross_language, q.id  # a cross-language question's page is in the other language
        else:
            assert not q.key and not q.pages() and q.why, q.id


def test_manifest_pins_every_project_to_a_commit_and_a_licence():
    for project in MANIFEST["projects"]:
        assert len(project["commit"]) == 40 and project["licence"] and project["pages"]
        assert project["dest"].split("/")[1] in ("en", "zh")


def test_a_malformed_question_line_is_rejected(tmp_path):
    bad = tmp_path / "q.jsonl"
    bad.write_text('{"id": "x", "kind": "howto", "lang": "fr", "question": "?"}\n', encoding="utf-8")
    with pytest.raises(ValueError):
        run.load_questions(bad)


# --- scoring -------------------------------------------------------------------------------------

BY_ID = {q.id: q for q in QUESTIONS}
EN = BY_ID["vue-en-01"]  # key v-model, page guide/essentials/forms.md, also api/built-in-directives.md
ZH = BY_ID["helm-zh-01"]  # key helm history, page helm/zh/intro/using_helm.md
UN_EN = BY_ID["un-en-01"]  # What is the capital of France?
UN_ZH = BY_ID["un-zh-01"]  # 法国的首都是哪里？
DOCS = "/tmp/eval_docs/"


def outcome(answer: str, cited: list[str], insufficient: bool = False) -> run.Outcome:
    return run.Outcome(answer=answer, insufficient=insufficient, cited=cited, retrieved=cited)


def test_an_answer_with_the_key_citing_the_page_is_correct():
    assert run.score(EN, outcome("Use `v-model` on the input [1].", [EN.page])).verdict == "correct"
    assert run.score(ZH, outcome("运行 `helm history angry-bird` 查看 [1]。", [ZH.page])).verdict == "correct"


def test_an_also_page_counts_and_the_docs_folder_prefix_does_not_matter():
    assert run.score(EN, outcome("`v-model` [1]", [DOCS + EN.also[0]])).verdict == "correct"


def test_a_full_width_key_in_a_chinese_answer_still_matches():
    assert run.score(ZH, outcome("使用 ｈｅｌｍ　ｈｉｓｔｏｒｙ 命令 [1]。", [ZH.page])).verdict == "correct"


def test_an_answer_missing_the_key_or_the_page_is_wrong():
    no_key = run.score(EN, outcome("Bind the value attribute [1].", [EN.page]))
    assert (no_key.verdict, no_key.key_present, no_key.page_cited) == ("wrong", False, True)
    wrong_page = run.score(ZH, outcome("`helm history` [1]", ["helm/en/intro/using_helm.md"]))
    assert (wrong_page.verdict, wrong_page.page_cited) == ("wrong", False)  # the English copy is not the page
    assert "page citation" in wrong_page.reason


def test_insufficient_or_empty_is_a_refusal_even_with_the_key():
    assert run.score(EN, outcome("`v-model` [1]", [EN.page], insufficient=True)).verdict == "refused"
    assert run.score(ZH, outcome("   ", [])).verdict == "refused"


def test_an_unanswerable_question_is_right_only_when_refused():
    assert run.score(UN_EN, outcome("The documents do not say.", [], insufficient=True)).verdict == "refused"
    assert run.score(UN_ZH, outcome("资料中没有相关内容。", [], insufficient=True)).verdict == "refused"
    assert run.score(UN_EN, outcome("`capitalize` [1]?", ["vue/en/api/general.md"])).verdict == "wrong"
    assert (
        run.score(UN_ZH, outcome("（以下引自英文资料原文）Initialize French translations [1]", ["x"])).verdict
        == "wrong"
    )


def test_the_summary_rates_count_each_verdict_once():
    cases = [
        (EN, outcome("`v-model` [1]", [EN.page])),  # correct
        (ZH, outcome("", [], insufficient=True)),  # refused
        (ZH, outcome("看文档 [1]", [ZH.page])),  # wrong: no key
        (UN_EN, outcome("", [], insufficient=True)),  # refused: right
        (UN_ZH, outcome("三句无关的话 [1]", ["x"])),  # wrong
    ]
    rows = [
        {"question": q.model_dump(), "score": run.score(q, o).model_dump(), "seconds": 2.0} for q, o in cases
    ]
    summary = run.summarise(rows)
    assert summary["answerable_correct"] == round(1 / 3, 3)
    assert summary["answerable_refused"] == round(1 / 3, 3)
    assert summary["unanswerable_refused"] == 0.5
    assert summary["wrong_answer_rate"] == 0.4  # 2 of 5, both kinds
    assert summary["seconds_per_question"] == 2.0
    assert summary["by_group"]["howto/helm/zh"] == {"n": 2, "correct": 0, "refused": 1, "wrong": 1}


# --- materialising the pages ---------------------------------------------------------------------

fetch_docs = _load("fetch_docs")


def _git(*args: str, cwd: Path) -> str:
    import subprocess

    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_pages_are_copied_byte_for_byte_from_the_pinned_commit(tmp_path):
    work = tmp_path / "work"
    (work / "src/guide").mkdir(parents=True)
    (work / "src/guide/forms.md").write_text("# Forms\n\nUse `v-model`.\n", encoding="utf-8")
    (work / "src/guide/表单.md").write_text("# 表单\n\n使用 `v-model`。\n", encoding="utf-8")
    _git("init", "-q", cwd=work)
    _git("add", ".", cwd=work)
    _git("-c", "user.email=t@example.org", "-c", "user.name=t", "commit", "-qm", "pinned", cwd=work)
    commit = _git("rev-parse", "HEAD", cwd=work)
    (work / "src/guide/forms.md").write_text("# Forms\n\nchanged later\n", encoding="utf-8")
    _git("-c", "user.email=t@example.org", "-c", "user.name=t", "commit", "-qam", "later", cwd=work)
    mirrors = tmp_path / "mirrors"
    _git("clone", "-q", "--bare", str(work), str(mirrors / "acme+docs" / "repo"), cwd=tmp_path)
    manifest = tmp_path / "manifest.json"
    project = {"dest": "acme/en/", "repo": "acme/docs", "commit": commit, "prefix": "src/", "licence": "MIT"}
    manifest.write_text(
        json.dumps({"projects": [{**project, "pages": ["guide/forms.md", "guide/表单.md"]}]}),
        encoding="utf-8",
    )
    out = tmp_path / "eval_docs"
    assert fetch_docs.materialise(mirrors, out, manifest) == 2
    assert (out / "acme/en/guide/forms.md").read_text(encoding="utf-8") == "# Forms\n\nUse `v-model`.\n"
    assert "使用" in (out / "acme/en/guide/表单.md").read_text(encoding="utf-8")
    assert commit in (out / "SOURCES.md").read_text(encoding="utf-8")


def test_a_missing_mirror_says_how_to_make_one(tmp_path):
    with pytest.raises(SystemExit, match=re.escape("git clone --bare https://github.com/vuejs/docs")):
        fetch_docs.mirror_dir(tmp_path, "vuejs/docs")


# --- the how-to sets in the shared layout (bench/docs_eval/as_dataset.py) -------------------------

as_dataset = _load("as_dataset")


def test_a_docs_folder_becomes_a_corpus_whose_gold_passages_hold_the_key(tmp_path):
    """The answerability fit reads how-to sets over technical docs like any shared set: one passage per
    chunk of each page, and gold passages are the question's page's chunks that name the key."""
    docs = tmp_path / "docs"
    (docs / "en").mkdir(parents=True)
    (docs / "zh").mkdir()
    (docs / "en" / "state.md").write_text(
        "# State\n\n## Resetting\n\nCall `store.$reset()` to reset the state.\n\n## Mutating\n\nUse `$patch`.\n",
        encoding="utf-8",
    )
    (docs / "zh" / "state.md").write_text(
        "# State\n\n## 重置 state\n\n调用 `store.$reset()` 方法重置。\n", encoding="utf-8"
    )
    passages = as_dataset.corpus(docs)
    assert {p["id"].split("#")[0] for p in passages} == {"en/state.md", "zh/state.md"}
    assert all(p["text"] and p["title"] for p in passages)
    for page in ("en/state.md", "zh/state.md"):
        gold = as_dataset.gold_ids({"page": page, "key": "$reset"}, passages)
        assert gold and all(g.startswith(page) for g in gold)
        assert all("$reset" in p["text"] for p in passages if p["id"] in gold)
    assert as_dataset.gold_ids({"page": "en/state.md", "key": "defineStore"}, passages) == []
