-- Sets an instance's status (and its failure, kept only with status 2: failed).
CREATE OR REPLACE PROCEDURE %SCHEMA%.wf_set_status(p_id text, p_status smallint, p_time bigint, p_failure text, INOUT changed boolean)
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE %SCHEMA%.wf_instance SET status = p_status, updated_ns = p_time,
           failure = CASE WHEN p_status = 2 THEN p_failure END
     WHERE id = p_id;
    changed := FOUND;
    COMMIT;
END $$;
