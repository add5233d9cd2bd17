// Live run page: follows ws/runs/<id>/ (snapshot, then run.started / scenario.started / turn /
// scenario.finished / run.finished) and updates the progress bar, the passing / failing / running
// counts, each running scenario's transcript and a verdict chip per finished scenario, without
// reloading. Voice scenarios get a Listen button (static/voice/listen.js handles its clicks).
(function () {
  "use strict";
  var root = document.getElementById("live");
  if (!root || root.dataset.status !== "running") { return; }

  var progress = document.getElementById("run-progress");
  var progressText = document.getElementById("progress-text");
  var statusText = document.getElementById("live-status");
  var runStatus = document.getElementById("run-status");
  var finishedList = document.getElementById("live-finished");
  var runningBox = document.getElementById("live-running");
  var counts = {
    passing: document.getElementById("count-passing"),
    failing: document.getElementById("count-failing"),
    running: document.getElementById("count-running")
  };
  var state = { total: Number(progress.max) || 0, finished: {}, running: {} };

  function listenUrl(name) {
    return root.dataset.listenTemplate.split(root.dataset.placeholder).join(encodeURIComponent(name));
  }

  function render() {
    var names = Object.keys(state.finished);
    var passing = names.filter(function (n) { return state.finished[n] === true; }).length;
    var failing = names.filter(function (n) { return state.finished[n] === false; }).length;
    progress.max = Math.max(state.total, 1);
    progress.value = names.length;
    progressText.textContent = names.length + "/" + state.total;
    counts.passing.textContent = passing;
    counts.failing.textContent = failing;
    counts.running.textContent = Object.keys(state.running).length;
  }

  function chip(name, success) {
    var item = finishedList.querySelector('[data-name="' + CSS.escape(name) + '"]');
    if (!item) {
      item = document.createElement("li");
      item.dataset.name = name;
      item.textContent = name;
      finishedList.appendChild(item);
    }
    item.className = "chip " + (success === true ? "pass" : success === false ? "fail" : "na");
    item.title = success === true ? "passed" : success === false ? "failed" : "N/A";
  }

  function runningCard(name) {
    var card = runningBox.querySelector('.live-scenario[data-name="' + CSS.escape(name) + '"]');
    if (card) { return card; }
    card = document.createElement("section");
    card.className = "live-scenario";
    card.dataset.name = name;
    var title = document.createElement("h3");
    title.textContent = name;
    card.appendChild(title);
    if (root.dataset.modality === "voice") {
      var listen = document.createElement("button");
      listen.type = "button";
      listen.className = "listen";
      listen.dataset.listenUrl = listenUrl(name);
      listen.textContent = "Listen";
      card.appendChild(listen);
    }
    var transcript = document.createElement("ol");
    transcript.className = "live-transcript";
    card.appendChild(transcript);
    runningBox.appendChild(card);
    return card;
  }

  function started(name) {
    state.running[name] = true;
    runningCard(name);
  }

  function turn(name, role, text) {
    var list = runningCard(name).querySelector(".live-transcript");
    var item = document.createElement("li");
    item.className = "turn " + role;
    var who = document.createElement("span");
    who.className = "role";
    who.textContent = role;
    item.appendChild(who);
    item.appendChild(document.createTextNode(" " + text));
    list.appendChild(item);
    while (list.children.length > 60) { list.removeChild(list.firstChild); }
  }

  function finished(name, success, stopReason) {
    delete state.running[name];
    state.finished[name] = success;
    chip(name, success);
    var card = runningBox.querySelector('.live-scenario[data-name="' + CSS.escape(name) + '"]');
    if (card) { card.remove(); }
    statusText.textContent = name + " finished " + (stopReason || "");
  }

  function ended(text, status) {
    statusText.textContent = text;
    if (status) {
      runStatus.textContent = status;
      runStatus.className = "status " + status;
    }
    Object.keys(state.running).forEach(function (name) {
      var card = runningBox.querySelector('.live-scenario[data-name="' + CSS.escape(name) + '"]');
      if (card) { card.remove(); }
    });
    state.running = {};
    render();
  }

  var scheme = location.protocol === "https:" ? "wss://" : "ws://";
  var socket = new WebSocket(scheme + location.host + root.dataset.wsUrl);
  var over = false;
  socket.onmessage = function (message) {
    var e = JSON.parse(message.data);
    if (e.type === "snapshot") {
      state.total = e.total;
      (e.finished || []).forEach(function (r) { state.finished[r.name] = r.is_successful; chip(r.name, r.is_successful); });
      (e.running || []).forEach(started);
      statusText.textContent = e.status === "running" ? "Live" : "Run " + e.status;
    } else if (e.type === "run.started") {
      state.total = e.total;
    } else if (e.type === "scenario.started") {
      started(e.name);
    } else if (e.type === "turn") {
      turn(e.name, e.role, e.text);
    } else if (e.type === "scenario.finished") {
      finished(e.name, e.is_successful, e.stop_reason);
    } else if (e.type === "run.finished") {
      over = true;
      var rate = e.success_rate === null || e.success_rate === undefined ? "N/A" : (e.success_rate * 100).toFixed(2) + "%";
      ended("Run finished: success rate " + rate + ". Reload for the charts and summary.", "finished");
    } else if (e.type === "run.ended") {
      over = true;
      ended("Run " + e.status + ": " + e.error + ". Reload to resume it.", e.status);
    }
    render();
  };
  socket.onclose = function () {
    if (!over) { statusText.textContent = "Live updates closed; reload for the latest state."; }
  };
})();
