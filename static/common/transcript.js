// One way to draw a conversation turn wherever turns arrive live (run page, call page):
// <li class="turn agent|user"><span class="role">who</span> text</li>, text never parsed as HTML.

export function turnItem({ role, speaker, text }) {
  const item = document.createElement("li");
  item.className = "turn " + (role === "agent" ? "agent" : "user");
  const who = document.createElement("span");
  who.className = "role";
  who.textContent = speaker || role;
  item.append(who, document.createTextNode(" " + (text || "")));
  return item;
}

export function appendTurn(list, turn, { limit = 200 } = {}) {
  const item = turnItem(turn);
  list.append(item);
  while (list.children.length > limit) list.firstElementChild.remove();
  list.scrollTop = list.scrollHeight;
  return item;
}
