// Longboat dashboard: a hash-routed page over the JSON API in app.py.  Each page builds its
// forms once and refreshes its figures by polling (POLL_MS), so nothing reloads while typing.
"use strict";

const POLL_MS = 2000;
const main = document.getElementById("main");
let refresher = null;
let timer = null;

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (v !== null && v !== undefined && v !== false) el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

async function api(path, body, method = "POST") {
  const init = body === undefined ? {} : {
    method, headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)};
  const res = await fetch(path, init);
  const data = await res.json();
  if (res.status === 401 && data.signIn) showSignIn(data.error);
  if (!res.ok) throw Object.assign(new Error(data.error || res.statusText), {data});
  return data;
}

// ------------------------------------------------------------------ ACL sign-in

function showSignIn(reason) {
  if (document.getElementById("sign-in")) return;
  const key = h("input", {id: "access-key", autocomplete: "username", required: true});
  const secret = h("input", {id: "secret-key", type: "password", autocomplete: "current-password", required: true});
  const form = h("form", {id: "sign-in", "aria-label": "Sign in", onsubmit: async e => {
    e.preventDefault();
    try {
      await api("/api/session", {accessKey: key.value, secretKey: secret.value});
      form.remove();
      await showUser();
      say(`signed in as ${key.value}`);
      await route();
    } catch (err) { say(err.message, false); }
  }}, h("p", {}, "The brokers have ACL on and refused: ", h("span", {class: "error"}, reason),
    " Sign in with an access key and secret key from plain_acl.yml."),
    field("Access key", key), field("Secret key", secret), h("button", {type: "submit"}, "Sign in"));
  main.prepend(form);
  key.focus();
}

async function showUser() {
  const box = document.getElementById("user");
  const session = await api("/api/session");
  box.replaceChildren(...(session.accessKey ? [`access key ${session.accessKey} `,
    h("button", {type: "button", class: "secondary", onclick: async () => {
      await fetch("/api/session", {method: "DELETE"});
      await showUser();
      await route();
    }}, "Sign out")] : []));
}

function say(text, ok = true) {
  const status = document.getElementById("status");
  status.replaceChildren(h("span", {class: ok ? "ok" : "error"}, text));
}

function table(caption, headers, rows) {
  return h("table", {},
    h("caption", {class: "muted", style: "text-align:left"}, caption),
    h("thead", {}, h("tr", {}, headers.map(([t, num]) => h("th", {scope: "col", class: num ? "num" : null}, t)))),
    h("tbody", {}, rows.length ? rows.map(r => h("tr", {}, r.map((c, i) =>
      h("td", {class: headers[i][1] ? "num" : null}, c)))) :
      h("tr", {}, h("td", {colspan: headers.length, class: "muted"}, "none"))));
}

const fmtTime = ms => ms ? new Date(ms).toLocaleString() : "-";
const fmtDur = s => s === null || s === undefined ? "-" :
  s >= 3600 ? (s / 3600).toFixed(1) + "h" : s >= 60 ? (s / 60).toFixed(1) + "m" : s.toFixed(1) + "s";
const link = (href, text) => h("a", {href}, text);
const enc = encodeURIComponent;

function field(label, input) { return h("label", {}, label, input); }

// ------------------------------------------------------------------ pages

// A page that is a heading over one box, redrawn by `draw` from `path`'s answer at every
// refresh: what the router calls back.
function refreshedPage(view, heading, path, draw) {
  view.append(h("h2", {}, heading));
  const box = view.appendChild(h("div"));
  return async () => box.replaceChildren(draw(await api(path)));
}

