-- Format 16: the fence reads an instance's row instead of writing it (wf_commit). The row keeps
-- no copy of the log's last sequence or of the newest snapshot (their tables' keys hold them);
-- each entry keeps when its commit was made, and the row where the log ended at its last status
-- change, for the instance's time of last change.
ALTER TABLE %SCHEMA%.wf_instance DROP COLUMN last_seq;
ALTER TABLE %SCHEMA%.wf_instance DROP COLUMN last_snapshot;
ALTER TABLE %SCHEMA%.wf_instance ADD COLUMN updated_seq bigint NOT NULL DEFAULT 0;
ALTER TABLE %SCHEMA%.wf_log ADD COLUMN logged_ns bigint NOT NULL DEFAULT 0;
