// zeroclaw acp, driven by the official ACP TypeScript SDK as Zed drives an agent
// (clientCapabilities fs + terminal, _meta), with every frame the bridge writes
// validated against schema/v1/schema.json of @agentclientprotocol/sdk: the whole
// message against the schema's root, responses against the result type of the
// method they answer, requests and notifications against their params type, and
// each session/update against its own variant.
//
// usage: node acp.test.mjs /path/to/zeroclaw
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Readable, Writable, Transform } from "node:stream";
import assert from "node:assert/strict";
import * as acp from "@agentclientprotocol/sdk";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const binary = process.argv[2];
if (!binary) {
  console.error("usage: node acp.test.mjs /path/to/zeroclaw");
  process.exit(2);
}

// The schema, from the SDK's own package.
const here = dirname(fileURLToPath(import.meta.url));
const schemaPath = join(here, "node_modules", "@agentclientprotocol", "sdk", "schema", "v1", "schema.json");
const schema = JSON.parse(readFileSync(schemaPath, "utf8"));
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
const ints = {
  int32: [-(2 ** 31), 2 ** 31 - 1], int64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  uint16: [0, 65535], uint32: [0, 2 ** 32 - 1], uint64: [0, Number.MAX_SAFE_INTEGER],
};
for (const [name, [lo, hi]] of Object.entries(ints)) {
  ajv.addFormat(name, { type: "number", validate: (n) => Number.isInteger(n) && n >= lo && n <= hi });
}
ajv.addFormat("double", { type: "number", validate: () => true });
ajv.addSchema(schema, "acp");
const def = (name) => {
  const v = ajv.getSchema(`acp#/$defs/${name}`);
  assert.ok(v, `no $defs/${name} in the schema`);
  return v;
};
const whole = ajv.compile({ $ref: "acp" });
const resultTypes = {
  initialize: "InitializeResponse", authenticate: "AuthenticateResponse",
  "session/new": "NewSessionResponse", "session/load": "LoadSessionResponse",
  "session/list": "ListSessionsResponse", "session/resume": "ResumeSessionResponse",
  "session/close": "CloseSessionResponse", "session/delete": "DeleteSessionResponse",
  "session/prompt": "PromptResponse",
  "session/set_mode": "SetSessionModeResponse", "session/set_config_option": "SetSessionConfigOptionResponse",
};
// Results of the extension methods the bridge serves, which the schema leaves open.
const extResults = {
  "_session/steering": (r) => r && ["injected", "startedNewTurn", "promptRequired"].includes(r.outcome) &&
    Object.keys(r).every((k) => k === "outcome" || k === "reason"),
};
const paramTypes = {
  "session/update": "SessionNotification", "session/request_permission": "RequestPermissionRequest",
  "elicitation/create": "CreateElicitationRequest", "$/cancel_request": "CancelRequestNotification",
};
const variantTypes = {
  user_message_chunk: "ContentChunk", agent_message_chunk: "ContentChunk", agent_thought_chunk: "ContentChunk",
  tool_call: "ToolCall", tool_call_update: "ToolCallUpdate", plan: "Plan",
  available_commands_update: "AvailableCommandsUpdate", current_mode_update: "CurrentModeUpdate",
  config_option_update: "ConfigOptionUpdate", session_info_update: "SessionInfoUpdate", usage_update: "UsageUpdate",
};