const pages = {
  async cluster(view) {
    return refreshedPage(view, "Cluster", "/api/cluster", data => table(`${data.brokers.length} broker(s)`,
      [["cluster"], ["broker"], ["id", 1], ["role"], ["address"], ["version"], ["user topics", 1],
        ["put TPS (10 s)", 1], ["get TPS (10 s)", 1], ["stored since start", 1], ["disk used"]],
      data.brokers.map(b => b.topics === null ?
        [b.cluster, b.broker, b.id, b.role, b.addr, h("span", {class: "error"}, b.error), "", "", "", "", ""] :
        [b.cluster, b.broker, b.id, b.role, b.addr, b.version || "-", b.topics,
          b.putTps ?? "-", b.getTps ?? "-", b.putToday ?? "-",
          b.diskRatio === null ? "-" : `${(b.diskRatio * 100).toFixed(1)}% (${b.diskCapacity || ""})`])));
  },

  // Per broker group: its master, its slaves and how far behind each is (bytes, and seconds
  // since the master held no more than the slave holds; "≥" when the slave is behind the
  // dashboard's whole history of its master); in controller mode the group's SyncStateSet
  // and epochs as the leading controller keeps them.
  async replication(view) {
    view.append(h("h2", {}, "Replication"));
    const note = view.appendChild(h("p", {class: "muted"}));
    const box = view.appendChild(h("div"));
    const replica = r => `${r.brokerId} ${r.brokerAddress}${r.alive ? "" : " (down)"}`;
    const seconds = m => m.role === "master" ? "-" : m.behindSeconds === null ? "unknown" :
      m.behindSecondsAtLeast ? `≥ ${Math.floor(m.behindSeconds)} s` : `${Math.round(m.behindSeconds)} s`;
    return async () => {
      const data = await api("/api/replication");
      note.replaceChildren(data.controllers.length ?
        `controller mode: controllers ${data.controllers.join(", ")}` :
        "master-slave: no broker runs in controller mode",
        data.controllerError ? h("span", {class: "error"}, ` (${data.controllerError})`) : "");
      box.replaceChildren(...data.groups.map(g => {
        const c = g.controller;
        const headers = [["id", 1], ["role"], ["address"], ["commit-log end", 1], ["behind master (bytes)", 1],
          ["behind master (seconds)", 1]];
        if (c) headers.push(["in SyncStateSet"]);
        const rows = g.members.map(m => [m.id, m.role, m.addr, m.logEnd ?? "unknown",
          m.role === "master" ? "-" : m.behind ?? "unknown", seconds(m),
          ...(c ? [m.inSyncStateSet ? "yes" : "no"] : [])]);
        return h("section", {class: "group", "aria-label": `broker group ${g.broker}`},
          h("h3", {}, `${g.broker} (cluster ${g.cluster})`),
          c ? h("dl", {class: "sync-state"},
            h("dt", {}, "master"), h("dd", {class: "master"}, c.masterBrokerId === null ? "none" : `${c.masterBrokerId} ${c.masterAddress}`),
            h("dt", {}, "master epoch"), h("dd", {class: "master-epoch"}, c.masterEpoch),
            h("dt", {}, "SyncStateSet"), h("dd", {class: "sync-state-set"}, c.inSyncReplicas.map(replica).join(", ") || "empty"),
            h("dt", {}, "SyncStateSet epoch"), h("dd", {class: "sync-state-set-epoch"}, c.syncStateSetEpoch),
            h("dt", {}, "not in sync"), h("dd", {class: "not-in-sync"}, c.notInSyncReplicas.map(replica).join(", ") || "-")) : null,
          table(`members of ${g.broker}`, headers, rows));
      }));
      if (!data.groups.length) box.replaceChildren(h("p", {}, "no broker is registered with the name server"));
    };
  },

  async topics(view) {
    view.append(h("h2", {}, "Topics"));
    const search = h("input", {id: "topic-search", type: "search", placeholder: "name contains"});
    const system = h("input", {id: "topic-system", type: "checkbox"});
    view.append(h("form", {role: "search", onsubmit: e => e.preventDefault()},
      field("Search topics", search), h("label", {class: "inline"}, system, "show retry, DLQ and system topics")));
    view.append(topicForm());
    const box = view.appendChild(h("div"));
    let last = null;
    const draw = () => {
      if (!last) return;
      const q = search.value.trim().toLowerCase();
      const rows = last.topics.filter(t => (system.checked || t.kind === "normal") &&
        t.name.toLowerCase().includes(q));
      box.replaceChildren(table(`${rows.length} topic(s)`,
        [["topic"], ["kind"], ["brokers"], ["write queues", 1], ["read queues", 1], ["perm"], ["in msgs/s", 1], ["out msgs/s", 1]],
        rows.map(t => [link(`#/topic/${enc(t.name)}`, t.name), t.kind,
          ...(t.route ? [t.route.brokers.join(", "), t.route.writeQueues, t.route.readQueues, t.route.perm] :
            ["-", "-", "-", "-"]),
          t.rates ? t.rates.in.toFixed(1) : "-", t.rates ? t.rates.out.toFixed(1) : "-"])));
    };
    search.addEventListener("input", draw);
    system.addEventListener("change", draw);
    return async () => { last = await api("/api/topics"); draw(); };
  },

  async topic(view, name) {
    view.append(h("h2", {}, `Topic ${name}`));
    const box = view.appendChild(h("div"));
    const body = h("textarea", {id: "send-body", rows: 2, cols: 40}, "hello from the dashboard");
    const tags = h("input", {id: "send-tags", size: 10});
    const keys = h("input", {id: "send-keys", size: 14});
    view.append(h("h3", {}, "Send a test message"), h("form", {onsubmit: async e => {
      e.preventDefault();
      try {
        const r = await api(`/api/topics/${enc(name)}/send`,
          {body: body.value, tags: tags.value, keys: keys.value});
        say(`sent ${r.msgId} (${r.status}) to ${r.broker} queue ${r.queue} at offset ${r.queueOffset}`);
      } catch (err) { say(err.message, false); }
    }}, field("Body", body), field("Tag", tags), field("Keys", keys), h("button", {type: "submit"}, "Send")));
    const change = topicForm(name);
    view.append(h("h3", {}, "Change"), change);
    view.append(h("h3", {}, "Delete"), h("form", {"aria-label": "Delete topic", onsubmit: async e => {
      e.preventDefault();
      if (!confirm(`Delete topic ${name} from every broker and name server? Its messages are left to retention.`)) return;
      try {
        const r = await api(`/api/topics/${enc(name)}`, {}, "DELETE");
        say(`deleted ${r.topic} from ${r.brokers.join(", ")}`);
        location.hash = "#/topics";
      } catch (err) { say(err.message, false); }
    }}, h("button", {type: "submit"}, "Delete topic")));
    let filled = false;
    return async () => {
      const t = await api(`/api/topics/${enc(name)}`);
      if (!filled) { change.fill(t.route); filled = true; }
      box.replaceChildren(
        table("queues", [["broker"], ["queue", 1], ["min offset", 1], ["max offset", 1], ["messages", 1]],
          t.queues.map(q => [q.broker, q.queue, q.min, q.max, q.messages])),
        table("route", [["broker"], ["read queues", 1], ["write queues", 1], ["perm"], ["addresses"]],
          t.route.queues.map(q => [q.broker, q.read, q.write, q.perm,
            Object.entries((t.route.brokers.find(b => b.broker === q.broker) || {addrs: {}}).addrs)
              .map(([id, a]) => `${id === "0" ? "master" : "slave " + id} ${a}`).join(", ")])));
    };
  },

  async groups(view) {
    return refreshedPage(view, "Consumer groups", "/api/groups", data => table(`${data.groups.length} group(s)`,
      [["group"], ["state"], ["members", 1], ["lag", 1], ["consume msgs/s", 1]],
      data.groups.map(g => [link(`#/group/${enc(g.name)}`, g.name),
        h("span", {class: `state-${g.state.replace(" ", "-")}`}, g.state), g.members, g.lag ?? "-",
        g.rate === null || g.rate === undefined ? "-" : g.rate.toFixed(1)])));
  },

  async group(view, name) {
    view.append(h("h2", {}, `Consumer group ${name}`));
    const summary = view.appendChild(h("p", {id: "group-summary"}));
    view.append(h("h3", {}, "Lag and consume rate, last hour"));
    const chartBox = view.appendChild(h("div", {id: "lag-chart"}));
    const box = view.appendChild(h("div"));
    view.append(h("h3", {}, "Reset offsets"), resetForm(name));
    view.append(h("h3", {}, "Dead-letter queue"));
    const dlq = view.appendChild(h("div", {id: "dlq"}));
    const loadDlq = async () => {
      const data = await api(`/api/groups/${enc(name)}/dlq`);
      dlq.replaceChildren(table(`${data.messages.length} dead-lettered message(s)`,
        [["message"], ["topic"], ["stored"], ["body"], ["action"]],
        data.messages.map(m => [link(`#/messages?id=${enc(m.offsetMsgId)}`, m.msgId), m.originalTopic,
          fmtTime(m.storeTimestamp), bodyPreview(m),
          h("button", {type: "button", class: "resend", onclick: () => resend(m, name)}, "Resend")])));
    };
    return async () => {
      const [g] = await Promise.all([api(`/api/groups/${enc(name)}`), loadDlq()]);
      summary.replaceChildren(`${g.members.length} live member(s), ${g.messageModel.toLowerCase()}, total lag `,
        h("strong", {id: "group-lag"}, g.lag === null ? "unknown (no offset stored)" : String(g.lag)), `; subscribes ${g.subscriptions.map(s => `${s.topic} (${s.expression})`).join(", ") || "nothing"}`);
      chartBox.replaceChildren(lagChart(g.history));
      box.replaceChildren(
        table("members", [["client id"], ["address"], ["language"], ["version", 1]],
          g.members.map(m => [m.clientId, m.addr, m.language, m.version])),
        table("offsets per queue", [["topic"], ["broker"], ["queue", 1], ["broker offset", 1],
          ["consumer offset", 1], ["lag", 1], ["lag time", 1], ["last consumed"]],
          g.progress.map(p => [p.topic, p.broker, p.queue, p.brokerOffset, p.consumerOffset ?? "no offset stored", p.lag ?? "-",
            fmtDur(p.lagTime), fmtTime(p.lastTimestamp)])));
    };
  },

  async messages(view, _name, query) {
    view.append(h("h2", {}, "Messages"));
    const id = h("input", {id: "msg-id", size: 34, value: query.get("id") || ""});
    const topic = h("input", {id: "msg-topic", size: 16, value: query.get("topic") || ""});
    const key = h("input", {id: "msg-key", size: 14});
    const begin = h("input", {id: "msg-begin", type: "datetime-local", step: 1});
    const end = h("input", {id: "msg-end", type: "datetime-local", step: 1});
    const results = h("div", {id: "msg-results"});
    const search = async params => {
      try {
        const data = await api(`/api/messages?${params}`);
        results.replaceChildren(...(data.messages.length ? data.messages.map(messageCard) :
          [h("p", {}, "no message found")]));
      } catch (err) { results.replaceChildren(h("p", {class: "error"}, err.message)); }
    };
    view.append(
      h("form", {"aria-label": "Find by id", onsubmit: e => { e.preventDefault();
        search(new URLSearchParams({id: id.value, topic: topic.value})); }},
        field("Message id (producer id or offset id)", id), field("Topic (needed for a producer id)", topic),
        h("button", {type: "submit"}, "Find by id")),
      h("form", {"aria-label": "Find by key or time", onsubmit: e => { e.preventDefault();
        const p = new URLSearchParams({topic: topic.value});
        if (key.value) p.set("key", key.value);
        if (begin.value) p.set("begin", new Date(begin.value).getTime());
        if (end.value) p.set("end", new Date(end.value).getTime());
        search(p); }},
        field("Key", key), field("From", begin), field("To", end),
        h("span", {class: "muted"}, "in the topic above; without a key: every message in the time range (default the last hour)"),
        h("button", {type: "submit"}, "Find by key or time")),
      results);
    if (query.get("id")) await search(query);
    return null;
  },
};

