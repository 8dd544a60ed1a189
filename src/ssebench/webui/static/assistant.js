"use strict";
// The assistant's tab of a run's page (webui/assistant.py): OpenCode in the run's
// container answers questions about the run. Its key is the server's alone: this page
// only sends questions and shows answers. Closing the tab, or leaving the page, closes
// the socket, and the server revokes the key. Uses el, token and base64url of app.js.

function assistantTab(body, base, detail) {
  const state = detail && detail.assistant ? detail.assistant : { available: false, reason: "Unknown run" };
  if (!state.available) {
    body.append(el("div", { class: "notice assistant-unavailable", "data-assistant-reason": "" },
      el("strong", { text: "The assistant is not available here. " }), el("span", { text: state.reason || "" })));
    return () => {};
  }
  const status = el("span", { class: "muted", "data-assistant-status": "" });
  const open = el("button", { type: "button", class: "primary", text: "Start the assistant" });
  const conversation = el("div", { class: "events assistant-dialog", "data-assistant-dialog": "" });
  const input = el("textarea", { rows: 3, placeholder: "Ask about this run (the assistant reads, it never edits)", "aria-label": "question", disabled: true });
  const ask = el("button", { type: "button", class: "primary", text: "Ask", disabled: true });
  body.append(
    el("p", { class: "muted", text: "OpenCode, started in this run's container with a key and budget of its own, revoked when this panel closes or the run stops. Its dialog is not the agent's and does not change the grade." }),
    el("div", { class: "terminal-bar" }, open, status), conversation,
    el("div", { class: "assistant-ask" }, input, ask));
  let socket = null;
  let answer = null;

  function say(kind, text) {
    const node = el("div", { class: `event assistant-${kind}` }, el("div", { class: "meta" }, el("span", { class: "kind", text: kind })), el("div", { class: "text", text }));
    conversation.append(node);
    return node;
  }

  const close = () => { if (socket) socket.close(); socket = null; };
  open.addEventListener("click", () => {
    close();
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const protocols = ["ssebench.v1", ...(token() ? [`ssebench.token.${base64url(token())}`] : [])];
    socket = new WebSocket(`${scheme}://${location.host}${base}/assistant`, protocols);
    const current = socket;
    status.textContent = "making the assistant's key…";
    open.disabled = true;
    current.onmessage = (message) => {
      const data = JSON.parse(message.data);
      if (data.type === "ready") {
        status.textContent = data.managed_key ? `ready (its own key, budget ${data.budget} USD)` : "ready (the proxy's master key: this proxy makes no keys)";
        input.disabled = false; ask.disabled = false;
        input.focus();
      } else if (data.type === "text") {
        if (!answer) answer = say("assistant", "");
        answer.querySelector(".text").textContent += data.text;
      } else if (data.type === "tool") {
        say("tool", `${data.name} (${data.status}) ${data.input}`);
      } else if (data.type === "error") {
        say("error", data.message);
      } else if (data.type === "done") {
        answer = null;
        status.textContent = data.code === 0 ? "answered" : `OpenCode ended with status ${data.code}`;
        input.disabled = false; ask.disabled = false;
      }
    };
    current.onclose = () => {
      if (socket === current) socket = null;
      status.textContent = "closed: the assistant's key is revoked";
      input.disabled = true; ask.disabled = true; open.disabled = false;
    };
  });
  ask.addEventListener("click", () => {
    const text = input.value.trim();
    if (!text || !socket || socket.readyState !== WebSocket.OPEN) return;
    say("you", text);
    answer = null;
    socket.send(JSON.stringify({ type: "ask", text }));
    input.value = "";
    input.disabled = true; ask.disabled = true;
    status.textContent = "thinking…";
  });
  window.addEventListener("pagehide", close);
  return () => { window.removeEventListener("pagehide", close); close(); };
}
