-- The host takes over instances of hosts that are gone: they are spread over such hosts.
CREATE OR REPLACE PROCEDURE %SCHEMA%.wf_host_takes_over(p_host bigint, INOUT o_marked boolean)
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE %SCHEMA%.wf_host SET takes_over = true WHERE host_id = p_host;
    o_marked := FOUND;
    COMMIT;
END $$;
