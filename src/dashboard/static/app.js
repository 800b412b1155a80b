// The dashboard's only script (served from its own origin; the CSP allows nothing else):
// copy buttons. Every page works without it.
document.addEventListener('click', (e) => {
  const button = e.target instanceof Element ? e.target.closest('button[data-copy]') : null;
  if (!button) return;
  const source = document.getElementById(button.getAttribute('data-copy') || '');
  if (!source || !navigator.clipboard) return;
  navigator.clipboard.writeText(source.textContent || '').then(() => {
    const label = button.textContent;
    button.textContent = 'Copied';
    setTimeout(() => (button.textContent = label), 1500);
  });
});
