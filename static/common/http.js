// Requests to the site itself: the CSRF token (one place: the page's <meta name="csrf-token">)
// and JSON POSTs that always answer {response, body}, also when the body is not JSON.

export function csrfToken() {
  const meta = document.querySelector('meta[name="csrf-token"]');
  return meta ? meta.content : "";
}

export async function postJson(url, payload) {
  const response = await fetch(url, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
    body: JSON.stringify(payload),
  });
  const body = await response.json().catch(() => ({}));
  return { response, body };
}

export async function fetchHtml(url) {
  const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } });
  if (!response.ok) throw new Error("HTTP " + response.status);
  return new DOMParser().parseFromString(await response.text(), "text/html");
}
