-- Deletes an instance's row, log and snapshots; `existed` is false when there was none. The
-- delete takes the instance from its host as a claim does (the fence: see wf_commit): it waits
-- for that host's commits in flight, and keeps its next ones out until it commits.
CREATE OR REPLACE PROCEDURE %SCHEMA%.wf_delete(p_id text, INOUT existed boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_key bigint;
    v_host bigint;
BEGIN
    existed := false;
    LOOP
        SELECT owner_host INTO v_host FROM %SCHEMA%.wf_instance WHERE id = p_id;
        EXIT WHEN NOT FOUND;
        IF v_host <> 0 THEN
            PERFORM pg_advisory_xact_lock(v_host);
        END IF;
        -- Another host may have claimed it in between: read again under that host's lock.
        DELETE FROM %SCHEMA%.wf_instance WHERE id = p_id AND owner_host = v_host RETURNING instance_key INTO v_key;
        IF v_key IS NOT NULL THEN
            existed := true;
            DELETE FROM %SCHEMA%.wf_log WHERE instance_key = v_key;
            DELETE FROM %SCHEMA%.wf_snapshot WHERE instance_key = v_key;
            EXIT;
        END IF;
    END LOOP;
    COMMIT;
END $$;
