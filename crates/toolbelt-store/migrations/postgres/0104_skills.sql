-- toolbelt store, migration 104 (Postgres): skills in the Agent Skills format (ADR 0047). Append-only.
-- `metadata`: JSON object of the other front-matter keys (text values); `files`: JSON array of the
-- paths beside SKILL.md when it was imported, relative to its folder (informational: the files
-- themselves are not stored); `content_hash`: SHA-256 of everything else but the timestamps.
CREATE TABLE skills (
    name         TEXT PRIMARY KEY,
    description  TEXT NOT NULL,
    instructions TEXT NOT NULL,
    metadata     TEXT NOT NULL,
    files        TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
