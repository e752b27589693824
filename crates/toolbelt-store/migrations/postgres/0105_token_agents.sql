-- toolbelt store, migration 105 (Postgres): a token may be limited to a list of agents. Append-only.
-- `agents`: JSON array of agent names, or NULL for a token that reaches every agent.
ALTER TABLE api_tokens ADD COLUMN agents TEXT;