// Frames: what the editor sent (to know which method a response answers) and
// every frame the bridge wrote, each checked as it passes.
const sentMethods = new Map(); // JSON id -> method
const frames = [];
const failures = [];
function check(frame) {
  const problems = [];
  const run = (name, validate, value) => {
    if (!validate(value)) problems.push(`${name}: ${ajv.errorsText(validate.errors)}`);
  };
  run("schema root", whole, frame);
  if (frame.jsonrpc !== "2.0") problems.push("jsonrpc is not 2.0");
  if ("method" in frame) {
    const type = paramTypes[frame.method];
    if (!type) problems.push(`the bridge sent an unexpected method ${frame.method}`);
    else run(type, def(type), frame.params);
    if (frame.method === "session/update") {
      const variant = variantTypes[frame.params?.update?.sessionUpdate];
      if (!variant) problems.push(`unexpected update ${frame.params?.update?.sessionUpdate}`);
      else run(variant, def(variant), frame.params.update);
    }
  } else if ("error" in frame) {
    run("Error", def("Error"), frame.error);
  } else {
    const method = sentMethods.get(JSON.stringify(frame.id));
    const type = resultTypes[method];
    if (extResults[method]) {
      if (!extResults[method](frame.result)) problems.push(`${method}: an unexpected result`);
    } else if (!type) problems.push(`a result for ${method ?? "an unknown request"}`);
    else run(type, def(type), frame.result);
  }
  if (problems.length) failures.push({ frame, problems });
}

// nativeClient is a minimal client of the daemon's own protocol, standing for another
// client of the same session.
async function nativeClient(socket) {
  const { createConnection } = await import("node:net");
  const conn = createConnection(socket);
  await new Promise((resolve, reject) => { conn.once("connect", resolve); conn.once("error", reject); });
  const waiting = new Map();
  const seen = [];
  let wake = () => {};
  let next = 1;
  conn.pipe(lineTap((line) => {
    const m = JSON.parse(line);
    if (m.method === "session/update") { seen.push(m.params); wake(); }
    else if (waiting.has(m.id)) { waiting.get(m.id)(m); waiting.delete(m.id); }
  })).resume();
  const call = (method, params) => new Promise((resolve, reject) => {
    const id = next++;
    waiting.set(id, (m) => (m.error ? reject(new Error(JSON.stringify(m.error))) : resolve(m.result)));
    conn.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
  });
  const update = async (type) => {
    for (;;) {
      const u = seen.find((x) => x.type === type);
      if (u) return u;
      await new Promise((r) => { wake = r; });
    }
  };
  await call("initialize", { protocolVersion: 1 });
  return { call, update, close: () => conn.end() };
}

function lineTap(onLine) {
  let buf = "";
  return new Transform({
    transform(chunk, _enc, done) {
      buf += chunk.toString("utf8");
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.trim()) onLine(line);
      }
      done(null, chunk);
    },
  });
}

// A home with an agent of full autonomy and a project directory.
const home = mkdtempSync(join(tmpdir(), "zcts"));
const project = join(home, "proj");
mkdirSync(project, { recursive: true });
mkdirSync(join(home, ".zeroclaw"), { recursive: true, mode: 0o700 });
writeFileSync(join(home, ".zeroclaw", "config.toml"),
  '[providers.echo]\nkind = "echo"\nmodels = ["echo", "echo-large"]\n\n[agents.default]\nprovider = "echo"\n\n[agents.full]\nprovider = "echo"\nautonomy = "full"\n',
  { mode: 0o600 });
const env = { ...process.env, HOME: home };
for (const k of Object.keys(env)) if (k.startsWith("ZEROCLAW_")) delete env[k];

