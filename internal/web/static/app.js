// The web client: sessions, the transcript, the input, the controls. It speaks the
// daemon's protocol over the bridge (rpc.js) and resumes after a dropped link or a
// daemon restart from the last seq it saw of each session it shows.
import { Link, RPCError } from "./rpc.js";
import { SessionView, onFrame } from "./view.js";
import { Approvals, ask } from "./dialogs.js";
import { upload } from "./upload.js";

const $ = (id) => document.getElementById(id);
const sessions = new Map(); // sessionId → {view, lastSeq, attached, replaying, info}
const prompts = new Map(); // operationId → {sessionId, params}: sent, no answer yet
let current = null;
let instanceId = "";
let staged = [];

const link = new Link({ onState: showState, onNotify: notified, onRequest: requested, onOpen: connected });
const approvals = new Approvals((u, decision) =>
  link.call("session/approve", { sessionId: u.sessionId, requestId: u.requestId, decision }),
);
// For tests, benchmarks and the console: the link, the sessions, the connection
// state, and when each session's last attach began and ended (performance.now()).
const timings = {};
const counts = {}; // updates applied, by type
window.zeroclaw = { link, sessions, timings, counts, state: () => $("conn").className };

function showState(state) {
  const c = $("conn");
  c.className = state;
  c.textContent = { connecting: "connecting", connected: "connected", reconnecting: "reconnecting…", logged_out: "logged out: open the printed link again" }[state];
  if (state === "logged_out") location.replace("/");
}

// connected runs on every new connection, before waiting calls go on.
async function connected() {
  const r = await link.raw("initialize", {
    protocolVersion: 1,
    clientInfo: { name: "zeroclaw-web", version: "1" },
    clientCapabilities: { elicitation: { form: {} } },
  });
  const restarted = instanceId !== "" && r.instanceId !== instanceId;
  instanceId = r.instanceId;
  for (const s of sessions.values()) {
    if (!s.attached) continue;
    if (restarted) s.view.note("info", "daemon restarted; session recovered");
    await attach(s, s.lastSeq, true);
  }
  for (const [op, p] of prompts) link.raw("session/prompt", p.params).then((res) => answered(op, res), () => {});
  setTimeout(() => { refreshList(); loadAgents(); }, 0);
}

// attach attaches the connection to s, replaying what came after afterSeq; when that
// is no longer kept, the view is rebuilt from session/messages.
async function attach(s, afterSeq, raw) {
  const call = raw ? (m, p) => link.raw(m, p) : (m, p) => link.call(m, p);
  s.replaying = true;
  const t = (timings[s.view.sessionId] = { attachStart: performance.now() });
  try {
    if (afterSeq === 0 && (await call("session/messages", { sessionId: s.view.sessionId, limit: 1 })).total > bigSession) {
      await rowsThenLive(s, call);
      return;
    }
    const r = await call("session/attach", { sessionId: s.view.sessionId, afterSeq });
    s.lastSeq = Math.max(s.lastSeq, r.lastSeq);
    if (afterSeq === 0 && r.replayed === 0) {
      // Rows and nothing to replay (a fork, whose seqs start anew): show the rows.
      const m = await call("session/messages", { sessionId: s.view.sessionId, limit: 2000 });
      s.view.history(m.messages);
    }
  } catch (e) {
    if (!(e instanceof RPCError && e.data?.reason === "replay_truncated")) throw e;
    s.view.reset();
    const m = await call("session/messages", { sessionId: s.view.sessionId, limit: 2000 });
    s.view.history(m.messages);
    const r = await call("session/attach", { sessionId: s.view.sessionId });
    s.lastSeq = r.lastSeq;
  } finally {
    s.replaying = false;
    t.attachEnd = performance.now();
  }
  s.attached = true;
  for (const a of s.view.approvals.values()) approvals.add(a);
  if (s === sessions.get(current)) showControls(s);
}

// A session of more rows than this is first shown from session/messages (one
// message) rather than by replaying each of its updates (several per row).
const bigSession = 400;

// rowsThenLive shows a big session: attach at its last seq, the updates arriving
// meanwhile held back, then the rows, then what was held back. (A turn that ends
// during the load can show twice; a replay, for smaller sessions, is exact.)
async function rowsThenLive(s, call) {
  s.held = [];
  try {
    const r = await call("session/attach", { sessionId: s.view.sessionId });
    s.lastSeq = Math.max(s.lastSeq, r.lastSeq);
    const m = await call("session/messages", { sessionId: s.view.sessionId, limit: 2000 });
    s.view.history(m.messages);
  } finally {
    const held = s.held;
    s.held = null;
    for (const u of held) {
      s.view.apply(u);
      counts[u.type] = (counts[u.type] || 0) + 1;
    }
  }
}

