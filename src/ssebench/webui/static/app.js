// The ssebench web UI: a page without a build step. Data is put into the page with
// textContent only, never as HTML. The token lives in sessionStorage (this tab), goes
// in the Authorization header, and for the terminal's WebSocket in a subprotocol.
"use strict";

const TOKEN_KEY = "ssebench.webui.token";
const view = document.getElementById("view");
let health = null;
let stopPage = () => {}; // ends the timers and sockets of the page on screen

// -- small helpers ------------------------------------------------------------------

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function badge(word) {
  return word ? el("span", { class: `badge ${word}`, text: word }) : el("span", { class: "muted", text: "—" });
}

function duration(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

function spend(value) {
  return value === null || value === undefined ? "—" : `$${Number(value).toFixed(4)}`;
}

function when(timestamp, short = false) {
  if (!timestamp) return "—";
  const date = new Date(timestamp);
  if (Number.isNaN(date.getTime())) return timestamp;
  const time = { hour: "2-digit", minute: "2-digit", hourCycle: "h23", ...(short ? {} : { second: "2-digit" }) };
  return date.toLocaleString(undefined, { month: "short", day: "numeric", ...time });
}

function every(milliseconds, work) {
  let stopped = false;
  let timer = null;
  const tick = async () => {
    if (stopped) return;
    try { await work(); } catch (error) { if (error.name !== "Unauthorized") console.warn(error); }
    if (!stopped) timer = setTimeout(tick, milliseconds);
  };
  tick();
  return () => { stopped = true; clearTimeout(timer); };
}

// -- the token and the API -----------------------------------------------------------

function token() { return sessionStorage.getItem(TOKEN_KEY); }

class Unauthorized extends Error { constructor() { super("unauthorized"); this.name = "Unauthorized"; } }

async function api(path, options = {}) {
  const headers = { Accept: "application/json", ...(options.headers || {}) };
  if (token()) headers.Authorization = `Bearer ${token()}`;
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method: options.method || "GET",
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    cache: "no-store",
    credentials: "omit",
  });
  if (response.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    askForToken("The token was not accepted.");
    throw new Unauthorized();
  }
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
  return data;
}

function askForToken(message) {
  const dialog = document.getElementById("token-dialog");
  const error = document.getElementById("token-error");
  error.hidden = !message;
  error.textContent = message || "";
  if (!dialog.open) dialog.showModal();
  document.getElementById("token-input").focus();
}

document.getElementById("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const input = document.getElementById("token-input");
  sessionStorage.setItem(TOKEN_KEY, input.value.trim());
  input.value = "";
  document.getElementById("token-dialog").close();
  start();
});

document.getElementById("token-dialog").addEventListener("cancel", (event) => event.preventDefault());

document.getElementById("sign-out").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  stopPage();
  view.replaceChildren();
  askForToken("");
});

// -- routing -----------------------------------------------------------------------

