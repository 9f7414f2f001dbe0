// The review app's page: window mode (accept or reject one pause or turn end at a time) and
// conversation mode (re-annotate a whole conversation's labels).
//
// Rules this file keeps (the server's Content-Security-Policy and the tests depend on them):
// every element made from data is built with createElement/createElementNS, setAttribute and
// textContent, never from markup; there is no inline style and no inline script.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const PAD = 12; // px of timeline before t0 and after t1, so edge handles stay grabbable
const AXIS_H = 20;
const LANE_H = 22;
const WORD_LANE_H = 30; // words alternate between two baselines so neighbours overlap less
const HANDLE_W = 8;
const INSTANT_W = 5; // an end of turn is an instant; it still needs a visible, clickable rect
const EDGE_EPS_S = 0.0005; // below the server's millisecond rounding: not a change
const REPLAY_S = 3;
const ADD_SPAN_S = 0.5;
const ZOOM_STEP = 1.5;
const MIN_PX_PER_S = 2;
const MAX_PX_PER_S = 1000;
const DEFAULT_PX_PER_S = 40; // conversation mode: readable words even in a long conversation

// The lanes of each speaker, top to bottom; a label goes in the lane listing its kind.
const LANES = [
  { name: "words", kinds: [] },
  { name: "turn", kinds: ["turn"] },
  { name: "pause · end", kinds: ["pause", "end_of_turn"] },
  { name: "bc · take · ovl", kinds: ["backchannel", "failed_take", "overlap"] },
  { name: "over a reply", kinds: ["barge_in", "reply_backchannel"] },
];
const NO_SPEAKER = "-";
// What a barge-in or a backchannel during a reply measures (pmc.labels, docs/labels.md).
const TALK_OVER_MEASURES = [
  ["reply_offset_s", "into the reply"],
  ["yield_s", "replier stopped after"],
  ["talk_over_s", "both talking"],
  ["kept_talking_s", "replier went on"],
];

const app = {
  state: null, // GET /api/state
  view: "none", // "window" | "conversation" | "none"
  detail: null, // the window or conversation being shown, as the server sent it
  offset: 0, // conversation time of the player's time 0
  scale: null, // the timeline's mapping: {t0, t1, pxPerS, rows}
  selectedId: null, // conversation mode: the selected label
  zoom: null, // conversation mode: {conversationId, pxPerS} the reviewer chose
  routeSeq: 0, // bumps on each navigation, so a slow answer cannot draw over a newer view
  busy: false, // a decision or an edit is on its way; keys and clicks wait
};

const $ = (id) => document.getElementById(id);
const player = () => $("player");

// -- building elements from data ---------------------------------------------------------------

function el(tag, attrs = {}, text = null) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== null) node.textContent = text;
  return node;
}

function svgEl(tag, attrs = {}, text = null) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== null) node.textContent = text;
  return node;
}

const fmt = (seconds) => Number(seconds).toFixed(3);
const round3 = (seconds) => Math.round(seconds * 1000) / 1000;
const kindName = (kind) => kind.replace(/_/g, " ");

// -- talking to the server ---------------------------------------------------------------------

async function api(path, body) {
  const init =
    body === undefined
      ? {}
      : {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify(body),
        };
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    return { ok: false, status: 0, data: { error: `the app did not answer (${error.message})` } };
  }
  let data;
  try {
    data = await response.json();
  } catch {
    data = { error: `${response.status} ${response.statusText}` };
  }
  return { ok: response.ok, status: response.status, data };
}

// -- messages: #message for errors and log problems, #status for the last action --------------

function renderMessage(errorText) {
  const box = $("message");
  const lines = [];
  if (errorText) lines.push(el("p", { class: "error" }, errorText));
  const problems = app.state ? app.state.problems : [];
  if (problems.length) {
    lines.push(el("p", {}, `${problems.length} line(s) of your log could not be read:`));
    const list = el("ul", { class: "problems" });
    for (const problem of problems) list.append(el("li", {}, problem));
    lines.push(list);
  }
  box.replaceChildren(...lines);
  box.hidden = lines.length === 0;
}

const showError = (text) => renderMessage(text);
const clearError = () => renderMessage(null);
const setStatus = (text) => {
  $("status").textContent = text;
};

function setReady(done, view = app.view, id = "") {
  document.body.dataset.ready = done ? "1" : "0";
  document.body.dataset.view = view;
  document.body.dataset.id = id;
}

// -- the lists in the sidebar ------------------------------------------------------------------

function statusText(w) {
  if (w.status === "rejected") return `rejected (${w.reason})`;
  if (w.status === "stale") return "stale: decide again";
  return w.status;
}

function windowItem(w) {
  const item = el("li", { "data-window-id": w.window_id });
  const link = el("a", { href: `#/window/${encodeURIComponent(w.window_id)}` });
  link.append(
    el("span", { class: "kind" }, kindName(w.kind)),
    el("span", { class: "where" }, `${w.conversation_id} · ${w.speaker}`),
    el("span", { class: "where" }, `${fmt(w.boundary_conv_s)} s`),
    el("span", { class: "badge" }),
  );
  if (!w.drawn) link.append(el("span", { class: "candidate" }, "candidate"));
  item.append(link);
  setItemStatus(item, w);
  return item;
}

