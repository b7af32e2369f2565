-- A delivery mark committed alone (no action with it): moves the consumer's position as
-- sig_apply_mark does.
CREATE OR REPLACE PROCEDURE %SCHEMA%.sig_mark(
    p_synced boolean, p_consumer uuid, p_version bigint, p_terminates boolean, p_keep integer, INOUT o_applied boolean)
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT p_synced THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    o_applied := %SCHEMA%.sig_apply_mark(p_consumer, p_version, p_terminates, p_keep);
    COMMIT;
END $$;