// The form creating a topic, or (with `name`) changing it: `form.fill(route)` sets it to the
// topic's current queues and permission, so changing one setting keeps the others.
function topicForm(name) {
  const topic = h("input", {id: name ? "topic-name-edit" : "topic-name", required: true, value: name || "",
    readonly: name ? true : null});
  const queues = h("input", {id: name ? "topic-queues-edit" : "topic-queues", type: "number", min: 1, value: 8, size: 4});
  const perm = h("select", {id: name ? "topic-perm-edit" : "topic-perm"},
    ["rw", "r", "w"].map(p => h("option", {value: p}, p)));
  const submit = async shrink => {
    const r = await api("/api/topics", {name: topic.value, queues: +queues.value, perm: perm.value, shrink});
    say(`${r.updated ? "updated" : "created"} ${r.topic} on ${r.brokers.join(", ")}`);
    if (refresher) await refresher();
  };
  const form = h("form", {"aria-label": name ? "Change topic" : "Create topic", onsubmit: async e => {
    e.preventDefault();
    try {
      try { await submit(false); } catch (err) {
        // Fewer read queues would hide unconsumed messages: only on the user's word.
        if (!err.data?.confirmShrink) throw err;
        if (!confirm(`${err.message}.\n\nShrink anyway?`)) { say("not changed", false); return; }
        await submit(true);
      }
    } catch (err) { say(err.message, false); }
  }}, field("Topic", topic), field("Queues", queues), field("Permission", perm),
    h("button", {type: "submit"}, name ? "Update" : "Create"));
  form.fill = route => {
    queues.value = Math.max(...route.queues.map(q => q.read));
    const current = route.queues[0]?.perm.replaceAll("-", "");
    if (["rw", "r", "w"].includes(current)) perm.value = current;
  };
  return form;
}

