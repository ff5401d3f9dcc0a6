/** The top-level places in the app, in sidebar order. */
export const VIEWS = [
  { id: 'tasks', label: 'Tasks' },
  { id: 'servers', label: 'Servers' },
  { id: 'tools', label: 'Tools' },
  { id: 'settings', label: 'Settings' },
] as const;

export type ViewId = (typeof VIEWS)[number]['id'];
