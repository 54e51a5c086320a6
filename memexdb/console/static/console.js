// memexdb admin console: ask before destructive actions (forms with data-confirm).
document.addEventListener("submit", (event) => {
  const message = event.target.dataset && event.target.dataset.confirm;
  if (message && !window.confirm(message)) {
    event.preventDefault();
  }
});

// Copy buttons (data-copy="<id of the element whose text to copy>"): the one-time token.
// Without the clipboard API (a page not served from loopback or HTTPS) the text is
// selected and copied the old way, or left selected for Ctrl+C.
document.addEventListener("click", async (event) => {
  const button = event.target.closest && event.target.closest("button[data-copy]");
  const source = button && document.getElementById(button.dataset.copy);
  if (!source) {
    return;
  }
  const text = source.textContent.trim();
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    const copied = document.execCommand && document.execCommand("copy");
    button.textContent = copied ? "Copied" : "Selected: press Ctrl+C to copy";
  }
});