function resetForm(name) {
  const to = h("select", {id: "reset-to"}, ["earliest", "latest", "time"].map(v => h("option", {value: v}, v)));
  const time = h("input", {id: "reset-time", type: "datetime-local", step: 1});
  const topic = h("input", {id: "reset-topic", size: 16, placeholder: "every consumed topic"});
  const force = h("input", {id: "reset-force", type: "checkbox"});
  return h("form", {"aria-label": "Reset offsets", onsubmit: async e => {
    e.preventDefault();
    const target = to.value === "time" ? String(new Date(time.value).getTime()) : to.value;
    try {
      const r = await api(`/api/groups/${enc(name)}/reset`, {to: target, topic: topic.value, force: force.checked});
      say(`reset ${r.moved.length} queue(s) of ${r.group} to ${to.value}`);
      if (refresher) await refresher();
    } catch (err) { say(`refused: ${err.message}`, false); }
  }}, field("Reset to", to), field("Time (for 'time')", time), field("Topic", topic),
    h("label", {class: "inline"}, force, "force, even while members run (they may overwrite it)"),
    h("button", {type: "submit"}, "Reset offsets"));
}

async function resend(m, group) {
  try {
    const r = await api("/api/messages/resend", {offsetMsgId: m.offsetMsgId, group});
    say(`resent ${m.msgId} to group ${r.group} (as ${r.msgId})`);
  } catch (err) { say(err.message, false); }
}

