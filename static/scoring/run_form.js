// The New-run form: filter the scenario catalogue (picking one selects "Picked scenarios", choosing
// a domain selects "One domain"), and keep "What this will start" current: how many scenario
// runs, in which modality, and about how long, from this site's own run history (the numbers in
// #start-plan-inputs come from scoring.web.start_plan; the server checks them again on submit).
import { wireFilter } from "../common/filter.js";

const form = document.getElementById("run-form");
const filter = document.getElementById("scenario-filter");
const list = document.getElementById("scenario-list");
const summary = document.getElementById("start-summary-text");
const inputsNode = document.getElementById("start-plan-inputs");
const inputs = inputsNode ? JSON.parse(inputsNode.textContent) : null;

function field(name) {
  return form ? form.elements.namedItem(name) : null;
}

function value(name) {
  const node = field(name);
  if (!node) return "";
  if (node instanceof RadioNodeList) return node.value;
  return node.value;
}

function integer(name, fallback) {
  const number = parseInt(value(name), 10);
  return Number.isFinite(number) && number > 0 ? number : fallback;
}

function scenarioCount() {
  const scope = value("scope");
  if (scope === "pick") return form.querySelectorAll('input[name="scenarios"]:checked').length;
  if (scope === "domain") return inputs.domains[value("domain")] || 0;
  return inputs.total;
}

function durationText(seconds) {
  if (seconds < 60) return "under a minute";
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return "about " + minutes + " min";
  return "about " + Math.floor(minutes / 60) + " h " + String(minutes % 60).padStart(2, "0") + " min";
}

function plural(count, word) {
  return count + " " + word + (count === 1 ? "" : "s");
}

function perAttempt(modality, agent) {
  for (const key of [modality + "/" + agent, modality]) {
    if ((inputs.samples[key] || 0) >= inputs.min_samples) return [inputs.seconds[key], inputs.samples[key]];
  }
  return [null, 0];
}

function describe() {
  const scenarios = scenarioCount();
  const trials = integer("trials", 1);
  const concurrency = integer("concurrency", 1);
  const modality = value("modality") || "voice";
  const attempts = scenarios * trials;
  if (!attempts) return "No scenario chosen yet.";
  const [seconds, samples] = perAttempt(modality, value("agent_model").trim());
  let text = plural(attempts, "scenario run") + " (" + plural(scenarios, "scenario") + " × " + plural(trials, "trial") +
    ") in " + modality + ", " + concurrency + " at a time";
  let wall = null;
  if (seconds === null) {
    text += "; no finished " + modality + " run on this site to estimate the time from.";
  } else {
    wall = Math.ceil(attempts / concurrency) * seconds;
    text += ": " + durationText(wall) + ", judging by " + plural(samples, "recent " + modality + " result") + ".";
  }
  const big = attempts > (inputs.big_attempts[modality] || inputs.big_attempts.text) ||
    (wall !== null && wall > inputs.big_seconds);
  if (big) text += " That is a big run: Start run asks you to confirm once.";
  return text;
}

if (form && filter && list) {
  wireFilter(filter, list, { itemSelector: ".scenario-choice" });
  list.addEventListener("change", () => {
    const pick = form.querySelector('input[name="scope"][value="pick"]');
    if (pick && list.querySelector("input:checked")) pick.checked = true;
  });
  const domain = field("domain");
  if (domain && domain.addEventListener) {
    domain.addEventListener("change", () => {
      const one = form.querySelector('input[name="scope"][value="domain"]');
      if (one) one.checked = true;
    });
  }
}

if (form && summary && inputs) {
  const confirmBox = document.getElementById("start-confirm");
  const update = (event) => {
    summary.textContent = describe();
    // A confirmation asked about the fields as they were; once they change it no longer applies.
    if (event && confirmBox) confirmBox.hidden = true;
  };
  form.addEventListener("input", update);
  form.addEventListener("change", update);
  update();
}