function startBridge(args) {
  const child = spawn(binary, ["acp", ...args], { env, stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  const fromBridge = child.stdout.pipe(lineTap((line) => {
    let frame;
    try { frame = JSON.parse(line); } catch { failures.push({ frame: line, problems: ["stdout carries a line that is not JSON"] }); return; }
    frames.push(frame);
    check(frame);
  }));
  const toBridge = lineTap((line) => {
    let m;
    try { m = JSON.parse(line); } catch { return; } // the bad-JSON check sends one on purpose
    if ("method" in m && "id" in m) sentMethods.set(JSON.stringify(m.id), m.method);
  });
  toBridge.pipe(child.stdin);
  const stream = acp.ndJsonStream(Writable.toWeb(toBridge), Readable.toWeb(fromBridge));
  return { child, exited, stream, toBridge };
}

const updates = [];
let holdPermission = false;
let withdrawn = 0;
const asked = [];
const elicited = [];
function editorApp() {
  return acp.client({ name: "zed-like-test" })
    .onNotification(acp.methods.client.session.update, ({ params }) => { updates.push(params); })
    .onRequest(acp.methods.client.session.requestPermission, ({ params, signal }) => {
      asked.push(params);
      if (holdPermission) {
        // Left open until the bridge withdraws it ($/cancel_request aborts the signal).
        return new Promise((resolve) => signal.addEventListener("abort", () => {
          withdrawn += 1;
          resolve({ outcome: { outcome: "cancelled" } });
        }));
      }
      return { outcome: { outcome: "selected", optionId: "allow_once" } };
    })
    .onRequest(acp.methods.client.elicitation.create, ({ params }) => {
      elicited.push(params);
      return { action: "accept", content: { answer: "blue" } };
    });
}
const take = () => updates.splice(0);
const kinds = (us) => us.map((u) => u.update.sessionUpdate);
// The kinds of a turn's own stream: without the usage, command and mode notices around it.
const turnKinds = (us) => kinds(us).filter((k) => !["usage_update", "available_commands_update", "current_mode_update"].includes(k));
// until waits for an update of the session of kind k and returns it.
const until = async (session, k) => {
  for (let i = 0; i < 3000; i++) {
    const u = updates.find((x) => x.sessionId === session && x.update.sessionUpdate === k);
    if (u) return u.update;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`no ${k} update within 30s`);
};
const textOf = (us, kind) => us.filter((u) => u.update.sessionUpdate === kind).map((u) => u.update.content.text).join("");

// What Zed sends at initialize.
const zedInitialize = {
  protocolVersion: 1,
  clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true, elicitation: { form: {} }, _meta: { "terminal-auth": true } },
  clientInfo: { name: "zed", title: "Zed", version: "0.999.0" },
  _meta: { zed: { test: true } },
};

let sid;
// First bridge: the default (supervised) agent.
{
  const b = startBridge([]);
  await editorApp().connectWith(b.stream, async (agent) => {
    const init = await agent.request(acp.methods.agent.initialize, zedInitialize);
    assert.equal(init.protocolVersion, 1);
    assert.equal(init.agentCapabilities.loadSession, true);
    assert.deepEqual(init.authMethods, []);
    assert.equal(init.agentInfo.name, "zeroclaw");

    const opened = await agent.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] });
    sid = opened.sessionId;
    assert.equal(opened.modes.currentModeId, "supervised");
    assert.deepEqual(opened.modes.availableModes.map((m) => [m.id, m.name]),
      [["readonly", "Read only"], ["supervised", "Ask before changes"], ["full", "Full access"]]);
    const option = (opts, id) => opts.find((o) => o.id === id);
    assert.equal(option(opened.configOptions, "model").category, "model");
    assert.equal(option(opened.configOptions, "model").currentValue, "echo");
    assert.deepEqual(option(opened.configOptions, "model").options.map((o) => o.value), ["echo", "echo-large"]);
    assert.equal(option(opened.configOptions, "mode").category, "mode");
    const commands = await until(sid, "available_commands_update");
    assert.deepEqual(commands.availableCommands.map((c) => c.name), ["compact"]);
    const r1 = await agent.request(acp.methods.agent.session.prompt, {
      sessionId: sid,
      prompt: [
        { type: "text", text: "/think weighing it\n/tool list_dir {\"path\":\".\"}\n/tool write_file {\"path\":\"out.txt\",\"content\":\"hi\"}\nhello from zed" },
        { type: "resource_link", name: "main.go", uri: "file:///src/main.go" },
        { type: "resource", resource: { uri: "file:///src/notes.md", text: "# notes", mimeType: "text/markdown" } },
        { type: "image", mimeType: "image/png", data: Buffer.from("\x89PNG fake").toString("base64") },
      ],
    });
    assert.equal(r1.stopReason, "end_turn");
    const us = take();
    assert.deepEqual(turnKinds(us).slice(0, 3), ["agent_thought_chunk", "tool_call", "tool_call"]);
    const used = us.filter((u) => u.update.sessionUpdate === "usage_update");
    assert.ok(used.length >= 2 && used.every((u) => u.update.size === 32768 && u.update.used > 0), "a usage_update after each model call");
    assert.equal(asked.length, 1, "one permission request, for write_file");
    assert.equal(asked[0].toolCall.kind, "edit");
    assert.match(textOf(us, "agent_message_chunk"), /^echo: hello from zed\n\/src\/main.go\n\/src\/notes.md\n# notes\n\[IMAGE:/);
    assert.equal(readFileSync(join(project, "out.txt"), "utf8"), "hi");

    // Elicitation: declared at initialize, so the question reaches the editor.
    await agent.request(acp.methods.agent.session.prompt, {
      sessionId: sid, prompt: [{ type: "text", text: "/tool ask_user {\"question\":\"Which?\",\"choices\":[\"red\",\"blue\"]}\nask" }],
    });
    assert.equal(elicited.length, 1);
    assert.match(textOf(take(), "agent_message_chunk"), /ask_user -> blue/);

    // Cancel a running tool: the SDK's session/cancel notification.
    const full = await agent.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] });
    const running = agent.request(acp.methods.agent.session.prompt, {
      sessionId: full.sessionId, prompt: [{ type: "text", text: "/tool list_dir {\"path\":\".\"}\n/tool shell {\"command\":\"sleep 30\"}\nwait" }],
    });
    while (asked.length < 2) await new Promise((r) => setTimeout(r, 10)); // the shell asks first
    await agent.notify(acp.methods.agent.session.cancel, { sessionId: full.sessionId });
    assert.equal((await running).stopReason, "cancelled");

    // Errors as ACP codes.
    await assert.rejects(agent.request(acp.methods.agent.session.prompt, { sessionId: "missing", prompt: [{ type: "text", text: "x" }] }),
      (e) => e.code === -32002);
    await assert.rejects(agent.request(acp.methods.agent.session.prompt, { sessionId: sid, prompt: [{ type: "audio", mimeType: "audio/wav", data: "AAAA" }] }),
      (e) => e.code === -32602);
    await assert.rejects(agent.request(acp.methods.agent.session.setMode, { sessionId: sid, modeId: "x" }), (e) => e.code === -32602);
    await assert.rejects(agent.request(acp.methods.agent.session.setConfigOption, { sessionId: sid, configId: "model", value: "gpt-nope" }),
      (e) => e.code === -32602 && JSON.stringify(e.data?.models) === JSON.stringify(["echo", "echo-large"]));

    // The toolbox: file tool calls carry absolute locations, an edit's result shows
    // as diff content (Zed reviews it), a plan as plan.
    const edited = join(project, "out.txt");
    const r2 = await agent.request(acp.methods.agent.session.prompt, {
      sessionId: sid,
      prompt: [{ type: "text", text: [
        '/tool read_file {"path":"out.txt","offset":1,"limit":1}',
        '/tool edit_file {"path":"out.txt","old_text":"hi","new_text":"hello"}',
        '/tool search {"pattern":"hel+o"}',
        '/tool glob {"pattern":"*.txt"}',
        '/tool update_plan {"entries":[{"content":"edit out.txt","status":"completed","priority":"high"},{"content":"review","status":"in_progress"}]}',
        "edit and plan",
      ].join("\n") }],
    });
    assert.equal(r2.stopReason, "end_turn");
    assert.equal(readFileSync(edited, "utf8"), "hello");
    const tb = take();
    const callOf = (title) => tb.find((u) => u.update.sessionUpdate === "tool_call" && u.update.title.startsWith(title))?.update;
    const resultOf = (id) => tb.find((u) => u.update.sessionUpdate === "tool_call_update" && u.update.toolCallId === id)?.update;
    const edit = callOf("edit_file");
    assert.ok(edit, `an edit_file tool_call among ${kinds(tb)}`);
    assert.equal(edit.kind, "edit");
    assert.deepEqual(edit.locations, [{ path: edited, line: 1 }]);
    assert.deepEqual(callOf("read_file").locations, [{ path: edited, line: 1 }]);
    assert.equal(callOf("read_file").kind, "read");
    assert.equal(callOf("search").kind, "search");
    assert.deepEqual(callOf("search").locations, [{ path: project }]);
    assert.equal(callOf("glob").kind, "search");
    const editResult = resultOf(edit.toolCallId);
    assert.equal(editResult.status, "completed");
    const diff = editResult.content.find((c) => c.type === "diff");
    assert.deepEqual(diff, { type: "diff", path: edited, oldText: "hi", newText: "hello" });
    assert.ok(diff.path.startsWith("/"), "the diff's path is absolute");
    assert.match(resultOf(callOf("search").toolCallId).rawOutput, /^out\.txt:1: hello$/);
    const plans = tb.filter((u) => u.update.sessionUpdate === "plan");
    assert.equal(plans.length, 1, `one plan update among ${kinds(tb)}`);
    assert.deepEqual(plans[0].update.entries, [
      { content: "edit out.txt", priority: "high", status: "completed" },
      { content: "review", priority: "medium", status: "in_progress" },
    ]);
    assert.ok(!callOf("update_plan").locations, "update_plan is no file tool");

    // A permission request that another client answers is withdrawn from the editor.
    const native = await nativeClient(join(home, ".zeroclaw", "data", "daemon.sock"));
    await native.call("session/attach", { sessionId: sid });
    holdPermission = true;
    const askedBefore = asked.length;
    const held = agent.request(acp.methods.agent.session.prompt, {
      sessionId: sid, prompt: [{ type: "text", text: "/tool write_file {\"path\":\"elsewhere.txt\",\"content\":\"x\"}\nwrite" }],
    });
    const approval = await native.update("approval_request");
    // Answer elsewhere only once the editor holds the request: one answered before
    // the bridge forwards it is rightly never shown, so there is nothing to withdraw.
    while (asked.length === askedBefore) await new Promise((r) => setTimeout(r, 10));
    await native.call("session/approve", { sessionId: sid, requestId: approval.requestId, decision: "allow_once" });
    assert.equal((await held).stopReason, "end_turn");
    assert.equal(withdrawn, 1, "the editor's permission request was withdrawn");
    assert.ok(frames.some((f) => f.method === "$/cancel_request"), "a $/cancel_request was sent");
    holdPermission = false;

    // Modes and models from the editor, and changes made by another client.
    take();
    await agent.request(acp.methods.agent.session.setMode, { sessionId: sid, modeId: "readonly" });
    // The editor's own change is confirmed too: acpx shows the mode current_mode_update names.
    assert.equal((await until(sid, "current_mode_update")).currentModeId, "readonly");
    const setModel = await agent.request(acp.methods.agent.session.setConfigOption, { sessionId: sid, configId: "model", value: "echo-large" });
    assert.equal(option(setModel.configOptions, "model").currentValue, "echo-large");
    assert.equal(option(setModel.configOptions, "mode").currentValue, "readonly");
    const ro = await agent.request(acp.methods.agent.session.prompt, {
      sessionId: sid, prompt: [{ type: "text", text: "/tool write_file {\"path\":\"ro.txt\",\"content\":\"x\"}\nwrite" }],
    });
    assert.equal(ro.stopReason, "end_turn");
    assert.match(textOf(take(), "agent_message_chunk"), /write_file -> refused: write_file changes things/);
    await native.call("session/set", { sessionId: sid, mode: "supervised", title: "Renamed elsewhere" });
    assert.equal((await until(sid, "current_mode_update")).currentModeId, "supervised");
    assert.equal(option((await until(sid, "config_option_update")).configOptions, "mode").currentValue, "supervised");
    assert.equal((await until(sid, "session_info_update")).title, "Renamed elsewhere");

    // The compact command: a prompt "/compact" compacts and answers end_turn.
    const compacted = await agent.request(acp.methods.agent.session.prompt, { sessionId: sid, prompt: [{ type: "text", text: "/compact keep the file names" }] });
    assert.equal(compacted.stopReason, "end_turn");
    assert.match(textOf(take(), "agent_message_chunk"), /^(Compacted the conversation|The summary was not smaller)/);
    native.close();

    const list = await agent.request(acp.methods.agent.session.list, {});
    const mine = list.sessions.find((s) => s.sessionId === sid);
    assert.ok(mine, "the session is listed");
    assert.equal(mine.cwd, project);
    assert.equal(mine.title, "Renamed elsewhere");
    take();
  });
  b.toBridge.end();
  const { code } = await b.exited;
  assert.equal(code, 0, "zeroclaw acp exits 0 when its input ends");
}

