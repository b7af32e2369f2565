-- Keeps a snapshot of an instance's state at sequence `p_seq` (replacing one there).
CREATE OR REPLACE PROCEDURE %SCHEMA%.wf_put_snapshot(p_id text, p_seq bigint, p_state bytea, INOUT existed boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_key bigint;
BEGIN
    SELECT instance_key INTO v_key FROM %SCHEMA%.wf_instance WHERE id = p_id;
    existed := v_key IS NOT NULL;
    IF existed THEN
        INSERT INTO %SCHEMA%.wf_snapshot (instance_key, seq, state) VALUES (v_key, p_seq, p_state)
        ON CONFLICT (instance_key, seq) DO UPDATE SET state = EXCLUDED.state;
    END IF;
    COMMIT;
END $$;
