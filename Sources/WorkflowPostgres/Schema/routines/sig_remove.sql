-- Removes a consumer, and its signal's record and versions when it was the last.
CREATE OR REPLACE FUNCTION %SCHEMA%.sig_remove(p_consumer uuid) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_signal uuid;
BEGIN
    DELETE FROM %SCHEMA%.sig_consumer WHERE consumer_id = p_consumer RETURNING signal_id INTO v_signal;
    IF v_signal IS NULL THEN
        RETURN false;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM %SCHEMA%.sig_consumer WHERE signal_id = v_signal) THEN
        DELETE FROM %SCHEMA%.sig_signal WHERE signal_id = v_signal;
        DELETE FROM %SCHEMA%.sig_version WHERE signal_id = v_signal;
    END IF;
    RETURN true;
END $$;
