// Live run page. The socket (ws/runs/<id>/: snapshot, then run.started / scenario.started / turn /
// scenario.finished / run.finished / run.ended) says *when* something changed; after each change
// the page fetches its panels (status, controls, notice, counts, facts, charts, results, summary)
// rendered by the server from the same partials as a reload, so nothing on the page can
// contradict the database. The running scenarios' transcripts are drawn here from the turns.
import { fetchHtml } from "../common/http.js";
import { openJsonSocket } from "../common/socket.js";
import { localiseTimes } from "../common/times.js";
import { appendTurn } from "../common/transcript.js";

const root = document.getElementById("live");
const runningBox = document.getElementById("live-running");
const statusText = document.getElementById("live-status");
const ENDED_TEXT = {
  finished: "The run finished.",
  interrupted: "The run stopped before it finished.",
  failed: "The run failed.",
};

function pageStatus() {
  const node = document.getElementById("run-status");
  return node ? node.dataset.status : root.dataset.status;
}

function cardFor(name) {
  return runningBox.querySelector('.live-scenario[data-name="' + CSS.escape(name) + '"]');
}

function listenUrl(name) {
  return root.dataset.listenTemplate.split(root.dataset.placeholder).join(encodeURIComponent(name));
}

function runningCard(name) {
  let card = cardFor(name);
  if (card) return card;
  card = document.createElement("section");
  card.className = "live-scenario";
  card.dataset.name = name;
  const title = document.createElement("h3");
  title.textContent = name;
  card.append(title);
  if (root.dataset.modality === "voice") {
    const listen = document.createElement("button");
    listen.type = "button";
    listen.className = "listen";
    listen.dataset.listenUrl = listenUrl(name);
    listen.textContent = "Listen";
    card.append(listen);
  }
  const transcript = document.createElement("ol");
  transcript.className = "live-transcript transcript";
  card.append(transcript);
  runningBox.append(card);
  return card;
}

function dropCard(name) {
  const card = cardFor(name);
  if (card) card.remove();
}

function dropAllCards() {
  runningBox.querySelectorAll(".live-scenario").forEach((card) => card.remove());
}

// --- panels: one fetch at a time; a change during a fetch asks for one more afterwards ---
let fetching = false;
let again = false;

function swapPanels(doc) {
  doc.querySelectorAll("[data-panel][id]").forEach((fresh) => {
    const current = document.getElementById(fresh.id);
    if (!current) return;
    for (const { name, value } of Array.from(fresh.attributes)) current.setAttribute(name, value);
    current.innerHTML = fresh.innerHTML;
    localiseTimes(current);
  });
  const status = pageStatus();
  root.dataset.status = status;
  if (status !== "running") {
    dropAllCards();
    statusText.textContent = ENDED_TEXT[status] || "";
  } else {
    statusText.textContent = "Live.";
  }
}

async function refresh() {
  if (fetching) { again = true; return; }
  fetching = true;
  try {
    do {
      again = false;
      swapPanels(await fetchHtml(root.dataset.panelsUrl));
    } while (again);
  } catch (error) {
    statusText.textContent = "Could not update the page (" + error.message + "); reload it for the latest state.";
  } finally {
    fetching = false;
  }
}

function onEvent(event) {
  switch (event.type) {
    case "snapshot":
      (event.running || []).forEach(runningCard);
      runningBox.querySelectorAll(".live-scenario").forEach((card) => {
        if (!(event.running || []).includes(card.dataset.name)) card.remove();
      });
      refresh();  // anything that happened between the page's render and this snapshot
      break;
    case "scenario.started":
      runningCard(event.name);
      refresh();
      break;
    case "turn":
      appendTurn(runningCard(event.name).querySelector(".live-transcript"),
                 { role: event.role, speaker: event.role, text: event.text }, { limit: 60 });
      break;
    case "scenario.finished":
      dropCard(event.name);
      refresh();
      break;
    case "run.started":
    case "run.finished":
    case "run.ended":
      if (event.type !== "run.started") dropAllCards();
      refresh();
      break;
  }
}

if (root) {
  // Connected whatever the status: a run resumed elsewhere comes back to life on this page too.
  openJsonSocket(root.dataset.wsUrl, {
    onOpen: () => { if (pageStatus() === "running") statusText.textContent = "Live."; },
    onMessage: onEvent,
    onClose: () => {
      if (pageStatus() === "running") {
        statusText.textContent = "Live updates stopped (the connection closed); reload the page for the latest state.";
      }
    },
  });
}
