-- toolbelt store, migration 102 (SQLite): a version row for agent memory (ADR 0028). Append-only.
-- Every memory write bumps `writes` (and a delete also `deletes`) in its own transaction, so a
-- process that keeps an in-memory index of an agent's entries can tell with one lookup whether
-- it is current: new rows only (read the ids above the last one it has) or deletions (rebuild).
CREATE TABLE memory_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    writes  INTEGER NOT NULL,
    deletes INTEGER NOT NULL
);
INSERT INTO memory_version (id, writes, deletes) VALUES (1, 0, 0);
