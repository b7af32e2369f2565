-- Moves a consumer's position forward to `p_version` (never back) and applies the
-- removal rules; false when it is gone or already there.
CREATE OR REPLACE FUNCTION %SCHEMA%.sig_apply_mark(p_consumer uuid, p_version bigint, p_terminates boolean, p_keep integer) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_consumer record;
BEGIN
    SELECT signal_id, behaviour, last_delivered INTO v_consumer
      FROM %SCHEMA%.sig_consumer WHERE consumer_id = p_consumer FOR UPDATE;
    IF NOT FOUND OR v_consumer.last_delivered >= p_version THEN
        RETURN false;
    END IF;
    IF v_consumer.behaviour = 0 OR p_terminates THEN
        PERFORM %SCHEMA%.sig_remove(p_consumer);
    ELSE
        UPDATE %SCHEMA%.sig_consumer SET last_delivered = p_version WHERE consumer_id = p_consumer;
        PERFORM %SCHEMA%.sig_prune(v_consumer.signal_id, p_keep);
    END IF;
    RETURN true;
END $$;
