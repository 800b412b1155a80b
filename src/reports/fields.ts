/** Parses an RFC 822-style field block (DSN and ARF use them): unfolds, splits on the first colon; names lower-cased. */
export function parseFieldBlocks(text: string): Array<Array<[string, string]>> {
  const blocks = text.replace(/\r\n/g, '\n').split(/\n[ \t]*\n/);
  return blocks
    .map((block) => {
      const unfolded = block.replace(/\n[ \t]+/g, ' ');
      const fields: Array<[string, string]> = [];
      for (const line of unfolded.split('\n')) {
        const i = line.indexOf(':');
        if (i <= 0) continue;
        const name = line.slice(0, i).trim().toLowerCase();
        if (!/^[\x21-\x39\x3b-\x7e]+$/.test(name)) continue;
        fields.push([name, line.slice(i + 1).trim()]);
      }
      return fields;
    })
    .filter((b) => b.length > 0);
}

export function field(block: Array<[string, string]>, name: string): string | undefined {
  return block.find(([n]) => n === name)?.[1];
}

export function fields(block: Array<[string, string]>, name: string): string[] {
  return block.filter(([n]) => n === name).map(([, v]) => v);
}

/** "rfc822; bob@example.net" → "bob@example.net" (address-type prefix and angle brackets removed). */
export function typedAddress(v: string | undefined): string | undefined {
  if (!v) return undefined;
  const s = v.includes(';') ? v.slice(v.indexOf(';') + 1) : v;
  const a = s.trim().replace(/^<|>$/g, '').trim();
  return a || undefined;
}

/** The local part's return-path token when the address is bounces+<token>@…. */
export function verpToken(address: string | undefined): string | undefined {
  const m = /^bounces\+([0-9a-z]+)@/i.exec(address?.trim().replace(/^<|>$/g, '') ?? '');
  return m ? m[1]!.toLowerCase() : undefined;
}
