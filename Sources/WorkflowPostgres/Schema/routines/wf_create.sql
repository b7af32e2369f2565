-- Creates an instance with its first entries; `new_key` is NULL when the id is taken.
CREATE OR REPLACE PROCEDURE %SCHEMA%.wf_create(
    p_id text, p_type text, p_codec text, p_status smallint, p_created bigint,
    p_pid integer, p_start bigint, p_token bigint, p_host bigint, p_records bytea[], p_code_version text,
    INOUT new_key bigint)
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO %SCHEMA%.wf_instance (id, workflow_type, codec, status, created_ns, updated_ns,
                                      owner_pid, owner_start, owner_token, owner_host, code_version)
    VALUES (p_id, p_type, p_codec, p_status, p_created, p_created, p_pid, p_start, p_token, p_host, p_code_version)
    ON CONFLICT (id) DO NOTHING
    RETURNING instance_key INTO new_key;
    IF new_key IS NOT NULL THEN
        INSERT INTO %SCHEMA%.wf_log (instance_key, seq, record, logged_ns)
        SELECT new_key, t.ord, t.rec, p_created FROM unnest(p_records) WITH ORDINALITY AS t(rec, ord);
    END IF;
    COMMIT;
END $$;
