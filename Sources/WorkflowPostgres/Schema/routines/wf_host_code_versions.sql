-- The code versions a host runs, for the spread of takeovers.
CREATE OR REPLACE PROCEDURE %SCHEMA%.wf_host_code_versions(p_host bigint, p_versions text[], p_unversioned boolean, INOUT done boolean)
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE %SCHEMA%.wf_host SET code_versions = p_versions, runs_unversioned = p_unversioned WHERE host_id = p_host;
    done := FOUND;
    COMMIT;
END $$;
