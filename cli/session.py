"""The interactive session: `python main.py` (or `python main.py session`).

Each question streams the agent's steps as they happen, then the answer with numbered citations.
Conversations are checkpointed per thread, so follow-ups use the history and the last conversation
resumes after a restart. Ctrl-C cancels the running question (the thread is rolled back to before it),
never the session. With stdin not a terminal it reads one question per line, answers each in plain
text and exits at end of input, so it can be scripted; such a run starts a new thread (unless
``--thread`` names one) and leaves the remembered one alone, so one-shot questions are never read in the
light of an old conversation. The remembered thread is kept per index.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import queue
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from cli.ask import render_answer
from cli.common import add_common, make_console, neutralised, show_rerank_progress, shown
from core.command import cli_name, command
from core.trace import Decision, TraceEvent
from nodes.policy import MODES

PROMPT = "» "
HELP: list[tuple[str, str]] = [
    ("/new", "start a new conversation thread"),
    ("/threads", "list conversation threads (* marks the current one)"),
    ("/switch ID", "continue another thread (a unique prefix of its id is enough)"),
    ("/sources", "the passages behind the last answer"),
    ("/trace", "every step the agent took for the last answer"),
    ("/mode [MODE]", f"show or set the retrieval mode ({', '.join(MODES)})"),
    ("/good", "mark the last answer good"),
    ("/bad [NOTE]", 'mark the last answer bad ("gold: ANSWER" in the note gives the right one)'),
    ("/help", "this list"),
    ("/quit", "leave (Ctrl-D too); Ctrl-C cancels a running question"),
]
RETRIEVE_LABEL = {"retrieve_vector": "vector", "retrieve_keyword": "keyword", "retrieve_hybrid": "hybrid"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("session", help="interactive session (the default without a command)")
    p.add_argument("--mode", choices=MODES, help="retrieval mode to start with (default: agentic)")
    p.add_argument("--thread", help="continue (or start) this conversation thread")
    p.add_argument(
        "--new",
        action="store_true",
        help="start a new thread instead of resuming the last one (piped input always starts one)",
    )
    p.add_argument("--brain", choices=["auto", "offline", "llm"], help="force the offline or LLM brain")
    add_common(p, json_flag=False)
    p.set_defaults(handler=run_session)


# --- progress -----------------------------------------------------------------------------------------


def step_label(event: TraceEvent) -> str | None:
    """A short, human label for one trace event, or None for steps not worth a word."""
    node, decision = event.node, event.decision
    if node == "contextualize":
        return f'follow-up: "{event.detail}"' if decision is Decision.FOLLOW_UP else None
    if node == "analyze_query":
        return "analysing"
    if node in RETRIEVE_LABEL:
        return RETRIEVE_LABEL[node] + (" + vector" if decision is Decision.TOPPED_UP else "")
    if node == "retrieve_multi_hop":
        hops = event.counts.get("sub_queries", 0), event.counts.get("bridge_hops", 0)
        return f"multi-hop ({hops[0]} sub-queries, {hops[1]} bridge hops)"
    if node == "rerank":
        return None if decision is Decision.SKIPPED else "rerank"
    if node == "evaluate":
        return {
            Decision.SUFFICIENT: "evaluate: sufficient",
            Decision.RETRY: "evaluate: insufficient, retry",
            Decision.STOPPED: f"evaluate: insufficient ({event.detail})",
        }.get(decision)
    if node == "rewrite_query":
        return f'rewrite: "{event.query}"' if event.query else "rewrite"
    if node == "generate":
        return "answer"
    if node == "verify":
        supported, sentences = event.counts.get("supported", 0), event.counts.get("sentences", 0)
        removed = event.counts.get("unsupported", 0) if decision is Decision.REMOVED_UNSUPPORTED else 0
        return f"verify: {supported}/{sentences}" + (f"; removed {removed}" if removed else "")
    return None


def step_labels(update: dict[str, Any]) -> list[str]:
    """Labels for every node update in one streamed ``updates`` chunk (parallel nodes come together)."""
    labels = []
    for node_update in update.values():
        if not isinstance(node_update, dict):
            continue
        for event in node_update.get("trace") or []:
            if isinstance(event, TraceEvent):
                label = step_label(event)
                if label:
                    labels.append(label)
    return labels


def answer_token(message: tuple[Any, dict[str, Any]]) -> str:
    """The text of one streamed model token, when it belongs to the answer the generate node writes."""
    chunk, metadata = message
    if metadata.get("langgraph_node") != "generate":
        return ""
    return getattr(chunk, "text", "") or ""


def written_answer(update: dict[str, Any]) -> tuple[str, str] | None:
    """(answer, why the model's own answer was not used) when ``update`` is the generate node's; "" as
    the reason when the model's answer passed the check. None for other updates."""
    generated = update.get("generate")
    if not isinstance(generated, dict) or "answer" not in generated:
        return None
    reasons = [e.fallback_reason for e in generated.get("trace") or [] if getattr(e, "fallback_reason", "")]
    return str(generated["answer"] or ""), "; ".join(reasons)


def replaced_notice(reason: str) -> str:
    """The one line shown above the offline answer that replaced the model's streamed one."""
    return f"the model's answer was not used ({reason}); the offline answer follows"


# --- one run in a worker thread -----------------------------------------------------------------------


class _Run:
    """Stream one graph run in a worker thread so Ctrl-C in the main thread stays responsive.

    Cancelling stops the run at the next step boundary, where the checkpoint is consistent.
    """

    def __init__(self, stream: Callable[[], Iterator[Any]]) -> None:
        self._stream = stream
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.cancelled = threading.Event()
        self.worker = threading.Thread(target=self._pump, name="agentic-rag-run", daemon=True)
        self.worker.start()

    def _pump(self) -> None:
        iterator = self._stream()
        try:
            for update in iterator:
                if self.cancelled.is_set():
                    break
                self.events.put(("update", update))
        except BaseException as exc:
            self.events.put(("error", exc))
        finally:
            with contextlib.suppress(Exception):
                iterator.close()  # type: ignore[attr-defined]
            self.events.put(("done", None))

    def updates(self) -> Iterator[Any]:
        """Yield updates until the run ends; re-raise the run's exception in the caller's thread."""
        while True:
            try:
                kind, payload = self.events.get(timeout=0.1)
            except queue.Empty:
                continue
            if kind == "update":
                yield payload
            elif kind == "error":
                raise payload
            else:
                return

    def cancel(self, wait_s: float | None = None) -> bool:
        """Ask the run to stop and wait for it; False when it is still busy after ``wait_s``."""
        self.cancelled.set()
        self.worker.join(wait_s)
        return not self.worker.is_alive()


# --- the session ----------------------------------------------------------------------------------------


def new_thread_id() -> str:
    return uuid.uuid4().hex[:12]


def last_thread_file(checkpoint_db: Path, index_dir: Path) -> Path:
    """Where the last conversation over one index is kept: beside the checkpoint database it belongs to,
    one file per index (a conversation about one document set means little over another)."""
    path = Path(checkpoint_db)
    key = hashlib.sha1(str(Path(index_dir).resolve()).encode()).hexdigest()[:12]
    return path.with_name(f"{path.name}.last-thread-{key}")


@dataclass
class Session:
    app: Any
    context: Any
    saver: Any
    console: Console
    state_file: Path
    mode: str
    interactive: bool
    thread_id: str = field(default_factory=new_thread_id)
    last: Any = None  # AskResult of the latest answer on this thread
    store_identity: tuple[int, int] | None = None  # the SQLite checkpoint file this session opened
    warn: Console = field(default_factory=lambda: Console(stderr=True, highlight=False, soft_wrap=True))
    feedback: Any = None  # FeedbackStore for /good and /bad

    # -- threads --

    def has_checkpoints(self, thread_id: str) -> bool:
        return self.saver.get_tuple({"configurable": {"thread_id": thread_id}}) is not None

    def remember(self) -> None:
        if not self.interactive:
            return  # scripted runs do not move where the next interactive session resumes
        try:
            self.state_file.parent.mkdir(parents=True, exist_ok=True)
            self.state_file.write_text(self.thread_id + "\n", encoding="utf-8")
        except OSError as exc:
            self.console.print(f"[yellow]could not remember the thread in {self.state_file}: {exc}[/]")

    def saved_thread(self) -> str | None:
        try:
            saved = self.state_file.read_text(encoding="utf-8").strip()
        except OSError:
            return None
        return saved if saved and self.has_checkpoints(saved) else None

    def load_last(self) -> None:
        """The thread's latest answer (for /sources and /trace), read back from its checkpoint."""
        from graph.run import result_from_state

        state = self.app.get_state({"configurable": {"thread_id": self.thread_id}}).values
        self.last = (
            result_from_state(state.get("question", ""), state, time.perf_counter(), self.thread_id)
            if state.get("answer") or state.get("error")
            else None
        )

    def turns(self) -> int:
        from memory.threads import conversation

        return len(conversation(self.saver, self.thread_id))

    # -- asking --

    def ask(self, question: str) -> None:
        """One turn, holding the thread's lock so another process's turn on it cannot interleave."""
        from memory.checkpointer import CheckpointerError, require_same_store
        from memory.thread_lock import thread_lock

        settings = self.context.settings
        try:
            require_same_store(settings.checkpoint_db, self.store_identity, "session")
            with thread_lock(
                self.thread_id, sqlite_path=settings.checkpoint_db, postgres_url=settings.postgres_url
            ):
                self._ask(question)
        except CheckpointerError as exc:
            self.console.print(f"[red]error: {shown(str(exc))}[/]")

    def _ask(self, question: str) -> None:
        from langgraph.errors import GraphRecursionError

        from graph.run import build_input, question_budget_for, result_from_state, run_config, turn_durability
        from providers.brain.budget import question_budget

        settings = self.context.settings
        config = run_config(self.context, self.thread_id)
        before = self.app.get_state(config)
        started = time.perf_counter()
        budget = question_budget_for(self.context)

        def stream() -> Iterator[tuple[str, Any]]:
            with question_budget(budget):
                yield from self.app.stream(
                    build_input(question, self.mode, None),
                    config=config,
                    context=self.context,
                    stream_mode=["updates", "messages", "values"],
                    durability=turn_durability(self.app),
                )

        run = _Run(stream)
        printed = 0
        streamed = ""
        checked = ""  # the answer as the independent check left it, once shown in place of the tokens
        live: Live | None = None
        final: dict[str, Any] = {}
        try:
            for mode, payload in run.updates():
                if mode == "values":
                    final = payload  # the full state (checkpoints keep only the conversation)
                    continue
                if mode == "messages":
                    token = answer_token(payload)
                    if token:
                        if live is None:
                            self._end_progress(printed)
                            printed = 0
                            live = self._live_answer()
                        streamed += token
                        live.update(Text(neutralised(streamed)), refresh=True)
                    continue
                written = written_answer(payload)
                if written is not None and live is not None:
                    # The model's tokens were only a preview: the check has now accepted or replaced them.
                    live.stop()
                    live = None
                    checked, reason = written
                    if reason:
                        self.console.print(f"[yellow]{shown(replaced_notice(reason))}[/]", highlight=False)
                    self.console.print(shown(checked), highlight=False)
                for label in step_labels(payload):
                    sep = "  " if printed == 0 else " -> "
                    self.console.print(f"[dim]{sep}{shown(label)}[/]", end="", soft_wrap=True)
                    printed += 1
        except KeyboardInterrupt:
            self._cancel(run, before, printed)
            return
        except GraphRecursionError:
            self._end_progress(printed)
            self.console.print(
                f"[red]stopped after {settings.recursion_limit} steps (AGENTIC_RAG_RECURSION_LIMIT) "
                "without an answer[/]"
            )
            return
        except Exception as exc:
            self._end_progress(printed)
            self.console.print(f"[red]error: {shown(str(exc) or type(exc).__name__)}[/]")
            return
        finally:
            if live is not None:
                live.stop()  # transient: a cut-off preview leaves the screen with it
        self._end_progress(printed)
        for warning in budget.warnings:
            self.warn.print(f"warning: {shown(warning)}")
        state = final or self.app.get_state(config).values
        self.last = result_from_state(question, state, started, self.thread_id)
        self.last.warnings = budget.warnings
        self.remember()
        render_answer(self.console, self.last, streamed=checked)

    def _live_answer(self) -> Live:
        """The model's answer tokens as a preview, redrawn in place on a terminal and erased when the
        check has spoken (``transient``); elsewhere (a pipe, a file) nothing shows until then."""
        live = Live(Text(""), console=self.console, transient=True, auto_refresh=False)
        live.start()
        return live

    def _end_progress(self, printed: int) -> None:
        if printed:
            self.console.print()

    def _cancel(self, run: _Run, before: Any, printed: int) -> None:
        self._end_progress(printed)
        self.console.print("[yellow]cancelling…[/]")
        try:
            stopped = run.cancel()
        except KeyboardInterrupt:
            stopped = run.cancel(0)
        if not stopped:
            # The step still running may write to this thread later: carry on in a fresh one.
            self.thread_id = new_thread_id()
            self.last = None
            self.console.print(f"[yellow]cancelled; continuing in a new thread {self.thread_id}[/]")
            return
        from memory.threads import delete_thread

        if before.config.get("configurable", {}).get("checkpoint_id"):
            self.app.update_state(before.config, None, as_node="__copy__")  # the log follows it back
        else:
            delete_thread(self.saver, self.thread_id)  # checkpoints and logged turns alike
        self.console.print("[yellow]cancelled (the question was not added to the conversation)[/]")

    # -- commands --

    def command(self, line: str) -> bool:
        """Run one /command; False means leave the session."""
        name, _, arg = line.strip().partition(" ")
        name, arg = name.lower(), arg.strip()
        if name in ("/quit", "/exit", "/q"):
            return False
        handlers: dict[str, Callable[[str], None]] = {
            "/new": self.cmd_new,
            "/threads": self.cmd_threads,
            "/switch": self.cmd_switch,
            "/sources": self.cmd_sources,
            "/trace": self.cmd_trace,
            "/mode": self.cmd_mode,
            "/good": lambda arg: self.cmd_verdict("good", arg),
            "/bad": lambda arg: self.cmd_verdict("bad", arg),
            "/help": self.cmd_help,
            "/?": self.cmd_help,
        }
        handler = handlers.get(name)
        if handler is None:
            self.console.print(f"unknown command {shown(name)}; /help lists the commands")
        else:
            handler(arg)
        return True

    def cmd_new(self, _: str) -> None:
        self.thread_id = new_thread_id()
        self.last = None
        self.console.print(f"new thread {self.thread_id}")

    def cmd_threads(self, _: str) -> None:
        from cli.threads import threads_table
        from memory.threads import list_threads

        infos = list_threads(self.saver)
        if not infos:
            self.console.print("no conversation threads yet")
            return
        self.console.print(threads_table(infos, current=self.thread_id))
        if not any(info.thread_id == self.thread_id for info in infos):
            self.console.print(f"current: {self.thread_id} (new, no questions yet)")

    def cmd_switch(self, arg: str) -> None:
        from cli.threads import resolve_thread_id
        from memory.threads import ThreadNotFoundError, show_thread

        if not arg:
            self.console.print("usage: /switch ID (see /threads)")
            return
        try:
            self.thread_id = resolve_thread_id(self.saver, arg)
        except ThreadNotFoundError as exc:
            self.console.print(f"[red]{shown(str(exc))}[/]")
            return
        self.remember()
        self.load_last()
        detail = show_thread(self.saver, self.thread_id)
        self.console.print(f"switched to thread {self.thread_id} ({self.turns()} questions so far)")
        for role, text in detail.turns[-2:]:
            who = "you" if role == "user" else "agent"
            self.console.print(f"[dim]{who}: {shown(text[:200])}[/]")

    def cmd_sources(self, _: str) -> None:
        if self.last is None or not self.last.passages:
            self.console.print("no sources yet: ask a question first")
            return
        cited = {c.number for c in self.last.citations}
        for passage in self.last.passages:
            heading = f" — {passage.heading}" if passage.heading else ""
            mark = "" if passage.number in cited else " [dim](not cited)[/]"
            self.console.print(
                f"[bold][{passage.number}][/] {shown(passage.source + heading)}{mark}", highlight=False
            )
            self.console.print(shown(self.passage_text(passage).strip()), highlight=False)
            self.console.print()

    def passage_text(self, passage: Any) -> str:
        """The passage's text; a conversation resumed from a checkpoint has only its id, so the index has it."""
        if passage.text:
            return passage.text
        found = self.context.retrievers.index.chunks_by_id([passage.chunk_id])
        return found[passage.chunk_id].text if found else "(no longer in the index)"

    def cmd_trace(self, _: str) -> None:
        if self.last is None or not self.last.trace:
            self.console.print("no trace yet: ask a question first")
            return
        last = self.last
        self.console.print(f"question: {shown(last.question)}", highlight=False)
        if last.standalone_question and last.standalone_question != last.question:
            self.console.print(f"standalone: {shown(last.standalone_question)}", highlight=False)
        table = Table(show_edge=False, pad_edge=False)
        for column in ("#", "node", "decision", "details", "ms", "model calls"):
            table.add_column(column)
        for number, event in enumerate(last.trace, start=1):
            counts = ", ".join(f"{k}={v}" for k, v in event.counts.items())
            parts = (
                event.query and f'query "{event.query}"',
                counts,
                event.fallback_reason and f"fallback: {event.fallback_reason}",
            )
            table.add_row(
                str(number),
                event.node,
                shown(event.decision.value + (f": {event.detail}" if event.detail else "")),
                shown("; ".join(part for part in parts if part)),
                f"{event.ms:.0f}",
                str(event.model_calls),
            )
        self.console.print(table)
        self.console.print(
            f"stop reason: {last.stop_reason or '-'} · mode: {last.mode or self.mode} · "
            f"{last.latency_ms:.0f} ms · {last.model_calls} model calls",
            highlight=False,
        )

    def cmd_mode(self, arg: str) -> None:
        if not arg:
            self.console.print(f"mode: {self.mode} (choose from {', '.join(MODES)})")
        elif arg not in MODES:
            self.console.print(f"[red]unknown mode {shown(arg)!r}; choose one of {', '.join(MODES)}[/]")
        else:
            self.mode = arg
            self.console.print(f"mode: {self.mode}")

    def cmd_verdict(self, verdict: str, note: str) -> None:
        from app.feedback import add_feedback
        from memory.feedback import FeedbackError

        if self.feedback is None:
            self.console.print("[red]feedback is not available in this session[/]")
            return
        try:
            record = add_feedback(self.feedback, self.app, self.thread_id, verdict, note=note)
        except FeedbackError as exc:
            self.console.print(f"[red]{shown(str(exc))}[/]")
            return
        self.console.print(f"recorded {verdict} for turn {record.turn}: {shown(record.question[:80])}")

    def cmd_help(self, _: str) -> None:
        table = Table(show_header=False, show_edge=False, pad_edge=False, box=None)
        for name, text in HELP:
            table.add_row(f"[bold]{shown(name)}[/]", text)
        self.console.print(table)
        self.console.print("Anything else is a question; follow-ups use the conversation so far.")

    # -- the loop --

    def handle(self, line: str) -> bool:
        line = line.strip()
        if not line:
            return True
        if (line.startswith("/") and line[1:2].isalpha()) or line == "/?":
            return self.command(line)
        if not self.interactive:
            self.console.print(f"\n{PROMPT}{shown(line)}", highlight=False)
        self.ask(line)
        return True


def _prompt(console: Console) -> str:
    """The input prompt; colour codes are wrapped in \\001/\\002 so readline measures the width right."""
    if console.is_terminal and console.color_system:
        return f"\001\033[1;36m\002{PROMPT}\001\033[0m\002"
    return PROMPT


def listen_for_ctrl_c() -> None:
    """Ctrl-C at the terminal cancels the running question (``_Run``), even when the session was
    started with SIGINT ignored: Python then installs no handler of its own, a parent that ignored it
    (a launcher, a test runner) passes that on, and Ctrl-C would do nothing at all."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _interactive_lines(console: Console) -> Iterator[str]:
    """Lines typed at the prompt; Ctrl-C clears the line, Ctrl-D (EOF) ends the session."""
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401  (line editing and history for input())
    prompt = _prompt(console)
    while True:
        try:
            yield input(prompt)
        except KeyboardInterrupt:
            console.print()
            continue
        except EOFError:
            console.print()
            return


def _piped_lines() -> Iterator[str]:
    yield from sys.stdin


def _utf8_streams() -> None:
    """Never crash on a byte the terminal's encoding cannot carry (Chinese on a misconfigured locale)."""
    for stream in (sys.stdin, sys.stdout):
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors="replace")  # type: ignore[union-attr]


