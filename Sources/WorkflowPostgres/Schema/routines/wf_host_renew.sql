-- Registers the host (with its process: id and start time) or renews its lease for
-- `p_lease_ms` from now, on the server's clock; drops the rows of hosts gone for a day.
CREATE OR REPLACE PROCEDURE %SCHEMA%.wf_host_renew(
    p_host bigint, p_machine text, p_label text, p_started bigint, p_lease_ms bigint, p_pid integer, p_process_start bigint,
    INOUT o_renewed boolean)
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO %SCHEMA%.wf_host (host_id, machine, label, started_ns, lease_until, process_id, process_start)
    VALUES (p_host, p_machine, p_label, p_started, clock_timestamp() + p_lease_ms * interval '1 millisecond', p_pid, p_process_start)
    ON CONFLICT (host_id) DO UPDATE SET lease_until = EXCLUDED.lease_until;
    DELETE FROM %SCHEMA%.wf_host WHERE lease_until < clock_timestamp() - interval '1 day';
    o_renewed := true;
    COMMIT;
END $$;
