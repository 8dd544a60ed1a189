// The evaluation view: the reports of `ssebench eval`, one report as a matrix of tasks x
// (agent, model), and two reports side by side. Uses app.js's helpers (el, api, every,
// badge, duration, spend, when), which are defined when these functions run. As in
// app.js, report data (task IDs, model names, messages) goes in with textContent only.
"use strict";

const OUTCOME_MARK = { passed: "✓", failed: "✗", error: "!", stopped: "■", not_run: "–" };
const evaluationFilters = { q: "", outcome: "", agent: "", model: "" };

function percentOf(value) {
  return value === null || value === undefined ? "—" : `${(value * 100).toFixed(1)}%`;
}

function intervalOf(statistic) {
  return statistic && statistic.ci95 ? `${percentOf(statistic.ci95[0])}–${percentOf(statistic.ci95[1])}` : "—";
}

function columnLabel(column) {
  return `${column.agent} / ${column.model}`;
}

function reportState(report) {
  if (report.in_progress) return el("span", { class: "badge running", text: "in progress" });
  if (report.interrupted) return el("span", { class: "badge stopped", text: "interrupted" });
  return el("span", { class: "badge finished", text: "finished" });
}

function countsText(counts) {
  if (!counts || counts.total === undefined) return "—";
  const parts = [`${counts.passed || 0} passed`, `${counts.failed || 0} failed`];
  if (counts.error) parts.push(`${counts.error} error`);
  if (counts.not_run) parts.push(`${counts.not_run} not run`);
  return `${parts.join(", ")} of ${counts.total}`;
}

function runLink(attempt) {
  const status = attempt.status || (attempt.state && attempt.state !== "queued" ? "running" : "queued");
  const mark = OUTCOME_MARK[attempt.status] || "…";
  const title = [`attempt ${attempt.attempt}: ${status}`, attempt.skipped ? "(recorded earlier)" : "",
    attempt.seconds !== null ? duration(attempt.seconds) : "", attempt.error_msg || ""].filter(Boolean).join(" · ");
  const attributes = { class: `attempt ${status}`, text: mark, title, "data-status": status };
  if (!attempt.run_id) return el("span", attributes);
  return el("a", { ...attributes, href: `#/run/${encodeURIComponent(attempt.run_id)}`, "data-run-id": attempt.run_id });
}

// -- the list of reports ---------------------------------------------------------------

function evaluationsPage() {
  const body = el("tbody");
  const first = el("select", { id: "compare-first", "aria-label": "first report" });
  const second = el("select", { id: "compare-second", "aria-label": "second report" });
  const compareButton = el("button", { type: "button", class: "primary", text: "Compare" });
  compareButton.addEventListener("click", () => {
    if (first.value && second.value) location.hash = `#/compare/${encodeURIComponent(first.value)}/${encodeURIComponent(second.value)}`;
  });
  const where = el("span", { class: "muted" });
  view.replaceChildren(
    el("div", { class: "page-head" }, el("h1", { text: "Evaluations" }), where),
    el("div", { class: "filters" }, el("span", { text: "Compare" }), first, el("span", { text: "with" }), second, compareButton),
    el("div", { class: "panel" }, el("div", { class: "table-wrap" }, el("table", { class: "runs evaluations" },
      el("thead", {}, el("tr", {}, ["Report", "State", "Dataset", "Agents / models", "Runs", "Started", "Duration", "Spend"].map((label) => el("th", { text: label })))),
      body))),
  );
  let shown = null;
  return every(3000, async () => {
    const data = await api("/api/evaluations");
    where.textContent = `in ${data.results}`;
    const signature = JSON.stringify(data.reports);
    if (signature === shown) return;
    shown = signature;
    body.replaceChildren(...data.reports.map((report) => el("tr", { "data-report": report.name },
      el("td", {}, el("a", { class: "run-id", href: `#/evaluation/${encodeURIComponent(report.name)}`, text: report.name })),
      el("td", {}, report.problem ? el("span", { class: "error", text: report.problem }) : reportState(report)),
      el("td", { text: report.dataset || "—" }),
      el("td", { text: (report.matrix || []).map(columnLabel).join(", ") || "—" }),
      el("td", { text: countsText(report.counts) }),
      el("td", { class: "when", text: when(report.started_at, true) }),
      el("td", { class: "num", text: duration(report.elapsed_seconds) }),
      el("td", { class: "num", text: spend(report.spend) }),
    )));
    if (!data.reports.length) body.replaceChildren(el("tr", {}, el("td", { colspan: 8, class: "empty", text: "No reports of ssebench eval in the results folder." })));
    const names = data.reports.filter((report) => !report.problem).map((report) => report.name);
    for (const [select, index] of [[first, 1], [second, 0]]) {
      const keep = select.value;
      select.replaceChildren(...names.map((name) => el("option", { value: name, text: name })));
      select.value = names.includes(keep) ? keep : names[Math.min(index, names.length - 1)] || "";
    }
  });
}

