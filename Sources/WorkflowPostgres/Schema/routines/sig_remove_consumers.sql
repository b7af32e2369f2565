-- Removes consumers (as sig_remove does, each); `o_removed` counts those that were there.
CREATE OR REPLACE PROCEDURE %SCHEMA%.sig_remove_consumers(p_ids uuid[], INOUT o_removed integer)
LANGUAGE plpgsql AS $$
BEGIN
    o_removed := 0;
    FOR i IN 1..COALESCE(cardinality(p_ids), 0) LOOP
        IF %SCHEMA%.sig_remove(p_ids[i]) THEN
            o_removed := o_removed + 1;
        END IF;
    END LOOP;
    COMMIT;
END $$;
