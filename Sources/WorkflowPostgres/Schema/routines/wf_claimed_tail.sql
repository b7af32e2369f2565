-- What a claim answers with besides the instance's row (wf_claim, wf_claim_free): the log's
-- last sequence, the time of the instance's last change (the last entry's, when it came after
-- the status change of `p_updated` at `p_updated_seq`), and the newest snapshot's sequence.
CREATE OR REPLACE FUNCTION %SCHEMA%.wf_claimed_tail(
    p_key bigint, p_updated bigint, p_updated_seq bigint, OUT o_last_seq bigint, OUT o_updated bigint, OUT o_last_snapshot bigint)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    SELECT l.seq, CASE WHEN l.seq > p_updated_seq AND l.logged_ns <> 0 THEN l.logged_ns ELSE p_updated END
      INTO o_last_seq, o_updated
      FROM %SCHEMA%.wf_log l WHERE l.instance_key = p_key ORDER BY l.seq DESC LIMIT 1;
    SELECT COALESCE(max(s.seq), 0) INTO o_last_snapshot FROM %SCHEMA%.wf_snapshot s WHERE s.instance_key = p_key;
END $$;