function notified(method, u) {
  if (method !== "session/update") return;
  const s = sessions.get(u.sessionId);
  if (!s) return;
  if (s.held && u.type !== "lagged") {
    if (u.seq !== undefined && u.seq <= s.lastSeq) return;
    if (u.seq !== undefined) s.lastSeq = u.seq;
    s.held.push(u);
    return;
  }
  if (u.type === "lagged") {
    counts.lagged = (counts.lagged || 0) + 1;
    attach(s, s.lastSeq).catch((e) => s.view.note("error", "could not catch up: " + e.message));
    return;
  }
  if (u.seq !== undefined) {
    if (u.seq <= s.lastSeq) return; // seen already
    s.lastSeq = u.seq;
  }
  s.view.apply(u);
  counts[u.type] = (counts[u.type] || 0) + 1;
  if (u.type === "session_info") {
    s.info = { mode: u.mode, model: u.model, title: u.title };
    refreshList();
  }
  if (u.type === "approval_request" && !s.replaying) approvals.add(u);
  if (u.type === "request_resolved") approvals.resolved(u.requestId);
  if (u.type === "tool_result") for (const a of [...approvals.queue]) if (a.toolCallId === u.toolCallId) approvals.resolved(a.requestId);
  if (s === sessions.get(current)) showTurnSoon(s);
}

// showTurnSoon is showTurn at the next frame, once for all the updates of a frame.
let turnFrame = false;
function showTurnSoon(s) {
  if (turnFrame) return;
  turnFrame = true;
  onFrame(() => {
    turnFrame = false;
    if (s === sessions.get(current)) showTurn(s);
  });
}

async function requested(method, params) {
  if (method === "elicitation/create") return ask(params);
  throw new Error("this client does not serve " + method);
}

function sessionOf(id) {
  let s = sessions.get(id);
  if (!s) {
    s = { view: new SessionView(id), lastSeq: 0, attached: false, replaying: false, info: null };
    sessions.set(id, s);
  }
  return s;
}

async function open(id) {
  const s = sessionOf(id);
  current = id;
  history.replaceState(null, "", "#s=" + encodeURIComponent(id));
  $("empty").hidden = true;
  $("views").replaceChildren(s.view.root);
  $("plan-slot").replaceChildren(s.view.plan);
  for (const li of $("sessions").children) li.classList.toggle("current", li.dataset.session === id);
  $("sidebar").classList.remove("open");
  enableInput(true);
  if (!s.attached) {
    s.view.reset();
    s.lastSeq = 0;
    await attach(s, 0);
  }
  showControls(s);
  s.view.root.scrollTop = s.view.root.scrollHeight;
  $("input").focus();
}

async function showControls(s) {
  try {
    const [info, models] = await Promise.all([
      link.call("session/set", { sessionId: s.view.sessionId }),
      link.call("models/list", { sessionId: s.view.sessionId }),
    ]);
    s.info = info;
    const sel = $("model");
    sel.replaceChildren(...models.models.map((m) => new Option(m.id, m.id, false, m.current)));
  } catch (e) {
    s.view.note("error", e.message);
  }
  showTurn(s);
}

function showTurn(s) {
  if (s.info) {
    if (document.activeElement !== $("title")) $("title").value = s.info.title || "";
    $("mode").value = s.info.mode;
    if (s.info.model) $("model").value = s.info.model;
  }
  const u = s.view.usage;
  if (u) {
    const win = u.contextWindow || 0;
    $("context").value = win ? Math.min(1, u.contextTokens / win) : 0;
    $("context-label").textContent = win ? `${u.contextTokens} / ${win}` : `${u.contextTokens} tokens`;
  } else {
    $("context").value = 0;
    $("context-label").textContent = "";
  }
  const busy = s.view.running || [...prompts.values()].some((p) => p.sessionId === s.view.sessionId);
  $("cancel").disabled = !busy;
  document.body.classList.toggle("running", busy);
}

function enableInput(on) {
  for (const id of ["input", "send", "attach", "title", "mode", "model"]) $(id).disabled = !on;
}

async function send() {
  const text = $("input").value;
  if (!current || (text.trim() === "" && staged.length === 0)) return;
  const s = sessions.get(current);
  const op = "op_" + crypto.randomUUID();
  const params = { sessionId: current, prompt: text, operationId: op };
  if (staged.length) params.attachments = staged.map((f) => ({ ref_id: f.ref_id }));
  staged = [];
  showStaged();
  $("input").value = "";
  prompts.set(op, { sessionId: current, params });
  showTurn(s);
  try {
    answered(op, await link.call("session/prompt", params));
  } catch (e) {
    if (e instanceof RPCError) {
      prompts.delete(op);
      s.view.note("error", e.message);
      showTurn(s);
    } // else the link dropped: connected() sends it again with the same operationId
  }
}

function answered(op, res) {
  const p = prompts.get(op);
  if (!p) return;
  prompts.delete(op);
  const s = sessions.get(p.sessionId);
  s.view.running = false;
  if (res.stopReason === "error") s.view.note("error", res.text);
  else if (res.stopReason !== "end_turn") s.view.note("info", "turn ended: " + res.stopReason);
  if (s === sessions.get(current)) showControls(s); // the title a first prompt derives
  refreshList();
}

async function cancel() {
  if (current) await link.call("session/cancel", { sessionId: current });
}