function route() {
  stopPage();
  stopPage = () => {};
  const hash = location.hash.replace(/^#/, "") || "/";
  const [, page, id, other] = hash.split("/");
  const section = { launch: "launch", evaluations: "evaluations", evaluation: "evaluations", compare: "evaluations" }[page] || "runs";
  for (const link of document.querySelectorAll("[data-nav]")) {
    link.classList.toggle("active", link.dataset.nav === section);
  }
  if (page === "run" && id) stopPage = runPage(decodeURIComponent(id));
  else if (page === "launch") stopPage = launchPage();
  // The evaluation view (evaluations.js).
  else if (page === "evaluations") stopPage = evaluationsPage();
  else if (page === "evaluation" && id) stopPage = evaluationPage(decodeURIComponent(id));
  else if (page === "compare" && id && other) stopPage = comparePage(decodeURIComponent(id), decodeURIComponent(other));
  else stopPage = listPage();
}

async function start() {
  try {
    health = await api("/api/health");
  } catch (error) {
    if (!(error instanceof Unauthorized)) view.replaceChildren(el("p", { class: "error", text: String(error.message) }));
    return;
  }
  document.getElementById("nav-launch").hidden = !health.launcher;
  document.getElementById("sign-out").hidden = !health.token_required;
  const mode = document.getElementById("mode");
  mode.hidden = false;
  mode.textContent = health.hosted ? "read-only" : `${health.backend} backend`;
  route();
}

window.addEventListener("hashchange", () => { if (health) route(); });

// -- the run list --------------------------------------------------------------------

const COLUMNS = [
  ["run_id", "Run"], ["task", "Task"], ["agent", "Agent"], ["model", "Model"], ["state", "State"],
  ["status", "Grade"], [null, "First failure"], ["started_at", "Started"], ["duration", "Duration", "num"],
  ["spend", "Spend", "num"],
];
const listState = { sort: "started_at", order: "desc", q: "", state: "", status: "", task: "", agent: "", model: "", offset: 0 };
const PAGE_SIZE = 100;

function listPage() {
  const count = el("span", { class: "count" });
  const notice = el("div", { class: "notice", hidden: true });
  const search = el("input", { type: "search", placeholder: "Search run, task, agent, model, failure…", value: listState.q, "aria-label": "Search" });
  const selects = {};
  for (const [key, label] of [["state", "Any state"], ["status", "Any grade"], ["task", "Any task"], ["agent", "Any agent"], ["model", "Any model"]]) {
    selects[key] = el("select", { "aria-label": key, "data-filter": key }, el("option", { value: "", text: label }));
  }
  const head = el("tr", {}, COLUMNS.map(([key, label, kind]) => {
    const th = el("th", { class: kind || "", text: label, "data-sort": key || undefined });
    if (key) th.addEventListener("click", () => {
      listState.order = listState.sort === key && listState.order === "desc" ? "asc" : "desc";
      listState.sort = key;
      listState.offset = 0;
      refresh();
    });
    return th;
  }));
  const body = el("tbody");
  const pager = el("div", { class: "pager" });
  view.replaceChildren(
    el("div", { class: "page-head" }, el("h1", { text: "Runs" }), count, el("span", { class: "spacer" }),
      health.launcher ? el("a", { class: "button", href: "#/launch", text: "New run" }) : null),
    notice,
    el("div", { class: "filters" }, search, Object.values(selects)),
    el("div", { class: "panel" }, el("div", { class: "table-wrap" }, el("table", { class: "runs" }, el("thead", {}, head), body)), pager),
  );

  let typing = null;
  search.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => { listState.q = search.value; listState.offset = 0; refresh(); }, 200);
  });
  for (const [key, select] of Object.entries(selects)) {
    select.addEventListener("change", () => { listState[key] = select.value; listState.offset = 0; refresh(); });
  }

  async function refresh() {
    const query = new URLSearchParams({ sort: listState.sort, order: listState.order, limit: PAGE_SIZE, offset: listState.offset });
    for (const key of ["q", "state", "status", "task", "agent", "model"]) if (listState[key]) query.set(key, listState[key]);
    const data = await api(`/api/runs?${query}`);
    count.textContent = `${data.total} run${data.total === 1 ? "" : "s"}`;
    notice.hidden = !data.backend_error;
    notice.textContent = data.backend_error ? `Live runs are not shown: ${data.backend_error}` : "";
    const facets = { ...data.facets, state: ["live", ...data.facets.state] };
    for (const [key, select] of Object.entries(selects)) {
      const wanted = facets[key] || [];
      const have = [...select.options].slice(1).map((option) => option.value);
      if (have.join("\n") !== wanted.join("\n")) {
        select.replaceChildren(select.options[0], ...wanted.map((value) => el("option", { value, text: value })));
      }
      select.value = listState[key];
    }
    for (const th of head.children) {
      th.classList.toggle("sorted", th.dataset.sort === listState.sort);
      th.classList.toggle("asc", th.dataset.sort === listState.sort && listState.order === "asc");
    }
    body.replaceChildren(...data.runs.map(runRow));
    if (!data.runs.length) {
      body.replaceChildren(el("tr", {}, el("td", { colspan: COLUMNS.length, class: "empty", text: "No runs match." })));
    }
    pager.replaceChildren();
    if (data.total > PAGE_SIZE) {
      pager.append(
        el("button", { text: "Previous", disabled: listState.offset === 0, onclick: () => { listState.offset -= PAGE_SIZE; refresh(); } }),
        el("span", { class: "muted", text: `${listState.offset + 1}–${Math.min(listState.offset + PAGE_SIZE, data.total)} of ${data.total}` }),
        el("button", { text: "Next", disabled: listState.offset + PAGE_SIZE >= data.total, onclick: () => { listState.offset += PAGE_SIZE; refresh(); } }),
      );
    }
  }
  return every(3000, refresh);
}

