// The human tester's call page: the microphone goes to the server over WebRTC, the call's WebSocket
// carries our SDP offer and the server's answer (so they reach the process holding the call, however
// many serve the site) and brings the call's state, turns and timer, and a call without a
// usable microphone can be typed instead (the same call in text modality). While the call runs
// the page shows the microphone's level, a mute switch, what the agent is doing (listening,
// thinking, speaking) and what it heard; when the call ends the last lines stay readable before
// the page opens the result.
import { levelMeter } from "../common/level.js";
import { openJsonSocket, sendJson } from "../common/socket.js";
import { appendTurn } from "../common/transcript.js";
import { localOffer } from "../common/webrtc.js";

const RESULT_DELAY_MS = 5000;
const SPEAKING_LEVEL = 0.02;
const QUIET_MS = 700;

const root = document.getElementById("call");
const callButton = document.getElementById("call-button");
const hangupButton = document.getElementById("hangup-button");
const muteButton = document.getElementById("mute-button");
const typeButton = document.getElementById("type-button");
const stateText = document.getElementById("call-state");
const messageBox = document.getElementById("call-message");
const timer = document.getElementById("call-timer");
const transcript = document.getElementById("transcript");
const sayForm = document.getElementById("say-form");
const sayText = document.getElementById("say-text");
const agentAudio = document.getElementById("agent-audio");
const live = document.getElementById("call-live");
const agentState = document.getElementById("agent-state");
const micLevel = document.getElementById("mic-level");
const micNote = document.getElementById("mic-note");
const heardLive = document.getElementById("heard-live");
const endedBox = document.getElementById("call-ended");
const endedText = document.getElementById("call-ended-text");
const resultLink = document.getElementById("result-link");
const stayButton = document.getElementById("stay-button");

let socket = null;
let pc = null;
let audioContext = null;
let micStream = null;
let stopMeters = [];
let call = null; // {id, modality}
let answered = null; // {resolve, reject} of the offer in flight
let finished = false;
let muted = false;
let leaveTimer = null;
let lastAgentSound = 0;

function show(message) {
  messageBox.textContent = message;
  messageBox.hidden = !message;
}

function setState(text) {
  stateText.textContent = text;
}

const AGENT_STATES = { idle: "waiting", listening: "listening", thinking: "thinking", speaking: "speaking" };

