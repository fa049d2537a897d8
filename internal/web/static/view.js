// The transcript of one session: built from session/update notifications (live, or
// replayed by session/attach) or, when the replay is no longer kept, from
// session/messages. Text is rendered at most once per animation frame, so a fast
// stream costs one render per frame, not one per chunk.
import { esc, markdown, diffHTML } from "./md.js";

// onFrame runs fn at the next animation frame, or after 100 ms when no frame comes
// (a hidden tab, a browser that throttles frames), whichever is first.
export function onFrame(fn) {
  let done = false;
  const run = () => {
    if (!done) {
      done = true;
      fn();
    }
  };
  requestAnimationFrame(run);
  setTimeout(run, 100);
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function summary(input) {
  if (!input || typeof input !== "object") return "";
  const s = input.command || input.path || input.query || input.question || JSON.stringify(input);
  return String(s).length > 120 ? String(s).slice(0, 117) + "…" : String(s);
}

// A prompt of more lines than foldLines shows that many, the rest folded.
const foldLines = 200;
// A streaming reply renders again at most this much of its end each frame, and
// draws at most frameBytes more of itself: a frame's markdown, layout and paint
// stay a few milliseconds of CPU, so that a busy machine that takes the CPU from
// the tab mid-task still leaves no task near 100 ms (with 4 and 16 KiB the
// longest tasks of a 20,000-chunk stream were 1.5 times as long on a loaded
// machine). A live stream comes far slower than 4 KiB a frame; a burst (a replay,
// a catch-up) is drawn over a few frames.
const tailBytes = 1024;
const frameBytes = 4096;

// settle moves a markdown block's text, up to its last line before upTo that ends
// outside a code fence, from the re-rendered tail to the final part.
function settle(b, upTo) {
  let cut = b.cut;
  let fence = false;
  let at = b.cut;
  for (let i = b.text.indexOf("\n", at); i >= 0 && i < upTo; i = b.text.indexOf("\n", at)) {
    if (/^\s*```/.test(b.text.slice(at, i))) fence = !fence;
    at = i + 1;
    if (!fence) cut = at;
  }
  if (cut === b.cut) return;
  const seg = document.createElement("div");
  seg.className = "seg";
  seg.innerHTML = markdown(b.text.slice(b.cut, cut));
  b.done.append(seg);
  b.cut = cut;
}

export class SessionView {
  constructor(sessionId) {
    this.sessionId = sessionId;
    this.root = el("div", "transcript");
    this.root.dataset.session = sessionId;
    this.root.setAttribute("role", "log");
    this.root.setAttribute("aria-live", "polite");
    // Whether the view follows the end: kept from scroll events, so that appending
    // never has to ask the layout (which, per update, made a long replay quadratic).
    this.atEnd = true;
    this.root.addEventListener("scroll", () => {
      this.atEnd = this.root.scrollHeight - this.root.scrollTop - this.root.clientHeight < 40;
    }, { passive: true });
    this.plan = el("section", "plan");
    this.plan.hidden = true;
    this.reset();
  }

  reset() {
    this.root.replaceChildren();
    this.plan.replaceChildren();
    this.plan.hidden = true;
    this.cur = null; // the assistant message streaming: {el, text}
    this.thought = null;
    this.tools = new Map(); // toolCallId → card
    this.dirty = new Set();
    this.approvals = new Map(); // requestId → update, still open
    this.usage = null;
    this.turnId = "";
    this.running = false;
  }

  append(node) {
    this.root.append(node);
    if (this.atEnd) this.scrollSoon();
  }

  scrollSoon() {
    if (this.scrollPending) return;
    this.scrollPending = true;
    onFrame(() => {
      this.scrollPending = false;
      if (this.atEnd) this.root.scrollTop = this.root.scrollHeight;
    });
  }

  user(text) {
    this.cur = this.thought = null;
    const e = el("div", "msg user");
    const lines = text.split("\n");
    if (lines.length <= foldLines) e.textContent = text;
    else {
      // A huge prompt shows its head; the rest is laid out only when unfolded.
      e.append(lines.slice(0, foldLines).join("\n"));
      const more = el("details", "more");
      more.append(el("summary", "", `${lines.length - foldLines} more lines`));
      more.addEventListener("toggle", () => more.open && more.childNodes.length === 1 && more.append(lines.slice(foldLines).join("\n")), { once: true });
      e.append(more);
    }
    this.append(e);
  }

  assistant(text) {
    if (!this.cur) {
      const e = el("div", "msg assistant");
      const done = el("div", "md-done");
      const tail = el("div", "md-tail");
      e.append(done, tail);
      this.cur = { el: e, done, tail, text: "", cut: 0, shown: 0 };
      this.append(e);
    }
    this.cur.text += text;
    this.mark(this.cur);
  }

  thinking(text) {
    if (!this.thought) {
      const d = el("details", "thought");
      d.append(el("summary", "", "Thought"));
      const body = el("div", "thought-body");
      d.append(body);
      this.thought = { el: body, text: "", shown: 0, plain: true };
      this.append(d);
    }
    this.thought.text += text;
    this.mark(this.thought);
  }

  // mark schedules a block's render for the next animation frame.
  mark(block) {
    this.dirty.add(block);
    if (this.framePending) return;
    this.framePending = true;
    onFrame(() => this.flush());
  }

  // flush renders what changed since the last frame. Plain text only appends what
  // is new; markdown renders again only its tail since the last line that ends
  // outside a code fence once that tail passes tailBytes: what is before is final,
  // so a long stream costs each frame its new text, not all of it.
  flush() {
    this.framePending = false;
    const behind = [];
    for (const b of this.dirty) {
      if (b.plain) {
        b.el.append(b.text.slice(b.shown));
        b.shown = b.text.length;
        continue;
      }
      // At most frameBytes more of it a frame: a burst is drawn over a few frames
      // instead of in one long task.
      const upTo = Math.min(b.text.length, b.shown + frameBytes);
      if (upTo - b.cut > tailBytes) settle(b, upTo);
      b.tail.innerHTML = markdown(b.text.slice(b.cut, upTo));
      b.shown = upTo;
      if (upTo < b.text.length) behind.push(b);
    }
    this.dirty.clear();
    for (const b of behind) this.mark(b);
    if (this.atEnd) this.scrollSoon();
  }

  toolCall(u) {
    this.cur = this.thought = null;
    const card = el("div", "tool running");
    card.dataset.toolCallId = u.toolCallId;
    const head = el("div", "tool-head");
    head.append(el("span", "tool-name", u.name), el("span", "tool-args", summary(u.rawInput)), el("span", "tool-status", "running"));
    card.append(head);
    this.tools.set(u.toolCallId, card);
    this.append(card);
  }

  toolResult(u) {
    let card = this.tools.get(u.toolCallId);
    if (!card) {
      this.toolCall({ toolCallId: u.toolCallId, name: u.name, rawInput: null });
      card = this.tools.get(u.toolCallId);
    }
    card.classList.remove("running");
    card.classList.add(u.isError ? "failed" : "done");
    card.querySelector(".tool-status").textContent = u.isError ? "failed" : "done";
    const out = String(u.rawOutput ?? "").replace(/\n$/, "");
    const lines = out.split("\n");
    if (u.diff) {
      const d = el("div", "tool-diff");
      d.innerHTML = '<div class="diff-path">' + esc(u.diff.path) + "</div>" + diffHTML(u.diff);
      card.append(d);
    }
    if (out) {
      const det = el("details", "tool-output");
      if (lines.length <= 10) det.open = true;
      det.append(el("summary", "", lines.length + (lines.length === 1 ? " line" : " lines") + " of output"), el("pre", "", out));
      card.append(det);
    }
    this.cur = null;
  }

  showPlan(entries) {
    this.plan.hidden = !entries || entries.length === 0;
    this.plan.replaceChildren(el("h3", "", "Plan"));
    const ol = el("ol");
    for (const e of entries || []) {
      const li = el("li", "plan-" + e.status, e.content);
      if (e.priority) li.dataset.priority = e.priority;
      ol.append(li);
    }
    this.plan.append(ol);
  }

  note(cls, text) {
    this.cur = this.thought = null;
    this.append(el("div", "note " + cls, text));
  }

  // apply renders one session/update.
  apply(u) {
    if (u.turnId && u.turnId !== this.turnId) {
      this.turnId = u.turnId;
      this.cur = this.thought = null;
    }
    switch (u.type) {
      case "user_message":
        this.running = true;
        this.user(u.text);
        break;
      case "agent_message_chunk":
        this.assistant(u.text);
        break;
      case "agent_thought_chunk":
        this.thinking(u.text);
        break;
      case "tool_call":
        this.toolCall(u);
        break;
      case "tool_result":
        this.toolResult(u);
        for (const [id, a] of this.approvals) if (a.toolCallId === u.toolCallId) this.approvals.delete(id);
        break;
      case "tool_progress": {
        const card = this.tools.get(u.toolCallId);
        if (card) card.querySelector(".tool-status").textContent = u.total ? `${u.progress}/${u.total}` : String(u.progress);
        break;
      }
      case "plan":
        this.showPlan(u.entries);
        break;
      case "approval_request":
        this.approvals.set(u.requestId, u);
        break;
      case "request_resolved":
        this.approvals.delete(u.requestId);
        break;
      case "memory_recalled":
        this.note("memory", "recalled: " + (u.entries || []).map((e) => e.key || e.id).join(", "));
        break;
      case "usage":
        this.usage = u;
        if (![...this.tools.values()].some((c) => c.classList.contains("running"))) this.running = false;
        break;
      case "history_trimmed":
        this.note("info", `older messages left the model's context (${u.droppedMessages} dropped)`);
        break;
      case "history_compacted":
        this.note("info", `context compacted: ${u.before} → ${u.after} characters`);
        break;
    }
  }

  // history renders session/messages rows (when the replay is not kept).
  history(messages) {
    for (const m of messages) {
      if (m.role === "user") this.user(m.text);
      else if (m.role === "assistant") {
        this.cur = null;
        this.assistant(m.text);
        this.cur = null;
      } else if (m.role === "tool") this.toolResult({ toolCallId: m.toolCallId || "h" + m.index, name: m.name || "tool", rawOutput: m.text });
      if (m.interrupted) this.note("info", "interrupted: the daemon stopped during this turn");
    }
  }
}
