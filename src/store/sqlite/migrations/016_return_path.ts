/**
 * 016: the return path on the sending domain (docs/delivery.md, "Sending identities"): the host
 * (`bounces.<domain>`) whose record verification last found holding, which the envelope sender of
 * the domain's mail then uses; null while it does not hold. As on PostgreSQL (store/pg/schema.ts
 * version 9).
 */
export const up = `
ALTER TABLE domains ADD COLUMN return_path_host TEXT;
`;
