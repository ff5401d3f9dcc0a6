import { mount } from 'svelte';
import App from './App.svelte';
import './app.css';
import { engine } from './lib/engine.svelte';

// The tasks load while the UI mounts rather than after it: with a big store, loading them is most
// of start-up, and mounting is time the IPC round trips can use.
void engine.start();

const target = document.getElementById('app');
if (!target) throw new Error('index.html has no #app element');

export default mount(App, { target });
