// The agentic-rag web page: chat with streamed steps, numbered citations that open the cited passage
// with its supporting sentences highlighted, the trace, conversations, feedback and (when the server
// offers it) document upload. Plain script, no libraries. Every string that comes from the server or a
// document is put into the page with textContent or createTextNode, never parsed as HTML.
"use strict";

(() => {
  const KEY = "agentic-rag.key";
  const THREAD = "agentic-rag.thread";
  const CITATION = /\[(\d{1,3}(?:\s*[,，]\s*\d{1,3})*)\]/g;
  const $ = (id) => document.getElementById(id);

  // Figures a test or benchmark reads: ms from pressing Ask to the first step, first token, answer.
  const probe = { timings: [], info: null };
  window.agenticRag = probe;

  const state = { thread: localStorage.getItem(THREAD) || newThreadId(), turns: 0, busy: false };

  function newThreadId() {
    const random = window.crypto && crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random()}`;
    return `web-${random}`;
  }

  // el("li", {class: "x", text: "..."}, child, ...): an element whose text is never parsed as markup.
  function el(tag, props = {}, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(props)) {
      if (value === undefined || value === null) continue;
      if (name === "text") node.textContent = String(value);
      else if (name === "class") node.className = value;
      else if (name === "on") for (const [event, fn] of Object.entries(value)) node.addEventListener(event, fn);
      else node.setAttribute(name, String(value));
    }
    for (const child of children) node.append(child);
    return node;
  }

  function headers(json = true) {
    const out = json ? { "content-type": "application/json" } : {};
    const key = localStorage.getItem(KEY);
    if (key) out.authorization = `Bearer ${key}`;
    return out;
  }

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  async function failure(response) {
    let message = `${response.status} ${response.statusText}`;
    try {
      const body = await response.json();
      if (body && body.error && body.error.message) message = body.error.message;
    } catch (_) {
      /* not JSON: keep the status line */
    }
    if (response.status === 401) message = `this server needs an API key: enter it above (${message})`;
    return new ApiError(response.status, message);
  }

  async function api(path, options = {}) {
    const response = await fetch(path, { ...options, headers: { ...headers(!(options.body instanceof FormData)), ...(options.headers || {}) } });
    if (!response.ok) throw await failure(response);
    return response.json();
  }

  function status(text, isError = false) {
    const node = $("server-status");
    node.textContent = text;
    node.classList.toggle("error", isError);
  }

  // --- server info, key, threads ------------------------------------------------------------------

  async function loadInfo() {
    try {
      const info = await api("/v1/info");
      probe.info = info;
      const select = $("mode");
      select.replaceChildren(el("option", { value: "", text: `default mode (${info.mode})` }));
      for (const mode of info.modes) select.append(el("option", { value: mode, text: mode }));
      status(`${info.name} ${info.version} · ${info.brain} brain${info.auth ? " · key required" : ""}`);
      $("upload").hidden = !(info.capabilities && info.capabilities.upload && info.upload_path);
      const threads = await loadThreads();
      if (threads.some((t) => t.thread_id === state.thread) && !$("messages").childElementCount) await openThread(state.thread);
    } catch (error) {
      status(error.message, true);
    }
  }

  async function loadThreads() {
    const list = $("threads");
    const threads = await api("/v1/threads");
    list.replaceChildren(
      ...threads.map((t) =>
        el(
          "li",
          { class: t.thread_id === state.thread ? "current" : "" },
          el("button", { type: "button", class: "thread", title: t.thread_id, text: t.title || t.thread_id, on: { click: () => openThread(t.thread_id) } }),
        ),
      ),
    );
    return threads;
  }

  async function openThread(threadId) {
    try {
      const detail = await api(`/v1/threads/${encodeURIComponent(threadId)}`);
      useThread(threadId);
      const box = $("messages");
      box.replaceChildren();
      let turn = 0;
      for (const [role, text] of detail.turns) {
        if (role === "user") box.append(el("div", { class: "msg user", text }));
        else {
          turn += 1;
          const msg = el("div", { class: "msg assistant" });
          const answer = el("div", { class: "answer" });
          renderCited(answer, text, {});
          msg.append(answer, feedbackBox(threadId, turn));
          box.append(msg);
        }
      }
      state.turns = turn;
      await loadThreads();
    } catch (error) {
      status(error.message, true);
    }
  }

  function useThread(threadId) {
    state.thread = threadId;
    localStorage.setItem(THREAD, threadId);
  }

  // --- answers: citations, sources, trace, passage ------------------------------------------------

  // The answer text with each [n] marker as buttons opening passage n.
  function renderCited(container, text, evidence) {
    container.replaceChildren();
    let last = 0;
    for (const match of text.matchAll(CITATION)) {
      container.append(document.createTextNode(text.slice(last, match.index)));
      const marker = el("span", { class: "marker" }, "[");
      match[1].split(/\s*[,，]\s*/).forEach((n, i) => {
        if (i) marker.append(", ");
        const ev = evidence[Number(n)];
        marker.append(
          ev
            ? el("button", { type: "button", class: "cite", "data-n": n, title: ev.source, text: n, on: { click: () => openPassage(ev) } })
            : el("span", { class: "cite-dead", text: n }),
        );
      });
      marker.append("]");
      container.append(marker);
      last = match.index + match[0].length;
    }
    container.append(document.createTextNode(text.slice(last)));
  }

  function openPassage(ev) {
    $("passage").hidden = false;
    $("passage-title").textContent = `[${ev.number}] ${ev.source}`;
    $("passage-heading").textContent = ev.heading || "";
    const box = $("passage-text");
    box.replaceChildren();
    let cursor = 0;
    for (const [start, end] of ev.highlights || []) {
      if (start < cursor) continue;
      box.append(document.createTextNode(ev.text.slice(cursor, start)));
      box.append(el("mark", { text: ev.text.slice(start, end) }));
      cursor = end;
    }
    box.append(document.createTextNode(ev.text.slice(cursor)));
    const first = box.querySelector("mark");
    if (first) first.scrollIntoView({ block: "nearest" });
  }

  function sourcesList(result, evidence) {
    const list = el("ol", { class: "sources" });
    for (const cite of result.citations) {
      const ev = evidence[cite.number] || { number: cite.number, source: cite.source, heading: cite.heading, text: cite.snippet || "", highlights: [] };
      const label = `[${cite.number}] ${cite.source}${cite.heading ? ` — ${cite.heading}` : ""}`;
      list.append(el("li", {}, el("button", { type: "button", class: "source", text: label, on: { click: () => openPassage(ev) } })));
    }
    return list;
  }

  function traceBox(result) {
    const steps = result.trace || [];
    const routed = steps.find((s) => s.node === "analyze_query");
    const retries = steps.filter((s) => s.decision === "retry").length;
    const route = `${result.mode}${routed && routed.detail ? ` (${routed.detail})` : ""}`;
    const summary = `Trace: ${route} · ${retries} ${retries === 1 ? "retry" : "retries"} · stop: ${result.stop_reason || "-"} · ${Math.round(result.latency_ms)} ms · ${result.model_calls} model calls`;
    const table = el("table", { class: "trace" }, el("tr", {}, ...["step", "decision", "detail", "ms"].map((h) => el("th", { text: h }))));
    for (const s of steps) {
      table.append(el("tr", {}, el("td", { text: s.node }), el("td", { text: s.decision }), el("td", { text: s.detail || s.query || "" }), el("td", { class: "num", text: Math.round(s.ms || 0) })));
    }
    const facts = el(
      "dl",
      { class: "trace-facts" },
      el("dt", { text: "route" }), el("dd", { class: "route", text: route }),
      el("dt", { text: "retries" }), el("dd", { class: "retries", text: retries }),
      el("dt", { text: "stop reason" }), el("dd", { class: "stop", text: result.stop_reason || "-" }),
      el("dt", { text: "total" }), el("dd", { class: "total", text: `${Math.round(result.latency_ms)} ms` }),
    );
    return el("details", { class: "trace-box" }, el("summary", { text: summary }), facts, table);
  }

  function feedbackBox(threadId, turn) {
    const note = el("textarea", { class: "note", rows: 2, placeholder: "What was good or wrong? (optional) / 备注", hidden: "" });
    const send = el("button", { type: "submit", class: "send-feedback", text: "Send feedback", hidden: "" });
    const said = el("span", { class: "feedback-status muted", role: "status" });
    let verdict = null;
    const form = el("form", { class: "feedback" });
    const thumb = (value, label, glyph) =>
      el("button", {
        type: "button", class: `thumb ${value}`, "aria-label": label, "aria-pressed": "false", text: glyph,
        on: {
          click: (event) => {
            verdict = value;
            for (const b of form.querySelectorAll(".thumb")) b.setAttribute("aria-pressed", String(b === event.currentTarget));
            note.hidden = false;
            send.hidden = false;
            note.focus();
          },
        },
      });
    form.append(thumb("good", "good answer", "✓ good / 好"), thumb("bad", "bad answer", "✗ bad / 差"), note, send, said);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (!verdict) return;
      try {
        const saved = await api(`/v1/threads/${encodeURIComponent(threadId)}/feedback`, {
          method: "POST",
          body: JSON.stringify({ verdict, note: note.value, turn }),
        });
        said.textContent = `Thanks: feedback #${saved.id} recorded (${saved.verdict}) / 已记录`;
        note.hidden = true;
        send.hidden = true;
      } catch (error) {
        said.textContent = error.message;
      }
    });
    return form;
  }

  // --- asking: server-sent events from /v1/ask -------------------------------------------------------

  async function* sseEvents(response) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let name = "message";
        const data = [];
        for (const line of frame.split("\n")) {
          if (line.startsWith("event: ")) name = line.slice(7);
          else if (line.startsWith("data: ")) data.push(line.slice(6));
        }
        if (data.length) yield [name, JSON.parse(data.join("\n"))];
      }
      if (done) return;
    }
  }

  async function ask(question) {
    const started = performance.now();
    const timing = { question, firstStep: null, firstToken: null, answer: null };
    const box = $("messages");
    box.append(el("div", { class: "msg user", text: question }));
    const steps = el("ol", { class: "steps", "aria-label": "steps" });
    const answer = el("div", { class: "answer streaming" });
    const msg = el("div", { class: "msg assistant" }, steps, answer);
    box.append(msg);
    msg.scrollIntoView({ block: "end" });
    const threadId = state.thread;
    const body = { question, thread_id: threadId, stream: true };
    if ($("mode").value) body.mode = $("mode").value;
    let raw = "";
    try {
      const response = await fetch("/v1/ask", { method: "POST", headers: headers(), body: JSON.stringify(body) });
      if (!response.ok) throw await failure(response);
      for await (const [name, data] of sseEvents(response)) {
        const now = Math.round(performance.now() - started);
        if (name === "step") {
          if (timing.firstStep === null) timing.firstStep = now;
          steps.append(el("li", { class: "step", text: `${data.node} · ${data.decision}${data.detail ? ` · ${data.detail}` : ""} · ${Math.round(data.ms || 0)} ms` }));
        } else if (name === "token") {
          if (timing.firstToken === null) timing.firstToken = now;
          raw += data.text;
          answer.textContent = raw;
        } else if (name === "answer") {
          timing.answer = now;
          showAnswer(msg, answer, data, threadId);
        } else if (name === "error") {
          throw new ApiError(0, data.error ? data.error.message : "the question failed");
        }
      }
    } catch (error) {
      msg.append(el("p", { class: "error", role: "alert", text: error.message }));
    } finally {
      answer.classList.remove("streaming");
      probe.timings.push(timing);
      msg.dataset.done = "true";
    }
  }

  function showAnswer(msg, answer, result, threadId) {
    const evidence = {};
    for (const ev of result.evidence || []) evidence[ev.number] = ev;
    renderCited(answer, result.answer, evidence);
    if (result.insufficient) msg.append(el("p", { class: "muted", text: "The documents do not fully answer this. / 文档未能完全回答该问题。" }));
    for (const warning of result.warnings || []) msg.append(el("p", { class: "warning", text: warning }));
    if (result.citations.length) msg.append(sourcesList(result, evidence));
    msg.append(traceBox(result));
    state.turns += 1;
    msg.append(feedbackBox(threadId, state.turns));
    loadThreads().catch(() => {});
  }

  // --- upload (only when the server advertises it) ---------------------------------------------------

  async function upload(event) {
    event.preventDefault();
    const files = $("upload-file").files;
    const collection = $("upload-collection").value.trim() || "default";
    const path = probe.info.upload_path.replace(/\{[^}]+\}/, encodeURIComponent(collection));
    const said = $("upload-status");
    for (const file of files) {
      const form = new FormData();
      form.append("file", file, file.name);
      try {
        await api(path, { method: "POST", body: form });
        said.textContent = `${file.name}: added to ${collection}`;
      } catch (error) {
        said.textContent = `${file.name}: ${error.message}`;
      }
    }
  }

  // --- wiring -------------------------------------------------------------------------------------------

  function start() {
    $("api-key").value = localStorage.getItem(KEY) || "";
    $("key-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const key = $("api-key").value.trim();
      if (key) localStorage.setItem(KEY, key);
      else localStorage.removeItem(KEY);
      loadInfo();
    });
    $("ask-form").addEventListener("submit", async (event) => {
      event.preventDefault();
      const question = $("question").value.trim();
      if (!question || state.busy) return;
      state.busy = true;
      $("ask").disabled = true;
      $("question").value = "";
      try {
        await ask(question);
      } finally {
        state.busy = false;
        $("ask").disabled = false;
      }
    });
    $("question").addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        $("ask-form").requestSubmit();
      }
    });
    $("new-thread").addEventListener("click", () => {
      useThread(newThreadId());
      state.turns = 0;
      $("messages").replaceChildren();
      loadThreads().catch(() => {});
    });
    $("passage-close").addEventListener("click", () => ($("passage").hidden = true));
    $("upload-form").addEventListener("submit", upload);
    loadInfo();
  }

  start();
})();
