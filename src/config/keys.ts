// What a configuration key is (schema.ts lists them all): its kind of value, its default, its
// one-line description, and whether `config print` masks it.

export type Kind =
  | { type: 'string' }
  | { type: 'int'; min: number; max: number }
  | { type: 'bool' }
  | { type: 'listen'; optional?: boolean }
  | { type: 'strings' }
  | { type: 'duration' }
  | { type: 'durations' }
  | { type: 'bytes' }
  /** A percentage, 0 to 100: "4%" (or a bare number of percent). */
  | { type: 'percent' }
  | { type: 'enum'; values: readonly string[] }
  /** A database URL: empty, or postgres:// / postgresql://; shown without its password. */
  | { type: 'store_url' }
  /** An array of tables (`[[section.key]]`), read and checked by `read`, which throws naming what is wrong. */
  | { type: 'tables'; read: (v: unknown) => unknown[] }
  /** An array of integers, checked by `check`, which names what is wrong (null: nothing). */
  | { type: 'ints'; check: (v: readonly unknown[]) => string | null };

export interface KeySpec {
  kind: Kind;
  default: unknown;
  description: string;
  /** Masked by `config print`. */
  secret?: boolean;
}

export type Schema = Record<string, Record<string, KeySpec>>;

export const k = <const K extends Kind>(
  kind: K,
  def: unknown,
  description: string,
  secret = false,
): KeySpec & { kind: K } => ({
  kind,
  default: def,
  description,
  secret,
});

/** A key's value as the loaded configuration holds it; durations are milliseconds, sizes bytes. */
export type ValueOf<K> = K extends { type: 'string' | 'listen' | 'enum' | 'store_url' }
  ? string
  : K extends { type: 'int' | 'duration' | 'bytes' | 'percent' }
    ? number
    : K extends { type: 'bool' }
      ? boolean
      : K extends { type: 'strings' }
        ? string[]
        : K extends { type: 'durations' | 'ints' }
          ? number[]
          : K extends { type: 'tables'; read: (v: unknown) => infer T }
            ? T
            : never;
