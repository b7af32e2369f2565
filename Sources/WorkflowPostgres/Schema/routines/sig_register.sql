-- Registers a consumer of a signal (its run, process and machine, its position), and the
-- signal's record if it has none; `o_created` is false when the consumer was registered.
CREATE OR REPLACE PROCEDURE %SCHEMA%.sig_register(
    p_id uuid, p_signal uuid, p_owner text, p_run text, p_identity text, p_pid integer, p_start bigint,
    p_behaviour smallint, p_coalescing smallint, p_scope smallint, p_last bigint, p_created bigint, p_time bigint,
    p_machine text, INOUT o_created boolean)
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO %SCHEMA%.sig_consumer (consumer_id, signal_id, owner, run_id, process_identity, process_id, process_start,
                                       behaviour, coalescing, scope, last_delivered, created_ns, machine)
    VALUES (p_id, p_signal, p_owner, p_run, p_identity, p_pid, p_start, p_behaviour, p_coalescing, p_scope, p_last, p_created,
            p_machine)
    ON CONFLICT (consumer_id) DO NOTHING;
    o_created := FOUND;
    IF o_created THEN
        INSERT INTO %SCHEMA%.sig_signal (signal_id, latest, created_ns, updated_ns) VALUES (p_signal, 0, p_time, p_time)
        ON CONFLICT (signal_id) DO NOTHING;
    END IF;
    COMMIT;
END $$;
