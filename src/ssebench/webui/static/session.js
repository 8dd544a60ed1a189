"use strict";
// The "OpenCode session" tab of an opencode run (webui/opencode_session.py): while the
// run runs, its session as the OpenCode server on port 4096 of its container holds it
// (messages, tool calls, changed files); once it is over, the run's dialog
// (dialog.jsonl) instead. Everything shown comes from the agent: it is shown as text.
// Uses el, every, api and dialogTab of app.js.

function sessionTab(body, base, detail) {
  const note = el("div", { class: "live-note", "data-session-note": "" });
  const title = el("h3", { class: "session-title" });
  const list = el("div", { class: "events", "data-session": "" });
  const files = el("div", { class: "session-files", "data-session-diff": "" });
  const fallback = el("div", { "data-session-fallback": "" });
  body.append(note, title, list, files, fallback);
  let stopFallback = null;

  function part(message, piece) {
    if (piece.type === "text" || piece.type === "reasoning") {
      return el("div", { class: `text session-${piece.type}`, text: piece.text });
    }
    if (piece.type === "tool") {
      return el("details", { class: `session-tool ${piece.status}`, "data-tool": piece.tool },
        el("summary", { text: `tool ${piece.tool} (${piece.status})` }),
        el("pre", { text: piece.input }), el("pre", { text: piece.output }));
    }
    if (piece.type === "patch") return el("div", { class: "muted", text: `changed: ${piece.files.join(", ")}` });
    return el("span");
  }

  function draw(data) {
    title.textContent = data.session ? `${data.session.title || data.session.id}` : "No session yet";
    list.replaceChildren(...data.messages.map((message) => el("div",
      { class: `event message session-${message.role}`, "data-message-id": message.id },
      el("div", { class: "meta" }, el("span", { class: "kind", text: `${message.role} message` }),
        el("span", { class: "origin agent", text: "OpenCode server (agent-written)" })),
      ...message.parts.map((piece) => part(message, piece)))));
    files.replaceChildren(...(data.diff.length ? [el("h4", { text: "Files changed in the session" })] : []),
      ...data.diff.map((file) => el("details", { class: "session-file" },
        el("summary", { text: `${file.file} (+${file.additions} −${file.deletions})` }),
        el("pre", { text: file.patch }))));
  }

  // A server that does not answer while the run runs (not up yet, or slow under load)
  // is asked again: the page keeps what it last drew, or shows the dialog until the
  // server answers. Only a run that is over ends the asking.
  let over = false;
  let drawn = false;
  function showDialog() {
    title.hidden = true;
    list.replaceChildren();
    files.replaceChildren();
    stopFallback = dialogTab(fallback, base, detail) || (() => {});
  }
  const stop = every(1500, async () => {
    if (over) return;
    const data = await api(`${base}/session`);
    if (data.live) {
      if (stopFallback) { stopFallback(); stopFallback = null; fallback.replaceChildren(); }
      title.hidden = false;
      note.textContent = "● Live: the session as the run's OpenCode server (port 4096) has it";
      draw(data);
      drawn = true;
      return;
    }
    if (data.over) {
      over = true;
      note.textContent = `${data.reason}. The run's dialog:`;
      if (!stopFallback) showDialog();
      return;
    }
    note.textContent = drawn
      ? `${data.reason}; asking again. The session as last read:`
      : `${data.reason}; asking again. The run's dialog meanwhile:`;
    if (!drawn && !stopFallback) showDialog();
  });
  return () => { stop(); if (stopFallback) stopFallback(); };
}
