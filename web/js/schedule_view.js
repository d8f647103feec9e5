// Every schedule run as a timeline: one bar per kernel launch, as wide as its share of the run's
// time, then the launches in order with their buffers. Clicking a kernel opens its source.
import { nodeColor } from "./display_graph.js";

const escapeHtml = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
const micros = (s) => `${(s * 1e6).toFixed(1)} µs`;
const BAR_COLORS = [nodeColor("REDUCE"), nodeColor("STORE"), nodeColor("LOAD"), nodeColor("RANGE"), nodeColor("CALL")];

function bufferText(b, i) {
  return `${i === 0 ? "out" : "in"} #${b.id} ${b.dtype}[${b.size}]${b.device === "CPU" ? "" : " " + b.device}`;
}

export function renderSchedules(container, schedules, openKernel) {
  if (!schedules.length) {
    container.innerHTML = "<p>No schedule ran while VIZ was on.</p>";
    return;
  }
  const html = [];
  for (const s of schedules) {
    const total = s.launches.reduce((t, l) => t + l.seconds, 0);
    let start = 0;
    const bars = s.launches.map((l, i) => {
      const left = (start / total) * 100 || 0, width = (l.seconds / total) * 100 || 0;
      start += l.seconds;
      return `<div class="bar" data-kernel="${l.kernel_id ?? ""}" title="${escapeHtml(l.kernel)} ${micros(l.seconds)}"
        style="left:${left}%;width:${width}%;background:${BAR_COLORS[i % BAR_COLORS.length]}">${escapeHtml(l.kernel)}</div>`;
    });
    const rows = s.launches.map((l, i) => `<tr><td>${i}</td>
      <td><button class="link" data-kernel="${l.kernel_id ?? ""}">${escapeHtml(l.kernel)}</button></td>
      <td class="time">${micros(l.seconds)}</td>
      <td class="buffers">${l.buffers.map(bufferText).map(escapeHtml).join(", ")}</td></tr>`);
    html.push(`<div class="schedule"><h3>${escapeHtml(s.context || `schedule ${s.id}`)} — ${s.launches.length} kernels,
      ${micros(total)}</h3><div class="timeline">${bars.join("")}</div>
      <table class="launches">${rows.join("")}</table></div>`);
  }
  container.innerHTML = html.join("");
  for (const el of container.querySelectorAll("[data-kernel]")) {
    if (el.dataset.kernel !== "") el.addEventListener("click", () => openKernel(Number(el.dataset.kernel)));
  }
}
