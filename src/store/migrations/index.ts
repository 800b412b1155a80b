import * as m001 from './001_initial.js';

/** Every migration, in order, listed statically so the build carries them. Append only. */
export const migrations: ReadonlyArray<{ version: number; name: string; sql: string }> = [
  { version: 1, name: 'initial', sql: m001.up },
];
