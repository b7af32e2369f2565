-- Sets an instance's status (and its failure, kept only with status 2: failed), at `p_time`:
-- the instance's time of last change until its log goes on.
CREATE OR REPLACE PROCEDURE %SCHEMA%.wf_set_status(p_id text, p_status smallint, p_time bigint, p_failure text, INOUT changed boolean)
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE %SCHEMA%.wf_instance w SET status = p_status, updated_ns = p_time,
           updated_seq = (SELECT COALESCE(max(l.seq), 0) FROM %SCHEMA%.wf_log l WHERE l.instance_key = w.instance_key),
           failure = CASE WHEN p_status = 2 THEN p_failure END
     WHERE id = p_id;
    changed := FOUND;
    COMMIT;
END $$;
