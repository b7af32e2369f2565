-- A host that stops leaves the store: its row is deleted.
CREATE OR REPLACE PROCEDURE %SCHEMA%.wf_host_leave(p_host bigint, INOUT o_left boolean)
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM %SCHEMA%.wf_host WHERE host_id = p_host;
    o_left := FOUND;
    COMMIT;
END $$;
