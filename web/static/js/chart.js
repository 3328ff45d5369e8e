// Charts drawn with uPlot (vendored from npm under vendor/uplot; see
// docs/console.md). A chart fills its container's width and follows it.
import uPlot from "../vendor/uplot/uPlot.esm.js";

const DAY = 86400;
const DAY_STEPS = [DAY, 2 * DAY, 7 * DAY, 14 * DAY, 28 * DAY];
const isoDay = (ts) => new Date(ts * 1000).toISOString().slice(0, 10);
const dayRange = (u, min, max) => [min - DAY / 2, max + DAY / 2];

const COLORS = { used: "#0b5cad", quota: "#a4161a", period: "#e08e0b", adjusted: "#6a3d9a", admitted: "#1f6b35", throttled: "#e08e0b", refused: "#a4161a" };

/**
 * plot(el, series, data, opts) draws a uPlot chart into el and returns
 * {update, destroy}. daily labels the x axis with UTC days (x values at
 * 00:00 UTC) and pads it by half a day for the bars. series: [{label, color, bars?, dash?, pointsOnly?}]
 * (pointsOnly: a marker at each non-null value, no line); data: [xs (epoch
 * seconds), ...one array per series].
 */
export function plot(el, series, data, { height = 280, yLabel = "requests", daily = false } = {}) {
  const opts = {
    width: Math.max(260, el.clientWidth),
    height,
    scales: { x: { time: true, range: daily ? dayRange : undefined }, y: { range: (u, min, max) => [0, Math.max(1, max * 1.1)] } },
    axes: [daily ? { incrs: DAY_STEPS, values: (u, splits) => splits.map(isoDay) } : {}, { label: yLabel, size: 60 }],
    series: [daily ? { label: "Day (UTC)", value: (u, ts) => (ts == null ? "--" : isoDay(ts)) } : {}, ...series.map((s) => ({
      label: s.label,
      stroke: s.color,
      width: 2,
      dash: s.dash,
      fill: s.bars ? s.color + "55" : undefined,
      paths: s.bars ? uPlot.paths.bars({ size: [0.6, 60] }) : s.pointsOnly ? () => null : undefined,
      points: s.pointsOnly ? { show: true, size: 10, fill: s.color } : { show: !s.bars },
    }))],
  };
  if (daily) opts.tzDate = (ts) => uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC");
  const u = new uPlot(opts, data, el);
  const observer = new ResizeObserver(() => u.setSize({ width: Math.max(260, el.clientWidth), height }));
  observer.observe(el);
  return {
    update: (d) => u.setData(d),
    destroy: () => {
      observer.disconnect();
      u.destroy();
    },
  };
}

export { COLORS };
