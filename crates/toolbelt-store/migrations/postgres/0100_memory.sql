-- toolbelt store, migration 100 (Postgres): agent memory (issue 10, ADR 0020). Append-only.
-- `terms` holds the entry's search terms (toolbelt_tools::memory_terms: words and CJK bigrams,
-- space-separated); `terms_tsv` indexes them with the `simple` configuration (no stemming,
-- no stop words: the terms are already normalised). `user_id` is '' for entries without a user.
-- `tags` is ',a,b,' so one tag is found with strpos(tags, ',a,').

CREATE TABLE memories (
    id         BIGSERIAL PRIMARY KEY,
    agent      TEXT NOT NULL,
    user_id    TEXT NOT NULL DEFAULT '',
    text       TEXT NOT NULL,
    terms      TEXT NOT NULL,
    tags       TEXT NOT NULL,
    importance BIGINT NOT NULL,
    shared     BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    terms_tsv  tsvector GENERATED ALWAYS AS (to_tsvector('simple', terms)) STORED
);

CREATE INDEX memories_agent ON memories (agent, created_at);
CREATE INDEX memories_shared ON memories (shared, created_at);
CREATE INDEX memories_tsv ON memories USING GIN (terms_tsv);