function setItemStatus(item, w) {
  item.dataset.status = w.status;
  item.classList.remove("undecided", "accepted", "rejected", "stale");
  item.classList.add(w.status);
  item.querySelector(".badge").textContent = statusText(w);
}

function renderWindowList() {
  const windows = app.state.windows;
  $("window-list").replaceChildren(...windows.map(windowItem));
  $("window-count").textContent = `(${windows.length})`;
}

// A decision changes one window's status: keep the state and its list item in step.
function updateWindow(w) {
  const index = app.state.windows.findIndex((x) => x.window_id === w.window_id);
  if (index >= 0) app.state.windows[index] = w;
  const item = $("window-list").querySelector(`li[data-window-id="${CSS.escape(w.window_id)}"]`);
  if (item) setItemStatus(item, w);
}

function conversationItem(c) {
  const item = el("li", { "data-conversation-id": c.conversation_id });
  const link = el("a", { href: `#/conversation/${encodeURIComponent(c.conversation_id)}` });
  link.append(
    el("span", { class: "where" }, c.conversation_id),
    el("span", { class: "muted" }, ` ${fmt(c.duration_s)} s`),
  );
  if (c.started) link.append(el("span", { class: "badge" }, "started"));
  item.dataset.started = c.started ? "1" : "0";
  item.append(link);
  return item;
}

function renderConversationList() {
  $("conversation-list").replaceChildren(...app.state.conversations.map(conversationItem));
}

function markCurrent(listId, attribute, id) {
  for (const item of $(listId).children) {
    const current = item.getAttribute(attribute) === id;
    item.classList.toggle("current", current);
    if (current) {
      item.setAttribute("aria-current", "true");
      item.scrollIntoView({ block: "nearest" });
    } else {
      item.removeAttribute("aria-current");
    }
  }
}

// -- routing: #/window/<id>, #/conversation/<id>, #/conversations; empty = the first window ---

