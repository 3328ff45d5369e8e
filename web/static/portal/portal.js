// The developer portal's one script: the usage chart, drawn with the
// operator console's chart module (uPlot) from the data attributes of
// #usage-chart; the page works without it (the same data is a table).
import { plot, COLORS } from "../js/chart.js";

const fig = document.getElementById("usage-chart");
if (fig && fig.dataset.days) {
  // An empty item is a gap (a day outside the budget's current period).
  const numbers = (s) => (s ? s.split(",").map((v) => (v === "" ? null : Number(v))) : []);
  const xs = fig.dataset.days.split(",").map((d) => Date.parse(d + "T00:00:00Z") / 1000);
  const series = [{ label: "Requests", color: COLORS.used, bars: true }];
  const data = [xs, numbers(fig.dataset.used)];
  const remaining = numbers(fig.dataset.remaining);
  if (remaining.length) {
    series.push({ label: "Quota left", color: COLORS.quota, dash: [6, 4] });
    data.push(remaining);
  }
  const budget = numbers(fig.dataset.budget);
  if (budget.length) {
    series.push({ label: "Budget left (all your keys)", color: COLORS.period, dash: [2, 3] });
    data.push(budget);
  }
  plot(fig.querySelector(".chart"), series, data, { daily: true });
}
