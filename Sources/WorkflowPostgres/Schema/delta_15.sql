-- Format 15: a host's process, by which a host of the same machine proves it dead.
ALTER TABLE %SCHEMA%.wf_host ADD COLUMN process_id integer NOT NULL DEFAULT 0;
ALTER TABLE %SCHEMA%.wf_host ADD COLUMN process_start bigint NOT NULL DEFAULT 0;