// Second bridge (a new editor window): load replays the history, then close and delete.
{
  const b = startBridge(["--agent", "full"]);
  await editorApp().connectWith(b.stream, async (agent) => {
    await agent.request(acp.methods.agent.initialize, zedInitialize);
    await agent.request(acp.methods.agent.session.load, { sessionId: sid, cwd: project, mcpServers: [] });
    const us = take();
    const ks = kinds(us);
    assert.equal(ks[0], "user_message_chunk");
    assert.ok(ks.includes("tool_call") && ks.includes("tool_call_update") && ks.includes("agent_message_chunk"), `replayed ${ks}`);
    assert.match(textOf(us, "user_message_chunk"), /hello from zed/);
    await agent.request(acp.methods.agent.session.resume, { sessionId: sid, cwd: project });
    await agent.request(acp.methods.agent.session.close, { sessionId: sid });
    await agent.request(acp.methods.agent.session.delete, { sessionId: sid });
    await assert.rejects(agent.request(acp.methods.agent.session.load, { sessionId: sid, cwd: project, mcpServers: [] }),
      (e) => e.code === -32002);
  });
  b.toBridge.end();
  assert.equal((await b.exited).code, 0);
}

// Steering (ACP's _session/steering extension): a steer sent while the editor's
// tool runs joins the turn, or, when the turn ended first, starts the next one;
// either way its reply streams to the editor, and every frame is valid.
{
  const b = startBridge(["--agent", "full"]);
  await editorApp().connectWith(b.stream, async (agent) => {
    const init = await agent.request(acp.methods.agent.initialize, zedInitialize);
    assert.equal(init._meta?.steering?.supported, true, "initialize advertises steering");
    const s = (await agent.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] })).sessionId;
    take();
    const release = join(project, "release");
    const running = agent.request(acp.methods.agent.session.prompt, {
      sessionId: s, prompt: [{ type: "text", text: "/tool shell {\"command\":\"while [ ! -e release ]; do sleep 0.05; done\"}\nwork" }],
    });
    await until(s, "tool_call");
    const steered = agent.request("_session/steering", { sessionId: s, prompt: [{ type: "text", text: "steer it" }] });
    writeFileSync(release, "");
    assert.ok(["injected", "startedNewTurn"].includes((await steered).outcome));
    assert.equal((await running).stopReason, "end_turn");
    for (let i = 0; i < 3000 && !/echo: steer it/.test(textOf(updates, "agent_message_chunk")); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.match(textOf(take(), "agent_message_chunk"), /echo: steer it/);
    // Idle, promptRequired: left to the editor.
    const idle = await agent.request("_session/steering", {
      sessionId: s, prompt: [{ type: "text", text: "later" }], _meta: { steering: { idleBehavior: "promptRequired" } },
    });
    assert.deepEqual(idle, { outcome: "promptRequired", reason: "noRunningTurn" });
    await assert.rejects(agent.request("_session/steering", { sessionId: s, prompt: [{ type: "text", text: " " }] }),
      (e) => e.code === -32602);
    rmSync(release, { force: true });
  });
  b.toBridge.end();
  assert.equal((await b.exited).code, 0);
}

