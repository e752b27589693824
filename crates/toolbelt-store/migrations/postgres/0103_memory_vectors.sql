-- toolbelt store, migration 103 (Postgres): memory vectors for hybrid recall (ADR 0041). Append-only.
-- `embedding`: the entry's unit vector quantised to int8 — 4 bytes of little-endian f32 scale,
-- then one signed byte per dimension; `embedding_model`: the model that made it (vectors of
-- another model are ignored). Both NULL for entries stored without an embedder.
ALTER TABLE memories ADD COLUMN embedding BYTEA;
ALTER TABLE memories ADD COLUMN embedding_model TEXT;
