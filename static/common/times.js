// <time datetime="ISO" data-local="datetime|seconds|date"> shown in the reader's own time zone
// and words ("17 Mar 2026, 10:45"), with how long ago in its title.

const STYLES = {
  datetime: { dateStyle: "medium", timeStyle: "short" },
  seconds: { dateStyle: "medium", timeStyle: "medium" },
  date: { dateStyle: "medium" },
};

export function ago(date, now = new Date()) {
  const seconds = Math.round((now - date) / 1000);
  const format = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
  const steps = [[60, "second"], [60, "minute"], [24, "hour"], [30, "day"], [12, "month"], [Infinity, "year"]];
  let value = -seconds;
  for (const [size, unit] of steps) {
    if (Math.abs(value) < size) return format.format(Math.round(value), unit);
    value /= size;
  }
  return "";
}

export function localiseTimes(root = document) {
  root.querySelectorAll("time[data-local]").forEach((node) => {
    const date = new Date(node.getAttribute("datetime"));
    if (Number.isNaN(date.getTime())) return;
    const style = STYLES[node.dataset.local] || STYLES.datetime;
    node.textContent = new Intl.DateTimeFormat(undefined, style).format(date);
    node.title = ago(date) + " · " + date.toISOString();
  });
}
