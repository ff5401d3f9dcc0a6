/**
 * The app's keyboard shortcuts, decided here and carried out by the shell (`App.svelte`): which key
 * means what, and when a key is the user's typing rather than a shortcut. A shortcut never fires
 * while focus is in a field, nor while a modal dialog is open (the dialog owns the keys then, and
 * closes itself on Escape); Enter and the arrows are left to whatever control has focus.
 */

export type Action = 'search' | 'run' | 'next' | 'prev' | 'open' | 'close' | 'help';

/** The keys of each action, as the shortcut list shows them. */
export const SHORTCUTS: { action: Action; keys: string[]; what: string }[] = [
  { action: 'search', keys: ['Ctrl K', '/'], what: 'Search tasks (or tools, in Tools)' },
  { action: 'run', keys: ['N'], what: 'Run a tool: pick one by name' },
  { action: 'next', keys: ['J', '↓'], what: 'Next task' },
  { action: 'prev', keys: ['K', '↑'], what: 'Previous task' },
  { action: 'open', keys: ['Enter'], what: 'Open the selected task' },
  { action: 'close', keys: ['Esc'], what: 'Close a dialog or the task details' },
  { action: 'help', keys: ['?'], what: 'Show these shortcuts' },
];

/** What the key event needs of its event: the key and modifiers. */
export type Keys = Pick<KeyboardEvent, 'key' | 'ctrlKey' | 'metaKey' | 'altKey' | 'shiftKey'>;

export type Where = {
  /** Focus is in a field that takes text or choices (see `takesTyping`). */
  typing: boolean;
  /** A modal dialog is open. */
  dialog: boolean;
  /** Focus is on a control with keys of its own (a button, a link, a listbox, a radio group). */
  control: boolean;
  /** Focus is on the task list, which moves and opens by arrows and Enter itself. */
  onList: boolean;
};

const TEXT_INPUTS = new Set(['text', 'search', 'email', 'url', 'tel', 'password', 'number', 'date', 'datetime-local', 'month', 'time', 'week', '']);

/** Whether keys typed at `el` are its own: a text field, a text area, a select, editable content. */
export function takesTyping(el: Element | null): boolean {
  if (!el) return false;
  const tag = el.tagName.toLowerCase();
  if (tag === 'textarea' || tag === 'select') return true;
  if (tag === 'input') return TEXT_INPUTS.has(((el as HTMLInputElement).type ?? '').toLowerCase());
  return (el as HTMLElement).isContentEditable === true || el.getAttribute('contenteditable') === 'true';
}

/** Whether `el` has keys of its own (Enter, Space, arrows) that a shortcut must not take. */
export function hasOwnKeys(el: Element | null): boolean {
  if (!el) return false;
  const tag = el.tagName.toLowerCase();
  if (['button', 'a', 'summary', 'input', 'select', 'textarea', 'option'].includes(tag)) return true;
  const role = el.getAttribute('role');
  return role !== null && ['button', 'link', 'listbox', 'option', 'radio', 'radiogroup', 'checkbox', 'tab', 'menuitem', 'slider'].includes(role);
}

/** The shortcut a key press means where focus is, if any. */
export function shortcutFor(e: Keys, where: Where): Action | null {
  if (where.typing || where.dialog) return null;
  const plain = !e.ctrlKey && !e.metaKey && !e.altKey;
  if ((e.ctrlKey || e.metaKey) && !e.altKey && !e.shiftKey && e.key.toLowerCase() === 'k') return 'search';
  if (!plain) return null;
  switch (e.key) {
    case '/':
      return 'search';
    case '?':
      return 'help';
    case 'n':
    case 'N':
      return 'run';
    case 'j':
    case 'J':
      return 'next';
    case 'k':
    case 'K':
      return 'prev';
    case 'Escape':
      return 'close';
    case 'ArrowDown':
      return where.control || where.onList || e.shiftKey ? null : 'next';
    case 'ArrowUp':
      return where.control || where.onList || e.shiftKey ? null : 'prev';
    case 'Enter':
      return where.control || where.onList || e.shiftKey ? null : 'open';
    default:
      return null;
  }
}

/** Where each view's search box is (the Tasks view's, the Tools view's). */
export const SEARCH_BOXES: Record<string, string> = {
  tasks: '[data-testid="task-search"]',
  tools: '[data-testid="tools-search"]',
};
/** The task list, which answers arrows and Enter. */
export const TASK_LIST = '[data-testid="task-list"]';
/** The detail pane's close button. */
export const DETAIL_CLOSE = '[data-testid="task-detail"] [aria-label="Close task details"]';
