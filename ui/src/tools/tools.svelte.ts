/**
 * Tool lists per server, asked for when a server is first shown and again when the engine says its
 * tools changed. Starting a server can take a while, so each list carries its own loading state.
 */
import { errorText, inApp, listTools } from '../lib/ipc';
import type { ToolInfo } from '../lib/types';
import { engine } from '../lib/engine.svelte';

export type ToolList = { state: 'loading' } | { state: 'ready'; tools: ToolInfo[] } | { state: 'error'; message: string };

class ToolCache {
  lists: Record<string, ToolList> = $state({});
  #asked: Record<string, string> = {};

  /**
   * Loads `server`'s tools unless this version is already loaded or loading. A new process (pid)
   * counts as a new version: a server that failed and came back may offer different tools.
   */
  ensure(server: string): void {
    const pid = engine.servers.find((s) => s.name === server)?.pid ?? null;
    const version = `${engine.toolsVersion[server] ?? 0}/${pid ?? '-'}`;
    if (this.#asked[server] === version || !inApp) return;
    this.#asked[server] = version;
    if (this.lists[server]?.state !== 'ready') this.lists[server] = { state: 'loading' };
    listTools(server).then(
      (tools) => (this.lists[server] = { state: 'ready', tools }),
      (e) => {
        delete this.#asked[server]; // let a later look try again
        this.lists[server] = { state: 'error', message: errorText(e) };
      },
    );
  }

  retry(server: string): void {
    delete this.#asked[server];
    this.ensure(server);
  }

  find(server: string, tool: string): ToolInfo | undefined {
    const l = this.lists[server];
    return l?.state === 'ready' ? l.tools.find((t) => t.name === tool) : undefined;
  }
}

export const toolCache = new ToolCache();

/**
 * What the Tools view remembers for the session (its module outlives the view): the search, the
 * servers folded, and the tools whose description is open.
 */
class ToolsUi {
  query = $state('');
  folded: Record<string, boolean> = $state({});
  opened: Record<string, boolean> = $state({});
}

export const toolsUi = new ToolsUi();
