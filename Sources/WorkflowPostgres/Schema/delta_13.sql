-- Format 13: code versions (rules V1, V4) and why an instance failed. A library that reads
-- up to format 12 would also take entries and snapshots with version notes for damage: it
-- refuses the store instead.
ALTER TABLE %SCHEMA%.wf_instance ADD COLUMN code_version text;
ALTER TABLE %SCHEMA%.wf_instance ADD COLUMN failure text;
ALTER TABLE %SCHEMA%.wf_host ADD COLUMN code_versions text[];
ALTER TABLE %SCHEMA%.wf_host ADD COLUMN runs_unversioned boolean NOT NULL DEFAULT true;
