/** Where the user is: the view, the selected task, and a run form to open. Shared by the views. */
import type { ViewId } from '../shell/views';
import type { JsonValue } from './types';

/** A tool to run; `arguments` fill the form ("Run again with changes"). */
export type RunTarget = { server: string; tool: string; arguments?: JsonValue };

class Nav {
  view: ViewId = $state('tasks');
  selectedTask: string | null = $state(null);
  /** Set to open the run form for a tool (from the Tasks empty state, or a Tools row). */
  run: RunTarget | null = $state(null);

  showTask(id: string): void {
    this.selectedTask = id;
    this.view = 'tasks';
  }

  openRun(target: RunTarget): void {
    this.run = target;
    this.view = 'tools';
  }
}

export const nav = new Nav();