function setAgentState(state) {
  if (agentState.dataset.state === state) return;
  agentState.dataset.state = state;
  agentState.textContent = AGENT_STATES[state] || state;
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

function showTime(seconds) {
  const s = Math.max(0, seconds | 0);
  timer.textContent = Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
}

function setAgentFormDisabled(disabled) {
  document.querySelectorAll("#agent-form input, #agent-form select").forEach((el) => { el.disabled = disabled; });
}

function lockControls() {
  callButton.disabled = true;
  typeButton.disabled = true;
  setAgentFormDisabled(true);
}

function unlockControls() {
  callButton.disabled = false;
  typeButton.disabled = false;
  hangupButton.disabled = true;
  muteButton.disabled = true;
  setAgentFormDisabled(false);
}

function onTurn(event) {
  appendTurn(transcript, { role: event.role, speaker: event.speaker + ":", text: event.text });
  if (event.role === "user") {
    heardLive.textContent = event.text; // a user turn is what the agent's ASR made of you
    setAgentState("thinking");
  } else if (call && call.modality === "text") {
    setAgentState("listening");
  }
}

function onEnded(event) {
  finished = true;
  closeMedia();
  hangupButton.disabled = true;
  muteButton.disabled = true;
  sayForm.hidden = true;
  setAgentState("idle");
  setState("Call ended (" + event.stop_reason + ").");
  resultLink.href = event.result_url;
  endedText.textContent = "The call has ended (" + event.stop_reason + "). Its last lines are above; " +
    "the result opens in a few seconds.";
  endedBox.hidden = false;
  leaveTimer = setTimeout(() => window.location.assign(event.result_url), RESULT_DELAY_MS);
}

function onEvent(event) {
  switch (event.type) {
    case "call":
      call = event;
      if (event.modality === "voice") {
        sendOffer().catch((err) => { if (!finished) fail("Could not connect the audio: " + (err.message || err)); });
      }
      break;
    case "state":
      if (event.state === "live") {
        setState("Connected: the agent is on the line.");
        hangupButton.disabled = false;
        live.hidden = false;
        setAgentState("listening");
        if (call && call.modality === "text") {
          sayForm.hidden = false;
          sayText.focus();
          micLevel.closest("p").hidden = true;
        } else {
          muteButton.disabled = false;
        }
      }
      break;
    case "turn":
      onTurn(event);
      break;
    case "tick":
      showTime(event.elapsed);
      break;
    case "ended":
      onEnded(event);
      break;
    case "answer":
      if (answered) answered.resolve(event.answer);
      break;
    case "offer-refused":
      if (answered) answered.reject(new Error(event.message));
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
  if (answered) answered.reject(new Error(message));
  show(message);
  setState("Not connected.");
  closeMedia();
  if (socket) socket.close();
  socket = null;
  call = null;
  sayForm.hidden = true;
  live.hidden = true;
  unlockControls();
}

function openSocket(start) {
  socket = openJsonSocket(root.dataset.wsPath, {
    onOpen: (opened) => sendJson(opened, start),
    onMessage: onEvent,
    onClose: () => { if (!finished && call) fail("The connection to the server was lost."); },
  });
}

function watchAgentAudio(stream) {
  // The agent "speaks" while its audio is loud enough; after a quiet moment it listens again.
  stopMeters.push(levelMeter(audioContext, stream, (level) => {
    const now = performance.now();
    if (level > SPEAKING_LEVEL) {
      lastAgentSound = now;
      setAgentState("speaking");
    } else if (agentState.dataset.state === "speaking" && now - lastAgentSound > QUIET_MS) {
      setAgentState("listening");
    }
  }));
}

async function startVoice() {
  show("");
  if (!window.RTCPeerConnection || !navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
    show("This browser cannot make WebRTC calls. Use Type instead to play the call in text.");
    return;
  }
  try {
    micStream = await navigator.mediaDevices.getUserMedia({ audio: true, video: false });
  } catch (err) {
    show("No microphone is available (" + (err.name || err) + "): it was denied or there is none. " +
         "Use Type instead to play the call in text.");
    return;
  }
  audioContext = new AudioContext();
  stopMeters.push(levelMeter(audioContext, micStream, (level) => {
    const percent = muted ? 0 : Math.round(level * 100);
    if (micLevel.textContent === percent + "%") return;  // unchanged: nothing to redraw
    micLevel.value = percent / 100;
    micLevel.textContent = percent + "%";
  }));
  muted = false;
  lockControls();
  finished = false;
  setState("Connecting…");
  openSocket({ type: "start", modality: "voice", agent: agentChoice() });
}

async function sendOffer() {
  pc = new RTCPeerConnection({ iceServers: [] });
  micStream.getAudioTracks().forEach((track) => pc.addTrack(track, micStream));
  pc.ontrack = (event) => {
    const stream = event.streams[0] || new MediaStream([event.track]);
    agentAudio.srcObject = stream;
    watchAgentAudio(stream);
  };
  pc.onconnectionstatechange = () => {
    if (pc && pc.connectionState === "failed" && !finished) show("The audio connection failed.");
  };
  const offer = await localOffer(pc);
  const answer = await new Promise((resolve, reject) => {
    answered = { resolve, reject };
    if (!sendJson(socket, { type: "offer", sdp: offer.sdp })) reject(new Error("the connection to the server was lost"));
  }).finally(() => { answered = null; });
  if (pc) await pc.setRemoteDescription(answer);
}

function setMuted(value) {
  muted = value;
  if (micStream) micStream.getAudioTracks().forEach((track) => { track.enabled = !muted; });
  muteButton.setAttribute("aria-pressed", String(muted));
  muteButton.textContent = muted ? "Unmute" : "Mute";
  micNote.textContent = muted ? "Muted: the agent hears silence." : "";
}

function closeMedia() {
  stopMeters.forEach((stop) => stop());
  stopMeters = [];
  if (pc) { pc.close(); pc = null; }
  if (micStream) { micStream.getTracks().forEach((track) => track.stop()); micStream = null; }
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
muteButton.addEventListener("click", () => setMuted(!muted));
hangupButton.addEventListener("click", () => {
  sendJson(socket, { type: "hangup" });
  hangupButton.disabled = true;
  setState("Hanging up…");
});
sayForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const text = sayText.value.trim();
  if (!text || !socket) return;
  if (sendJson(socket, { type: "say", text: text })) setAgentState("thinking");
  sayText.value = "";
});
stayButton.addEventListener("click", () => {
  clearTimeout(leaveTimer);
  endedText.textContent = "The call has ended. Open the result when you are ready.";
  stayButton.hidden = true;
});
