import './mailauth-key-cache.js'; // must load before mailauth's signer
import { dkimSign } from 'mailauth/lib/dkim/sign.js';

export interface DkimKey {
  domain: string;
  selector: string;
  privateKey: string;
}

/** Prepends a DKIM-Signature (rsa-sha256, relaxed/relaxed, d= the sender domain) to the message. */
export async function signMessage(raw: Buffer, key: DkimKey): Promise<Buffer> {
  const result = await dkimSign(raw, {
    signatureData: [{ signingDomain: key.domain, selector: key.selector, privateKey: key.privateKey, algorithm: 'rsa-sha256', canonicalization: 'relaxed/relaxed' }],
  } as unknown as Parameters<typeof dkimSign>[1]); // the d.ts types the multi-signature form loosely
  if (result.errors?.length) throw new Error(`DKIM signing failed: ${result.errors.map((e: { message?: string }) => e.message ?? String(e)).join('; ')}`);
  return Buffer.concat([Buffer.from(result.signatures), raw]);
}
