/**
 * 009: the return path on the sending domain, as SQLite's 016 (store/sqlite/migrations/): the
 * host whose record verification last found holding, or null.
 */
export const up = `
ALTER TABLE domains ADD COLUMN return_path_host text;
`;