// -- one report ---------------------------------------------------------------------------

function evaluationPage(name) {
  const header = el("div");
  const search = el("input", { type: "search", placeholder: "Filter tasks…", value: evaluationFilters.q, "aria-label": "Filter tasks" });
  const outcome = el("select", { "aria-label": "outcome", "data-filter": "outcome" },
    [["", "Every task"], ["failed", "A column failed"], ["error", "A column erred"], ["differ", "Columns differ"], ["pending", "Still running"]]
      .map(([value, label]) => el("option", { value, text: label })));
  const agent = el("select", { "aria-label": "agent", "data-filter": "agent" }, el("option", { value: "", text: "Every agent" }));
  const model = el("select", { "aria-label": "model", "data-filter": "model" }, el("option", { value: "", text: "Every model" }));
  outcome.value = evaluationFilters.outcome;
  const holder = el("div", { class: "panel" });
  view.replaceChildren(el("p", {}, el("a", { href: "#/evaluations", text: "← All evaluations" })), header,
    el("div", { class: "filters" }, search, outcome, agent, model), holder);
  let data = null;
  let shown = null;
  const draw = () => { if (data) holder.replaceChildren(evaluationMatrix(data)); };
  search.addEventListener("input", () => { evaluationFilters.q = search.value; draw(); });
  for (const [key, select] of [["outcome", outcome], ["agent", agent], ["model", model]]) {
    select.addEventListener("change", () => { evaluationFilters[key] = select.value; draw(); });
  }
  return every(3000, async () => {
    let fresh;
    try { fresh = await api(`/api/evaluations/${encodeURIComponent(name)}`); } catch (error) {
      if (data === null && !(error instanceof Unauthorized)) header.replaceChildren(el("p", { class: "error", text: error.message }));
      throw error;
    }
    const signature = JSON.stringify(fresh);
    if (signature === shown) return;
    shown = signature;
    data = fresh;
    for (const [key, select] of [["agent", agent], ["model", model]]) {
      const values = [...new Set(data.columns.map((column) => column[key]))];
      select.replaceChildren(select.options[0], ...values.map((value) => el("option", { value, text: value })));
      select.value = values.includes(evaluationFilters[key]) ? evaluationFilters[key] : "";
      evaluationFilters[key] = select.value;
    }
    header.replaceChildren(evaluationHead(data));
    draw();
  });
}

function evaluationHead(data) {
  return el("div", {},
    el("div", { class: "run-head" }, el("h1", { class: "run-id", text: data.name }), reportState(data),
      data.in_progress ? el("span", { class: "live-note", text: `● Live: updated ${when(data.updated_at)}` }) : null),
    el("div", { class: "run-sub", text: [data.dataset, data.backend && `${data.backend} backend`,
      `${data.attempts} attempt${data.attempts === 1 ? "" : "s"} per task`].filter(Boolean).join(" · ") }),
    data.max_spend_stopped ? el("div", { class: "notice", text: `--max-spend: ${data.max_spend_stopped}` }) : null,
    el("div", { class: "cards" },
      card("Runs", countsText(data.counts)),
      card("Started", when(data.started_at)),
      card("Duration", duration(data.elapsed_seconds)),
      card("Spend", spend(data.spend)),
    ));
}

function visibleColumns(data) {
  return data.columns.filter((column) => (!evaluationFilters.agent || column.agent === evaluationFilters.agent)
    && (!evaluationFilters.model || column.model === evaluationFilters.model));
}

function rowMatches(row, columns) {
  if (evaluationFilters.q && !row.task.toLowerCase().includes(evaluationFilters.q.toLowerCase())) return false;
  const outcomes = columns.map((column) => row.cells[column.index].outcome);
  switch (evaluationFilters.outcome) {
    case "failed": return outcomes.includes("failed");
    case "error": return outcomes.includes("error");
    case "pending": return outcomes.includes("pending");
    case "differ": return new Set(outcomes).size > 1;
    default: return true;
  }
}

