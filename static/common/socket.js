// The site's WebSockets: same host, wss:// under https://, JSON messages both ways.

export function socketUrl(path) {
  const scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
  return scheme + window.location.host + path;
}

export function openJsonSocket(path, { onOpen, onMessage, onClose } = {}) {
  const socket = new WebSocket(socketUrl(path));
  if (onOpen) socket.addEventListener("open", () => onOpen(socket));
  if (onMessage) {
    socket.addEventListener("message", (message) => {
      let event;
      try { event = JSON.parse(message.data); } catch (error) { return; }
      onMessage(event);
    });
  }
  if (onClose) socket.addEventListener("close", (event) => onClose(event));
  return socket;
}

export function sendJson(socket, payload) {
  if (socket && socket.readyState === WebSocket.OPEN) {
    socket.send(JSON.stringify(payload));
    return true;
  }
  return false;
}