// ------------------------------------------------------------------ messages

function bytesOf(b64) { return Uint8Array.from(atob(b64), c => c.charCodeAt(0)); }

function bodyAs(m, how) {
  const bytes = bytesOf(m.body);
  if (how === "hex") {
    const lines = [];
    for (let i = 0; i < bytes.length; i += 16) {
      const row = Array.from(bytes.slice(i, i + 16));
      lines.push(i.toString(16).padStart(6, "0") + "  " + row.map(b => b.toString(16).padStart(2, "0")).join(" "));
    }
    return lines.join("\n");
  }
  const text = new TextDecoder("utf-8", {fatal: false}).decode(bytes);
  if (how === "json") {
    try { return JSON.stringify(JSON.parse(text), null, 2); } catch { return "(not JSON) " + text; }
  }
  return text;
}

function bodyPreview(m) {
  const text = bodyAs(m, "text");
  return text.length > 60 ? text.slice(0, 60) + "…" : text;
}

function messageCard(m) {
  const pre = h("pre", {class: "body", tabindex: 0, "aria-label": "message body"}, bodyAs(m, "text"));
  const modes = h("select", {class: "body-mode", onchange: e => { pre.textContent = bodyAs(m, e.target.value); }},
    ["text", "json", "hex"].map(v => h("option", {value: v}, v)));
  const group = h("input", {class: "resend-group", size: 16});
  const props = Object.entries(m.properties).map(([k, v]) => [k, v]);
  return h("section", {class: "message", "aria-label": `message ${m.msgId}`},
    h("h3", {}, `Message ${m.msgId}`),
    h("div", {class: "cols"},
      table("fields", [["field"], ["value"]], [["topic", m.topic], ["queue", `${m.queueId} at offset ${m.queueOffset} (broker ${m.storeHost})`],
        ["offset msg id", m.offsetMsgId], ["tags", m.tags || ""], ["keys", m.keys.join(" ")],
        ["born", `${fmtTime(m.bornTimestamp)} from ${m.bornHost}`], ["stored", fmtTime(m.storeTimestamp)],
        ["reconsume times", m.reconsumeTimes], ["body size", `${m.bodySize} bytes`]]),
      table("properties", [["property"], ["value"]], props)),
    m.delivery ? table("delivery per group", [["group"], ["broker"], ["consumer offset", 1], ["state"]],
      m.delivery.map(d => [d.group, d.broker, d.consumerOffset ?? "no offset stored", d.consumed ? "consumed" : "not consumed"])) : null,
    h("label", {class: "inline"}, "Show body as", modes), pre,
    h("form", {"aria-label": "Resend", onsubmit: e => { e.preventDefault(); resend(m, group.value); }},
      field("Resend to group", group), h("button", {type: "submit"}, "Resend")),
    traceSection(m));
}