function parseHash() {
  const match = location.hash.match(/^#\/(window|conversation)\/(.+)$/);
  if (match) return { view: match[1], id: decodeURIComponent(match[2]) };
  if (location.hash === "#/conversations") return { view: "conversations", id: "" };
  return { view: "home", id: "" };
}

async function route() {
  const seq = ++app.routeSeq;
  setReady(false);
  clearError();
  const where = parseHash();
  if (where.view === "home" && app.state.windows.length) {
    // The first window, without a hashchange of its own.
    where.view = "window";
    where.id = app.state.windows[0].window_id;
    history.replaceState(null, "", `#/window/${encodeURIComponent(where.id)}`);
  }
  if (where.view === "window") {
    await openWindow(where.id, seq);
  } else if (where.view === "conversation") {
    await openConversation(where.id, seq);
  } else {
    showNothing();
  }
  if (seq === app.routeSeq) setReady(true, app.view, app.view === "none" ? "" : where.id);
}

function showNothing() {
  app.view = "none";
  app.detail = null;
  player().pause();
  $("placeholder").hidden = false;
  for (const id of ["media", "window-panel", "conversation-panel"]) $(id).hidden = true;
  markCurrent("window-list", "data-window-id", null);
  markCurrent("conversation-list", "data-conversation-id", null);
  $("placeholder").textContent = app.state.conversations.length
    ? "Pick a conversation to re-annotate, or a window to judge."
    : "Nothing to review: no windows and no conversations.";
}

function showSections(view) {
  $("placeholder").hidden = true;
  $("media").hidden = false;
  $("window-panel").hidden = view !== "window";
  $("conversation-panel").hidden = view !== "conversation";
  $("zoom").hidden = view !== "conversation";
}

// Change the player's file only when it differs, so re-rendering keeps playback going.
function setAudio(url, offset) {
  app.offset = offset;
  const audio = player();
  if (audio.getAttribute("src") !== url) {
    audio.pause();
    audio.setAttribute("src", url);
    audio.load();
  }
}

// -- window mode -------------------------------------------------------------------------------

async function openWindow(id, seq) {
  const result = await api(`/api/window/${encodeURIComponent(id)}`);
  if (seq !== app.routeSeq) return;
  if (!result.ok) {
    showNothing();
    showError(`Window ${id}: ${result.data.error}`);
    return;
  }
  renderWindow(result.data, true);
  const index = app.state.windows.findIndex((w) => w.window_id === id);
  setStatus(`Window ${index + 1} of ${app.state.windows.length}.`);
}

function renderWindow(detail, fresh) {
  const w = detail.window;
  app.view = "window";
  app.detail = detail;
  app.selectedId = null;
  showSections("window");
  $("view-title").textContent =
    `${kindName(w.kind)} of ${w.speaker} at ${fmt(w.boundary_conv_s)} s · ${w.conversation_id}`;
  $("view-info").textContent =
    `Left ear: ${detail.speakers.left} (whose turn it is) · ` +
    `right ear: ${detail.speakers.right} · ` +
    `clip ${fmt(detail.clip.start_conv_s)}–${fmt(detail.clip.end_conv_s)} s`;
  setAudio(detail.clip.audio, detail.clip.start_conv_s);
  const width = $("timeline-scroll").clientWidth - 2 * PAD;
  const span = Math.max(detail.clip.end_conv_s - detail.clip.start_conv_s, 0.1);
  drawTimeline({
    t0: detail.clip.start_conv_s,
    t1: detail.clip.end_conv_s,
    pxPerS: Math.max(width / span, MIN_PX_PER_S),
    speakers: [detail.speakers.left, detail.speakers.right],
    words: detail.words,
    labels: detail.labels,
    judgedId: w.label_id,
    boundary: w.boundary_conv_s,
    boundaryEnd: w.kind === "pause" ? w.boundary_end_conv_s : null,
  });
  renderDecision(detail, fresh);
  renderCuts(detail.cuts);
  updateWindow(w);
  markCurrent("window-list", "data-window-id", w.window_id);
  markCurrent("conversation-list", "data-conversation-id", null);
}

function describeDecision(d) {
  return d.decision === "accept" ? "accepted" : `rejected: ${d.reason}`;
}

function renderDecision(detail, fresh) {
  const d = detail.decision;
  const w = detail.window;
  const stale = d !== null && d.stale;
  // A stale decision counts for nothing: it is never shown as the window's answer.
  $("stale-notice").hidden = !stale;
  $("stale-notice").textContent = stale
    ? `Your decision (${describeDecision(d)}, ${d.at_utc}) judged an earlier version of this ` +
      "label; decide again."
    : "";
  $("labels-changed").hidden = !w.labels_changed;
  let now = "Not decided yet.";
  if (stale) now = "Undecided: the label changed since your decision.";
  else if (d) now = `You ${describeDecision(d)} (${d.at_utc}).`;
  $("decision-now").textContent = now;
  $("decision-now").dataset.status = w.status;
  $("accept").setAttribute("aria-pressed", String(w.status === "accepted"));
  for (const button of $("reject-buttons").children) {
    const pressed = w.status === "rejected" && button.dataset.reason === w.reason;
    button.setAttribute("aria-pressed", String(pressed));
  }
  // A new window starts from the note of my last decision on it; after deciding, keep the text.
  if (fresh) $("note").value = d ? d.note : "";
}

function renderRejectButtons() {
  const buttons = app.state.reasons.map((reason, index) => {
    const button = el("button", { type: "button", class: "reject", "data-reason": reason });
    button.append(`Reject: ${reason} `, el("kbd", {}, String(index + 1)));
    button.addEventListener("click", () => decide("reject", reason));
    return button;
  });
  $("reject-buttons").replaceChildren(...buttons);
}

function renderCuts(cuts) {
  const names = Object.keys(cuts || {});
  $("cuts").hidden = names.length === 0;
  const buttons = names.map((name) => {
    const button = el("button", { type: "button", class: "cut", "data-cut": name }, name);
    button.addEventListener("click", () => playCut(cuts[name]));
    return button;
  });
  $("cut-buttons").replaceChildren(...buttons);
  const cutPlayer = $("cut-player");
  cutPlayer.pause();
  if (names.length === 0) cutPlayer.removeAttribute("src");
}

function playCut(url) {
  player().pause();
  const cutPlayer = $("cut-player");
  if (cutPlayer.getAttribute("src") !== url) cutPlayer.setAttribute("src", url);
  playSafely(cutPlayer);
}

async function decide(decision, reason) {
  if (app.view !== "window" || app.busy) return;
  const id = app.detail.window.window_id;
  app.busy = true;
  try {
    const body = { decision, reason: reason ?? null, note: $("note").value };
    const result = await api(`/api/window/${encodeURIComponent(id)}/decision`, body);
    if (!result.ok) {
      showError(`Not recorded (${id}): ${result.data.error}`);
      setStatus("The decision was not recorded.");
      if (result.status === 409 && (await reloadState())) {
        markCurrent("window-list", "data-window-id", id);
      }
      return;
    }
    clearError();
    if (app.view === "window" && app.detail.window.window_id === id) {
      renderWindow(result.data, false);
    } else {
      updateWindow(result.data.window);
    }
    setStatus(decision === "accept" ? `Accepted ${id}.` : `Rejected ${id}: ${reason}.`);
  } finally {
    app.busy = false;
  }
}

function stepWindow(delta) {
  const windows = app.state.windows;
  if (!windows.length) return;
  const current = app.view === "window" ? app.detail.window.window_id : null;
  const index = windows.findIndex((w) => w.window_id === current);
  const next = Math.min(Math.max(index + delta, 0), windows.length - 1);
  if (next !== index) location.hash = `#/window/${encodeURIComponent(windows[next].window_id)}`;
  else setStatus(delta > 0 ? "This is the last window." : "This is the first window.");
}

// -- conversation mode -------------------------------------------------------------------------

async function openConversation(id, seq, selectId = null) {
  const result = await api(`/api/conversation/${encodeURIComponent(id)}`);
  if (seq !== app.routeSeq) return;
  if (!result.ok) {
    showNothing();
    showError(`Conversation ${id}: ${result.data.error}`);
    return;
  }
  renderConversation(result.data, selectId);
  const labels = result.data.labels.length;
  setStatus(`Conversation ${id}: ${labels} label${labels === 1 ? "" : "s"}.`);
}

function defaultPxPerS(duration) {
  const fit = ($("timeline-scroll").clientWidth - 2 * PAD) / Math.max(duration, 0.1);
  return Math.min(Math.max(fit, DEFAULT_PX_PER_S), MAX_PX_PER_S);
}

function renderConversation(detail, selectId) {
  const cid = detail.conversation_id;
  app.view = "conversation";
  app.detail = detail;
  showSections("conversation");
  $("view-title").textContent = `Conversation ${cid}`;
  const whose = detail.started
    ? `your labels (${detail.edits} edit${detail.edits === 1 ? "" : "s"})`
    : "the engine's labels (your own copy starts with your first edit)";
  $("view-info").textContent =
    `${fmt(detail.duration_s)} s · left ear: ${detail.speakers.left} · ` +
    `right ear: ${detail.speakers.right} · showing ${whose}`;
  $("engine-notice").hidden = !detail.engine_changed;
  setAudio(detail.audio, 0);
  const another = !app.zoom || app.zoom.conversationId !== cid;
  if (another) app.zoom = { conversationId: cid, pxPerS: defaultPxPerS(detail.duration_s) };
  drawConversationTimeline();
  if (another) $("timeline-scroll").scrollLeft = 0;
  const keep = detail.labels.some((x) => x.id === selectId) ? selectId : null;
  selectLabel(keep);
  updateConversation(detail);
  markCurrent("conversation-list", "data-conversation-id", cid);
  markCurrent("window-list", "data-window-id", null);
}

function drawConversationTimeline() {
  const detail = app.detail;
  const scroller = $("timeline-scroll");
  const scrollLeft = scroller.scrollLeft; // an edit re-renders in place, not at the start
  drawTimeline({
    t0: 0,
    t1: detail.duration_s,
    pxPerS: app.zoom.pxPerS,
    speakers: [detail.speakers.left, detail.speakers.right],
    words: detail.words,
    labels: detail.labels,
    judgedId: null,
    boundary: null,
    boundaryEnd: null,
  });
  scroller.scrollLeft = scrollLeft;
  $("zoom-level").textContent = `${Math.round(app.zoom.pxPerS)} px/s`;
}

// The conversation list shows which conversations I began; an edit can begin one.
function updateConversation(detail) {
  const entry = app.state.conversations.find((c) => c.conversation_id === detail.conversation_id);
  if (entry && entry.started !== detail.started) {
    entry.started = detail.started;
    renderConversationList();
  }
}

function zoomBy(factor) {
  if (app.view !== "conversation") return;
  const scroller = $("timeline-scroll");
  const old = app.zoom.pxPerS;
  const centre = (scroller.scrollLeft + scroller.clientWidth / 2 - PAD) / old;
  app.zoom.pxPerS = Math.min(Math.max(old * factor, MIN_PX_PER_S), MAX_PX_PER_S);
  drawConversationTimeline();
  markSelection(); // not selectLabel: the editor may hold changes not saved yet
  scroller.scrollLeft = centre * app.zoom.pxPerS + PAD - scroller.clientWidth / 2;
}

const labelById = (id) => (app.detail ? app.detail.labels.find((x) => x.id === id) : undefined);

function selectLabel(id) {
  app.selectedId = id && labelById(id) ? id : null;
  markSelection();
  fillEditor();
}

function markSelection() {
  for (const rect of document.querySelectorAll("#timeline rect.label")) {
    rect.classList.toggle("selected", rect.dataset.labelId === app.selectedId);
  }
  drawHandles();
}

function fillEditor() {
  const label = labelById(app.selectedId);
  $("editor").hidden = !label;
  $("editor-hint").hidden = Boolean(label);
  if (!label) return;
  $("edit-id").textContent = `${label.id} (${label.speaker ?? "no speaker"})`;
  $("edit-rule").textContent = `rule ${label.rule} · confidence ${label.confidence}`;
  $("edit-kind").value = label.kind;
  $("edit-start").value = fmt(label.start_conv_s);
  $("edit-end").value = fmt(label.end_conv_s);
  $("edit-text").value = label.text;
  syncEndInput();
}

// An end of turn is an instant: its end follows its start.
function syncEndInput() {
  const instant = $("edit-kind").value === "end_of_turn";
  $("edit-end").disabled = instant;
  if (instant) $("edit-end").value = $("edit-start").value;
}

function labelBody(kind, speaker, start, end, text) {
  const instant = kind === "end_of_turn";
  const end_conv_s = round3(instant ? start : end);
  return { kind, speaker, start_conv_s: round3(start), end_conv_s, text };
}

// One edit; on success re-render from the labels the server returns and select the new label.
// A conflict (409) is shown and the conversation reloaded: never retried behind the reviewer's
// back.
async function postEdit(decision, label, after) {
  const cid = app.detail.conversation_id;
  const body = {
    decision,
    label_id: label ? label.id : "",
    label_sha256: label ? label.sha256 : "",
    label: after,
    note: "",
  };
  const result = await api(`/api/conversation/${encodeURIComponent(cid)}/edit`, body);
  if (app.view !== "conversation" || app.detail.conversation_id !== cid) return null;
  if (result.status === 409) {
    showError(
      `Conflict: ${result.data.error}. The conversation was reloaded from the server; ` +
        "make the change again if it is still needed.",
    );
    await openConversation(cid, app.routeSeq);
    setStatus("Not saved: the label changed since it was shown.");
    return null;
  }
  if (!result.ok) {
    showError(`Not saved: ${result.data.error}`);
    setStatus("Not saved.");
    drawConversationTimeline(); // drop a dragged preview; keep what the editor holds
    markSelection();
    return null;
  }
  clearError();
  renderConversation(result.data, result.data.label ? result.data.label.id : null);
  return result.data;
}

async function withBusy(action) {
  if (app.busy) return;
  app.busy = true;
  try {
    await action();
  } finally {
    app.busy = false;
  }
}

// Save: a move when start or end changed, a relabel when the kind (or only the text) did; both
// changed: the move, then the relabel of the label the move returned.
async function saveEditor() {
  const label = labelById(app.selectedId);
  if (!label) return;
  const kind = $("edit-kind").value;
  const start = Number.parseFloat($("edit-start").value);
  const end = kind === "end_of_turn" ? start : Number.parseFloat($("edit-end").value);
  const text = $("edit-text").value;
  if (!Number.isFinite(start) || !Number.isFinite(end)) {
    showError("Start and end are numbers of seconds.");
    return;
  }
  const moved =
    Math.abs(round3(start) - label.start_conv_s) > EDGE_EPS_S ||
    (label.kind !== "end_of_turn" && Math.abs(round3(end) - label.end_conv_s) > EDGE_EPS_S);
  const relabelled = kind !== label.kind;
  const retexted = text !== label.text;
  if (!moved && !relabelled && !retexted) {
    setStatus("Nothing changed.");
    return;
  }
  let current = label;
  if (moved) {
    const body = labelBody(label.kind, label.speaker, start, end, text);
    const result = await postEdit("move", current, body);
    if (!result) return;
    current = result.label;
  }
  if (relabelled || !moved) {
    const body = labelBody(kind, current.speaker, current.start_conv_s, end, text);
    const result = await postEdit("relabel", current, body);
    if (!result) return;
  }
  const sent = [moved && "move", (relabelled || !moved) && "relabel"].filter(Boolean);
  setStatus(`Saved ${sent.join(" and ")}.`);
}

async function deleteSelected() {
  const label = labelById(app.selectedId);
  if (!label) return;
  const result = await postEdit("delete", label, null);
  if (result) setStatus(`Deleted ${label.id}.`);
}

async function addLabel() {
  if (app.view !== "conversation") return;
  const kind = $("add-kind").value;
  const start = Math.min(Math.max(currentConvTime(), 0), app.detail.duration_s);
  const end = Math.min(start + ADD_SPAN_S, app.detail.duration_s);
  const body = labelBody(kind, $("add-speaker").value, start, end, "");
  const result = await postEdit("add", null, body);
  if (result && result.label) {
    setStatus(`Added ${kindName(kind)} at ${fmt(result.label.start_conv_s)} s.`);
  }
}

// -- the timeline ------------------------------------------------------------------------------

const xOf = (t) => PAD + (t - app.scale.t0) * app.scale.pxPerS;
const timeOf = (x) => app.scale.t0 + (x - PAD) / app.scale.pxPerS;

// Rows of the timeline: each speaker's lanes, then a shared group for labels with no speaker.
function layoutRows(speakers, labels) {
  const groups = [...speakers];
  if (labels.some((x) => !x.speaker)) groups.push(NO_SPEAKER);
  const rows = [];
  let y = AXIS_H;
  for (const speaker of groups) {
    for (const lane of LANES) {
      const height = lane.kinds.length ? LANE_H : WORD_LANE_H;
      rows.push({ speaker, lane, y, height });
      y += height;
    }
  }
  return { rows, height: y + 4 };
}

function rowOf(speaker, kind) {
  const who = speaker || NO_SPEAKER;
  return app.scale.rows.find((r) =>
    r.speaker === who && (kind === null ? r.lane.kinds.length === 0 : r.lane.kinds.includes(kind)),
  );
}

function drawTimeline(spec) {
  const { rows, height } = layoutRows(spec.speakers, spec.labels);
  app.scale = { t0: spec.t0, t1: spec.t1, pxPerS: spec.pxPerS, rows };
  const width = Math.ceil(2 * PAD + (spec.t1 - spec.t0) * spec.pxPerS);
  const svg = svgEl("svg", {
    id: "timeline",
    width,
    height,
    "data-px-per-s": spec.pxPerS,
    "data-t0": spec.t0,
    "data-x0": PAD,
    role: "img",
    "aria-label": "Timeline of both speakers' words and labels",
  });
  svg.append(
    drawLanes(rows, width),
    drawAxis(spec.t0, spec.t1, height),
    drawWords(spec.words),
    drawLabels(spec.labels, spec.judgedId),
  );
  if (spec.boundary !== null) svg.append(boundaryLine("boundary", spec.boundary, height));
  if (spec.boundaryEnd !== null) svg.append(boundaryLine("boundary-end", spec.boundaryEnd, height));
  svg.append(svgEl("g", { class: "handles" }));
  svg.append(svgEl("line", { class: "playhead", x1: PAD, x2: PAD, y1: 0, y2: height }));
  svg.addEventListener("pointerdown", onTimelinePointerDown);
  $("timeline-scroll").replaceChildren(svg);
  drawLaneNames(rows, height);
  updatePlayhead();
}

function drawLanes(rows, width) {
  const group = svgEl("g", { class: "lanes" });
  rows.forEach((row, index) => {
    const stripe = index % 2 ? "odd" : "even";
    group.append(
      svgEl("rect", {
        class: `lane ${stripe} speaker-${row.speaker}`,
        x: 0,
        y: row.y,
        width,
        height: row.height,
      }),
    );
  });
  return group;
}

// Lane names stay put at the left while the timeline scrolls.
function drawLaneNames(rows, height) {
  const svg = svgEl("svg", { id: "lane-names", width: 118, height, "aria-hidden": "true" });
  for (const row of rows) {
    const who = row.speaker === NO_SPEAKER ? "no speaker" : row.speaker;
    const text = row.lane.kinds.length ? row.lane.name : `${who} ${row.lane.name}`;
    svg.append(
      svgEl("text", { class: "lane-name", x: 4, y: row.y + row.height / 2 + 4 }, text),
    );
  }
  $("lane-names-box").replaceChildren(svg);
}

function tickStep(pxPerS) {
  const steps = [0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300];
  return steps.find((s) => s * pxPerS >= 60) ?? 600;
}

function drawAxis(t0, t1, height) {
  const group = svgEl("g", { class: "axis" });
  const step = tickStep(app.scale.pxPerS);
  for (let t = Math.ceil(t0 / step) * step; t <= t1 + 1e-9; t += step) {
    const x = xOf(t);
    group.append(svgEl("line", { class: "tick", x1: x, x2: x, y1: AXIS_H - 5, y2: height }));
    const digits = step < 1 ? 1 : 0;
    const label = `${t.toFixed(digits)} s`;
    group.append(svgEl("text", { class: "tick-label", x: x + 2, y: AXIS_H - 8 }, label));
  }
  return group;
}

function drawWords(words) {
  const group = svgEl("g", { class: "words" });
  const counts = {};
  for (const word of words) {
    const row = rowOf(word.speaker, null);
    if (!row) continue;
    const n = (counts[word.speaker] = (counts[word.speaker] ?? 0) + 1);
    const x = xOf(word.start_conv_s);
    const width = Math.max((word.end_conv_s - word.start_conv_s) * app.scale.pxPerS, 1);
    group.append(
      svgEl("rect", { class: "word-span", x, y: row.y + 2, width, height: row.height - 4 }),
    );
    const text = svgEl(
      "text",
      {
        class: "word",
        x: x + 1,
        y: row.y + (n % 2 ? 13 : 25),
        "data-speaker": word.speaker,
        "data-start": word.start_conv_s,
      },
      word.text,
    );
    group.append(text);
  }
  return group;
}

function labelTitle(label) {
  const parts = [
    `${kindName(label.kind)} · ${label.speaker ?? "no speaker"}`,
    `${fmt(label.start_conv_s)}–${fmt(label.end_conv_s)} s`,
    `${label.rule} · confidence ${label.confidence}`,
  ];
  if (label.flags.length) parts.push(`flags: ${label.flags.join(", ")}`);
  const measures = TALK_OVER_MEASURES.filter(([key]) => label[key] != null);
  if (measures.length) {
    parts.push(measures.map(([key, name]) => `${name} ${fmt(label[key])} s`).join(" · "));
  }
  if (label.text) parts.push(label.text);
  return parts.join("\n");
}

function labelGeometry(start, end) {
  const x = xOf(start);
  const width = (end - start) * app.scale.pxPerS;
  return width < INSTANT_W ? { x: x - INSTANT_W / 2, width: INSTANT_W } : { x, width };
}

function drawLabels(labels, judgedId) {
  const group = svgEl("g", { class: "labels" });
  for (const label of labels) {
    const row = rowOf(label.speaker, label.kind);
    if (!row) continue;
    const { x, width } = labelGeometry(label.start_conv_s, label.end_conv_s);
    const classes = ["label", `kind-${label.kind}`];
    if (label.id === judgedId) classes.push("judged");
    const rect = svgEl("rect", {
      class: classes.join(" "),
      x,
      y: row.y + 3,
      width,
      height: row.height - 6,
      "data-label-id": label.id,
      "data-kind": label.kind,
      "data-speaker": label.speaker ?? "",
      "data-start": label.start_conv_s,
      "data-end": label.end_conv_s,
    });
    rect.append(svgEl("title", {}, labelTitle(label)));
    group.append(rect);
  }
  return group;
}

function boundaryLine(cls, t, height) {
  const x = xOf(t);
  return svgEl("line", { class: cls, x1: x, x2: x, y1: AXIS_H - 4, y2: height, "data-t": t });
}

// The selected label's edges, as handles to drag; an instant has one, moving it whole.
function drawHandles() {
  const group = document.querySelector("#timeline g.handles");
  if (!group) return;
  group.replaceChildren();
  const label = labelById(app.selectedId);
  if (app.view !== "conversation" || !label) return;
  const row = rowOf(label.speaker, label.kind);
  if (!row) return;
  const edges = label.kind === "end_of_turn" ? ["start"] : ["start", "end"];
  for (const edge of edges) {
    const t = edge === "start" ? label.start_conv_s : label.end_conv_s;
    group.append(
      svgEl("rect", {
        class: "handle",
        x: xOf(t) - HANDLE_W / 2,
        y: row.y,
        width: HANDLE_W,
        height: row.height,
        "data-edge": edge,
        "data-label-id": label.id,
      }),
    );
  }
}

function onTimelinePointerDown(event) {
  if (event.button !== 0) return;
  const target = event.target;
  if (app.view === "conversation" && target.matches("rect.handle")) {
    startDrag(event, target.dataset.edge);
  } else if (app.view === "conversation" && target.matches("rect.label")) {
    selectLabel(target.dataset.labelId);
  } else {
    seekToX(event.clientX);
  }
}

function seekToX(clientX) {
  const box = $("timeline").getBoundingClientRect();
  const t = timeOf(clientX - box.left);
  const audio = player();
  if (Number.isFinite(audio.duration)) {
    audio.currentTime = Math.min(Math.max(t - app.offset, 0), audio.duration);
  } else {
    audio.currentTime = Math.max(t - app.offset, 0);
  }
  updatePlayhead();
}

// Dragging an edge previews the label in place; the move is sent once, on release.
function startDrag(event, edge) {
  event.preventDefault();
  const label = labelById(app.selectedId);
  if (!label || app.busy) return;
  const instant = label.kind === "end_of_turn";
  const fromX = event.clientX;
  const original = edge === "start" ? label.start_conv_s : label.end_conv_s;
  let value = original;
  const rect = document.querySelector(
    `#timeline rect.label[data-label-id="${CSS.escape(label.id)}"]`,
  );
  const handle = event.target;
  const onMove = (e) => {
    value = clampEdge(label, edge, original + (e.clientX - fromX) / app.scale.pxPerS);
    const start = edge === "start" ? value : label.start_conv_s;
    const end = instant ? value : edge === "end" ? value : label.end_conv_s;
    const { x, width } = labelGeometry(start, end);
    rect.setAttribute("x", x);
    rect.setAttribute("width", width);
    handle.setAttribute("x", xOf(value) - HANDLE_W / 2);
    $("edit-start").value = fmt(start);
    $("edit-end").value = fmt(end);
  };
  const onUp = (e) => {
    window.removeEventListener("pointermove", onMove);
    window.removeEventListener("pointerup", onUp);
    onMove(e);
    if (Math.abs(value - original) < EDGE_EPS_S) {
      fillEditor();
      return;
    }
    const start = edge === "start" ? value : label.start_conv_s;
    const end = edge === "end" ? value : label.end_conv_s;
    withBusy(async () => {
      const body = labelBody(label.kind, label.speaker, start, end, label.text);
      const result = await postEdit("move", label, body);
      if (result) setStatus(`Moved the ${edge} of ${label.id} to ${fmt(value)} s.`);
      else fillEditor(); // the editor showed the dragged edge, which was not saved
    });
  };
  window.addEventListener("pointermove", onMove);
  window.addEventListener("pointerup", onUp);
}

function clampEdge(label, edge, t) {
  const duration = app.detail.duration_s;
  if (label.kind === "end_of_turn") return Math.min(Math.max(t, 0), duration);
  if (edge === "start") return Math.min(Math.max(t, 0), label.end_conv_s);
  return Math.min(Math.max(t, label.start_conv_s), duration);
}

// -- the player --------------------------------------------------------------------------------

const currentConvTime = () => app.offset + player().currentTime;

function updatePlayhead() {
  const line = document.querySelector("#timeline line.playhead");
  if (!line || !app.scale) return;
  const x = xOf(currentConvTime());
  line.setAttribute("x1", x);
  line.setAttribute("x2", x);
  line.dataset.t = currentConvTime();
  if (app.view === "conversation" && !player().paused) keepInView(x);
}

// While playing a long conversation, scroll so the playhead stays visible.
function keepInView(x) {
  const scroller = $("timeline-scroll");
  if (x < scroller.scrollLeft || x > scroller.scrollLeft + scroller.clientWidth - PAD) {
    scroller.scrollLeft = Math.max(x - scroller.clientWidth / 4, 0);
  }
}

function followPlayhead() {
  updatePlayhead();
  if (!player().paused) requestAnimationFrame(followPlayhead);
}

// play() refuses when a newer load interrupts it; that is not an error worth a console line.
function playSafely(audio) {
  audio.play().catch((error) => {
    if (error.name !== "AbortError") showError(`The audio could not play: ${error.message}`);
  });
}

function togglePlay() {
  const audio = player();
  if (app.view === "none" || !audio.getAttribute("src")) return;
  if (audio.paused) {
    $("cut-player").pause();
    playSafely(audio);
  } else {
    audio.pause();
  }
}

function replay() {
  const audio = player();
  if (app.view === "none" || !audio.getAttribute("src")) return;
  audio.currentTime = Math.max(audio.currentTime - REPLAY_S, 0);
  playSafely(audio);
}

// -- keys --------------------------------------------------------------------------------------

function isTyping(target) {
  const fields = "input, textarea, select, [contenteditable]";
  return target instanceof Element && target.closest(fields) !== null;
}

function keyAction(key) {
  if (key === " ") return togglePlay;
  if (key === "r") return replay;
  if (app.view !== "window") return null;
  if (key === "a") return () => decide("accept", null);
  if (key === "n") return () => stepWindow(1);
  if (key === "p") return () => stepWindow(-1);
  const reason = /^[1-9]$/.test(key) ? app.state.reasons[Number(key) - 1] : undefined;
  return reason ? () => decide("reject", reason) : null;
}

// Captured on window, before a focused button or the audio controls act on the same key.
function onKey(event) {
  if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
  if (event.key === "Escape") {
    // Leaves a text field, so that the shortcuts work again; or drops the selected label.
    if (isTyping(event.target)) event.target.blur();
    else if (app.view === "conversation") selectLabel(null);
    return;
  }
  if (isTyping(event.target)) return;
  const action = keyAction(event.key);
  if (!action) return;
  event.preventDefault();
  event.stopPropagation();
  action();
}

// -- start -------------------------------------------------------------------------------------

function fillSelect(select, values, label = (v) => v) {
  select.replaceChildren(...values.map((v) => el("option", { value: v }, label(v))));
}

async function reloadState() {
  const result = await api("/api/state");
  if (!result.ok) {
    showError(`The app's state did not load: ${result.data.error}`);
    return false;
  }
  app.state = result.data;
  renderWindowList();
  renderConversationList();
  return true;
}

function wireControls() {
  window.addEventListener("keydown", onKey, true);
  window.addEventListener("hashchange", route);
  $("accept").addEventListener("click", () => decide("accept", null));
  $("edit-save").addEventListener("click", () => withBusy(saveEditor));
  $("edit-delete").addEventListener("click", () => withBusy(deleteSelected));
  $("edit-close").addEventListener("click", () => selectLabel(null));
  $("edit-kind").addEventListener("change", syncEndInput);
  for (const id of ["edit-start", "edit-end", "edit-text"]) {
    $(id).addEventListener("keydown", (event) => {
      if (event.key === "Enter") withBusy(saveEditor);
    });
  }
  $("edit-start").addEventListener("input", syncEndInput);
  $("add-label").addEventListener("click", () => withBusy(addLabel));
  $("zoom-in").addEventListener("click", () => zoomBy(ZOOM_STEP));
  $("zoom-out").addEventListener("click", () => zoomBy(1 / ZOOM_STEP));
  const audio = player();
  audio.addEventListener("play", () => requestAnimationFrame(followPlayhead));
  for (const name of ["timeupdate", "pause", "seeked", "loadedmetadata"]) {
    audio.addEventListener(name, updatePlayhead);
  }
  audio.addEventListener("error", () => {
    const src = audio.getAttribute("src");
    if (src) showError(`The audio ${src} did not load.`);
  });
}

async function start() {
  wireControls();
  if (!(await reloadState())) {
    setReady(true, "none");
    return;
  }
  $("reviewer").textContent = `reviewer: ${app.state.reviewer}`;
  document.title = `pmc review · ${app.state.reviewer}`;
  renderRejectButtons();
  fillSelect($("edit-kind"), app.state.label_kinds, kindName);
  fillSelect($("add-kind"), app.state.label_kinds, kindName);
  fillSelect($("add-speaker"), ["A", "B"]);
  renderMessage(null);
  await route();
}

start();