function runRow(run) {
  return el("tr", { "data-run-id": run.run_id, onclick: () => { location.hash = `#/run/${encodeURIComponent(run.run_id)}`; } },
    el("td", {}, el("a", { class: "run-id", href: `#/run/${encodeURIComponent(run.run_id)}`, text: run.run_id })),
    el("td", { class: "nowrap", text: run.task || "—" }),
    el("td", { text: run.agent || "—" }),
    el("td", { text: run.model || "—" }),
    el("td", {}, badge(run.state)),
    el("td", {}, badge(run.status)),
    el("td", { class: "detail", text: run.error_msg || "", title: run.error_msg || undefined }),
    el("td", { class: "when", text: when(run.started_at, true) }),
    el("td", { class: "num", text: duration(run.duration) }),
    el("td", { class: "num", text: spend(run.spend) }),
  );
}

// -- one run -----------------------------------------------------------------------

function runPage(runId) {
  const base = `/api/runs/${encodeURIComponent(runId)}`;
  const stops = [];
  let detail = null;
  let tab = "dialog";
  const header = el("div");
  const tabs = el("div", { class: "tabs", role: "tablist" });
  const body = el("div", { class: "tab-body" });
  view.replaceChildren(el("p", {}, el("a", { href: "#/", text: "← All runs" })), header, tabs, body);

  const tabNames = () => [["dialog", "Dialog"], ["diff", "Diff"], ["logs", "Logs"], ["settings", "Timings & settings"],
    ...(detail && detail.terminal ? [["terminal", "Terminal"]] : []), ["assistant", "Assistant"],
    ...(detail && detail.agent === "opencode" ? [["session", "OpenCode session"]] : [])];

  function drawTabs() {
    tabs.replaceChildren(...tabNames().map(([key, label]) => el("button", {
      type: "button", role: "tab", class: key === tab ? "active" : "", "data-tab": key, text: label,
      onclick: () => { if (tab !== key) { tab = key; drawTabs(); showTab(); } },
    })));
  }

  let stopTab = () => {};
  function showTab() {
    stopTab();
    body.replaceChildren();
    const show = { dialog: dialogTab, diff: diffTab, logs: logsTab, settings: settingsTab, terminal: terminalTab, assistant: assistantTab, session: sessionTab }[tab];
    stopTab = show(body, base, detail, runId) || (() => {});
  }

  async function refresh() {
    const fresh = await api(base);
    const first = detail === null;
    const hadTerminal = detail && detail.terminal;
    detail = fresh;
    header.replaceChildren(runHeader(detail, base));
    if (first || hadTerminal !== detail.terminal) drawTabs();
    if (first) showTab();
    if (tab === "settings") { stopTab(); stopTab = settingsTab(body, base, detail) || (() => {}); }
  }
  stops.push(every(3000, async () => {
    try { await refresh(); } catch (error) {
      if (detail === null && !(error instanceof Unauthorized)) header.replaceChildren(el("p", { class: "error", text: error.message }));
      throw error;
    }
  }));
  return () => { stops.forEach((stop) => stop()); stopTab(); };
}