// Frames the SDK never sends: bad JSON, a cancel_request for a running prompt.
{
  const b = startBridge(["--agent", "full"]);
  const lines = [];
  b.child.stdout.on("data", () => {});
  const got = (pred) => new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no matching frame within 30s")), 30000);
    const poll = setInterval(() => {
      const f = frames.find((x) => !lines.includes(x) && pred(x));
      if (f) { lines.push(f); clearInterval(poll); clearTimeout(timer); resolve(f); }
    }, 5);
  });
  const send = (obj) => b.toBridge.write((typeof obj === "string" ? obj : JSON.stringify(obj)) + "\n");
  send({ jsonrpc: "2.0", id: "i", method: "initialize", params: zedInitialize });
  await got((f) => f.id === "i");
  send("{not json");
  assert.equal((await got((f) => f.id === null && f.error)).error.code, -32700);
  send({ jsonrpc: "2.0", id: "n", method: "session/new", params: { cwd: project, mcpServers: [] } });
  const s = (await got((f) => f.id === "n")).result.sessionId;
  send({ jsonrpc: "2.0", id: 41, method: "session/prompt", params: { sessionId: s, prompt: [{ type: "text", text: "/tool shell {\"command\":\"sleep 30\"}" }] } });
  await got((f) => f.method === "session/update" && f.params.update.sessionUpdate === "tool_call");
  send({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: 41 } });
  assert.equal((await got((f) => f.id === 41)).result.stopReason, "cancelled");
  b.toBridge.end();
  assert.equal((await b.exited).code, 0);
}