function evaluationMatrix(data) {
  const columns = visibleColumns(data);
  const rows = data.rows.filter((row) => rowMatches(row, columns));
  const head = el("tr", {}, el("th", { text: "Task" }), columns.map((column) => el("th", { class: "column", "data-column": column.index },
    el("div", { text: column.agent }), el("div", { class: "muted", text: column.model }))));
  const body = el("tbody", {}, rows.map((row) => el("tr", { "data-task": row.task },
    el("td", { class: "nowrap task", text: row.task }),
    columns.map((column) => {
      const cell = row.cells[column.index];
      const word = cell.outcome || "none";
      return el("td", { class: `cell outcome-${word}`, "data-outcome": word, "data-column": column.index },
        el("span", { class: "cell-count", text: cell.graded ? `${cell.passed}/${cell.graded}` : "" }),
        cell.attempts.map(runLink));
    }))));
  if (!rows.length) body.append(el("tr", {}, el("td", { colspan: columns.length + 1, class: "empty", text: "No task matches." })));
  const many = data.attempts > 1;
  const footRow = (label, value, attributes = {}) => el("tr", attributes, el("th", { text: label }), columns.map((column) => el("td", { class: "num", text: value(column) })));
  const foot = el("tfoot", {},
    footRow("Pass rate", (column) => {
      const rate = column.resolved_rate;
      return rate.value === null ? "—" : `${percentOf(rate.value)} (${rate.count}/${rate.of})`;
    }, { "data-row": "pass-rate" }),
    many ? footRow("95% interval", (column) => intervalOf(column.resolved_rate), { "data-row": "interval" }) : null,
    many ? Object.keys(columns[0] ? columns[0].pass_at_k : {}).map((k) => footRow(`pass@${k}`, (column) => {
      const value = column.pass_at_k[k];
      return value && value.value !== null ? `${percentOf(value.value)} [${intervalOf(value)}]` : "—";
    }, { "data-row": `pass-at-${k}` })) : null,
    footRow("Errors", (column) => String(column.counts.error || 0), { "data-row": "errors" }),
    footRow("Spend", (column) => spend(column.spend), { "data-row": "spend" }),
    footRow("Spend per task", (column) => spend(column.mean_spend_per_task.value)),
    footRow("Duration", (column) => duration(column.seconds), { "data-row": "duration" }),
    footRow("Duration per task", (column) => duration(column.mean_seconds_per_task.value)),
    columns.some((column) => Object.keys(column.mean_reward_per_task || {}).length)
      ? footRow("Reward per task", (column) => rewardMeans(column.mean_reward_per_task), { "data-row": "reward" })
      : null,
  );
  return el("div", { class: "table-wrap" }, el("table", { class: "runs matrix" }, el("thead", {}, head), body, foot));
}

// A column's mean reward per task (docs/harbor.md): "0.50", or "correctness 0.50 · performance 0.25".
function rewardMeans(means) {
  const values = Object.fromEntries(Object.entries(means || {}).map(([key, mean]) => [key, mean.value]));
  return rewardText(values, (value) => value.toFixed(2)) || "—";
}

// -- two reports side by side -----------------------------------------------------------------

