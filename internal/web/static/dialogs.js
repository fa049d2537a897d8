// Approvals and questions as modal dialogs. Approvals wait in a queue and are shown
// one at a time; one answered elsewhere (request_resolved) leaves the queue, or the
// screen. Esc rejects an approval and cancels a question.
const $ = (id) => document.getElementById(id);

export class Approvals {
  constructor(answer) {
    this.answer = answer; // (approvalUpdate, decision) => Promise
    this.queue = [];
    this.shown = null;
    this.dlg = $("approval");
    const pick = (d) => () => this.decide(d);
    $("approve-once").onclick = pick("allow_once");
    $("approve-always").onclick = pick("allow_always");
    $("approve-reject").onclick = pick("reject_once");
    this.dlg.addEventListener("cancel", (e) => {
      e.preventDefault();
      this.decide("reject_once");
    });
    this.dlg.addEventListener("keydown", (e) => {
      const d = { y: "allow_once", a: "allow_always", n: "reject_once" }[e.key];
      if (d) {
        e.preventDefault();
        this.decide(d);
      }
    });
  }

  add(u) {
    if (this.shown?.requestId === u.requestId || this.queue.some((q) => q.requestId === u.requestId)) return;
    this.queue.push(u);
    this.next();
  }

  resolved(requestId) {
    this.queue = this.queue.filter((q) => q.requestId !== requestId);
    if (this.shown?.requestId === requestId) {
      this.shown = null;
      this.dlg.close();
      this.next();
    }
  }

  next() {
    if (this.shown || this.queue.length === 0) return;
    const u = (this.shown = this.queue.shift());
    $("approval-tool").textContent = u.name;
    $("approval-args").textContent = JSON.stringify(u.rawInput, null, 2);
    this.dlg.dataset.requestId = u.requestId;
    this.dlg.showModal();
    $("approve-once").focus();
  }

  async decide(decision) {
    const u = this.shown;
    if (!u) return;
    this.shown = null;
    this.dlg.close();
    try {
      await this.answer(u, decision);
    } finally {
      this.next();
    }
  }
}

// ask shows an elicitation/create form and resolves with its result.
export function ask(params) {
  const dlg = $("elicit");
  $("elicit-message").textContent = params.message || "";
  const fields = $("elicit-fields");
  fields.replaceChildren();
  const props = params.requestedSchema?.properties || {};
  const inputs = {};
  for (const [name, p] of Object.entries(props)) {
    const label = document.createElement("label");
    label.append((p.title || p.description || name) + " ");
    let input;
    const choices = p.enum || p.items?.enum || (p.oneOf || []).map((o) => o.const);
    if (choices && choices.length) {
      input = document.createElement("select");
      for (const c of choices) input.append(new Option(String(c), String(c)));
    } else {
      input = document.createElement("input");
      input.type = p.type === "boolean" ? "checkbox" : p.type === "number" || p.type === "integer" ? "number" : "text";
    }
    input.name = name;
    inputs[name] = [input, p];
    label.append(input);
    fields.append(label);
  }
  return new Promise((resolve) => {
    const done = (action) => {
      cleanup();
      dlg.close();
      if (action !== "accept") return resolve({ action });
      const content = {};
      for (const [name, [input, p]] of Object.entries(inputs)) {
        if (input.type === "checkbox") content[name] = input.checked;
        else if (input.type === "number") content[name] = Number(input.value);
        else content[name] = p.type === "array" ? [input.value] : input.value;
      }
      resolve({ action, content });
    };
    const onSubmit = (e) => {
      e.preventDefault();
      done("accept");
    };
    const onCancel = (e) => {
      e.preventDefault();
      done("cancel");
    };
    const decline = () => done("decline");
    const cancel = () => done("cancel");
    const cleanup = () => {
      $("elicit-form").removeEventListener("submit", onSubmit);
      dlg.removeEventListener("cancel", onCancel);
      $("elicit-decline").removeEventListener("click", decline);
      $("elicit-cancel").removeEventListener("click", cancel);
    };
    $("elicit-form").addEventListener("submit", onSubmit);
    dlg.addEventListener("cancel", onCancel);
    $("elicit-decline").addEventListener("click", decline);
    $("elicit-cancel").addEventListener("click", cancel);
    dlg.showModal();
    (fields.querySelector("input, select") || $("elicit-accept")).focus();
  });
}
