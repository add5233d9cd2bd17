// The human tester's call page: the microphone goes to the server over WebRTC (the server
// answers our SDP offer), the call's state, turns and timer arrive over a WebSocket, and a call
// without a usable microphone can be typed instead (the same call in text modality).
(function () {
  "use strict";

  const root = document.getElementById("call");
  const callButton = document.getElementById("call-button");
  const hangupButton = document.getElementById("hangup-button");
  const typeButton = document.getElementById("type-button");
  const stateText = document.getElementById("call-state");
  const messageBox = document.getElementById("call-message");
  const timer = document.getElementById("call-timer");
  const transcript = document.getElementById("transcript");
  const sayForm = document.getElementById("say-form");
  const sayText = document.getElementById("say-text");
  const agentAudio = document.getElementById("agent-audio");
  const csrf = root.dataset.csrf;

  let socket = null;
  let pc = null;
  let audioContext = null;
  let outgoing = null; // MediaStreamAudioDestinationNode: what the server hears
  let micSource = null;
  let call = null; // {id, modality, offer_url, hangup_url}
  let finished = false;

  function show(message) {
    messageBox.textContent = message;
    messageBox.hidden = !message;
  }

  function setState(text) {
    stateText.textContent = text;
  }

  function agentChoice() {
    const form = document.getElementById("agent-form");
    const kind = form.querySelector("input[name=agent_kind]:checked").value;
    if (kind === "url") return { url: form.url.value.trim() };
    if (kind === "openai") {
      return { model: form.llm_model.value.trim(), llm_url: form.llm_url.value.trim(),
               api_key_name: form.api_key_name.value.trim() };
    }
    return { model: form.model.value };
  }

  function addTurn(event) {
    const item = document.createElement("li");
    item.className = "turn " + (event.role === "agent" ? "agent" : "user");
    const who = document.createElement("span");
    who.className = "role";
    who.textContent = event.speaker + ":";
    const text = document.createElement("span");
    text.textContent = " " + event.text;
    item.append(who, text);
    transcript.append(item);
    transcript.scrollTop = transcript.scrollHeight;
  }

  function showTime(seconds) {
    const s = Math.max(0, seconds | 0);
    timer.textContent = Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
  }

  function lockControls() {
    callButton.disabled = true;
    typeButton.disabled = true;
    document.querySelectorAll("#agent-form input, #agent-form select").forEach((el) => { el.disabled = true; });
  }

  function unlockControls() {
    callButton.disabled = false;
    typeButton.disabled = false;
    hangupButton.disabled = true;
    document.querySelectorAll("#agent-form input, #agent-form select").forEach((el) => { el.disabled = false; });
  }

  function onEvent(event) {
    switch (event.type) {
      case "call":
        call = event;
        if (event.modality === "voice") sendOffer().catch((err) => fail("Could not connect the audio: " + err));
        break;
      case "state":
        if (event.state === "live") {
          setState("Connected: the agent is on the line.");
          hangupButton.disabled = false;
          if (call && call.modality === "text") { sayForm.hidden = false; sayText.focus(); }
        }
        break;
      case "turn":
        addTurn(event);
        break;
      case "tick":
        showTime(event.elapsed);
        break;
      case "ended":
        finished = true;
        setState("Call ended (" + event.stop_reason + "). Opening the result…");
        closeMedia();
        window.location.assign(event.result_url);
        break;
      case "failed":
        fail(event.message);
        break;
      case "error":
        show(event.message);
        break;
    }
  }

  function fail(message) {
    finished = true;
    show(message);
    setState("Not connected.");
    closeMedia();
    if (socket) socket.close();
    socket = null;
    call = null;
    sayForm.hidden = true;
    unlockControls();
  }

  function openSocket(start) {
    const scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + window.location.host + root.dataset.wsPath);
    socket.onopen = () => socket.send(JSON.stringify(start));
    socket.onmessage = (message) => onEvent(JSON.parse(message.data));
    socket.onclose = () => {
      if (!finished && call) fail("The connection to the server was lost.");
    };
  }

  async function startVoice() {
    show("");
    if (!window.RTCPeerConnection || !navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
      show("This browser cannot make WebRTC calls. Use Type instead to play the call in text.");
      return;
    }
    let stream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: true, video: false });
    } catch (err) {
      show("No microphone is available (" + (err.name || err) + "): it was denied or there is none. " +
           "Use Type instead to play the call in text.");
      return;
    }
    // The microphone passes through WebAudio so the same outgoing track can also carry other
    // sources (an automated tester's synthesised speech, see injectAudio below).
    audioContext = new AudioContext({ sampleRate: 48000 });
    outgoing = audioContext.createMediaStreamDestination();
    micSource = audioContext.createMediaStreamSource(stream);
    micSource.connect(outgoing);
    lockControls();
    finished = false;
    setState("Connecting…");
    openSocket({ type: "start", modality: "voice", agent: agentChoice() });
  }

  function iceGathered(peer) {
    if (peer.iceGatheringState === "complete") return Promise.resolve();
    return new Promise((resolve) => {
      peer.addEventListener("icegatheringstatechange", () => {
        if (peer.iceGatheringState === "complete") resolve();
      });
    });
  }

  async function sendOffer() {
    pc = new RTCPeerConnection({ iceServers: [] });
    pc.addTrack(outgoing.stream.getAudioTracks()[0], outgoing.stream);
    pc.ontrack = (event) => { agentAudio.srcObject = event.streams[0] || new MediaStream([event.track]); };
    pc.onconnectionstatechange = () => {
      if (pc && pc.connectionState === "failed" && !finished) show("The audio connection failed.");
    };
    await pc.setLocalDescription(await pc.createOffer());
    await iceGathered(pc);
    const response = await fetch(call.offer_url, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify({ sdp: pc.localDescription.sdp, type: pc.localDescription.type }),
      credentials: "same-origin",
    });
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || response.status);
    await pc.setRemoteDescription(body);
  }

  function closeMedia() {
    if (pc) { pc.close(); pc = null; }
    if (audioContext) { audioContext.close(); audioContext = null; }
  }

  function startText() {
    show("");
    lockControls();
    finished = false;
    setState("Connecting…");
    openSocket({ type: "start", modality: "text", agent: agentChoice() });
  }

  callButton.addEventListener("click", startVoice);
  typeButton.addEventListener("click", startText);
  hangupButton.addEventListener("click", () => {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: "hangup" }));
    hangupButton.disabled = true;
    setState("Hanging up…");
  });
  sayForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = sayText.value.trim();
    if (!text || !socket) return;
    socket.send(JSON.stringify({ type: "say", text: text }));
    sayText.value = "";
  });
  // Closing the tab mid-call is the passenger leaving; the socket's close says so too, this
  // only makes it immediate.
  window.addEventListener("pagehide", () => {
    if (call && !finished) {
      const form = new FormData();
      form.append("csrfmiddlewaretoken", csrf);
      navigator.sendBeacon(call.hangup_url, form);
    }
  });

  // For automated testers (the browser tests and bench/human_relay.py): speak a clip of s16le
  // mono PCM (base64) into the outgoing track, and read the browser's inbound RTP counters.
  window.evasiteCall = {
    injectAudio(base64Pcm, sampleRate) {
      if (!audioContext || !outgoing) return Promise.reject(new Error("no voice call"));
      const bytes = Uint8Array.from(atob(base64Pcm), (c) => c.charCodeAt(0));
      const samples = new Int16Array(bytes.buffer, 0, bytes.length >> 1);
      const buffer = audioContext.createBuffer(1, samples.length, sampleRate);
      const channel = buffer.getChannelData(0);
      for (let i = 0; i < samples.length; i++) channel[i] = samples[i] / 32768;
      const source = audioContext.createBufferSource();
      source.buffer = buffer;
      source.connect(outgoing);
      return new Promise((resolve) => { source.onended = resolve; source.start(); });
    },
    muteMicrophone(muted) {
      if (micSource && outgoing) { if (muted) micSource.disconnect(); else micSource.connect(outgoing); }
    },
    async inboundAudioStats() {
      if (!pc) return null;
      let found = null;
      (await pc.getStats()).forEach((report) => {
        if (report.type === "inbound-rtp" && report.kind === "audio") found = report;
      });
      return found ? JSON.parse(JSON.stringify(found)) : null;
    },
    state() { return { call: call, finished: finished, connection: pc ? pc.connectionState : null }; },
  };
})();
