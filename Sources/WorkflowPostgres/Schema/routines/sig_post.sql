-- Appends one version per post, in order; a post whose idempotency key was used
-- returns that post's version and appends nothing.
CREATE OR REPLACE PROCEDURE %SCHEMA%.sig_post(
    p_synced boolean, p_signals uuid[], p_payloads bytea[], p_terminates boolean[], p_keys text[], p_has_key boolean[],
    p_contexts bytea[], p_keep integer, p_time bigint, INOUT o_versions bigint[])
LANGUAGE plpgsql AS $$
DECLARE
    v_version bigint;
BEGIN
    IF NOT p_synced THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    o_versions := '{}';
    FOR i IN 1..COALESCE(cardinality(p_signals), 0) LOOP
        IF p_has_key[i] THEN
            INSERT INTO %SCHEMA%.sig_idempotency (key, signal_id, version) VALUES (p_keys[i], p_signals[i], 0)
            ON CONFLICT (key) DO NOTHING;
            IF NOT FOUND THEN
                SELECT version INTO v_version FROM %SCHEMA%.sig_idempotency WHERE key = p_keys[i];
                o_versions := o_versions || v_version;
                CONTINUE;
            END IF;
        END IF;
        INSERT INTO %SCHEMA%.sig_signal AS s (signal_id, latest, created_ns, updated_ns) VALUES (p_signals[i], 1, p_time, p_time)
        ON CONFLICT (signal_id) DO UPDATE SET latest = s.latest + 1, updated_ns = p_time
        RETURNING latest INTO v_version;
        INSERT INTO %SCHEMA%.sig_version (signal_id, version, terminates, posted_ns, payload, trace_context)
        VALUES (p_signals[i], v_version, p_terminates[i], p_time, p_payloads[i], NULLIF(p_contexts[i], ''::bytea));
        IF p_has_key[i] THEN
            UPDATE %SCHEMA%.sig_idempotency SET version = v_version WHERE key = p_keys[i];
        END IF;
        PERFORM %SCHEMA%.sig_prune(p_signals[i], p_keep);
        o_versions := o_versions || v_version;
    END LOOP;
    COMMIT;
END $$;