// A message's trace (what clients writing traces recorded), as a timeline: sent, stored,
// each group's delivery attempts.
function traceSection(m) {
  const traceTopic = h("input", {class: "trace-topic", size: 20, value: "RMQ_SYS_TRACE_TOPIC"});
  const out = h("div", {class: "trace"});
  const show = async () => {
    try {
      const t = await api(`/api/messages/trace?${new URLSearchParams({id: m.msgId, topic: m.topic, traceTopic: traceTopic.value})}`);
      const rows = [];
      for (const s of t.sends) rows.push([fmtTime(s.time), "sent", s.group, `${s.clientHost} → ${s.storeHost}`, "", `${s.costMs} ms`, s.success ? "success" : "failed"]);
      if (t.stored.time) rows.push([fmtTime(t.stored.time), "stored", "broker", t.stored.storeHost, "", "", ""]);
      for (const x of t.transactions) rows.push([fmtTime(x.time), x.fromCheck ? "checked" : "ended", x.group, x.clientHost, "", "", x.state]);
      for (const [group, attempts] of Object.entries(t.deliveries)) {
        for (const a of attempts) rows.push([fmtTime(a.started_ms), "delivered", group, a.client_host, a.retry_times,
          a.cost_ms === null ? "" : `${a.cost_ms} ms`, a.success === null ? "pending" : a.success ? "success" : "failed"]);
      }
      const traced = t.sends.length || t.transactions.length || Object.keys(t.deliveries).length;
      out.replaceChildren(traced ? table("trace", [["time"], ["what"], ["who"], ["client"], ["retries", 1], ["cost", 1], ["result"]], rows)
        : h("p", {}, `no trace of this message in ${traceTopic.value}`));
    } catch (err) { out.replaceChildren(h("p", {class: "error"}, err.message)); }
  };
  return h("div", {},
    h("form", {"aria-label": "Trace", onsubmit: e => { e.preventDefault(); show(); }},
      field("Trace topic", traceTopic), h("button", {type: "submit"}, "Show trace")),
    out);
}

