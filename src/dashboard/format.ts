/**
 * Numbers and times as the dashboard's pages say them, as plain text (the template escapes it):
 * counts with their noun in the right number.
 */

/** "1 attempt", "2 attempts", "0 attempts"; `many` when the plural is not the noun and an s. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
