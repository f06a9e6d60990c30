"""Several users on one real HTTP server (uvicorn on 127.0.0.1, spoken to with httpx and the ``openai``
client): keys, the permission matrix over every route, caches shared by two users, owned threads,
collections, documents over HTTP and a re-ingest seen without a restart."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
import uvicorn

from config import load_settings
from memory.users import UserStore
from tests.test_permissions import (
    QUESTIONS,
    SECRETS,
    USERS,
    assert_no_leak,
    ingest_corpus,
    write_corpus,
)

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent
ADMIN = "admin-token-for-tests"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LiveServer:
    """The app over a real index, served by uvicorn in a thread of this process."""

    def __init__(self, tmp: Path, embedder) -> None:
        from app.wiring import build_context
        from memory.checkpointer import open_checkpointer
        from nodes.state import CHECKPOINT_TYPES
        from server.app import create_app
        from server.engine import Engine

        self.tmp = tmp
        self.folders = write_corpus(tmp / "docs")
        self.settings = load_settings(
            index_dir=tmp / "index",
            checkpoint_db=tmp / "data" / "checkpoints.sqlite",
            embedder="use-multilingual",
            reranker="none",
            brain="offline",
            serve_token=ADMIN,
        )
        ingest_corpus(self.folders, self.settings, embedder)
        users = UserStore(tmp / "data" / "users.sqlite")
        self.keys = {name: users.add(name, groups=groups).key for name, groups in USERS.items()}
        users.close()
        self._saver_cm = open_checkpointer(
            sqlite_path=self.settings.checkpoint_db, postgres_url=None, allowed_types=CHECKPOINT_TYPES
        )
        saver = self._saver_cm.__enter__()
        self.engine = Engine(self.settings, build_context(self.settings), saver)
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        config = uvicorn.Config(create_app(self.engine), host="127.0.0.1", port=port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        for _ in range(200):
            if self.server.started:
                return
            time.sleep(0.05)
        raise RuntimeError("server did not start")

    def headers(self, who: str, **extra: str) -> dict[str, str]:
        key = ADMIN if who == "admin" else self.keys[who]
        return {"authorization": f"Bearer {key}", **extra}

    def ask(self, who: str, question: str, **body) -> httpx.Response:
        headers = body.pop("headers", None) or self.headers(who)
        return httpx.post(
            self.url + "/v1/ask", json={"question": question, **body}, headers=headers, timeout=120
        )

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)
        self.engine.close()
        self._saver_cm.__exit__(None, None, None)


@pytest.fixture(scope="module")
def live(tmp_path_factory, embedder) -> Iterator[LiveServer]:
    srv = LiveServer(tmp_path_factory.mktemp("users_server"), embedder)
    yield srv
    srv.stop()


def sse_events(response: httpx.Response) -> list[tuple[str, object]]:
    events, kind = [], "message"
    for line in response.text.splitlines():
        if line.startswith("event: "):
            kind = line[7:]
        elif line.startswith("data: "):
            data = line[6:]
            events.append((kind, data if data == "[DONE]" else json.loads(data)))
            kind = "message"
    return events


def readable_groups(user: str) -> set[str]:
    return set(USERS[user]) | {"public"}


# --- keys -----------------------------------------------------------------------------------------------
def test_every_route_but_healthz_needs_a_key_and_docs_are_off(live):
    assert httpx.get(live.url + "/healthz").status_code == 200
    for method, path in [
        ("GET", "/readyz"),
        ("GET", "/v1/models"),
        ("GET", "/v1/threads"),
        ("GET", "/v1/collections"),
        ("POST", "/v1/ask"),
        ("POST", "/v1/chat/completions"),
    ]:
        for headers in ({}, {"authorization": "Bearer ark_0000000000000000_" + "x" * 43}):
            reply = httpx.request(method, live.url + path, headers=headers, json={})
            assert reply.status_code == 401, (path, headers)
    for path in ("/docs", "/openapi.json"):
        assert httpx.get(live.url + path, headers=live.headers("admin")).status_code == 404
    assert httpx.get(live.url + "/readyz", headers=live.headers("dave")).status_code == 200


def test_a_revoked_key_stops_working_at_once(live):
    store = UserStore(live.settings.users_db or live.tmp / "data" / "users.sqlite")
    key = store.add("erin", groups="hr").key
    headers = {"authorization": f"Bearer {key}"}
    assert httpx.get(live.url + "/v1/models", headers=headers).status_code == 200
    store.revoke("erin")
    assert httpx.get(live.url + "/v1/models", headers=headers).status_code == 401
    store.close()


def test_keys_are_stored_hashed(live):
    raw = (live.tmp / "data" / "users.sqlite").read_bytes()
    for key in live.keys.values():
        assert key.encode() not in raw and key.split("_", 2)[2].encode() not in raw


# --- the matrix over /v1/ask, plain and streamed ----------------------------------------------------------
@pytest.mark.parametrize("user", list(USERS))
def test_ask_plain_and_streamed_never_shows_an_unreadable_document(live, user):
    for group, questions in QUESTIONS.items():
        for question in questions:
            plain = live.ask(user, question)
            assert plain.status_code == 200
            assert_no_leak(user, plain.json())
            streamed = live.ask(user, question, stream=True)
            assert_no_leak(user, streamed.text)
            answer = next(data for kind, data in sse_events(streamed) if kind == "answer")
            if group in readable_groups(user):
                assert any(s in plain.json()["answer"] for s in SECRETS[group]), (user, question)
                assert answer["answer"] == plain.json()["answer"]


def test_citations_are_relative_to_the_collection_root(live):
    cited = live.ask("alice", QUESTIONS["hr"][0]).json()["citations"]
    assert cited and {c["source"] for c in cited} <= {"hr/hr.md", "public/public.md"}
    assert str(live.tmp) not in json.dumps(live.ask("alice", QUESTIONS["hr"][1]).json(), ensure_ascii=False)


def test_evidence_highlights_come_unless_declined(live):
    question = QUESTIONS["public"][1]
    full = live.ask("dave", question).json()
    assert full["evidence"] and full["evidence"][0]["highlights"], full
    lean = live.ask("dave", question, evidence=False).json()
    assert lean["evidence"] == [] and lean["answer"] == full["answer"] and lean["citations"]


# --- OpenAI-compatible, plain and streamed; acting for a user ----------------------------------------------
def _client(live, who: str) -> openai.OpenAI:
    key = ADMIN if who == "admin" else live.keys[who]
    return openai.OpenAI(base_url=live.url + "/v1", api_key=key, max_retries=0)


@pytest.mark.parametrize("user", ["alice", "bob", "dave"])
def test_chat_completions_plain_and_streamed_never_show_an_unreadable_document(live, user):
    client = _client(live, user)
    for group, questions in QUESTIONS.items():
        for question in questions:
            messages = [{"role": "user", "content": question}]
            plain = client.chat.completions.create(model="agentic-rag", messages=messages)
            assert_no_leak(user, plain.model_dump())
            parts = list(client.chat.completions.create(model="agentic-rag", messages=messages, stream=True))
            streamed = "".join(p.choices[0].delta.content or "" for p in parts if p.choices)
            assert_no_leak(user, [p.model_dump() for p in parts])
            if group in readable_groups(user):
                assert any(s in plain.choices[0].message.content for s in SECRETS[group])
                assert streamed == plain.choices[0].message.content


def test_an_admin_acts_for_a_user_by_header_or_openai_user_field(live):
    question = QUESTIONS["hr"][0]
    as_bob = live.ask("admin", question, headers=live.headers("admin", **{"X-Agentic-User": "bob"}))
    assert_no_leak("bob", as_bob.json())
    as_alice = live.ask("admin", question, headers=live.headers("admin", **{"X-Agentic-User": "alice"}))
    assert SECRETS["hr"][0] in as_alice.json()["answer"]
    reply = _client(live, "admin").chat.completions.create(
        model="agentic-rag", messages=[{"role": "user", "content": question}], user="carol"
    )
    assert_no_leak("carol", reply.model_dump())
    # a user's key cannot act for someone else, and an unknown user is refused
    refused = live.ask("bob", question, headers=live.headers("bob", **{"X-Agentic-User": "alice"}))
    assert refused.status_code == 403
    unknown = live.ask("admin", question, headers=live.headers("admin", **{"X-Agentic-User": "mallory"}))
    assert unknown.status_code == 403


# --- caches: the same question from two users --------------------------------------------------------------
@pytest.mark.parametrize("lang", [0, 1])
def test_the_answer_and_semantic_caches_never_serve_one_users_answer_to_another(live, lang):
    question = QUESTIONS["fin"][lang]
    first = live.ask("carol", question).json()
    assert SECRETS["fin"][lang] in first["answer"]
    again = live.ask("carol", question).json()
    assert again["stop_reason"] == "cached"  # the cache is on, and carol's answer is in it
    for user in ("alice", "bob", "dave"):
        assert_no_leak(user, live.ask(user, question).json())
        assert_no_leak(
            user, live.ask(user, question.rstrip("?？") + (" please?" if lang == 0 else "呢？")).json()
        )


# --- multi-hop through the agent ----------------------------------------------------------------------------
@pytest.mark.parametrize("user", ["bob", "dave"])
def test_multi_hop_questions_hop_only_through_readable_documents(live, user):
    for question in (
        "Compare the payroll vault passphrase with the build server passphrase and the treasury ledger one",
        "比较薪资保险库的口令、构建服务器的口令和财务总账的口令",
    ):
        reply = live.ask(user, question, mode="agentic")
        assert reply.status_code == 200
        assert_no_leak(user, reply.json())


# --- owned threads ----------------------------------------------------------------------------------------
def test_threads_belong_to_their_user(live):
    made = live.ask("alice", QUESTIONS["hr"][0], thread_id="alice-private")
    assert made.status_code == 200 and SECRETS["hr"][0] in made.json()["answer"]
    mine = httpx.get(live.url + "/v1/threads", headers=live.headers("alice")).json()
    assert [t["thread_id"] for t in mine] == ["alice-private"]
    for headers in (live.headers("bob"), live.headers("admin", **{"X-Agentic-User": "bob"})):
        listed = httpx.get(live.url + "/v1/threads", headers=headers).json()
        assert "alice-private" not in {t["thread_id"] for t in listed}
        read = httpx.get(live.url + "/v1/threads/alice-private", headers=headers)
        assert read.status_code == 404 and read.json()["error"]["code"] == "thread_not_found"
        assert httpx.delete(live.url + "/v1/threads/alice-private", headers=headers).status_code == 404
        continued = live.ask("bob", "and the Chinese one?", thread_id="alice-private", headers=headers)
        assert continued.status_code == 404
        judged = httpx.post(
            live.url + "/v1/threads/alice-private/feedback", json={"verdict": "bad"}, headers=headers
        )
        assert judged.status_code == 404  # feedback only on one's own thread
        assert_no_leak("bob", [listed, read.json(), continued.json()])
    unknown = httpx.get(live.url + "/v1/threads/no-such-thread", headers=live.headers("bob"))
    assert unknown.status_code == 404 and unknown.json() == {
        **read.json(),
        "error": {**read.json()["error"], "message": "no conversation thread 'no-such-thread'"},
    }
    shown = httpx.get(live.url + "/v1/threads/alice-private", headers=live.headers("alice")).json()
    assert SECRETS["hr"][0] in json.dumps(shown)
    own = httpx.post(
        live.url + "/v1/threads/alice-private/feedback",
        json={"verdict": "good"},
        headers=live.headers("alice"),
    )
    assert own.status_code == 200, own.text
    admin_view = httpx.get(live.url + "/v1/threads", headers=live.headers("admin")).json()
    assert "alice-private" in {t["thread_id"] for t in admin_view}
    assert (
        httpx.delete(live.url + "/v1/threads/alice-private", headers=live.headers("alice")).status_code == 200
    )
    assert httpx.get(live.url + "/v1/threads/alice-private", headers=live.headers("alice")).status_code == 404


@pytest.mark.parametrize("bad", ["two\nlines", "nul\x00byte", "a/b", "back\\slash", "tab\there"])
def test_thread_ids_that_a_url_or_a_row_cannot_carry_are_refused(live, bad):
    reply = live.ask("bob", "What is the build server passphrase?", thread_id=bad)
    assert reply.status_code == 400 and reply.json()["error"]["code"] == "invalid_thread_id"


# --- collections, documents over HTTP, a new generation without restart ----------------------------------------
def test_collections_have_their_own_readers_and_writers(live, tmp_path):
    admin, bob, alice = live.headers("admin"), live.headers("bob"), live.headers("alice")
    made = httpx.post(
        live.url + "/v1/collections",
        json={"name": "handbook", "readers": ["eng"], "writers": ["eng"]},
        headers=admin,
    )
    assert made.status_code == 200, made.text
    assert httpx.post(live.url + "/v1/collections", json={"name": "x"}, headers=bob).status_code == 403
    assert "handbook" in {
        c["name"] for c in httpx.get(live.url + "/v1/collections", headers=bob).json()["data"]
    }
    assert "handbook" not in {
        c["name"] for c in httpx.get(live.url + "/v1/collections", headers=alice).json()["data"]
    }
    assert "agentic-rag:handbook" in {
        m["id"] for m in httpx.get(live.url + "/v1/models", headers=bob).json()["data"]
    }
    text = "# Kiln\n\nThe kiln firing temperature is 1280 degrees, code KILN-7781.\n\n窑炉烧制代码是窑炉七七八一。\n"
    uploaded = httpx.post(
        live.url + "/v1/collections/handbook/documents",
        files={"file": ("kiln.md", text.encode(), "text/markdown")},
        headers=bob,
    )
    assert uploaded.status_code == 200, uploaded.text
    assert uploaded.json()["added"] == [f"{uploaded.json()['doc_id']}/kiln.md"]
    refused = httpx.post(
        live.url + "/v1/collections/handbook/documents",
        files={"file": ("k.md", b"# K\n\nx\n")},
        headers=alice,
    )
    assert refused.status_code == 404  # alice may not even see the collection
    messages = [{"role": "user", "content": "What is the kiln firing code?"}]
    reply = _client(live, "bob").chat.completions.create(
        model="agentic-rag-hybrid:handbook", messages=messages
    )
    assert "KILN-7781" in reply.choices[0].message.content
    with pytest.raises(openai.NotFoundError):
        _client(live, "alice").chat.completions.create(model="agentic-rag:handbook", messages=messages)
    default = _client(live, "bob").chat.completions.create(model="agentic-rag", messages=messages)
    assert "KILN-7781" not in default.choices[0].message.content  # collections do not mix
    gone = httpx.delete(
        live.url + f"/v1/collections/handbook/documents/{uploaded.json()['doc_id']}", headers=bob
    )
    assert gone.status_code == 200 and gone.json()["removed"] == [f"{uploaded.json()['doc_id']}/kiln.md"]
    with pytest.raises(openai.InternalServerError, match="index is empty"):  # its only document is gone
        _client(live, "bob").chat.completions.create(model="agentic-rag:handbook", messages=messages)


def test_an_upload_with_groups_is_readable_by_those_groups_only_and_deletes_cleanly(live):
    text = "# Vault\n\nThe night vault combination is NIGHT-5150.\n\n夜间金库的密码是夜枭五一五零。\n"
    uploaded = httpx.post(
        live.url + "/v1/collections/default/documents",
        files={"file": ("vault.md", text.encode())},
        data={"access": "fin"},
        headers=live.headers("admin"),
    ).json()
    question = "What is the night vault combination?"
    assert "NIGHT-5150" in live.ask("carol", question).json()["answer"]
    assert "NIGHT-5150" not in json.dumps(live.ask("bob", question).json())
    httpx.delete(
        live.url + f"/v1/collections/default/documents/{uploaded['doc_id']}", headers=live.headers("admin")
    )
    assert "NIGHT-5150" not in json.dumps(live.ask("carol", question).json())


def test_a_reingest_by_another_process_is_seen_without_restart(live):
    before = httpx.get(live.url + "/readyz", headers=live.headers("admin")).json()["chunks"]
    question = "What is the parking garage gate code?"
    assert "GATE-6021" not in live.ask("dave", question).json()["answer"]
    (live.folders["public"] / "parking.md").write_text(
        "# Parking garage\n\nThe parking garage gate code is GATE-6021.\n", encoding="utf-8"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTIC_RAG_")}
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "main.py"),
            "ingest",
            str(live.folders["public"]),
            "--index",
            str(live.settings.index_dir),
            "--embedder",
            "use-multilingual",
            "--json",
        ],
        env={**env, "PYTHONPATH": str(ROOT)},
        check=True,
        capture_output=True,
        timeout=300,
    )
    after = httpx.get(live.url + "/readyz", headers=live.headers("admin")).json()["chunks"]
    assert after > before
    assert "GATE-6021" in live.ask("dave", question).json()["answer"]


def test_error_bodies_carry_no_paths(live):
    httpx.post(
        live.url + "/v1/collections", json={"name": "empty"}, headers=live.headers("admin"), timeout=60
    )
    for stream in (False, True):
        reply = live.ask("admin", "anything?", collection="empty", stream=stream)
        assert reply.status_code == 503 and reply.json()["error"]["code"] == "index_empty"
        assert str(live.tmp) not in reply.text and "/tmp" not in reply.text


# --- MCP over HTTP: each call runs as its key's owner ----------------------------------------------------
def test_mcp_over_http_runs_as_the_callers_key_with_the_sdk_client(live):
    from tests.test_mcp import call, http_client, run

    async def as_user(who: str, *calls: tuple[str, dict]) -> list:
        async with http_client(live.url, ADMIN if who == "admin" else live.keys[who]) as client:
            return [await call(client, tool, **arguments) for tool, arguments in calls]

    hr_en, hr_zh = QUESTIONS["hr"]
    bob = run(
        as_user(
            "bob",
            ("search", {"query": "payroll vault passphrase", "k": 20}),
            ("search", {"query": "薪资保险库的口令", "mode": "keyword", "k": 20}),
            ("ask", {"question": hr_en}),
            ("ask", {"question": QUESTIONS["eng"][1]}),
            ("list_collections", {}),
            ("index_stats", {}),
            ("ingest", {"paths": [str(live.folders["public"])]}),
        )
    )
    searched_en, searched_zh, asked_hr, asked_eng, listed, stats, ingested = bob
    assert not searched_en[0] and searched_en[1]["results"], searched_en
    assert not searched_zh[0] and not asked_hr[0]
    assert_no_leak("bob", bob)
    assert SECRETS["eng"][1] in asked_eng[1]["answer"]  # his own group's document, in Chinese
    assert not listed[0] and "location" not in listed[1]["collections"][0]
    assert stats[0] and "admin" in stats[1]
    assert ingested[0] and "admin" in ingested[1]
    alice = run(
        as_user(
            "alice",
            ("search", {"query": hr_zh, "k": 5}),
            ("ask", {"question": hr_en, "thread_id": "alice-mcp"}),
        )
    )
    assert SECRETS["hr"][1] in json.dumps(alice[0][1], ensure_ascii=False)
    assert SECRETS["hr"][0] in alice[1][1]["answer"]
    # her thread is hers: bob cannot continue it through MCP either
    (taken,) = run(as_user("bob", ("ask", {"question": "and the Chinese one?", "thread_id": "alice-mcp"})))
    assert taken[0] and "no conversation thread" in taken[1]
    (admin_stats,) = run(as_user("admin", ("index_stats", {})))
    assert not admin_stats[0] and admin_stats[1]["chunks"] > 0
    accept = {"Accept": "application/json, text/event-stream"}
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    for headers in ({}, {"authorization": "Bearer ark_0000000000000000_" + "x" * 43}):
        assert httpx.post(live.url + "/mcp", json=hello, headers={**headers, **accept}).status_code == 401


# --- feedback, per user ----------------------------------------------------------------------------------
def test_feedback_is_listed_per_user_and_reported_per_user(live):
    from app.feedback import feedback_report
    from memory.feedback import open_feedback_store

    def judge(who: str, thread: str, question: str, verdict: str) -> None:
        assert live.ask(who, question, thread_id=thread).status_code == 200
        given = httpx.post(
            live.url + f"/v1/threads/{thread}/feedback", json={"verdict": verdict}, headers=live.headers(who)
        )
        assert given.status_code == 200, given.text

    judge("carol", "carol-fb", QUESTIONS["fin"][1], "good")
    judge("bob", "bob-fb", QUESTIONS["hr"][0], "bad")  # he cannot read it: a miss, to be diagnosed

    def listed(who: str, **params: str) -> httpx.Response:
        return httpx.get(live.url + "/v1/feedback", params=params, headers=live.headers(who))

    carol = listed("carol").json()["data"]
    assert {r["thread_id"] for r in carol} == {"carol-fb"} and {r["author"] for r in carol} == {"carol"}
    assert SECRETS["fin"][1] in json.dumps(carol, ensure_ascii=False)
    bob = listed("bob").json()["data"]
    assert {r["author"] for r in bob} == {"bob"} and "carol-fb" not in {r["thread_id"] for r in bob}
    assert_no_leak("bob", bob)
    refused = listed("bob", user="carol")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "not_admin"
    everyone = {r["author"] for r in listed("admin").json()["data"]}
    assert {"carol", "bob"} <= everyone
    assert {r["author"] for r in listed("admin", user="carol").json()["data"]} == {"carol"}
    # the CLI's report (feedback report --user NAME): that user's records, re-run with their groups only
    with open_feedback_store(checkpoint_db=live.settings.checkpoint_db) as store:
        report = feedback_report(
            store, live.engine.threaded_app, live.engine.context, author="bob", access=USERS["bob"]
        )
    assert report.bad == 1 and report.good == 0
    (diagnosis,) = report.diagnoses
    assert diagnosis.thread_id == "bob-fb" and diagnosis.found_by == [], diagnosis  # no mode reads hr for bob
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTIC_RAG_")}
    command = [sys.executable, str(ROOT / "main.py"), "feedback", "report", "--user", "carol", "--json"]
    command += ["--db", str(live.settings.checkpoint_db), "--index", str(live.settings.index_dir)]
    done = subprocess.run(
        [*command, "--embedder", "use-multilingual"],
        env={**env, "PYTHONPATH": str(ROOT), "AGENTIC_RAG_RERANKER": "none", "AGENTIC_RAG_BRAIN": "offline"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    cli = json.loads(done.stdout)
    assert (cli["good"], cli["bad"]) == (1, 0)  # bob's bad verdict is not carol's


# --- a user who lost a group: old threads and feedback are re-checked --------------------------------------
def test_a_thread_is_rechecked_when_its_user_loses_a_group(live):
    store = UserStore(live.tmp / "data" / "users.sqlite")
    key = store.add("frank", groups="hr").key
    frank = {"authorization": f"Bearer {key}"}
    for lang, question in enumerate(QUESTIONS["hr"]):
        made = live.ask("frank", question, thread_id=f"frank-hr-{lang}", headers=frank)
        assert SECRETS["hr"][lang] in made.json()["answer"]
    given = httpx.post(live.url + "/v1/threads/frank-hr-0/feedback", json={"verdict": "good"}, headers=frank)
    assert given.status_code == 200
    store.revoke("frank")  # frank moves from hr to eng
    frank = {"authorization": f"Bearer {store.add('frank', groups='eng').key}"}
    store.close()
    hr = list(SECRETS["hr"])
    for lang, question in enumerate(QUESTIONS["hr"]):
        shown = httpx.get(live.url + f"/v1/threads/frank-hr-{lang}", headers=frank)
        assert shown.status_code == 200
        text = json.dumps(shown.json(), ensure_ascii=False)
        assert not [s for s in hr if s in text] and question in text and "withheld" in text
    feedback = httpx.get(live.url + "/v1/feedback", headers=frank).json()["data"]
    assert feedback and not [s for s in hr if s in json.dumps(feedback, ensure_ascii=False)]
    # continued: the follow-up is not read against the answer he may no longer read (so "it" is unknown)
    for lang, follow_up in enumerate(("What about it in Chinese?", "那它的英文口令呢？")):
        reply = live.ask("frank", follow_up, thread_id=f"frank-hr-{lang}", headers=frank).json()
        assert not [s for s in hr if s in json.dumps(reply, ensure_ascii=False)]
        assert reply["stop_reason"] == "needs_clarification", reply
    # an admin still reads the thread as it was
    as_admin = httpx.get(live.url + "/v1/threads/frank-hr-0", headers=live.headers("admin")).json()
    assert SECRETS["hr"][0] in json.dumps(as_admin)
