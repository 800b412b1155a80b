import type { WakeupStore } from '../store.js';

// One process on the store: its parts wake each other in memory.
export function sqliteWakeups(): WakeupStore {
  return {
    notify: () => undefined,
    listen: async () => ({ close: async () => undefined }),
  };
}
