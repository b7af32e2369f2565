-- One commit of many instances' changes by host `p_host`. Instance i (from 1) is `p_keys[i]`
-- with id `p_ids[i]`, made under the claim (`p_pids[i]`, `p_starts[i]`, `p_tokens[i]`); its
-- entries continue its log from `p_firsts[i]`, each logged at `p_updated[i]`, and
-- `p_status[i]` is the status they set (-1: unchanged; a workflow that finishes is completed by
-- the commit of the entry that finished it). Entry j belongs to instance `p_entry_owner[j]`
-- and has sequence `p_entry_seq[j]`; snapshots and delivery marks likewise.
--
-- The fence reads each instance's row and writes none. Every change of an instance's claim
-- away from one of host H (a takeover, H's own release, a delete: wf_claim, wf_delete) holds
-- H's advisory lock (key: the host's id) exclusively until it commits, and a commit of H holds
-- it shared from its first statement to its COMMIT; the two never overlap. A commit that has
-- the lock first is in the log, whole, before the claim changes, and whoever takes the instance
-- reads the log after that; a commit that gets the lock after the change reads the row as the
-- change left it (each statement reads what was committed when it began) and writes nothing of
-- that instance. An instance is written only where its row names the claim and the host its
-- changes were made under, its log holds the entry just before its first (one probe of the
-- log's primary key; the insert's unique key fails the whole commit where its first is held
-- already, so two commits of one sequence cannot both land), and none of its delivery
-- marks is one its consumer already has (the action would apply that signal version twice; the
-- marks' consumers are looked up once, before it, and only when there are marks). A row is
-- written only where a status changes.
--
-- The commit answers which instances it wrote, each by its place in the request (`o_ord`).
-- Only when some instance was not written does it also answer, for every instance in request
-- order, why (`o_state`: 1 held by another claim, which `o_pid`, `o_start` and `o_token`
-- name; 2 gone; 3 a delivery its consumer already had); one held by this claim whose entries
-- do not continue its log fails the whole commit (SQLSTATE WF001).
--
-- Its statements run their generic plans, made per connection from the tables' statistics
-- (again when those change), whatever the size of the commit. By default PostgreSQL plans a
-- procedure's statement anew for each of its first five runs on a connection, then keeps
-- doing so for as long as the generic plan's estimated cost stays above those plans' average;
-- a plan made for given arrays knows their lengths, so a connection whose first commits carry
-- one instance or a few can plan every later commit's statements again, depending on the
-- tables' statistics. Every statement of it reads by primary keys (`enable_seqscan` off: a
-- table of a few pages, such as the instances of a small store, would be scanned whole for
-- each instance of each commit). A setting made with `set_config(…, true)` lasts until the
-- procedure's `COMMIT`, as does the advisory lock; an assignment is evaluated without the
-- executor that `PERFORM` starts.
CREATE OR REPLACE PROCEDURE %SCHEMA%.wf_commit(
    p_synced boolean, p_host bigint,
    p_keys bigint[], p_ids text[], p_pids integer[], p_starts bigint[], p_tokens bigint[],
    p_firsts bigint[], p_counts integer[], p_updated bigint[], p_status smallint[],
    p_entry_owner integer[], p_entry_seq bigint[], p_records bytea[],
    p_snap_owner integer[], p_snap_seq bigint[], p_snaps bytea[],
    p_mark_owner integer[], p_mark_consumer uuid[], p_mark_version bigint[], p_mark_terminates boolean[], p_mark_keep integer[],
    INOUT o_ord integer[], INOUT o_state smallint[], INOUT o_pid integer[], INOUT o_start bigint[], INOUT o_token bigint[])
LANGUAGE plpgsql AS $$
DECLARE
    v_bad record;
    v_state smallint[];
    v_delivered integer[];
    v_setting text;