function runHeader(detail, base) {
  const actions = [];
  if (detail.can_stop) {
    actions.push(el("button", { type: "button", text: "Stop", onclick: async (event) => {
      event.target.disabled = true;
      try { await api(`${base}/stop`, { method: "POST", body: {} }); } catch (error) { alert(error.message); }
    } }));
  }
  if (detail.can_remove) {
    actions.push(el("button", { type: "button", class: "danger", text: "Remove container", onclick: async (event) => {
      if (!confirm(`Remove the containers of ${detail.run_id}? Its results stay.`)) return;
      event.target.disabled = true;
      try { await api(base, { method: "DELETE" }); } catch (error) { alert(error.message); }
    } }));
  }
  const grade = detail.grade || {};
  const status = detail.status || grade.status || null;
  const failure = detail.error_msg || grade.error_msg || null;
  const steps = grade.steps || [];
  return el("div", {},
    el("div", { class: "run-head" }, el("h1", { class: "run-id", text: detail.run_id }), badge(detail.state), status ? badge(status) : null,
      detail.phase ? el("span", { class: "muted", text: `phase: ${detail.phase}` }) : null,
      el("span", { class: "spacer" }), actions),
    el("div", { class: "run-sub", text: [detail.task, detail.agent, detail.model].filter(Boolean).join(" · ") }),
    failure ? el("div", { class: `failure ${status === "error" ? "error" : ""}`, "data-failure": "", text: failure }) : null,
    el("div", { class: "cards" },
      card("Grade", status || (detail.state === "running" ? "in progress" : "—")),
      card("Duration", duration(detail.duration)),
      card("Spend", spend(detail.spend)),
      card("Exit code", detail.exit_code ?? "—"),
      card("Started", when(detail.started_at)),
      rewardText(grade.reward) ? card("Reward", rewardText(grade.reward)) : null,
    ),
    steps.length ? el("div", { class: "steps" }, steps.map((step) => el("span", {
      class: `step ${step.ok ? "ok" : "bad"}`,
      text: `${step.ok ? "✓" : "✗"} ${step.name} · ${Number(step.seconds || 0).toFixed(1)}s`,
    }))) : null,
    detail.launch_output && !detail.container ? el("details", { open: true }, el("summary", { text: "Launch output" }),
      el("pre", { class: "log", text: detail.launch_output })) : null,
  );
}

// A task graded by a reward (docs/harbor.md): "1", or "correctness 1 · performance 0".
// Only finite numbers of a plain object are shown; anything else shows nothing.
// format: how a number is written (the evaluation page writes means with two decimals).
function rewardText(reward, format = String) {
  if (!reward || typeof reward !== "object" || Array.isArray(reward)) return null;
  const entries = Object.entries(reward).filter(([, value]) => typeof value === "number" && Number.isFinite(value));
  if (!entries.length) return null;
  if (entries.length === 1 && entries[0][0] === "reward") return format(entries[0][1]);
  return entries.map(([key, value]) => `${key} ${format(value)}`).join(" · ");
}

function card(label, value) {
  return el("div", { class: "card" }, el("div", { class: "label", text: label }), el("div", { class: "value", text: String(value) }));
}

// -- the dialog tab -------------------------------------------------------------------

function dialogTab(body, base, detail) {
  const note = el("div", { class: "live-note", hidden: true, text: "● Live: following the dialog as it grows" });
  const list = el("div", { class: "events", "data-dialog": "" });
  const empty = el("div", { class: "empty", text: "No dialog events yet." });
  const cut = el("div", { class: "notice", hidden: true, text: "The dialog is larger than the read limit; only its start is shown." });
  body.append(note, cut, list, empty);
  let since = 0;
  return every(1500, async () => {
    for (;;) {
      const data = await api(`${base}/dialog?since=${since}`);
      note.hidden = !data.live;
      for (const event of data.events) list.append(dialogEvent(event));
      if (data.events.length) since = data.next;
      cut.hidden = !data.cut;
      empty.hidden = list.children.length > 0;
      if (!data.more) break;
    }
  });
}

