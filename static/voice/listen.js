/* Listen in on a live voice call: any button with data-listen-url (added whenever the run page
   updates) starts a receive-only WebRTC call to that URL and plays both sides of the call; the
   same button stops it. The server ends the call when the scenario ends. */
(function () {
  "use strict";

  var ICE_GATHER_MS = 3000;
  var MUTE_END_MS = 3000;
  var START_WAIT_MS = 15000;
  var active = new Map(); // listen URL -> {pc, audio, button}

  function csrfToken() {
    var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  function statusFor(button) {
    var next = button.nextElementSibling;
    if (next && next.classList.contains("listen-status")) return next;
    var status = document.createElement("span");
    status.className = "listen-status";
    status.setAttribute("role", "status");
    button.insertAdjacentElement("afterend", status);
    return status;
  }

  function show(button, state, label, message) {
    button.dataset.listenState = state;
    button.textContent = label;
    button.setAttribute("aria-pressed", state === "listening" || state === "connecting" ? "true" : "false");
    var status = statusFor(button);
    status.textContent = message || "";
    status.classList.toggle("listen-error", state === "error");
  }

  function gathered(pc) {
    if (pc.iceGatheringState === "complete") return Promise.resolve();
    return new Promise(function (resolve) {
      var timer = setTimeout(resolve, ICE_GATHER_MS);
      pc.addEventListener("icegatheringstatechange", function () {
        if (pc.iceGatheringState === "complete") { clearTimeout(timer); resolve(); }
      });
    });
  }

  function stop(url, state, message) {
    var call = active.get(url);
    if (!call) return;
    active.delete(url);
    clearTimeout(call.muteTimer);
    call.pc.close();
    call.audio.srcObject = null;
    call.audio.remove();
    show(call.button, state || "idle", "Listen", message);
  }

  async function start(button) {
    var url = button.dataset.listenUrl;
    if (!window.RTCPeerConnection) {
      show(button, "error", "Listen", "This browser cannot play live calls (no WebRTC).");
      return;
    }
    var pc = new RTCPeerConnection();
    var audio = document.createElement("audio");
    audio.autoplay = true;
    audio.hidden = true;
    document.body.appendChild(audio);
    var call = {pc: pc, audio: audio, button: button, muteTimer: null};
    active.set(url, call);
    show(button, "connecting", "Stop listening", "Connecting…");

    pc.addTransceiver("audio", {direction: "recvonly"});
    pc.addEventListener("track", function (event) {
      var track = event.track;
      audio.srcObject = event.streams[0] || new MediaStream([track]);
      audio.play().catch(function () {
        show(button, "listening", "Stop listening", "Click the page to allow sound.");
        document.addEventListener("click", function () { audio.play().catch(function () {}); }, {once: true});
      });
      // The server stops sending when the call ends; silence still flows while it runs.
      track.addEventListener("mute", function () {
        call.muteTimer = setTimeout(function () { stop(url, "idle", "The call ended."); }, MUTE_END_MS);
      });
      track.addEventListener("unmute", function () { clearTimeout(call.muteTimer); });
      track.addEventListener("ended", function () { stop(url, "idle", "The call ended."); });
    });
    pc.addEventListener("connectionstatechange", function () {
      if (pc.connectionState === "connected") {
        show(button, "listening", "Stop listening", "Listening to both sides of the call.");
      } else if (pc.connectionState === "failed") {
        stop(url, "error", "The connection to the call was lost.");
      }
    });

    try {
      await pc.setLocalDescription(await pc.createOffer());
      await gathered(pc);
      var offer = JSON.stringify({sdp: pc.localDescription.sdp, type: pc.localDescription.type});
      var waitUntil = Date.now() + START_WAIT_MS;
      var response, body;
      for (;;) {
        response = await fetch(url, {
          method: "POST",
          credentials: "same-origin",
          headers: {"Content-Type": "application/json", "X-CSRFToken": csrfToken()},
          body: offer,
        });
        body = await response.json().catch(function () { return {}; });
        if (active.get(url) !== call) return; // stopped while waiting
        // A scenario is announced before its bots are ready: give the call a moment to begin.
        if (response.status !== 404 || !body.retry || Date.now() > waitUntil) break;
        show(button, "connecting", "Stop listening", "Waiting for the call to start…");
        await new Promise(function (resolve) { setTimeout(resolve, 1000); });
      }
      if (!response.ok) throw new Error(body.error || ("The server refused (HTTP " + response.status + ")."));
      await pc.setRemoteDescription(body);
      var transport = pc.getReceivers()[0] && pc.getReceivers()[0].transport;
      if (transport) {
        transport.addEventListener("statechange", function () {
          if (transport.state === "closed") stop(url, "idle", "The call ended.");
          else if (transport.state === "failed") stop(url, "error", "The connection to the call was lost.");
        });
      }
    } catch (error) {
      if (active.get(url) === call) stop(url, "error", "Could not listen: " + (error.message || error));
    }
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-listen-url]");
    if (!button) return;
    event.preventDefault();
    if (active.has(button.dataset.listenUrl)) stop(button.dataset.listenUrl, "idle", "");
    else start(button);
  });

  // For tests and the curious: the open calls by URL.
  window.evasiteListen = {active: active};
})();
