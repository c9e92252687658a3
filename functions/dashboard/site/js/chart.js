// Charts by uPlot (vendored): a bar per time bucket, with the same numbers as a table for
// screen readers and keyboards (a canvas says nothing by itself).
import { h, table } from "./dom.js";

export function barChart(title, points, unit) {
  const figure = h("figure", {});
  const box = h("div", { class: "chart", role: "img",
                         "aria-label": `${title}: ${points.length} points` });
  figure.append(box, h("figcaption", { text: title }));
  const rows = points.map(([t, v]) => h("tr", {}, h("td", { text: t }),
                                        h("td", { class: "num", text: String(v) })));
  figure.append(h("details", {}, h("summary", { text: "Data as a table" }),
                  table(title, ["Day", unit + "#"], rows)));
  requestAnimationFrame(() => draw(box, points, unit));
  return figure;
}

function draw(box, points, unit) {
  if (!box.isConnected || !window.uPlot) return;
  const xs = points.map(([t]) => Date.parse(t + "T00:00:00Z") / 1000);
  const ys = points.map(([, v]) => v);
  const width = Math.max(260, box.clientWidth);
  const bars = window.uPlot.paths.bars({ size: [0.7, 40] });
  new window.uPlot({
    width, height: 220, legend: { show: false }, cursor: { show: true },
    scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max)] } },
    axes: [{ stroke: "#4a5360" }, { stroke: "#4a5360", label: unit }],
    series: [{}, { label: unit, stroke: "#0550ae", fill: "rgba(5,80,174,0.35)", paths: bars,
                   points: { show: false } }],
  }, [xs, ys], box);
}