// Where an event comes from (webui/dialog.py): the harness's own record, the agent's
// archive (which the agent can rewrite), or a line that could not be read.
const ORIGIN_LABELS = {
  harness: "harness",
  agent: "agent-written",
  claim: "agent-written claim, not the harness's record",
  malformed: "malformed line",
};

function dialogEvent(event) {
  const origin = event.origin === "harness" ? "harness" : event.origin === "malformed" ? "malformed" : event.claim ? "claim" : "agent";
  const kind = origin === "malformed" ? `line ${event.line}` : String(event.type);
  const meta = el("div", { class: "meta" }, el("span", { class: "kind", text: kind }), el("span", { class: `origin ${origin}`, text: ORIGIN_LABELS[origin] }),
    ...(event.seq !== null && event.seq !== undefined ? [el("span", { text: `#${event.seq}` })] : []), el("span", { text: when(event.ts) }));
  // Only the harness's own events get the look of their type; the agent's cannot dress up.
  const look = origin === "harness" || (origin === "agent" && event.type === "message") ? ` ${event.type}` : "";
  const node = el("div", { class: `event origin-${origin}${look}`, "data-seq": event.seq ?? "", "data-origin": origin }, meta);
  if (origin === "malformed") {
    node.append(el("span", { class: "muted", text: event.problem }), el("pre", { text: event.excerpt }));
    return node;
  }
  if (origin === "claim") {
    const { seq, ts, type, origin: _, claim, ...rest } = event;
    node.append(el("pre", { text: JSON.stringify({ type, ...rest }, null, 2) }));
    return node;
  }
  switch (look.trim()) {
    case "message":
      meta.firstChild.textContent = `${String(event.role || "agent")} message`;
      node.append(el("div", { class: "text", text: event.text ?? "" }));
      break;
    case "agent_started":
      node.append(el("code", { text: Array.isArray(event.command) ? event.command.join(" ") : String(event.command ?? "") }));
      break;
    case "tool_call":
      node.append(el("span", { text: `tool: ${event.tool}` }));
      break;
    case "tool_result":
      node.classList.add(event.ok ? "ok" : "bad");
      node.append(el("span", { text: `${event.tool}: ${event.ok ? "ok" : "failed"} (exit ${event.exit_code}, ${Number(event.seconds || 0).toFixed(1)}s)` }));
      if (event.output) node.append(el("details", {}, el("summary", { text: "output" }), el("pre", { text: event.output })));
      break;
    case "agent_exited":
      node.append(el("span", { text: `exit code ${event.exit_code}${event.timed_out ? ", timed out" : ""}` }));
      break;
    case "graded":
      node.append(badge(event.status));
      if (event.error_msg) node.append(el("span", { class: "muted", text: `  ${event.error_msg}` }));
      break;
    default: {
      const { seq, ts, type, origin: _, ...rest } = event;
      node.append(el("pre", { text: JSON.stringify(rest, null, 2) }));
    }
  }
  return node;
}

// -- the diff tab -------------------------------------------------------------------

function diffTab(body, base) {
  const note = el("div", { class: "live-note", hidden: true, text: "● Live: the tree as it is now" });
  const holder = el("div", { "data-diff": "" });
  body.append(note, holder);
  let shown = null;
  return every(3000, async () => {
    const data = await api(`${base}/diff`);
    note.hidden = !data.live;
    if (data.diff === shown) return;
    shown = data.diff;
    holder.replaceChildren(...renderDiff(data.diff));
    if (data.truncated) holder.prepend(el("div", { class: "notice", text: "The patch is large; only its start is shown." }));
    if (data.problem) holder.prepend(el("div", { class: "notice", text: `final.patch was not read: ${data.problem}` }));
  });
}

