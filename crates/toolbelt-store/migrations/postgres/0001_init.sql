-- toolbelt store, schema 1 (Postgres). Append-only: never edit once landed; add 0002_*.sql instead.
-- Times are Unix milliseconds (BIGINT), JSON is TEXT, flags are 0/1 BIGINT: the same logical schema as sqlite/0001_init.sql.

CREATE TABLE tools (
    name            TEXT PRIMARY KEY,
    source          TEXT NOT NULL,
    current_version BIGINT NOT NULL,
    latest_version  BIGINT NOT NULL,
    current_hash    TEXT NOT NULL,
    enabled         BIGINT NOT NULL DEFAULT 1,
    missing         BIGINT NOT NULL DEFAULT 0,
    availability    TEXT NOT NULL DEFAULT '{}',
    revision        BIGINT NOT NULL DEFAULT 1,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    changed_by      TEXT NOT NULL
);

CREATE TABLE tool_versions (
    tool_name   TEXT NOT NULL REFERENCES tools(name) ON DELETE CASCADE,
    version     BIGINT NOT NULL,
    spec        TEXT NOT NULL,
    definition  TEXT,
    description TEXT NOT NULL,
    tags        TEXT NOT NULL,
    kind        TEXT NOT NULL,
    policy      TEXT NOT NULL,
    spec_hash   TEXT NOT NULL,
    changed_by  TEXT NOT NULL,
    changed_at  BIGINT NOT NULL,
    note        TEXT,
    PRIMARY KEY (tool_name, version)
);

CREATE TABLE agents (
    name          TEXT PRIMARY KEY,
    kind          TEXT NOT NULL,
    labels        TEXT NOT NULL,
    capabilities  TEXT NOT NULL,
    description   TEXT NOT NULL,
    system_prompt TEXT,
    provider      TEXT,
    model         TEXT,
    options       TEXT NOT NULL,
    router        TEXT NOT NULL,
    selection     TEXT NOT NULL,
    pins          TEXT NOT NULL,
    revision      BIGINT NOT NULL DEFAULT 1,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    changed_by    TEXT NOT NULL
);

CREATE TABLE agent_tools (
    agent_name     TEXT NOT NULL REFERENCES agents(name) ON DELETE CASCADE,
    tool_name      TEXT NOT NULL REFERENCES tools(name),
    pinned_version BIGINT,
    bound_at       BIGINT NOT NULL,
    PRIMARY KEY (agent_name, tool_name)
);
CREATE INDEX agent_tools_tool ON agent_tools (tool_name);

CREATE TABLE changes (
    seq    BIGSERIAL PRIMARY KEY,
    entity TEXT NOT NULL,
    name   TEXT NOT NULL,
    op     TEXT NOT NULL,
    at     BIGINT NOT NULL
);

CREATE TABLE run_log (
    id           BIGSERIAL PRIMARY KEY,
    at           BIGINT NOT NULL,
    kind         TEXT NOT NULL,
    run_id       TEXT,
    actor        TEXT,
    agent        TEXT,
    tool         TEXT,
    tool_version BIGINT,
    arguments    TEXT,
    outcome      TEXT NOT NULL,
    error        TEXT,
    duration_ms  BIGINT NOT NULL,
    tokens_in    BIGINT,
    tokens_out   BIGINT
);
CREATE INDEX run_log_at ON run_log (at);
CREATE INDEX run_log_run ON run_log (run_id);

CREATE TABLE runs (
    id          TEXT PRIMARY KEY,
    agent       TEXT NOT NULL,
    status      TEXT NOT NULL,
    input       TEXT NOT NULL,
    transcript  TEXT NOT NULL,
    output      TEXT,
    error       TEXT,
    actor       TEXT,
    revision    BIGINT NOT NULL DEFAULT 1,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    finished_at BIGINT
);
CREATE INDEX runs_agent ON runs (agent, created_at);
CREATE INDEX runs_status ON runs (status);

CREATE TABLE api_tokens (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    scopes       TEXT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    created_at   BIGINT NOT NULL,
    revoked_at   BIGINT,
    last_used_at BIGINT
);

CREATE TABLE mcp_servers (
    name       TEXT PRIMARY KEY,
    config     TEXT NOT NULL,
    enabled    BIGINT NOT NULL DEFAULT 1,
    revision   BIGINT NOT NULL DEFAULT 1,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

-- Live sync: every new change row wakes the listeners of every instance (payload: seq).
CREATE FUNCTION toolbelt_notify_change() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('toolbelt_changes', NEW.seq::text);
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER changes_notify AFTER INSERT ON changes
    FOR EACH ROW EXECUTE FUNCTION toolbelt_notify_change();
