// herald's dashboard: the little it does in the browser, with no build step.
// Drag a post card to another day (month) or hour (week) to move it; add thread parts.
(function () {
  "use strict";
  const csrf = () => document.body.dataset.csrf;

  async function move(card, at, mode) {
    const body = new FormData();
    body.append("csrf", csrf());
    body.append("at", at);
    if (mode) body.append("mode", mode);
    const answer = await fetch(`/posts/${card.dataset.post}/reschedule`, {
      method: "POST", body, headers: { "HX-Request": "true", "X-CSRF-Token": csrf() }, redirect: "manual",
    });
    // A move answers with a redirect (303) to the page to show next; a refusal with its message.
    if (answer.type === "opaqueredirect" || answer.ok) { window.location.reload(); return; }
    document.getElementById("problem").innerHTML = await answer.text();
  }

  function dropped(event) {
    event.preventDefault();
    const target = event.currentTarget;
    target.classList.remove("over");
    const card = document.querySelector(`.card[data-post="${event.dataTransfer.getData("text/plain")}"]`);
    if (!card) return;
    const [hour, minute] = card.dataset.time.split(":");
    const at = `${target.dataset.day}T${target.dataset.hour || hour}:${minute}`;
    if (card.dataset.republish === "yes") {
      const dialog = document.getElementById("republish");
      dialog.querySelector(".slot").textContent = at.replace("T", " ");
      dialog.onclose = () => { if (dialog.returnValue === "republish") move(card, at, "republish"); };
      dialog.showModal();
      return;
    }
    move(card, at, "");
  }

  document.addEventListener("DOMContentLoaded", () => {
    document.querySelectorAll(".card[draggable=true]").forEach((card) => {
      card.addEventListener("dragstart", (event) => {
        event.dataTransfer.setData("text/plain", card.dataset.post);
        event.dataTransfer.effectAllowed = "move";
      });
    });
    document.querySelectorAll(".drop").forEach((cell) => {
      cell.addEventListener("dragover", (event) => { event.preventDefault(); cell.classList.add("over"); });
      cell.addEventListener("dragleave", () => cell.classList.remove("over"));
      cell.addEventListener("drop", dropped);
    });
    document.querySelectorAll(".add-part").forEach((button) => {
      button.addEventListener("click", () => {
        const parts = button.closest("fieldset");
        const next = document.createElement("textarea");
        next.name = "part";
        next.rows = 4;
        next.setAttribute("aria-label", `Part ${parts.querySelectorAll("textarea").length + 1}`);
        parts.insertBefore(next, button);
        next.focus();
      });
    });
  });
})();