function renderDiff(text) {
  if (!text || !text.trim()) return [el("div", { class: "empty", text: "No changes." })];
  const files = [];
  let table = null;
  let oldLine = 0;
  let newLine = 0;
  const addFile = (name) => {
    table = el("table", { class: "diff" });
    files.push(el("div", { class: "diff-file" }, el("div", { class: "diff-file-name", text: name }), table));
  };
  const row = (kind, left, right, content) => table.append(el("tr", { class: kind },
    el("td", { class: "ln", text: left }), el("td", { class: "ln", text: right }), el("td", { text: content })));
  for (const line of text.replace(/\n$/, "").split("\n")) {
    if (line.startsWith("diff --git ")) {
      const match = / b\/(.*)$/.exec(line);
      addFile(match ? match[1] : line.slice(11));
      continue;
    }
    if (!table) addFile("patch");
    const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (hunk) {
      oldLine = Number(hunk[1]);
      newLine = Number(hunk[2]);
      row("hunk", "", "", line);
    } else if (/^(---|\+\+\+|index |new file|deleted file|similarity|rename |old mode|new mode|Binary files)/.test(line)) {
      if (!line.startsWith("---") && !line.startsWith("+++")) row("meta", "", "", line);
    } else if (line.startsWith("+")) {
      row("add", "", newLine++, line);
    } else if (line.startsWith("-")) {
      row("del", oldLine++, "", line);
    } else if (line.startsWith("\\")) {
      row("meta", "", "", line);
    } else {
      row("ctx", oldLine++, newLine++, line);
    }
  }
  return files;
}

// -- the logs tab -------------------------------------------------------------------

function logsTab(body, base, detail) {
  const sources = [...(detail.container ? [["container", "Container output"]] : []), ...detail.log_files.map((name) => [name, name])];
  if (!sources.length) {
    body.append(el("div", { class: "empty", text: "No logs yet." }));
    return null;
  }
  const picker = el("div", { class: "log-picker" });
  const note = el("div", { class: "live-note", hidden: true, text: "● Following" });
  const pre = el("pre", { class: "log", "data-log": "" });
  body.append(picker, note, pre);
  let stop = () => {};
  const choose = (name) => {
    stop();
    for (const button of picker.children) button.classList.toggle("active", button.dataset.source === name);
    pre.textContent = "";
    // A request still in flight for the previous source must not write over this one.
    pre.dataset.showing = name;
    stop = name === "container" ? followContainer(base, pre, note) : showFile(base, name, pre, note, detail.state === "running");
  };
  for (const [name, label] of sources) picker.append(el("button", { type: "button", "data-source": name, text: label, onclick: () => choose(name) }));
  choose(sources[0][0]);
  return () => stop();
}

function stickToBottom(pre, write) {
  const atBottom = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 40;
  write();
  if (atBottom) pre.scrollTop = pre.scrollHeight;
}

function followContainer(base, pre, note) {
  let since = 0;
  return every(1500, async () => {
    const data = await api(`${base}/logs?since=${since}`);
    if (pre.dataset.showing !== "container") return;
    note.hidden = !data.following;
    if (data.lines.length) stickToBottom(pre, () => pre.append(data.lines.join("\n") + "\n"));
    since = data.next;
  });
}

function showFile(base, name, pre, note, live) {
  let shown = null;
  note.hidden = !live;
  const load = async () => {
    const data = await api(`${base}/logs?file=${encodeURIComponent(name)}`);
    if (pre.dataset.showing !== name || data.text === shown) return;
    shown = data.text;
    stickToBottom(pre, () => { pre.textContent = (data.problem ? `[${name} was not read: ${data.problem}]\n` : "") + (data.truncated ? "[… earlier output cut …]\n" : "") + data.text; });
  };
  if (!live) { load(); return () => {}; }
  return every(2000, load);
}

// -- timings and settings -----------------------------------------------------------