def run_session(args: argparse.Namespace) -> int:
    from config import SettingsError, load_settings
    from memory.checkpointer import CheckpointerError
    from retrievers.index import IndexError_
    from retrievers.store import store_exists

    _utf8_streams()
    interactive = sys.stdin.isatty()
    console = make_console(highlight=False)
    errors = make_console(stderr=True, highlight=False)
    try:
        settings = load_settings(
            index_dir=getattr(args, "index_dir", None),
            embedder=getattr(args, "embedder", None),
            brain=getattr(args, "brain", None),
            store=getattr(args, "store", None),
        )
        exists = store_exists(settings)
    except (SettingsError, IndexError_) as exc:
        errors.print(f"error: {shown(str(exc))}")
        return 2
    folder = Path(settings.index_dir) if settings.store == "local" else settings.milvus_uri
    if not exists:
        flag = "" if getattr(args, "index_dir", None) is None else f" --index {folder}"
        errors.print(
            f"No index in {folder} yet. Create one from your documents first:\n"
            f"  {command('ingest PATH')}{flag}\n"
            f"then run {cli_name()} again (or set AGENTIC_RAG_INDEX_DIR to an existing index)."
        )
        return 1
    try:
        return _serve(args, settings, console, interactive)
    except (IndexError_, CheckpointerError, SettingsError) as exc:
        errors.print(f"error: {shown(str(exc))}")
        return 2
    except KeyboardInterrupt:
        errors.print("interrupted")
        return 130


