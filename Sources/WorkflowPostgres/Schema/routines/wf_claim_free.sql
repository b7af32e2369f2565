-- Claims a free instance (no claim, no host: its last host stopped) in one call and
-- returns its row, with its log's last sequence and its newest snapshot's; a NULL key when it
-- is not free (or not there), for the caller to read it with its holder and decide. No host
-- commits to a free instance, so no host's commits are waited for.
CREATE OR REPLACE PROCEDURE %SCHEMA%.wf_claim_free(
    p_id text, p_pid integer, p_start bigint, p_token bigint, p_host bigint,
    INOUT o_key bigint, INOUT o_type text, INOUT o_codec text, INOUT o_status smallint, INOUT o_created bigint,
    INOUT o_updated bigint, INOUT o_last_seq bigint, INOUT o_last_snapshot bigint, INOUT o_code_version text)
LANGUAGE plpgsql AS $$
DECLARE
    v_updated_seq bigint;
BEGIN
    UPDATE %SCHEMA%.wf_instance
       SET owner_pid = p_pid, owner_start = p_start, owner_token = p_token, owner_host = p_host
     WHERE id = p_id AND owner_pid = 0 AND owner_start = 0 AND owner_token = 0 AND owner_host = 0
    RETURNING instance_key, workflow_type, codec, status, created_ns, updated_ns, updated_seq, code_version
         INTO o_key, o_type, o_codec, o_status, o_created, o_updated, v_updated_seq, o_code_version;
    IF o_key IS NOT NULL THEN
        SELECT t.o_last_seq, t.o_updated, t.o_last_snapshot INTO o_last_seq, o_updated, o_last_snapshot
          FROM %SCHEMA%.wf_claimed_tail(o_key, o_updated, v_updated_seq) t;
    END IF;
    COMMIT;
END $$;
