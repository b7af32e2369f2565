-- Gives the instance to the new claim and host if it still holds the expected ones, and
-- returns its row as the claim left it, with its log's last sequence and its newest
-- snapshot's (a NULL key: the claim changed in between, or the instance is gone). A claim
-- taken from host `p_old_host` (a takeover, or that host's own release) first waits for that
-- host's commits in flight, and keeps its next ones out until this one commits: the host's
-- advisory lock, held exclusively (the fence: see wf_commit). So the last sequence it returns
-- is that of every entry the old host will ever have written.
CREATE OR REPLACE PROCEDURE %SCHEMA%.wf_claim(
    p_id text, p_old_pid integer, p_old_start bigint, p_old_token bigint, p_old_host bigint,
    p_pid integer, p_start bigint, p_token bigint, p_host bigint,
    INOUT o_key bigint, INOUT o_type text, INOUT o_codec text, INOUT o_status smallint, INOUT o_created bigint,
    INOUT o_updated bigint, INOUT o_last_seq bigint, INOUT o_last_snapshot bigint, INOUT o_code_version text)
LANGUAGE plpgsql AS $$
DECLARE
    v_updated_seq bigint;
BEGIN
    IF p_old_host <> 0 THEN
        PERFORM pg_advisory_xact_lock(p_old_host);
    END IF;
    UPDATE %SCHEMA%.wf_instance
       SET owner_pid = p_pid, owner_start = p_start, owner_token = p_token, owner_host = p_host
     WHERE id = p_id AND owner_pid = p_old_pid AND owner_start = p_old_start AND owner_token = p_old_token
       AND owner_host = p_old_host
    RETURNING instance_key, workflow_type, codec, status, created_ns, updated_ns, updated_seq, code_version
         INTO o_key, o_type, o_codec, o_status, o_created, o_updated, v_updated_seq, o_code_version;
    IF o_key IS NOT NULL THEN
        SELECT t.o_last_seq, t.o_updated, t.o_last_snapshot INTO o_last_seq, o_updated, o_last_snapshot
          FROM %SCHEMA%.wf_claimed_tail(o_key, o_updated, v_updated_seq) t;
    END IF;
    COMMIT;
END $$;
