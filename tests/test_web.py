"""The web page served at ``/``, driven in a real headless Chromium (Debian's, through Playwright) against
a real ``serve`` process whose index holds the bundled guide (docs/guide, English and Chinese) and one
planted document carrying markup: a user enters the key, asks in English and in Chinese, watches the
steps stream, opens a citation and sees the supporting sentence highlighted, reads the trace, gives
feedback (which lands in the feedback store), reopens a conversation, and the planted markup stays text.

Set ``AGENTIC_RAG_SCREENSHOTS=1`` to write the screenshots to docs/img (the README shows them).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from config import load_settings
from ingestion.pipeline import ingest_paths
from memory.feedback import SqliteFeedbackStore, feedback_path
from tests.test_serve import ROOT, Server

pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
KEY = "web-test-key"
PLANTED = (
    "Zebra gateway notes.\n\n"
    'The zebra gateway code is ZG-77 <img src=x onerror="window.__pwned=1"> and '
    "<script>window.__pwned=2</script> it must be entered twice.\n"
)
IMG = ROOT / "docs" / "img"

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the dev extra)")
# Playwright's 5 s default for expect() is a flake on a shared 2-core machine running two test workers,
# not a check: what a step must show is asserted, how fast it shows it is bench/ territory.
sync_api.expect.set_options(timeout=30_000)


@pytest.fixture(scope="module")
def guide_server(tmp_path_factory, embedder) -> Iterator[Server]:
    docs = tmp_path_factory.mktemp("web_docs")
    shutil.copytree(ROOT / "docs" / "guide", docs / "guide")
    (docs / "zebra.txt").write_text(PLANTED, encoding="utf-8")
    index = tmp_path_factory.mktemp("web_index")
    settings = load_settings(index_dir=index, embedder="use-multilingual")
    ingest_paths([docs], settings, embedder, index_dir=index, progress=False)
    srv = Server(index, tmp_path_factory.mktemp("web_serve"), AGENTIC_RAG_SERVE_TOKEN=KEY)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium (scripts/test.sh installs it with apt-get install chromium)")
    with sync_api.sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield launched
        launched.close()


@pytest.fixture
def page(browser, guide_server):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    outside: list[str] = []
    page.on(
        "request",
        lambda request: None if request.url.startswith(guide_server.url) else outside.append(request.url),
    )
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(guide_server.url + "/")
    yield page
    assert outside == [], f"the page fetched from elsewhere: {outside}"
    assert dialogs == []
    context.close()


def shot(page, name: str) -> None:
    if os.environ.get("AGENTIC_RAG_SCREENSHOTS"):
        IMG.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(IMG / name))


def enter_key(page) -> None:
    sync_api.expect(page.locator("#server-status")).to_contain_text("needs an API key")
    page.fill("#api-key", KEY)
    page.click("#key-form button")
    sync_api.expect(page.locator("#server-status")).to_contain_text("offline brain")


def ask(page, question: str):
    """Ask through the form; the finished assistant message and the page's timing for it."""
    count = page.locator(".msg.assistant[data-done='true']").count()
    page.fill("#question", question)
    page.press("#question", "Enter")
    message = page.locator(".msg.assistant").nth(count)
    sync_api.expect(message).to_have_attribute("data-done", "true", timeout=90_000)
    timing = page.evaluate("window.agenticRag.timings[window.agenticRag.timings.length - 1]")
    return message, timing


def feedback_records(server: Server):
    store = SqliteFeedbackStore(feedback_path(server.log.parent / "checkpoints.sqlite"))
    try:
        return store.records()
    finally:
        store.close()


@pytest.mark.parametrize(
    ("question", "verdict", "note", "source"),
    [
        ("What are the BM25 parameters k1 and b?", "bad", "wanted the title boost too", "retrieval.md"),
        ("关键词检索的 BM25 参数 k1 和 b 是多少？", "good", "清楚 <b>好</b>", "retrieval.md"),
    ],
)
def test_ask_open_a_citation_read_the_trace_and_give_feedback(
    page, guide_server, question, verdict, note, source
):
    enter_key(page)
    page.click("#new-thread")
    message, timing = ask(page, question)

    steps = message.locator(".steps li")
    assert steps.count() >= 4 and steps.first.inner_text().startswith("contextualize")
    assert timing["firstStep"] is not None and timing["firstStep"] <= timing["firstToken"] <= timing["answer"]
    assert timing["firstStep"] < timing["answer"]  # the steps arrive while the question is still running
    print(
        f"\nbrowser timings ({question}): first streamed step {timing['firstStep']} ms, "
        f"first answer token {timing['firstToken']} ms, answer {timing['answer']} ms"
    )
    answer = message.locator(".answer").inner_text()
    assert "1.2" in answer and "0.75" in answer

    cite = message.locator("button.cite").first
    cite.click()
    panel = page.locator("#passage")
    sync_api.expect(panel).to_be_visible()
    assert source in page.locator("#passage-title").inner_text()
    marks = page.locator("#passage-text mark")
    assert marks.count() >= 1
    marked = " ".join(marks.all_inner_texts())
    assert "0.75" in marked or "k1" in marked  # the sentence the answer rests on, highlighted
    assert marked in page.locator("#passage-text").inner_text()

    message.locator(".trace-box summary").click()
    assert message.locator(".trace-facts .route").inner_text().startswith(("hybrid", "agentic", "keyword"))
    assert message.locator(".trace-facts .retries").inner_text().isdigit()
    assert message.locator(".trace-facts .stop").inner_text() != ""
    assert message.locator("table.trace tr").count() == steps.count() + 1
    shot(page, f"web-{'en' if question.isascii() else 'zh'}-trace.png")
    message.locator(".trace-box summary").click()

    message.locator(f"button.thumb.{verdict}").click()
    message.locator(".note").fill(note)
    message.locator(".send-feedback").click()
    sync_api.expect(message.locator(".feedback-status")).to_contain_text("recorded")
    shot(page, f"web-{'en' if question.isascii() else 'zh'}.png")
    record = feedback_records(guide_server)[-1]
    assert (record.verdict, record.note, record.question, record.turn) == (verdict, note, question, 1)
    assert record.citations and record.trace


