-- toolbelt store, migration 106 (SQLite): skills get the bookkeeping of every other record. Append-only.
-- `revision`: bumped by every change of content; `changed_by`: who made the last change. Skills
-- stored before this migration start at revision 1, changed by `unknown`.
ALTER TABLE skills ADD COLUMN revision INTEGER NOT NULL DEFAULT 1;
ALTER TABLE skills ADD COLUMN changed_by TEXT NOT NULL DEFAULT 'unknown';