// ------------------------------------------------------------------ lag chart (hand-drawn SVG)

function lagChart(history) {
  const NS = "http://www.w3.org/2000/svg";
  const W = 800, H = 220, L = 50, R = 50, T = 12, B = 24;
  const s = (tag, attrs, text) => {
    const el = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    if (text !== undefined) el.textContent = text;
    return el;
  };
  const svg = s("svg", {class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", preserveAspectRatio: "none",
    "aria-label": history.length ? `lag now ${history[history.length - 1].lag}, consume rate ${history[history.length - 1].rate}/s, ${history.length} samples` : "no samples yet"});
  svg.dataset.samples = history.length;
  svg.dataset.lag = history.map(p => p.lag).join(",");
  if (!history.length) { svg.append(s("text", {x: L, y: H / 2}, "no samples yet")); return svg; }
  const t0 = history[0].at, t1 = Math.max(history[history.length - 1].at, t0 + 1);
  const maxLag = Math.max(1, ...history.map(p => p.lag));
  const maxRate = Math.max(1, ...history.map(p => p.rate));
  const x = t => L + (t - t0) / (t1 - t0) * (W - L - R);
  const y = (v, max) => T + (1 - v / max) * (H - T - B);
  for (const f of [0, .5, 1]) {
    svg.append(s("line", {class: "grid", x1: L, x2: W - R, y1: y(f * maxLag, maxLag), y2: y(f * maxLag, maxLag)}));
    svg.append(s("text", {x: 4, y: y(f * maxLag, maxLag) + 4}, Math.round(f * maxLag)));
    svg.append(s("text", {x: W - R + 4, y: y(f * maxRate, maxRate) + 4}, (f * maxRate).toFixed(1)));
  }
  const path = (key, max) => history.map((p, i) => `${i ? "L" : "M"}${x(p.at).toFixed(1)},${y(p[key], max).toFixed(1)}`).join(" ");
  svg.append(s("path", {class: "lag", d: path("lag", maxLag)}));
  svg.append(s("path", {class: "rate", d: path("rate", maxRate)}));
  svg.append(s("text", {x: L, y: H - 6}, new Date(t0 * 1000).toLocaleTimeString()));
  svg.append(s("text", {x: W - R - 60, y: H - 6}, new Date(t1 * 1000).toLocaleTimeString()));
  return h("figure", {class: "chart"}, svg, h("figcaption", {class: "legend"},
    h("span", {class: "key lag"}, "lag, messages (left axis)"),
    h("span", {class: "key rate"}, "consume rate, msg/s (right axis)")));
}

// ------------------------------------------------------------------ router and polling

async function route() {
  clearInterval(timer);
  refresher = null;
  const [path, qs] = (location.hash.slice(1) || "/cluster").split("?");
  const [, page, ...rest] = path.split("/");
  const name = rest.length ? decodeURIComponent(rest.join("/")) : null;
  const build = pages[page] || pages.cluster;
  const nav = {topic: "topics", group: "groups"}[page] || page;
  document.querySelectorAll("nav a").forEach(a => {
    if (a.dataset.page === nav) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  });
  const view = h("div", {id: `page-${page}`});
  main.replaceChildren(view);
  document.title = `${name || nav} · Longboat`;
  try {
    refresher = await build(view, name, new URLSearchParams(qs || ""));
  } catch (err) { view.append(h("p", {class: "error"}, err.message)); return; }
  if (!refresher) { view.dataset.loaded = "true"; return; }
  const tick = async () => {
    try {
      await refresher();
      document.getElementById("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
    } catch (err) { document.getElementById("updated").textContent = `update failed: ${err.message}`; }
  };
  await tick();
  view.dataset.loaded = "true";
  timer = setInterval(tick, POLL_MS);
}

window.addEventListener("hashchange", route);
showUser();
route();