// The editor's MCP servers: server-everything (test/mcp) in mcpServers runs on the
// bridge's side; the model's calls reach it, and its progress shows as
// tool_call_update in_progress, every frame valid against the schema.
{
  const everything = join(here, "..", "mcp", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js");
  const b = startBridge(["--agent", "full"]);
  await editorApp().connectWith(b.stream, async (agent) => {
    const init = await agent.request(acp.methods.agent.initialize, zedInitialize);
    assert.deepEqual(init.agentCapabilities.mcpCapabilities, { http: true, sse: true });
    const s = await agent.request(acp.methods.agent.session.new, {
      cwd: project, mcpServers: [{ name: "ev", command: process.execPath, args: [everything, "stdio"], env: [] }],
    });
    take();
    const r = await agent.request(acp.methods.agent.session.prompt, {
      sessionId: s.sessionId,
      prompt: [{ type: "text", text: "/tool ev__echo {\"message\":\"from zed\"}\n/tool ev__trigger-long-running-operation {\"duration\":1,\"steps\":2}" }],
    });
    assert.equal(r.stopReason, "end_turn");
    const us = take();
    assert.match(textOf(us, "agent_message_chunk"), /ev__echo -> Echo: from zed/);
    assert.match(textOf(us, "agent_message_chunk"), /ev__trigger-long-running-operation -> Long running operation completed/);
    assert.ok(us.some((u) => u.update.sessionUpdate === "tool_call_update" && u.update.status === "in_progress"),
      "progress shows as tool_call_update in_progress");
  });
  b.toBridge.end();
  assert.equal((await b.exited).code, 0);
}

rmSync(home, { recursive: true, force: true });
const counts = {};
for (const f of frames) {
  const k = f.method ? (f.method === "session/update" ? `update:${f.params.update.sessionUpdate}` : f.method) : (f.error ? "error" : "result");
  counts[k] = (counts[k] ?? 0) + 1;
}
console.log(`checked ${frames.length} frames against the ACP v1 schema:`, JSON.stringify(counts));
if (failures.length) {
  for (const f of failures) console.error("INVALID FRAME", JSON.stringify(f.frame), "\n  ", f.problems.join("\n   "));
  process.exit(1);
}
console.log("acp.test.mjs: all checks passed");
