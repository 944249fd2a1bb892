// herald's dashboard: the little it does in the browser, with no build step.
// Drag a post card to another day (month) or hour (week) to move it; add thread parts and
// files; show the sentence an htmx request was refused with; keep the composer's files out
// of its live count.
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

  // A new part: the group's last one copied, emptied and numbered (its fields' names and
  // labels follow their data-name and data-label), with one file row to start with.
  function addPart(button) {
    const parts = button.closest("fieldset").querySelectorAll(":scope > .part");
    const last = parts[parts.length - 1];
    const next = last.cloneNode(true);
    const number = parts.length + 1;
    next.dataset.part = String(number);
    next.querySelectorAll(".file + .file").forEach((extra) => extra.remove());
    next.querySelectorAll("textarea, input").forEach((field) => {
      field.value = "";
      if (field.dataset.name) field.name = `${field.dataset.name}.${number}`;
      if (field.dataset.label) field.setAttribute("aria-label", `${field.dataset.label} ${number}`);
    });
    last.after(next);
    next.querySelector("textarea").focus();
  }

  // Another file (and its alt text) for the same part.
  function addFile(button) {
    const files = button.closest(".part").querySelectorAll(".file");
    const last = files[files.length - 1];
    const next = last.cloneNode(true);
    next.querySelectorAll("input").forEach((field) => { field.value = ""; });
    last.after(next);
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest("button.add-part, button.add-file");
    if (!button) return;
    event.preventDefault();
    if (button.classList.contains("add-part")) addPart(button); else addFile(button);
  });

  // htmx swaps no error answer by itself: herald's own (a sentence retargeted to #problem) are shown.
  document.addEventListener("htmx:beforeSwap", (event) => {
    const answer = event.detail.xhr;
    if (answer.status >= 400 && answer.getResponseHeader("HX-Retarget")) event.detail.shouldSwap = true;
  });

  // The live count reads the texts: the files chosen are not sent again with every key pressed.
  document.addEventListener("htmx:configRequest", (event) => {
    const params = event.detail.parameters;
    for (const [name, value] of Array.from(params.entries())) {
      if (value instanceof File) params.delete(name);
    }
  });

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
  });
})();
