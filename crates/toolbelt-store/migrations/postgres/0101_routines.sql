-- toolbelt store, migration 101 (postgres): routines and their occurrences (issue 10, ADR 0021). Append-only.
-- Times are Unix milliseconds. `schedule` is the JSON of toolbelt_tools::Schedule; `anchor_at` is
-- where interval occurrences count from; `next_due` is NULL while paused. One row per occurrence
-- in routine_runs: the UNIQUE key is what makes each occurrence run once, whatever the number of
-- schedulers. status: running, completed, failed, interrupted (its scheduler stopped
-- heart-beating), missed (fell due while no scheduler ran and the policy did not run it).

CREATE TABLE routines (
    name             TEXT PRIMARY KEY,
    agent            TEXT NOT NULL,
    prompt           TEXT NOT NULL,
    schedule         TEXT NOT NULL,
    missed           TEXT NOT NULL,
    paused           BIGINT NOT NULL DEFAULT 0,
    anchor_at        BIGINT NOT NULL,
    next_due         BIGINT,
    run_requested_at BIGINT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL
);

CREATE INDEX routines_due ON routines (next_due);

CREATE TABLE routine_runs (
    id           BIGSERIAL PRIMARY KEY,
    routine      TEXT NOT NULL,
    agent        TEXT NOT NULL,
    due_at       BIGINT NOT NULL,
    manual       BIGINT NOT NULL DEFAULT 0,
    status       TEXT NOT NULL,
    claimed_by   TEXT NOT NULL,
    claimed_at   BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL,
    finished_at  BIGINT,
    run_id       TEXT,
    detail       TEXT,
    UNIQUE (routine, due_at, manual)
);

CREATE INDEX routine_runs_status ON routine_runs (status, heartbeat_at);
CREATE INDEX routine_runs_routine ON routine_runs (routine, due_at);
