-- Deletes an instance's row, log and snapshots; `existed` is false when there was none.
CREATE OR REPLACE PROCEDURE %SCHEMA%.wf_delete(p_id text, INOUT existed boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_key bigint;
BEGIN
    DELETE FROM %SCHEMA%.wf_instance WHERE id = p_id RETURNING instance_key INTO v_key;
    existed := v_key IS NOT NULL;
    IF existed THEN
        DELETE FROM %SCHEMA%.wf_log WHERE instance_key = v_key;
        DELETE FROM %SCHEMA%.wf_snapshot WHERE instance_key = v_key;
    END IF;
    COMMIT;
END $$;