def _serve(args: argparse.Namespace, settings: Any, console: Console, interactive: bool) -> int:
    from app.wiring import build_context
    from graph.builder import build_graph
    from memory.checkpointer import open_checkpointer, sqlite_identity
    from memory.feedback import open_feedback_store
    from nodes.state import CHECKPOINT_TYPES
    from providers.brain import offline_brain
    from retrievers.index import require_chunks

    context = build_context(settings)
    require_chunks(context.retrievers.index)
    if interactive:
        show_rerank_progress(context.reranker)
        listen_for_ctrl_c()
    problem = endpoint_problem(settings)
    if problem:
        # Once per session, not once per question: the offline brain answers until the next start.
        Console(stderr=True, highlight=False, soft_wrap=True).print(
            f"warning: {shown(problem)}; this session uses the offline brain"
        )
        context = dataclasses.replace(context, brain=offline_brain(settings.sufficiency_threshold))
    with (
        open_checkpointer(
            sqlite_path=settings.checkpoint_db,
            postgres_url=settings.postgres_url,
            allowed_types=CHECKPOINT_TYPES,
        ) as saver,
        open_feedback_store(
            checkpoint_db=settings.checkpoint_db, postgres_url=settings.postgres_url
        ) as store,
    ):
        session = Session(
            store_identity=None if settings.postgres_url else sqlite_identity(settings.checkpoint_db),
            app=build_graph(
                checkpointer=saver, max_checkpoints_per_thread=settings.max_checkpoints_per_thread
            ),
            context=context,
            saver=saver,
            console=console,
            state_file=last_thread_file(settings.checkpoint_db, settings.index_dir),
            mode=getattr(args, "mode", None) or settings.mode,
            interactive=interactive,
            feedback=store,
        )
        resumed = getattr(args, "thread", None)
        if not resumed and interactive and not getattr(args, "new", False):
            resumed = session.saved_thread()
        if resumed:
            session.thread_id = resumed
            session.load_last()
        if interactive:
            _banner(session, settings, resumed)
        lines = _interactive_lines(console) if interactive else _piped_lines()
        for line in lines:
            try:
                if not session.handle(line):
                    break
            except KeyboardInterrupt:
                if not interactive:
                    return 130
                console.print("\ninterrupted")
    return 0


def endpoint_problem(settings: Any) -> str:
    """What is wrong with the configured LLM endpoint ("" when none is configured or it is usable)."""
    if not settings.llm_configured:
        return ""
    from providers.endpoint import check_endpoint

    return check_endpoint(settings.openai_base_url, settings.openai_api_key, settings.llm_model).problem


def _banner(session: Session, settings: Any, resumed: str | None) -> None:
    brain = session.context.brain.name
    index = session.context.retrievers.index
    console = session.console
    console.print(
        f"[bold]agentic-rag[/] · index {shown(index.location)} ({index.count()} chunks) · "
        f"brain: {brain} · mode: {session.mode}"
    )
    if resumed and session.has_checkpoints(resumed):
        console.print(
            f"resuming thread {resumed} ({session.turns()} questions so far); /new starts a fresh one"
        )
    else:
        console.print(f"new thread {session.thread_id}")
    console.print("[dim]Ask in English or Chinese. /help lists the commands, /quit leaves.[/]")
    from cli.suggestions import suggest_questions

    questions = suggest_questions(index.iter_chunks())
    if questions:
        console.print("[dim]Try:[/] " + "  ·  ".join(shown(q) for q in questions), highlight=False)
