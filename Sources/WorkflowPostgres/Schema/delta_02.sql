-- Format 2: hosts with leases; an instance's claim names its host.
CREATE TABLE %SCHEMA%.wf_host (
    host_id     bigint PRIMARY KEY,
    machine     text NOT NULL,
    label       text NOT NULL,
    started_ns  bigint NOT NULL,
    lease_until timestamptz NOT NULL,
    takes_over  boolean NOT NULL DEFAULT false
);
ALTER TABLE %SCHEMA%.wf_instance ADD COLUMN owner_host bigint NOT NULL DEFAULT 0;
CREATE INDEX wf_instance_owner ON %SCHEMA%.wf_instance (owner_host);