function settingsTab(body, base, detail) {
  const timings = [
    ["Started", detail.started_at], ["Finished", detail.finished_at],
    ...Object.entries(detail.durations || {}).map(([key, value]) => [`${key} (s)`, Number(value).toFixed(2)]),
    ...((detail.grade && detail.grade.steps) || []).map((step) => [`step ${step.name} (s)`, Number(step.seconds || 0).toFixed(2)]),
  ];
  const settings = Object.entries(detail.settings || {}).sort(([a], [b]) => a.localeCompare(b));
  const extra = [["Container", detail.name], ["Run directory", detail.run_dir],
    ...Object.entries(detail.images || {}).filter(([, value]) => value).map(([key, value]) => [`image ${key}`, value])];
  const list = (pairs) => el("dl", { class: "settings" }, pairs.filter(([, value]) => value !== null && value !== undefined && value !== "")
    .flatMap(([key, value]) => [el("dt", { text: key }), el("dd", { text: typeof value === "object" ? JSON.stringify(value) : String(value) })]));
  body.replaceChildren(el("div", { class: "two-columns" },
    el("div", {}, el("h2", { text: "Timings" }), list(timings), el("h2", { text: "Where" }), list(extra)),
    el("div", {}, el("h2", { text: "Settings" }), list(settings), ...archiveListing(detail.archive))));
  return null;
}

// What the agent left in archive/, as listed (never opened) by the server.
function archiveListing(archive) {
  if (!archive) return [];
  const describe = (entry) => entry.kind === "file" ? `${entry.size} bytes${entry.setuid ? ", setuid/setgid" : ""}` : `${entry.kind}, not read`;
  return [el("h2", { text: "The agent's archive" }),
    el("ul", { class: "archive", "data-archive": "" }, ...archive.entries.map((entry) => el("li", { text: `${entry.name}: ${describe(entry)}` }))),
    ...(archive.truncated ? [el("div", { class: "notice", text: `Only the first ${archive.entries.length} entries are listed.` })] : [])];
}

// -- the terminal -------------------------------------------------------------------

