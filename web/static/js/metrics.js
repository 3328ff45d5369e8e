// Reads the node's Prometheus metrics (the admin's public /metrics, text
// exposition format 0.0.4) and splits each stage's traffic into admitted,
// throttled and quota-refused requests.

/** Parses `name{a="x",b="y"} value` lines of the families wanted. */
export function parseSamples(text, wanted) {
  const out = [];
  for (const line of text.split("\n")) {
    if (!line || line[0] === "#") continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m || !wanted.has(m[1])) continue;
    out.push({ name: m[1], labels: parseLabels(m[2] || ""), value: Number(m[3]) });
  }
  return out;
}

/** Parses `a="x",b="y\"z"` (escapes \\, \" and \n). */
export function parseLabels(s) {
  const labels = {};
  const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  let m;
  while ((m = re.exec(s))) labels[m[1]] = m[2].replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
  return labels;
}

const ADMITTED = "tollgate_admitted_total";
const THROTTLED = "tollgate_throttled_total";

/**
 * stageTotals(text) is a Map "api\u0000stage" → {api, stage, admitted,
 * throttled, quota} of counters since the node started, or null when the
 * node serves no gateway (no tollgate_admitted_total family at all).
 */
export function stageTotals(text) {
  if (!new RegExp("^# TYPE " + ADMITTED + " ", "m").test(text)) return null;
  const totals = new Map();
  const at = (api, stage) => {
    const k = api + "\u0000" + stage;
    if (!totals.has(k)) totals.set(k, { api, stage, admitted: 0, throttled: 0, quota: 0 });
    return totals.get(k);
  };
  for (const s of parseSamples(text, new Set([ADMITTED, THROTTLED]))) {
    if (!s.labels.stage) continue; // unknown APIs and stages
    const t = at(s.labels.api, s.labels.stage);
    if (s.name === ADMITTED) t.admitted += s.value;
    else if (s.labels.level === "quota") t.quota += s.value;
    else t.throttled += s.value;
  }
  return totals;
}

/** Fetches /metrics (public: no token is sent). */
export async function fetchTotals() {
  const res = await fetch("/metrics", { cache: "no-store" });
  if (!res.ok) throw new Error(`The node's /metrics answered HTTP ${res.status}.`);
  return stageTotals(await res.text());
}

/**
 * rates(prev, cur, seconds): per-second rates of each stage between two
 * readings; a counter that went down (the node restarted) counts from 0.
 */
export function rates(prev, cur, seconds) {
  const out = new Map();
  for (const [k, c] of cur) {
    const p = (prev && prev.get(k)) || { admitted: 0, throttled: 0, quota: 0 };
    const d = (f) => (c[f] >= p[f] ? c[f] - p[f] : c[f]) / seconds;
    out.set(k, { admitted: d("admitted"), throttled: d("throttled"), quota: d("quota") });
  }
  return out;
}