BEGIN
    v_setting := set_config('plan_cache_mode', 'force_generic_plan', true);
    v_setting := set_config('enable_seqscan', 'off', true);
    IF NOT p_synced THEN
        v_setting := set_config('synchronous_commit', 'off', true);
    END IF;
    v_setting := pg_advisory_xact_lock_shared(p_host)::text;
    IF cardinality(p_mark_consumer) > 0 THEN
        SELECT array_agg(m.owner) INTO v_delivered
          FROM unnest(p_mark_owner, p_mark_consumer, p_mark_version) AS m(owner, consumer, version)
          JOIN %SCHEMA%.sig_consumer c ON c.consumer_id = m.consumer
         WHERE c.last_delivered >= m.version;
    END IF;
    -- One probe of each table's primary key per instance: the subqueries' LIMITs keep the
    -- planner from joining or hashing the whole table instead, and with sequential scans off
    -- it probes a table of a few pages by its index too (it plans once, for any size).
    SELECT array_agg(q.ord::integer) INTO o_ord
      FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens, p_firsts, p_counts)
           WITH ORDINALITY AS q(key, id, pid, start, token, first, count, ord)
     CROSS JOIN LATERAL (SELECT w.owner_pid, w.owner_start, w.owner_token, w.owner_host FROM %SCHEMA%.wf_instance w
                          WHERE w.instance_key = q.key AND w.id = q.id LIMIT 1) w
     WHERE w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token AND w.owner_host = p_host
       AND (q.count = 0 OR (SELECT true FROM %SCHEMA%.wf_log l WHERE l.instance_key = q.key AND l.seq = q.first - 1 LIMIT 1))
       AND (v_delivered IS NULL OR q.ord <> ALL (v_delivered));
    IF COALESCE(cardinality(o_ord), 0) < cardinality(p_keys) THEN
        v_state := array_fill(2::smallint, ARRAY[cardinality(p_keys)]);
        FOR i IN 1..COALESCE(cardinality(o_ord), 0) LOOP
            v_state[o_ord[i]] := 0;
        END LOOP;
        -- Held by this claim but not continued by these entries: the whole commit fails.
        SELECT q.id, q.first, l.last INTO v_bad
          FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens, p_firsts, p_counts)
               WITH ORDINALITY AS q(key, id, pid, start, token, first, count, ord)
          JOIN %SCHEMA%.wf_instance w ON w.instance_key = q.key AND w.id = q.id
          CROSS JOIN LATERAL (SELECT COALESCE(max(seq), 0) AS last FROM %SCHEMA%.wf_log WHERE instance_key = q.key) l
         WHERE v_state[q.ord] = 2 AND w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token
           AND w.owner_host = p_host AND q.count > 0 AND l.last <> q.first - 1
         LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'instance %''s entries start at %, after %', v_bad.id, v_bad.first, v_bad.last
                USING ERRCODE = 'WF001';
        END IF;
        -- Written (0), gone (2), held by another claim (1, with that claim), or held by
        -- this one but carrying a delivery its consumer already had (3).
        SELECT array_agg(CASE WHEN v_state[q.ord] = 0 THEN 0 WHEN w.instance_key IS NULL THEN 2
                              WHEN w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token
                                   AND w.owner_host = p_host THEN 3
                              ELSE 1 END::smallint ORDER BY q.ord),
               array_agg(COALESCE(w.owner_pid, 0) ORDER BY q.ord), array_agg(COALESCE(w.owner_start, 0) ORDER BY q.ord),
               array_agg(COALESCE(w.owner_token, 0) ORDER BY q.ord)
          INTO o_state, o_pid, o_start, o_token
          FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens) WITH ORDINALITY AS q(key, id, pid, start, token, ord)
          LEFT JOIN %SCHEMA%.wf_instance w ON w.instance_key = q.key AND w.id = q.id;
        v_state := o_state;
    END IF;
    INSERT INTO %SCHEMA%.wf_log (instance_key, seq, record, logged_ns)
    SELECT p_keys[e.owner], e.seq, e.rec, p_updated[e.owner]
      FROM unnest(p_entry_owner, p_entry_seq, p_records) AS e(owner, seq, rec)
     WHERE v_state IS NULL OR v_state[e.owner] = 0;
    IF 0 <= ANY (p_status) THEN
        UPDATE %SCHEMA%.wf_instance w
           SET status = q.status, updated_ns = q.updated, updated_seq = GREATEST(w.updated_seq, q.first + q.count - 1)
          FROM unnest(p_keys, p_status, p_updated, p_firsts, p_counts) WITH ORDINALITY AS q(key, status, updated, first, count, ord)
         WHERE w.instance_key = q.key AND q.status >= 0 AND (v_state IS NULL OR v_state[q.ord] = 0);
    END IF;
    IF cardinality(p_snaps) > 0 THEN
        INSERT INTO %SCHEMA%.wf_snapshot (instance_key, seq, state)
        SELECT p_keys[s.owner], s.seq, s.state
          FROM unnest(p_snap_owner, p_snap_seq, p_snaps) AS s(owner, seq, state)
         WHERE v_state IS NULL OR v_state[s.owner] = 0
        ON CONFLICT (instance_key, seq) DO UPDATE SET state = EXCLUDED.state;
    END IF;
    IF cardinality(p_mark_consumer) > 0 THEN
        PERFORM %SCHEMA%.sig_apply_mark(m.consumer, m.version, m.terminates, m.keep)
           FROM unnest(p_mark_owner, p_mark_consumer, p_mark_version, p_mark_terminates, p_mark_keep)
                WITH ORDINALITY AS m(owner, consumer, version, terminates, keep, ord)
          WHERE v_state IS NULL OR v_state[m.owner] = 0
          ORDER BY m.ord;
    END IF;
    COMMIT;
END $$;
