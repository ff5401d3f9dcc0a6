// Taskdeck's start-up mark, taken the same way: the second animation frame after the first render
// runs once that render has been painted.
requestAnimationFrame(() => requestAnimationFrame(() => window.__TAURI_INTERNALS__.invoke('ready')));
