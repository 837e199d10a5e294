// The copy button of a new API token's secret (account_token_created.html). Without
// JavaScript the button stays hidden and the secret can be selected by hand.

const status = document.getElementById("copy-status");

for (const button of document.querySelectorAll("button[data-copy]")) {
  const field = document.getElementById(button.dataset.copy);
  if (!field) continue;
  button.hidden = false;
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(field.value);
      say("Copied to the clipboard.");
    } catch {
      // No clipboard access (an insecure origin, or refused): select it for Ctrl+C.
      field.focus();
      field.select();
      say("Selected: press Ctrl+C (or ⌘C) to copy.");
    }
  });
}

function say(text) {
  if (status) status.textContent = text;
}