function comparePage(firstName, secondName) {
  const head = el("div");
  const holder = el("div");
  const choice = { first: "", second: "" };
  const firstColumn = el("select", { id: "compare-first-column", "aria-label": "first column" });
  const secondColumn = el("select", { id: "compare-second-column", "aria-label": "second column" });
  const flippedOnly = el("input", { type: "checkbox", id: "flipped-only" });
  view.replaceChildren(el("p", {}, el("a", { href: "#/evaluations", text: "← All evaluations" })), head,
    el("div", { class: "filters" }, el("span", { text: "Compare column" }), firstColumn, el("span", { text: "with" }), secondColumn,
      el("label", { class: "inline", for: "flipped-only" }, flippedOnly, " Only the tasks that flipped")),
    holder);
  let data = null;
  const draw = () => {
    if (!data) return;
    holder.replaceChildren(...data.pairs.map((pair) => comparisonPanel(pair, data, flippedOnly.checked)));
  };
  flippedOnly.addEventListener("change", draw);
  for (const [key, select] of [["first", firstColumn], ["second", secondColumn]]) {
    select.addEventListener("change", () => {
      choice[key] = select.value;
      if (key === "first" && choice.first && !choice.second) choice.second = "0";
      if (key === "second" && choice.second && !choice.first) choice.first = "0";
      load().catch((error) => { if (!(error instanceof Unauthorized)) holder.replaceChildren(el("p", { class: "error", text: error.message })); });
    });
  }
  const columnsOf = (report) => [el("option", { value: "", text: "the same agent and model" }),
    ...report.matrix.map((column, index) => el("option", { value: String(index), text: columnLabel(column) }))];
  async function load() {
    const query = new URLSearchParams({ with: secondName });
    if (choice.first !== "" && choice.second !== "") { query.set("first_entry", choice.first); query.set("second_entry", choice.second); }
    data = await api(`/api/evaluations/${encodeURIComponent(firstName)}/compare?${query}`);
    head.replaceChildren(el("div", { class: "page-head" }, el("h1", { text: "Comparison" })),
      el("div", { class: "two-columns compare-head" },
        ...[["A", data.first], ["B", data.second]].map(([letter, report]) => el("div", { class: "panel panel-body" },
          el("div", { class: "run-head" }, el("strong", { text: letter }),
            el("a", { class: "run-id", href: `#/evaluation/${encodeURIComponent(report.name)}`, text: report.name }), reportState(report)),
          el("div", { class: "muted", text: [report.dataset, when(report.started_at), countsText(report.counts)].filter(Boolean).join(" · ") })))));
    for (const [key, select, report] of [["first", firstColumn, data.first], ["second", secondColumn, data.second]]) {
      select.replaceChildren(...columnsOf(report));
      select.value = choice[key];
    }
    draw();
  }
  return every(5000, async () => {
    try { await load(); } catch (error) {
      if (!(error instanceof Unauthorized)) holder.replaceChildren(el("p", { class: "error", "data-compare-error": "", text: error.message }));
      throw error;
    }
  });
}

function comparisonPanel(pair, data, flippedOnly) {
  const side = (value) => {
    if (!value) return el("span", { class: "muted", text: "not run" });
    return el("span", {}, badge(value.outcome || "pending"), el("span", { class: "muted", text: ` ${value.passed}/${value.graded} `}),
      value.attempts.map(runLink));
  };
  const tasks = pair.tasks.filter((task) => !flippedOnly || task.flip);
  const difference = pair.difference === null ? "—" : `${pair.difference >= 0 ? "+" : ""}${(pair.difference * 100).toFixed(1)} points`;
  return el("div", { class: "panel comparison", "data-pair": `${columnLabel(pair.first)} | ${columnLabel(pair.second)}` },
    el("div", { class: "panel-body" },
      el("h2", { text: `A: ${columnLabel(pair.first)}  vs  B: ${columnLabel(pair.second)}` }),
      el("div", { class: "cards" },
        card("A pass rate", `${percentOf(pair.first_rate.value)} [${intervalOf(pair.first_rate)}]`),
        card("B pass rate", `${percentOf(pair.second_rate.value)} [${intervalOf(pair.second_rate)}]`),
        card("Difference", difference),
        card("Gained (B only)", String(pair.gained.length)),
        card("Lost (A only)", String(pair.lost.length)),
        card("McNemar exact p", pair.p_exact === null ? "—" : pair.p_exact.toFixed(3)),
      ),
      el("div", { class: "muted", text: `${pair.paired_tasks} tasks graded by both: ${pair.both_resolved} solved by both, ${pair.neither_resolved} by neither.` })),
    el("div", { class: "table-wrap" }, el("table", { class: "runs compare" },
      el("thead", {}, el("tr", {}, ["Task", "A", "B", "Flip"].map((label) => el("th", { text: label })))),
      el("tbody", {}, tasks.length ? tasks.map((task) => el("tr", { class: task.flip ? `flip ${task.flip}` : "", "data-task": task.task, "data-flip": task.flip || "" },
        el("td", { class: "nowrap task", text: task.task }),
        el("td", {}, side(task.first)),
        el("td", {}, side(task.second)),
        el("td", {}, task.flip ? el("span", { class: `badge ${task.flip === "gained" ? "passed" : "failed"}`, text: task.flip }) : el("span", { class: "muted", text: "—" })),
      )) : el("tr", {}, el("td", { colspan: 4, class: "empty", text: "No task flipped." }))))));
}
