"""A test-side stand-in for what pages must not carry: hooks on ``window``. Added to a browser
context with ``context.add_init_script(WEBRTC_PROBE)`` before a page loads, it records the page's
RTCPeerConnections (for their inbound audio counters) and, with ``fake_microphone=True``, answers
getUserMedia with a WebAudio stream the test can speak clips into. Production scripts know nothing
about it."""
from __future__ import annotations

_SCRIPT = """
(() => {
  const peers = [];
  const Native = window.RTCPeerConnection;
  if (Native) {
    const Recorded = function (...args) { const pc = new Native(...args); peers.push(pc); return pc; };
    Recorded.prototype = Native.prototype;
    Object.setPrototypeOf(Recorded, Native);
    window.RTCPeerConnection = Recorded;
  }
  let microphone = null;
  if (FAKE_MICROPHONE && navigator.mediaDevices) {
    navigator.mediaDevices.getUserMedia = async () => {
      const context = new AudioContext({ sampleRate: 48000 });
      const destination = context.createMediaStreamDestination();
      microphone = { context, destination };
      return destination.stream;
    };
  }
  async function inbound(index) {
    const pc = index === undefined ? peers[peers.length - 1] : peers[index];
    if (!pc) return null;
    let found = null;
    (await pc.getStats()).forEach((report) => {
      if (report.type === "inbound-rtp" && report.kind === "audio") found = report;
    });
    return found ? JSON.parse(JSON.stringify(found)) : null;
  }
  let spoken = Promise.resolve();
  function speak(base64Pcm, sampleRate) {
    if (!microphone) return Promise.reject(new Error("no fake microphone in use"));
    const bytes = Uint8Array.from(atob(base64Pcm), (c) => c.charCodeAt(0));
    const samples = new Int16Array(bytes.buffer, 0, bytes.length >> 1);
    const buffer = microphone.context.createBuffer(1, samples.length, sampleRate);
    const channel = buffer.getChannelData(0);
    for (let i = 0; i < samples.length; i++) channel[i] = samples[i] / 32768;
    const play = () => new Promise((resolve) => {
      const source = microphone.context.createBufferSource();
      source.buffer = buffer;
      source.connect(microphone.destination);
      source.onended = resolve;
      source.start();
    });
    spoken = spoken.then(play); // like a person: a clip asked for mid-clip starts when that one ends
    return spoken;
  }
  Object.defineProperty(window, "__webrtcProbe", { value: { peers, inbound, speak } });
})();
"""


def webrtc_probe(*, fake_microphone: bool = False) -> str:
    """The init script; ``window.__webrtcProbe`` then has ``peers``, ``inbound()`` and ``speak()``
    (clips play one after another, never over each other)."""
    return _SCRIPT.replace("FAKE_MICROPHONE", "true" if fake_microphone else "false")