async function attachFiles(files) {
  if (!current) return;
  const bar = $("upload-progress");
  for (const f of files) {
    bar.hidden = false;
    try {
      const entry = await upload(link, current, f, (x) => (bar.value = x));
      staged.push({ ...entry, filename: f.name });
      showStaged();
    } catch (e) {
      sessions.get(current).view.note("error", `attaching ${f.name}: ${e.message}`);
    }
  }
  bar.hidden = true;
}

function showStaged() {
  $("staged").replaceChildren(
    ...staged.map((f, i) => {
      const c = document.createElement("span");
      c.className = "chip";
      c.textContent = f.filename;
      const x = document.createElement("button");
      x.type = "button";
      x.textContent = "×";
      x.setAttribute("aria-label", "remove " + f.filename);
      x.onclick = () => {
        staged.splice(i, 1);
        showStaged();
      };
      c.append(x);
      return c;
    }),
  );
}

async function refreshList() {
  let r;
  try {
    r = await link.call("session/list", { limit: 200 });
  } catch {
    return;
  }
  const list = r.sessions.filter((s) => s.state !== "killed").sort((a, b) => (a.lastActivity < b.lastActivity ? 1 : -1));
  $("sessions").replaceChildren(...list.map(sessionItem));
}

function sessionItem(s) {
  const li = document.createElement("li");
  li.dataset.session = s.sessionId;
  li.classList.toggle("current", s.sessionId === current);
  const b = document.createElement("button");
  b.type = "button";
  b.className = "open";
  const t = document.createElement("span");
  t.className = "t";
  t.textContent = s.title || "(untitled)";
  const m = document.createElement("span");
  m.className = "m";
  m.textContent = `${s.agentAlias} · ${new Date(s.lastActivity).toLocaleString()} · ${s.state}`;
  b.append(t, m);
  b.onclick = () => open(s.sessionId);
  const acts = document.createElement("div");
  acts.className = "acts";
  const act = (label, f) => {
    const a = document.createElement("button");
    a.type = "button";
    a.textContent = label;
    a.setAttribute("aria-label", label + " " + (s.title || s.sessionId));
    a.onclick = f;
    acts.append(a);
  };
  act("Rename", async () => {
    const title = prompt("Title", s.title || "");
    if (title) await link.call("session/set", { sessionId: s.sessionId, title });
    refreshList();
  });
  act("Fork", async () => {
    const r = await link.call("session/fork", { sessionId: s.sessionId });
    await refreshList();
    open(r.sessionId);
  });
  act("Delete", async () => {
    if (!confirm(`Delete "${s.title || s.sessionId}"? Its history goes too.`)) return;
    await link.call("session/delete", { sessionId: s.sessionId });
    sessions.delete(s.sessionId);
    if (current === s.sessionId) {
      current = null;
      $("views").replaceChildren();
      $("empty").hidden = false;
      enableInput(false);
    }
    refreshList();
  });
  li.append(b, acts);
  return li;
}

async function loadAgents() {
  try {
    const r = await link.call("agents/list", {});
    const sel = $("agent");
    const was = sel.value;
    sel.replaceChildren(...r.agents.map((a) => new Option(a.alias, a.alias)));
    if (was) sel.value = was;
  } catch {}
}

async function newSession() {
  const r = await link.call("session/new", { agentAlias: $("agent").value || "default", keep_siblings: true });
  await refreshList();
  await open(r.sessionId);
}

function wire() {
  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    send();
  });
  $("input").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    } else if (e.key === "Escape" && !$("cancel").disabled) {
      e.preventDefault();
      cancel();
    }
  });
  $("cancel").onclick = cancel;
  $("new").onclick = newSession;
  $("attach").onclick = () => $("file").click();
  $("file").onchange = () => {
    attachFiles([...$("file").files]);
    $("file").value = "";
  };
  $("menu").onclick = () => {
    const open = $("sidebar").classList.toggle("open");
    $("menu").setAttribute("aria-expanded", String(open));
  };
  const setCtl = (params) => current && link.call("session/set", { sessionId: current, ...params }).catch((e) => sessions.get(current).view.note("error", e.message));
  $("mode").onchange = () => setCtl({ mode: $("mode").value });
  $("model").onchange = () => setCtl({ model: $("model").value });
  $("title").addEventListener("keydown", (e) => {
    if (e.key === "Enter") {
      e.preventDefault();
      $("input").focus();
    }
  });
  $("title").addEventListener("change", () => $("title").value.trim() && setCtl({ title: $("title").value.trim() }));
  let depth = 0;
  document.addEventListener("dragenter", (e) => {
    if (current && e.dataTransfer?.types.includes("Files")) $("dropzone").hidden = ++depth === 0;
  });
  document.addEventListener("dragleave", () => ($("dropzone").hidden = --depth <= 0));
  document.addEventListener("dragover", (e) => e.preventDefault());
  document.addEventListener("drop", (e) => {
    e.preventDefault();
    depth = 0;
    $("dropzone").hidden = true;
    if (e.dataTransfer?.files.length) attachFiles([...e.dataTransfer.files]);
  });
}

wire();
link.start();
const m = /^#s=(.+)$/.exec(location.hash);
if (m) open(decodeURIComponent(m[1])).catch((e) => console.warn(e));
