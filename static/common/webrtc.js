// WebRTC signalling shared by Listen and the call page: the browser offers and gathers its ICE
// candidates (bounded wait: a candidate that never arrives must not hang the page); Listen posts
// the offer to the site, which answers with its SDP (the call page sends it over its WebSocket).
import { postJson } from "./http.js";

export const ICE_GATHER_MS = 3000;

export function iceGathered(pc, timeoutMs = ICE_GATHER_MS) {
  if (pc.iceGatheringState === "complete") return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    pc.addEventListener("icegatheringstatechange", () => {
      if (pc.iceGatheringState === "complete") { clearTimeout(timer); resolve(); }
    });
  });
}

// Create the local offer and return it once candidates are gathered: {sdp, type}.
export async function localOffer(pc, timeoutMs = ICE_GATHER_MS) {
  await pc.setLocalDescription(await pc.createOffer());
  await iceGathered(pc, timeoutMs);
  return { sdp: pc.localDescription.sdp, type: pc.localDescription.type };
}

// POST the offer; on success apply the answer. Returns {response, body} either way.
export async function exchangeOffer(pc, url, offer) {
  const { response, body } = await postJson(url, offer);
  if (response.ok) await pc.setRemoteDescription(body);
  return { response, body };
}