def test_conversations_are_listed_and_reopened(page, guide_server):
    enter_key(page)
    page.click("#new-thread")
    ask(page, "How does hybrid search merge the two result lists?")
    ask(page, "混合检索的融合常数 k 是多少？")
    current = page.locator("#threads li.current button")
    sync_api.expect(current).to_have_count(1)
    thread_id = current.get_attribute("title")
    page.click("#new-thread")
    sync_api.expect(page.locator("#messages .msg")).to_have_count(0)
    page.locator(f"#threads button[title='{thread_id}']").click()
    sync_api.expect(page.locator("#messages .msg")).to_have_count(4)
    assert "混合检索" in page.locator("#messages .msg.user").nth(1).inner_text()
    page.locator("#messages .msg.assistant").nth(1).locator("button.thumb.good").click()
    page.locator("#messages .msg.assistant").nth(1).locator(".send-feedback").click()
    sync_api.expect(page.locator(".feedback-status").nth(1)).to_contain_text("recorded")
    record = feedback_records(guide_server)[-1]
    assert (record.thread_id, record.turn, record.verdict) == (thread_id, 2, "good")


def test_document_markup_stays_text(page):
    enter_key(page)
    page.click("#new-thread")
    message, _ = ask(page, "What is the zebra gateway code?")
    assert "ZG-77" in message.locator(".answer").inner_text()
    message.locator("button.cite").first.click()
    passage = page.locator("#passage-text").inner_text()
    assert "<img" in passage and "onerror" in passage and "<script>" in passage
    assert page.locator("#messages img, #passage img, #messages script, #passage script").count() == 0
    assert page.evaluate("window.__pwned") is None
    shot(page, "web-escaping.png")


def test_without_the_key_the_page_says_so_and_upload_stays_hidden(page, guide_server):
    sync_api.expect(page.locator("#server-status")).to_contain_text("needs an API key")
    assert page.locator("#upload").is_hidden()  # nothing to show before the server has said what it offers
    info = httpx.get(guide_server.url + "/v1/info", headers={"authorization": f"Bearer {KEY}"}).json()
    assert info["capabilities"]["upload"] is True and info["auth"] is True
    assert info["upload_path"] == "/v1/collections/{name}/documents"
    index = httpx.get(guide_server.url + "/")
    assert "default-src 'none'" in index.headers["content-security-policy"]


def test_feedback_on_nothing_is_a_clear_error(guide_server):
    headers = {"authorization": f"Bearer {KEY}"}
    unknown = httpx.post(
        guide_server.url + "/v1/threads/nobody/feedback", json={"verdict": "good"}, headers=headers
    )
    assert unknown.status_code == 404 and "has no answered question" in unknown.json()["error"]["message"]
    wrong = httpx.post(
        guide_server.url + "/v1/threads/nobody/feedback", json={"verdict": "meh"}, headers=headers
    )
    assert wrong.status_code == 422 and "verdict" in wrong.json()["error"]["message"]
    assert (
        httpx.post(guide_server.url + "/v1/threads/nobody/feedback", json={"verdict": "good"}).status_code
        == 401
    )


KILN = "# Kiln\n\nThe kiln firing code is KILN-7781.\n\n窑炉的烧制代码是窑炉七七八一。\n"


def test_a_document_uploaded_from_the_page_answers_the_next_question(page, guide_server):
    """The upload control end to end: the file goes to the upload route, the running server switches to
    the new generation, and the next question (English, then Chinese) is answered from it. Last in this
    module: it adds a document to the shared index."""
    enter_key(page)
    sync_api.expect(page.locator("#upload")).to_be_visible()
    kiln = {"name": "kiln.md", "mimeType": "text/markdown", "buffer": KILN.encode()}
    page.set_input_files("#upload-file", files=[kiln])
    page.click("#upload-form button")
    status = page.locator("#upload-status")
    sync_api.expect(status).to_contain_text("kiln.md: added to default", timeout=120_000)
    page.click("#new-thread")
    message, _ = ask(page, "What is the kiln firing code?")
    assert "KILN-7781" in message.locator(".answer").inner_text()
    message, _ = ask(page, "窑炉的烧制代码是什么？")
    assert "窑炉七七八一" in message.locator(".answer").inner_text()
