-- Drops versions every consumer has, keeping the newest `p_keep`.
CREATE OR REPLACE FUNCTION %SCHEMA%.sig_prune(p_signal uuid, p_keep integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_latest bigint;
    v_needed bigint;
    v_through bigint;
BEGIN
    SELECT latest INTO v_latest FROM %SCHEMA%.sig_signal WHERE signal_id = p_signal;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    v_through := GREATEST(v_latest - p_keep, 0);
    SELECT min(last_delivered) INTO v_needed FROM %SCHEMA%.sig_consumer WHERE signal_id = p_signal;
    IF v_needed IS NOT NULL THEN
        v_through := LEAST(v_through, v_needed);
    END IF;
    IF v_through > 0 THEN
        DELETE FROM %SCHEMA%.sig_version WHERE signal_id = p_signal AND version <= v_through;
    END IF;
END $$;
