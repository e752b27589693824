-- toolbelt store, migration 102 (Postgres): a version row for agent memory (ADR 0028). Append-only.
-- Every memory write bumps `writes` (and a delete also `deletes`) first thing in its transaction;
-- the row lock orders memory writes, so ids become visible in increasing order and a process
-- that keeps an in-memory index needs only the ids above the last one it has.
CREATE TABLE memory_version (
    id      BIGINT PRIMARY KEY CHECK (id = 1),
    writes  BIGINT NOT NULL,
    deletes BIGINT NOT NULL
);
INSERT INTO memory_version (id, writes, deletes) VALUES (1, 0, 0);
