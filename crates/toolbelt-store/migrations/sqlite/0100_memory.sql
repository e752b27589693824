-- toolbelt store, migration 100 (SQLite): agent memory (issue 10, ADR 0020). Append-only.
-- `terms` holds the entry's search terms (toolbelt_tools::memory_terms: words and CJK bigrams,
-- space-separated); FTS5 indexes them. `user_id` is '' for entries without a user.
-- `tags` is ',a,b,' so one tag is found with instr(tags, ',a,').

CREATE TABLE memories (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    agent      TEXT NOT NULL,
    user_id    TEXT NOT NULL DEFAULT '',
    text       TEXT NOT NULL,
    terms      TEXT NOT NULL,
    tags       TEXT NOT NULL,
    importance INTEGER NOT NULL,
    shared     INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
);

CREATE INDEX memories_agent ON memories (agent, created_at);
CREATE INDEX memories_shared ON memories (shared, created_at);

CREATE VIRTUAL TABLE memories_fts USING fts5(
    terms,
    content = 'memories',
    content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 0'
);

CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, terms) VALUES (new.id, new.terms);
END;

CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, terms) VALUES ('delete', old.id, old.terms);
END;
