-- Gives the instance to the new claim and host if it still holds the expected ones.
CREATE OR REPLACE PROCEDURE %SCHEMA%.wf_claim(
    p_id text, p_old_pid integer, p_old_start bigint, p_old_token bigint, p_old_host bigint,
    p_pid integer, p_start bigint, p_token bigint, p_host bigint, INOUT changed boolean)
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE %SCHEMA%.wf_instance
       SET owner_pid = p_pid, owner_start = p_start, owner_token = p_token, owner_host = p_host
     WHERE id = p_id AND owner_pid = p_old_pid AND owner_start = p_old_start AND owner_token = p_old_token
       AND owner_host = p_old_host;
    changed := FOUND;
    COMMIT;
END $$;
