// Listen in on a live voice call: any button with data-listen-url (the run page adds them as
// scenarios start) starts a receive-only WebRTC call to that URL and plays both sides; the same
// button stops it. The server ends the call when the scenario ends. The button's
// data-listen-state says where it stands: idle, connecting, listening or error.
import { exchangeOffer, localOffer } from "../common/webrtc.js";

const MUTE_END_MS = 3000;
const START_WAIT_MS = 15000;
const RETRY_MS = 1000;
const active = new Map(); // listen URL -> {pc, audio, button, muteTimer}

function statusFor(button) {
  const next = button.nextElementSibling;
  if (next && next.classList.contains("listen-status")) return next;
  const status = document.createElement("span");
  status.className = "listen-status";
  status.setAttribute("role", "status");
  button.insertAdjacentElement("afterend", status);
  return status;
}

function show(button, state, label, message) {
  button.dataset.listenState = state;
  button.textContent = label;
  button.setAttribute("aria-pressed", state === "listening" || state === "connecting" ? "true" : "false");
  const status = statusFor(button);
  status.textContent = message || "";
  status.classList.toggle("listen-error", state === "error");
}

function stop(url, state, message) {
  const call = active.get(url);
  if (!call) return;
  active.delete(url);
  clearTimeout(call.muteTimer);
  call.pc.close();
  call.audio.srcObject = null;
  call.audio.remove();
  show(call.button, state || "idle", "Listen", message);
}

function wait(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function start(button) {
  const url = button.dataset.listenUrl;
  if (!window.RTCPeerConnection) {
    show(button, "error", "Listen", "This browser cannot play live calls (no WebRTC).");
    return;
  }
  const pc = new RTCPeerConnection();
  const audio = document.createElement("audio");
  audio.autoplay = true;
  audio.hidden = true;
  document.body.append(audio);
  const call = { pc, audio, button, muteTimer: null };
  active.set(url, call);
  show(button, "connecting", "Stop listening", "Connecting…");

  pc.addTransceiver("audio", { direction: "recvonly" });
  pc.addEventListener("track", (event) => {
    const track = event.track;
    audio.srcObject = event.streams[0] || new MediaStream([track]);
    audio.play().catch(() => {
      show(button, "listening", "Stop listening", "Click the page to allow sound.");
      document.addEventListener("click", () => { audio.play().catch(() => {}); }, { once: true });
    });
    // The server stops sending when the call ends; silence still flows while it runs.
    track.addEventListener("mute", () => {
      call.muteTimer = setTimeout(() => stop(url, "idle", "The call ended."), MUTE_END_MS);
    });
    track.addEventListener("unmute", () => clearTimeout(call.muteTimer));
    track.addEventListener("ended", () => stop(url, "idle", "The call ended."));
  });
  pc.addEventListener("connectionstatechange", () => {
    if (pc.connectionState === "connected") {
      show(button, "listening", "Stop listening", "Listening to both sides of the call.");
    } else if (pc.connectionState === "failed") {
      stop(url, "error", "The connection to the call was lost.");
    }
  });

  try {
    const offer = await localOffer(pc);
    const waitUntil = Date.now() + START_WAIT_MS;
    let exchange;
    for (;;) {
      exchange = await exchangeOffer(pc, url, offer);
      if (active.get(url) !== call) return; // stopped while waiting
      // A scenario is announced before its bots are ready: give the call a moment to begin.
      if (exchange.response.status !== 404 || !exchange.body.retry || Date.now() > waitUntil) break;
      show(button, "connecting", "Stop listening", "Waiting for the call to start…");
      await wait(RETRY_MS);
    }
    if (!exchange.response.ok) {
      throw new Error(exchange.body.error || ("The server refused (HTTP " + exchange.response.status + ")."));
    }
    const receiver = pc.getReceivers()[0];
    const transport = receiver && receiver.transport;
    if (transport) {
      transport.addEventListener("statechange", () => {
        if (transport.state === "closed") stop(url, "idle", "The call ended.");
        else if (transport.state === "failed") stop(url, "error", "The connection to the call was lost.");
      });
    }
  } catch (error) {
    if (active.get(url) === call) stop(url, "error", "Could not listen: " + (error.message || error));
  }
}

document.addEventListener("click", (event) => {
  const button = event.target.closest && event.target.closest("[data-listen-url]");
  if (!button) return;
  event.preventDefault();
  if (active.has(button.dataset.listenUrl)) stop(button.dataset.listenUrl, "idle", "");
  else start(button);
});

// A button taken off the page (the run page drops a scenario's card when it finishes) ends its call.
new MutationObserver(() => {
  for (const [url, call] of active) if (!call.button.isConnected) stop(url, "idle", "");
}).observe(document.body, { childList: true, subtree: true });
