// One JSON-RPC connection to the daemon over the bridge's WebSocket (/rpc): one
// message per text message, requests both ways, and reconnection with a backoff.
// What a reconnect must restore (initialize, re-attach from the last seq, prompts
// re-sent by operationId) is the app's (session.js); this only says when.

export class RPCError extends Error {
  constructor(e) {
    super(e.message);
    this.code = e.code;
    this.data = e.data;
  }
}

export class Link {
  constructor({ onState, onNotify, onRequest, onOpen }) {
    this.onState = onState; // ("connecting" | "connected" | "reconnecting" | "logged_out", detail)
    this.onNotify = onNotify; // (method, params)
    this.onRequest = onRequest; // async (method, params) => result
    this.onOpen = onOpen; // async (): runs before calls waiting for the connection go on
    this.next = 1;
    this.pending = new Map();
    this.waiting = [];
    this.ws = null;
    this.ready = false;
    this.backoff = 250;
    this.closed = false;
  }

  start() {
    this.onState("connecting");
    this.dial();
  }

  dial() {
    const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/rpc";
    let opened = false;
    const ws = new WebSocket(url);
    this.ws = ws;
    ws.onopen = async () => {
      opened = true;
      this.backoff = 250;
      try {
        await this.onOpen();
      } catch (e) {
        console.warn("after connecting:", e);
        ws.close();
        return;
      }
      this.ready = true;
      this.onState("connected");
      for (const w of this.waiting.splice(0)) w();
    };
    ws.onmessage = (ev) => this.receive(ev.data);
    ws.onclose = () => this.lost(ws, opened);
  }

  async lost(ws, opened) {
    if (ws !== this.ws) return;
    this.ready = false;
    for (const [, p] of this.pending) p.reject(new Error("connection lost"));
    this.pending.clear();
    if (this.closed) return;
    if (!opened) {
      // Refused before the upgrade: the login is gone (401), or no daemon answers (503).
      const r = await fetch("/auth", { credentials: "same-origin" }).catch(() => null);
      if (r && r.status === 401) {
        this.onState("logged_out");
        return;
      }
    }
    this.onState("reconnecting");
    setTimeout(() => this.dial(), this.backoff);
    this.backoff = Math.min(this.backoff * 2, 4000);
  }

  receive(data) {
    let m;
    try {
      m = JSON.parse(data);
    } catch {
      return;
    }
    if (typeof m.method === "string") {
      if (m.id === undefined) {
        this.onNotify(m.method, m.params || {});
      } else {
        this.answer(m);
      }
      return;
    }
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    if (m.error) p.reject(new RPCError(m.error));
    else p.resolve(m.result);
  }

  async answer(m) {
    let reply;
    try {
      reply = { jsonrpc: "2.0", id: m.id, result: await this.onRequest(m.method, m.params || {}) };
    } catch (e) {
      reply = { jsonrpc: "2.0", id: m.id, error: { code: -32603, message: String(e.message || e) } };
    }
    this.send(reply);
  }

  send(msg) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(msg));
  }

  // raw sends a request on the current connection, ready or not (for onOpen).
  raw(method, params) {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.send({ jsonrpc: "2.0", method, params: params || {}, id });
      if (!this.ws || this.ws.readyState !== WebSocket.OPEN) {
        this.pending.delete(id);
        reject(new Error("not connected"));
      }
    });
  }

  // call waits for the connection to be ready, then sends the request.
  async call(method, params) {
    while (!this.ready) await new Promise((r) => this.waiting.push(r));
    return this.raw(method, params);
  }
}
