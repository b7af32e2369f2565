-- The id of the application table named `p_name`, created if new.
CREATE OR REPLACE PROCEDURE %SCHEMA%.app_table_named(p_name text, INOUT o_id bigint)
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO %SCHEMA%.app_table (name) VALUES (p_name) ON CONFLICT (name) DO NOTHING;
    SELECT table_id INTO o_id FROM %SCHEMA%.app_table WHERE name = p_name;
    COMMIT;
END $$;