function base64url(text) {
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function terminalTab(body, base, detail, runId) {
  const user = el("select", { "aria-label": "user" }, el("option", { value: "model", text: "as model" }), el("option", { value: "root", text: "as root" }));
  const status = el("span", { class: "muted" });
  const connect = el("button", { type: "button", class: "primary", text: "Connect" });
  const box = el("div", { class: "terminal-box", "data-terminal": "" });
  body.append(el("div", { class: "terminal-bar" }, user, connect, status), box);
  let socket = null;
  let terminal = null;
  let fit = null;
  const onResize = () => { if (fit) fit.fit(); };
  window.addEventListener("resize", onResize);

  const close = () => {
    if (socket) socket.close();
    socket = null;
    if (terminal) terminal.dispose();
    terminal = null;
  };

  connect.addEventListener("click", () => {
    close();
    terminal = new Terminal({
      fontFamily: '"DejaVu Sans Mono", Menlo, Consolas, monospace', fontSize: 13, cursorBlink: true,
      theme: { background: "#0f172a", foreground: "#dbe4f0" },
    });
    fit = new FitAddon.FitAddon();
    terminal.loadAddon(fit);
    terminal.open(box);
    fit.fit();
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const query = new URLSearchParams({ user: user.value, cols: terminal.cols, rows: terminal.rows });
    const protocols = ["ssebench.v1", ...(token() ? [`ssebench.token.${base64url(token())}`] : [])];
    socket = new WebSocket(`${scheme}://${location.host}${base}/terminal?${query}`, protocols);
    socket.binaryType = "arraybuffer";
    status.textContent = "connecting…";
    const current = socket;
    const term = terminal;
    socket.onopen = () => {
      status.textContent = `connected as ${user.value}`;
      term.focus();
      current.send(JSON.stringify({ type: "resize", cols: term.cols, rows: term.rows }));
    };
    socket.onmessage = (message) => {
      if (typeof message.data === "string") {
        const data = JSON.parse(message.data);
        if (data.type === "exit") term.write(`\r\n[the shell ended with status ${data.code}]\r\n`);
      } else {
        term.write(new Uint8Array(message.data));
      }
    };
    socket.onclose = () => { status.textContent = "disconnected"; };
    term.onData((data) => { if (current.readyState === WebSocket.OPEN) current.send(JSON.stringify({ type: "input", data })); });
    term.onResize(({ cols, rows }) => { if (current.readyState === WebSocket.OPEN) current.send(JSON.stringify({ type: "resize", cols, rows })); });
  });
  return () => { window.removeEventListener("resize", onResize); close(); };
}

// -- the launcher -------------------------------------------------------------------

function launchPage() {
  const form = el("form", { class: "panel panel-body launch" });
  view.replaceChildren(el("div", { class: "page-head" }, el("h1", { text: "Launch a run" })), form);
  form.append(el("p", { class: "muted", text: "Loading the tasks and agents…" }));
  (async () => {
    let options;
    try { options = await api("/api/launch"); } catch (error) {
      if (!(error instanceof Unauthorized)) form.replaceChildren(el("p", { class: "error", text: error.message }));
      return;
    }
    const task = el("select", { id: "launch-task", name: "task", required: true },
      options.tasks.map((item) => el("option", { value: item.id, text: `${item.id} (${item.language})` })));
    const agent = el("select", { id: "launch-agent", name: "agent", required: true },
      options.agents.map((item) => el("option", { value: item.name, text: item.name })));
    const agentDescription = el("div", { class: "hint" });
    const models = options.models || { models: [] };
    const model = el("select", { id: "launch-model", name: "model" }, el("option", { value: "", text: "none" }),
      models.models.map((item) => el("option", {
        value: item.name, disabled: item.key_missing, "data-key-missing": item.key_missing ? "" : undefined,
        text: item.key_missing ? `${item.name} (no key: $${item.key_variable} is not set)` : item.provider ? `${item.name} (${item.provider})` : item.name,
      })));
    const modelHint = el("div", { class: "hint", id: "launch-model-hint" });
    const runId = el("input", { id: "launch-run-id", name: "run_id", placeholder: "generated", autocomplete: "off", pattern: "[A-Za-z0-9._\\-]{1,64}" });
    const description = el("div", { class: "hint" });
    const error = el("p", { class: "error", hidden: true });
    const submit = el("button", { type: "submit", class: "primary", text: "Launch" });
    const showTask = () => {
      const chosen = options.tasks.find((item) => item.id === task.value);
      description.textContent = chosen ? chosen.description : "";
    };
    const showAgent = () => {
      const chosen = options.agents.find((item) => item.name === agent.value);
      agentDescription.textContent = chosen ? chosen.description : "";
      const needsModel = Boolean(chosen && chosen.needs_model);
      model.disabled = !needsModel;
      if (!needsModel) model.value = "";
      else if (!model.value) {
        const usable = models.models.find((item) => !item.key_missing);
        if (usable) model.value = usable.name;
      }
      const source = models.source === "proxy" ? "the models the proxy serves" : "the models of the models/ files";
      modelHint.textContent = needsModel ? [`From ${source}.`, models.problem || ""].filter(Boolean).join(" ") : "This agent uses no model.";
    };
    task.addEventListener("change", showTask);
    agent.addEventListener("change", showAgent);
    showTask();
    showAgent();
    form.replaceChildren(
      el("p", { class: "muted", text: `Dataset ${options.dataset}. The run keeps its container, so you can watch it and open a terminal; remove it from its page when done.` }),
      el("label", { for: "launch-task", text: "Task" }), task, description,
      el("label", { for: "launch-agent", text: "Agent" }), agent, agentDescription,
      el("label", { for: "launch-model", text: "Model" }), model, modelHint,
      el("label", { for: "launch-run-id", text: "Run ID" }), runId, el("div", { class: "hint", text: "Leave empty for a new one." }),
      error,
      el("div", { class: "actions" }, submit, el("a", { href: "#/", text: "Cancel" })),
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      submit.disabled = true;
      error.hidden = true;
      try {
        const answer = await api("/api/runs", { method: "POST", body: { task: task.value, agent: agent.value, model: model.value || null, run_id: runId.value || null } });
        location.hash = `#/run/${encodeURIComponent(answer.run_id)}`;
      } catch (failure) {
        submit.disabled = false;
        if (!(failure instanceof Unauthorized)) { error.hidden = false; error.textContent = failure.message; }
      }
    });
  })();
  return () => {};
}

// -- start ---------------------------------------------------------------------------

start();
