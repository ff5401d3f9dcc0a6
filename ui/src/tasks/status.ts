import type { ServerPhase, TaskStatus } from '../lib/types';

export const STATUS_LABEL: Record<TaskStatus, string> = {
  working: 'Working',
  input_required: 'Needs input',
  completed: 'Completed',
  failed: 'Failed',
  cancelled: 'Cancelled',
};

export const PHASE_LABEL: Record<ServerPhase, string> = {
  idle: 'Idle',
  starting: 'Starting',
  ready: 'Ready',
  restarting: 'Restarting',
  failed: 'Failed',
  invalid: 'Config error',
  disabled: 'Disabled',
};
